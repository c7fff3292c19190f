// The trace of lazy calls (docs/lazy.md): recording, hazards between calls,
// trace partitions, and running them fused or one call per kernel.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "interp/kernel_binding.h"
#include "lazy/fused_kernel.h"
#include "lazy/index_safety.h"
#include "lazy/lazy_backend.h"
#include "lower/lower_user_kernel.h"
#include "runtime/cpu/executable.h"
#include "runtime/cpu/kernel_cache.h"
#include "runtime/cpu/user_kernel_call.h"
#include "stitch/lazy.h"

namespace stitch::lazy {

class Trace;

// The memory of lazy arrays, which views share. Storage made by zeros() is
// allocated when first needed (a call touching it runs, or it is read), so a
// temporary that lives in registers never has any (docs/lazy.md). On a
// device back end it also has a copy in device memory; each copy says
// whether it holds the current value, and a copy is brought up to date from
// the other when it is asked for (docs/lazy.md, Back ends).
class LazyStorage {
 public:
  explicit LazyStorage(Tensor tensor) : dtype_(tensor.dtype()), tensor_(std::move(tensor)), allocated_(true) {}
  // Deferred: contents unspecified until written (zeros() records the fill).
  LazyStorage(DType dtype, std::vector<int64_t> shape) : dtype_(dtype), shape_(std::move(shape)) {}
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return allocated_ ? tensor_.shape() : shape_; }
  // zeros() in a trace: the storage holds zeros, which no memory holds yet.
  // The first call touching it decides (Trace::record): one that overwrites
  // it whole before reading needs no fill; any other gets a fill recorded
  // before it. Host memory made while it is pending is zeroed.
  bool zero_pending() const { return zero_pending_; }
  void set_zero_pending(bool pending) { zero_pending_ = pending; }
  // Host memory holding the current value (allocated, or downloaded, if need
  // be); `write`: the caller changes it, so the device copy is stale.
  std::byte* host(bool write) {
    if (!allocated_) {
      tensor_ = zero_pending_ ? Tensor(dtype_, std::move(shape_)) : Tensor::uninitialized(dtype_, std::move(shape_));
      zero_pending_ = false;
      allocated_ = true;
      host_current_ = !device_current_;  // fresh memory of a storage never written is current
    }
    if (!host_current_) {
      device_->download(tensor_.raw(), tensor_.nbytes());
      host_current_ = true;
    }
    if (write) device_current_ = false;
    return tensor_.raw();
  }
  // The device copy's address, holding the current value (made on `backend`,
  // or uploaded, if need be); `write`: a kernel changes it, so the host copy
  // is stale.
  uint64_t device(LazyBackend& backend, bool write) {
    if (zero_pending_) host(false);  // the zeros, made on the host, go up
    if (!device_) {
      device_ = backend.allocate(nbytes());
      device_current_ = !allocated_ || !host_current_;  // nothing to upload from a storage never written
    }
    if (!device_current_) {
      device_->upload(tensor_.raw(), tensor_.nbytes());
      device_current_ = true;
    }
    if (write) host_current_ = false;
    return device_->address();
  }
  // Whether any memory holds it yet (host or device).
  bool allocated() const { return allocated_ || device_ != nullptr; }

 private:
  size_t nbytes() const {
    if (allocated_) return tensor_.nbytes();
    int64_t n = 1;
    for (int64_t e : shape_) n *= e;
    return static_cast<size_t>(n) * dtype_size(dtype_);
  }

  DType dtype_;
  std::vector<int64_t> shape_;  // until allocated
  Tensor tensor_;
  bool allocated_ = false;
  bool zero_pending_ = false;
  bool host_current_ = true;     // once allocated
  std::unique_ptr<DeviceCopy> device_;
  bool device_current_ = false;  // once device_ exists
};

// A lazy array: a dense row-major region of a storage, which views share
// (docs/lazy.md, Views).
struct ArrayState {
  std::shared_ptr<LazyStorage> storage;
  DType dtype = DType::f32;  // the storage's, kept here: recording reads it for every argument
  // The shape again, inline when its rank is at most 4 (else rank_inline is
  // -1): recording reads it without another cache line.
  std::array<int64_t, 4> dims{};
  int rank_inline = -1;
  void set_inline_shape() {
    rank_inline = shape.size() <= dims.size() ? static_cast<int>(shape.size()) : -1;
    if (rank_inline >= 0) std::copy(shape.begin(), shape.end(), dims.begin());
  }
  int64_t offset = 0;  // the region's first element in the storage
  std::vector<int64_t> shape;
  int64_t id = 0;  // unique in its trace
  std::weak_ptr<Trace> trace;
  const Trace* owner = nullptr;  // what `trace` held, compared without locking it
  // Scratch of Trace::run_fused, valid while `stamp` is its current epoch:
  // references its calls hold to this handle, and the last call holding one.
  mutable int64_t stamp = -1;
  mutable long refs = 0;
  mutable size_t last_call = 0;
  mutable int region = -1;  // its region among the partition's
  // Its storage may be zero-pending (LazyStorage::zero_pending): set by
  // zeros() and on views of such a storage, so recording reads the storage
  // only then.
  mutable bool zero_hint = false;

  // Whether this array is `t`'s (alive, so a trace made later at the same address is not taken for it).
  bool belongs_to(const Trace* t) const { return owner == t && !trace.expired(); }
  // The region in host memory holding its current value (allocated or
  // downloaded if need be); `write`: the caller changes it.
  ArrayView host_view(bool write) const {
    return {storage->host(write) + offset * dtype_size(storage->dtype()), storage->dtype(), shape.data(),
            static_cast<int>(shape.size())};
  }
  // The region in `backend`'s memory, current, for a kernel that writes it or not.
  ArrayView memory_view(LazyBackend& backend, bool write) const {
    if (!backend.on_device()) return host_view(write);
    const uint64_t base = storage->device(backend, write) + static_cast<uint64_t>(offset * dtype_size(storage->dtype()));
    return {reinterpret_cast<std::byte*>(base), storage->dtype(), shape.data(), static_cast<int>(shape.size())};
  }
  // Its dtype and shape only, without memory: what binding a call checks.
  ArrayView shape_only() const { return {nullptr, dtype, shape.data(), static_cast<int>(shape.size())}; }
  // Bytes [first_byte, end_byte) of the storage (set with the shape).
  int64_t first_byte = 0;
  int64_t end_byte = 0;
  void set_bytes() {
    int64_t n = 1;
    for (int64_t e : shape) n *= e;
    const int64_t size = dtype_size(storage->dtype());
    first_byte = offset * size;
    end_byte = first_byte + n * size;
  }
  bool overlaps(const ArrayState& o) const {
    if (storage != o.storage || first_byte == end_byte || o.first_byte == o.end_byte) return false;
    return first_byte < o.end_byte && o.first_byte < end_byte;
  }
  // The same region with the same shape: one array to the safety check.
  bool same_region(const ArrayState& o) const { return storage == o.storage && offset == o.offset && shape == o.shape; }
};

struct ScalarState {
  bool ready = false;
  Tensor value;
  std::weak_ptr<Trace> trace;
};

// A graph recorded on lazy arrays (LazyRuntime::apply), canonical.
struct GraphCall {
  Graph graph;
  std::string key;  // structural key: executables by structure
};

// A number passed to a call, as KernelArg holds one, without an array's room.
struct TraceScalar {
  bool is_float = false;
  double float_value = 0.0;
  int64_t int_value = 0;
  TraceScalar() = default;
  explicit TraceScalar(double v) : is_float(true), float_value(v) {}
  explicit TraceScalar(int64_t v) : int_value(v) {}
  KernelArg arg() const { return is_float ? KernelArg(float_value) : KernelArg(int_value); }
};

// One argument of a call: an array (with how the call touches it), or a
// scalar: a number, or the future of a reduction until its value exists.
struct TraceArg {
  std::shared_ptr<ArrayState> array;   // null for scalars
  std::shared_ptr<ScalarState> future;  // set where a reduction's value is passed
  TraceScalar scalar;                   // numbers (futures resolved at run time)
  ArrayAccess access = ArrayAccess::Read;
};

struct TraceCall {
  // A user-kernel call (the kernel and its accesses are kept alive by the
  // trace's kernel table, so plain pointers: recording must be cheap), or
  const UserKernel* kernel = nullptr;
  uint32_t kernel_id = 0;  // the kernel's number in the trace (structural keys name it by that)
  std::shared_ptr<const GraphCall> graph;    // a graph call: arrays = inputs, then outputs
  std::vector<TraceArg> args;                // per parameter (one allocation: recording must be cheap)
  const std::vector<ArrayAccessSite>* accesses = nullptr;
  // Shared: calls of one kernel on arguments of the same shapes and values bind alike.
  std::shared_ptr<const interp::KernelBinding> binding;
  std::shared_ptr<ScalarState> result;                 // reductions
};

class Trace : public std::enable_shared_from_this<Trace> {
 public:
  // On `backend`, or (null) the one the options name.
  explicit Trace(LazyOptions options, std::unique_ptr<LazyBackend> backend = nullptr);
  ~Trace();

  std::shared_ptr<ArrayState> new_array(Tensor data);
  // An array whose storage is allocated when first needed (zeros()).
  std::shared_ptr<ArrayState> new_deferred_array(DType dtype, std::vector<int64_t> shape);
  // A region of `parent`'s storage: `count` elements from element `offset` of
  // `parent`, seen with `shape`.
  std::shared_ptr<ArrayState> new_view(const ArrayState& parent, int64_t offset, std::vector<int64_t> shape);
  void record(const KernelRef& kernel, const std::vector<LazyArg>& args, std::shared_ptr<ScalarState> result);
  // Records `graph` (canonical) reading `inputs`; returns its fresh outputs.
  std::vector<std::shared_ptr<ArrayState>> record_graph(std::shared_ptr<const GraphCall> graph,
                                                        const std::vector<std::shared_ptr<ArrayState>>& inputs);
  // The user kernel computing elementwise `op` on operands of these kinds
  // (dtype, or array of the rank), made once per signature.
  KernelRef elementwise_kernel(OpKind op, const std::vector<std::pair<bool, DType>>& operands, int rank,
                               const Attrs& attrs, DType* result);
  // The user kernel writing zeros into an array of this dtype and rank
  // (recorded by LazyRuntime::zeros, so a temporary's fill fuses too).
  KernelRef zero_fill_kernel(DType dtype, int rank);
  // Records that kernel on `array` (non-empty, rank >= 1), as record() would.
  void record_zero_fill(const std::shared_ptr<ArrayState>& array);
  // zeros() for an array of new_deferred_array: in a trace mode the storage
  // is marked zero-pending (LazyStorage); in Eager and Reference the fill is
  // recorded (and runs) at once.
  void zeros(const std::shared_ptr<ArrayState>& array);
  // Run what `a`'s value, or `s`, depends on; or everything.
  void flush_for(const ArrayState& a);
  // Run every pending call that touches memory `a` shares (before a host write).
  void flush_touching(const ArrayState& a);
  void flush_for(const ScalarState& s);
  void flush_all();

  const LazyOptions& options() const { return options_; }
  void set_mode(LazyOptions::Mode mode) { options_.mode = mode; }  // with nothing pending
  LazyStats& stats() { return stats_; }

 private:
  // The fill a zero-pending storage needs before a call reads it, whole.
  void push_zero_fill(const std::shared_ptr<ArrayState>& array);
  // A handle on `storage`: `shape` from element `offset`.
  std::shared_ptr<ArrayState> new_state(std::shared_ptr<LazyStorage> storage, int64_t offset, std::vector<int64_t> shape);
  // The pending calls `targets` need, with everything they depend on, in order.
  void run_closure(std::vector<size_t> targets);
  void run_partition(std::vector<TraceCall>& calls);
  void run_single(TraceCall& call);
  void run_graph(TraceCall& call);
  void run_fused(std::vector<TraceCall>& calls);
  void resolve_futures(TraceCall& call);
  // The call's arguments: each array's dtype and shape only (binding), its
  // region in host memory (the interpreter), or in the back end's memory
  // (kernels), current there and allocated if need be.
  enum class Memory : uint8_t { ShapeOnly, Host, Backend };
  std::vector<KernelArg> arguments(TraceCall& call, Memory memory);

  LazyOptions options_;
  LazyStats stats_;
  std::unique_ptr<LazyBackend> backend_;
  std::vector<TraceCall> pending_;
  struct Scratch;
  struct PreparedSegment;  // trace_scratch.h
  std::unique_ptr<Scratch> scratch_;  // buffers of a flush, kept between flushes
  // Emptied argument vectors of calls that ran, for record() to reuse.
  static constexpr size_t kSpareArgs = 4096;
  std::vector<std::vector<TraceArg>> spare_args_;
  int64_t next_array_id_ = 0;
  // Compiled kernels by kernel and shape, and fusion plans by partition structure.
  std::map<std::pair<const UserKernel*, std::string>, std::shared_ptr<const BackendKernel>> singles_;
  struct SegmentPlan {
    int begin = 0;
    int end = 0;
    std::shared_ptr<const FusedKernel> fused;  // null: one call, run as written
    std::string fused_key;                     // the guards, shape and temporaries `fused` was built for
    std::shared_ptr<const BackendKernel> compiled;
    std::shared_ptr<const BackendKernel> compiled_checked;  // indices checked at run time
    // Whether the indices were proven in range for the shapes (and, where
    // indices read them, scalars) in proof_key; proof_known false: never.
    bool proof_known = false;
    bool proven = false;
    std::vector<int64_t> proof_key;
    // What `fused` was last run with: the partition's regions its storages
    // are, in parameter order, the loop shape and the range.
    std::vector<int> regions;
    kir::UserKernelShape shape;
    std::vector<int64_t> extents;
  };
  struct PartitionCache {
    std::vector<SegmentPlan> segments;
    // The exact extents and storage lifetimes the segments' kernels were
    // last prepared for (empty: prepare again).
    std::string detail;
  };
  std::unordered_map<std::string, PartitionCache> plans_;
  int64_t epoch_ = 0;  // numbers run_fused calls, to stamp ArrayState scratch fields
  // run_fused's steps (trace_fused.cpp): the partition's structure in the
  // scratch and its cached plan; the plan made; a fused segment's arguments
  // gathered for the kernel it has, or its kernel and arguments made; a
  // prepared segment run.
  PartitionCache& describe_partition(std::vector<TraceCall>& calls);
  void plan_segments(std::vector<TraceCall>& calls, std::vector<SegmentPlan>& plan);
  void gather_segment(std::vector<TraceCall>& calls, SegmentPlan& seg, PreparedSegment& out, bool same_shapes);
  void prepare_segment(std::vector<TraceCall>& calls, SegmentPlan& seg, PreparedSegment& out);
  void run_segment(std::vector<TraceCall>& calls, SegmentPlan& seg, PreparedSegment& ready);
  std::unordered_map<std::string, std::unique_ptr<BackendGraph>> graphs_;
  std::unordered_map<std::string, KernelRef> elementwise_;
  std::map<std::pair<DType, int>, KernelRef> zero_fills_;
  // What record() keeps per kernel: the kernel (alive, so its address names
  // it in the keys above), its accesses, and its last calls' bindings with
  // what decided each (every array's dtype and extents, every scalar's value).
  struct KernelEntry {
    static constexpr size_t kBindings = 8;
    KernelRef kernel;
    uint32_t id = 0;  // numbered in first-call order
    std::shared_ptr<const std::vector<ArrayAccessSite>> accesses;
    std::vector<ArrayAccess> param_access;  // per parameter: the kernel's params, compactly
    std::vector<char> overwrites;           // per parameter: overwrites_before_reading
    // What each kept binding was made from, inline (up to kWords words; a
    // call with more binds afresh), and its hash, compared first.
    static constexpr size_t kWords = 16;
    struct From {
      uint64_t hash = 0;
      size_t count = 0;
      std::array<int64_t, kWords> words{};
    };
    std::array<From, kBindings> bound_from;
    std::array<std::shared_ptr<const interp::KernelBinding>, kBindings> bindings;
    size_t next = 0;  // the entry to replace
    // The binding made from `from` (whose hash is `hash`), if one is kept; else null.
    std::shared_ptr<const interp::KernelBinding> find(const std::vector<int64_t>& from, uint64_t hash) const {
      for (size_t i = 0; i < kBindings; ++i) {
        const From& f = bound_from[i];
        if (f.hash == hash && bindings[i] && f.count == from.size() && std::equal(from.begin(), from.end(), f.words.begin())) {
          return bindings[i];
        }
      }
      return nullptr;
    }
    void keep(const std::vector<int64_t>& from, uint64_t hash, std::shared_ptr<const interp::KernelBinding> binding) {
      if (from.size() > kWords) return;
      From& f = bound_from[next];
      f.hash = hash;
      f.count = from.size();
      std::copy(from.begin(), from.end(), f.words.begin());
      bindings[next] = std::move(binding);
      next = (next + 1) % kBindings;
    }
  };
  KernelEntry& kernel_entry(const KernelRef& kernel);
  // Decides the zero-pending storages among the arguments of the call being
  // recorded (see LazyStorage::zero_pending).
  void settle_zeros(const std::vector<TraceArg>& args, const KernelEntry& entry, const interp::KernelBinding& binding);
  std::unordered_map<const UserKernel*, KernelEntry> kernels_;
  std::vector<int64_t> bound_from_;  // record()'s scratch
};

// A lazy runtime on a back end the caller made (tests: CUDA on the fake driver).
struct RuntimeFactory {
  static std::unique_ptr<LazyRuntime> make(LazyOptions options, std::unique_ptr<LazyBackend> backend);
};

}  // namespace stitch::lazy
