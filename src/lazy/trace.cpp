// The trace of lazy calls: see trace.h and docs/lazy.md.
#include "lazy/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <set>

#include "interp/index_bounds.h"
#include "ir/type_inference.h"
#include "lazy/cuda_lazy_backend.h"
#include "lazy/partition_plan.h"
#include "lower/lower_user_kernel.h"
#include "options/options.h"
#include "runtime/common/pipeline.h"
#include "stitch/interpreter.h"

namespace stitch::lazy {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// STITCH_DUMP=trace, partitions, fused (or lazy, or all) prints the lazy stages.
bool dump_wanted(std::string_view stage) {
  return environment_options().dumps(stage);
}

void dump(std::string_view stage, const std::string& text) { std::cerr << "// STITCH_DUMP " << stage << "\n" << text; }

// The value of a fused kernel's reduction belongs to the one reduction call among calls [begin, end).
void set_results(std::vector<TraceCall>& calls, int begin, int end, const Tensor& result) {
  for (int c = begin; c < end; ++c) {
    TraceCall& call = calls[static_cast<size_t>(c)];
    if (call.result) {
      call.result->value = result;
      call.result->ready = true;
    }
  }
}

// Plan-cache keys are raw words, not text: a flush builds one per partition,
// and formatting numbers was most of a small partition's analysis time.
constexpr int64_t kFutureTag = int64_t{1} << 40;
constexpr int64_t kOverlapTag = int64_t{1} << 42;
constexpr size_t kMaxPlans = 4096;

// A map from pointers to ints, open addressing in two flat vectors: a flush
// queries it for every argument of every call, and node-based maps spent
// most of that in the allocator.
class PointerIndex {
 public:
  // The value at `key`, or -1.
  int find(const void* key) const {
    if (keys_.empty()) return -1;
    for (size_t i = slot(key);; i = (i + 1) & (keys_.size() - 1)) {
      if (keys_[i] == key) return values_[i];
      if (keys_[i] == nullptr) return -1;
    }
  }
  void clear() {
    std::fill(keys_.begin(), keys_.end(), nullptr);
    size_ = 0;
  }
  // Sets `key` (not null) to `value`.
  void set(const void* key, int value) {
    if (2 * (size_ + 1) > keys_.size()) grow();
    size_t i = slot(key);
    while (keys_[i] != nullptr && keys_[i] != key) i = (i + 1) & (keys_.size() - 1);
    if (keys_[i] == nullptr) ++size_;
    keys_[i] = key;
    values_[i] = value;
  }

 private:
  size_t slot(const void* key) const {
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(key) >> 4) * 0x9E3779B97F4A7C15ULL >> 20) & (keys_.size() - 1);
  }
  void grow() {
    std::vector<const void*> keys = std::move(keys_);
    std::vector<int> values = std::move(values_);
    keys_.assign(std::max<size_t>(64, 2 * keys.size()), nullptr);
    values_.assign(keys_.size(), -1);
    size_ = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (keys[i] != nullptr) set(keys[i], values[i]);
    }
  }
  std::vector<const void*> keys_;
  std::vector<int> values_;
  size_t size_ = 0;
};

// Regions grouped by storage: only regions of one storage can overlap, so a
// query looks at those alone (a long partition touches hundreds of arrays).
// Each storage's regions are a chain through `next_`, from `head_`.
class RegionsByStorage {
 public:
  // Empties the set, keeping its buffers.
  void clear() {
    regions_.clear();
    next_.clear();
    head_.clear();
    storage_of_.clear();
    storage_count_ = 0;
  }
  // Adds `a` unless the same region is there; returns its index.
  int add(const ArrayState* a) {
    const int head = head_.find(a->storage.get());
    for (int r = head; r >= 0; r = next_[static_cast<size_t>(r)]) {
      const ArrayState* b = regions_[static_cast<size_t>(r)];
      if (b == a || b->same_region(*a)) return r;
    }
    const int r = static_cast<int>(regions_.size());
    regions_.push_back(a);
    next_.push_back(head);
    head_.set(a->storage.get(), r);
    return r;
  }
  // The storage of region `r`, as an index (0, 1, ... in first-use order).
  int storage_of(int r) const { return storage_of_[static_cast<size_t>(r)]; }
  int storage_count() const { return storage_count_; }
  // Numbers storages in first-use order; call after the last add().
  void number_storages() {
    PointerIndex& index = numbering_;
    index.clear();
    storage_of_.assign(regions_.size(), -1);
    for (size_t r = 0; r < regions_.size(); ++r) {
      const void* storage = regions_[r]->storage.get();
      int st = index.find(storage);
      if (st < 0) {
        st = storage_count_++;
        index.set(storage, st);
      }
      storage_of_[r] = st;
    }
  }
  // Calls f(r) for each region r that overlaps `a`.
  template <class F>
  void for_overlapping(const ArrayState* a, F f) const {
    for (int r = head_.find(a->storage.get()); r >= 0; r = next_[static_cast<size_t>(r)]) {
      if (regions_[static_cast<size_t>(r)]->overlaps(*a)) f(r);
    }
  }
  const std::vector<const ArrayState*>& regions() const { return regions_; }
  // Pairs of distinct regions that overlap, (lower index, higher), sorted.
  std::vector<std::pair<int, int>> overlapping() const {
    std::vector<std::pair<int, int>> pairs;
    for (size_t x = 0; x < regions_.size(); ++x) {
      for (int y = next_[x]; y >= 0; y = next_[static_cast<size_t>(y)]) {
        if (regions_[x]->overlaps(*regions_[static_cast<size_t>(y)])) {
          pairs.emplace_back(std::min(static_cast<int>(x), y), std::max(static_cast<int>(x), y));
        }
      }
    }
    std::sort(pairs.begin(), pairs.end());
    return pairs;
  }

 private:
  std::vector<const ArrayState*> regions_;
  std::vector<int> next_;  // the storage's region added before, or -1
  PointerIndex head_;      // storage -> its last region added
  PointerIndex numbering_;  // number_storages()'s scratch
  std::vector<int> storage_of_;
  int storage_count_ = 0;
};

// A fused segment's kernel arguments, gathered before any segment runs.
struct PreparedSegment {
  bool ready = false;
  bool check_indices = false;
  std::vector<KernelArg> args;
  // Arguments whose memory is taken just before the kernel runs: storage
  // not allocated yet (zeros()), allocated then as memory management, not
  // analysis; and on a device every array, made current there.
  std::vector<std::pair<size_t, const ArrayState*>> late;
  void clear() {
    ready = false;
    check_indices = false;
    args.clear();
    late.clear();
  }
};

}  // namespace

// Buffers a flush fills and empties, kept from one flush to the next: a flush
// allocating them afresh sometimes paid for glibc consolidating the small
// blocks freed since (a third of jacobi_1d's programs spent 0.25 ms instead
// of 0.07 in analysis).
struct Trace::Scratch {
  // run_closure
  std::vector<char> needed;
  RegionsByStorage later;
  std::vector<uint8_t> later_access;
  // run_fused
  RegionsByStorage storages;
  std::string signature;
  std::string detail;
  std::vector<int> arg_region;
  std::vector<size_t> first_arg;
  std::vector<const std::shared_ptr<ArrayState>*> handles;
  std::vector<char> outlives;
  std::vector<long> handle_count;
  std::vector<size_t> last_use;
  std::vector<PreparedSegment> prepared;
  std::vector<int64_t> proof_key;
};

namespace {

// A hash of words (FNV-1a over each word), to compare bindings' inputs cheaply.
uint64_t hash_words(const std::vector<int64_t>& words) {
  uint64_t h = 1469598103934665603ULL;
  for (int64_t w : words) h = (h ^ static_cast<uint64_t>(w)) * 1099511628211ULL;
  return h;
}

// A word of a structural key, zigzag then 7 bits a byte (most words are small
// numbers, and a key is compared whole against a stored one, cold).
void append_word(std::string& key, int64_t word) {
  uint64_t v = (static_cast<uint64_t>(word) << 1) ^ static_cast<uint64_t>(word >> 63);
  while (v >= 0x80) {
    key.push_back(static_cast<char>(0x80 | (v & 0x7f)));
    v >>= 7;
  }
  key.push_back(static_cast<char>(v));
}

// Attributes as text, for the elementwise kernels' cache key (cast's `to`).
std::string result_key(const Attrs& attrs) {
  std::string s;
  for (const auto& [name, value] : attrs.items()) s += name + "=" + value.str() + ";";
  return s;
}

bool writes(ArrayAccess a) { return a == ArrayAccess::Write || a == ArrayAccess::ReadWrite; }
bool reads(ArrayAccess a) { return a == ArrayAccess::Read || a == ArrayAccess::ReadWrite; }

std::string describe_call(const TraceCall& c) {
  if (c.graph) {
    std::string s = "graph " + c.graph->graph.name() + "(";
    for (size_t p = 0; p < c.args.size(); ++p) {
      s += fmt::format("{}{}array#{}", p ? ", " : "", writes(c.args[p].access) ? "out " : "", c.args[p].array->id);
    }
    return s + ")";
  }
  std::string s = c.kernel->name + "(";
  for (size_t p = 0; p < c.kernel->params.size(); ++p) {
    if (p) s += ", ";
    if (c.args[p].array) {
      s += fmt::format("array#{}", c.args[p].array->id);
    } else if (c.args[p].future) {
      s += "future";
    } else {
      s += c.args[p].scalar.is_float ? format_float(c.args[p].scalar.float_value) : std::to_string(c.args[p].scalar.int_value);
    }
  }
  return s + ")";
}

}  // namespace

Trace::Trace(LazyOptions options, std::unique_ptr<LazyBackend> backend)
    : options_(std::move(options)), backend_(std::move(backend)), scratch_(std::make_unique<Scratch>()) {
  if (!backend_) {
    backend_ = options_.backend == Backend::Cuda ? make_cuda_backend(options_.cache_dir) : make_cpu_backend(options_.cache_dir);
  }
  STITCH_ASSERT(backend_->kind() == options_.backend, "a lazy trace's back end is not the one its options name");
}

Trace::~Trace() = default;

std::shared_ptr<ArrayState> Trace::new_state(std::shared_ptr<LazyStorage> storage, int64_t offset,
                                             std::vector<int64_t> shape) {
  auto a = std::make_shared<ArrayState>();
  a->storage = std::move(storage);
  a->offset = offset;
  a->shape = std::move(shape);
  a->dtype = a->storage->dtype();
  a->set_inline_shape();
  a->set_bytes();
  a->id = next_array_id_++;
  a->trace = weak_from_this();
  a->owner = this;
  return a;
}

std::shared_ptr<ArrayState> Trace::new_deferred_array(DType dtype, std::vector<int64_t> shape) {
  return new_state(std::make_shared<LazyStorage>(dtype, shape), 0, shape);
}

std::shared_ptr<ArrayState> Trace::new_array(Tensor data) {
  std::vector<int64_t> shape = data.shape();
  return new_state(std::make_shared<LazyStorage>(std::move(data)), 0, std::move(shape));
}

std::shared_ptr<ArrayState> Trace::new_view(const ArrayState& parent, int64_t offset, std::vector<int64_t> shape) {
  std::shared_ptr<ArrayState> view = new_state(parent.storage, parent.offset + offset, std::move(shape));
  view->zero_hint = parent.zero_hint && parent.storage->zero_pending();
  return view;
}

Trace::KernelEntry& Trace::kernel_entry(const KernelRef& kernel) {
  auto [it, fresh] = kernels_.try_emplace(kernel.get());
  if (fresh) {
    it->second.kernel = kernel;
    it->second.id = static_cast<uint32_t>(kernels_.size());
    it->second.accesses = std::make_shared<const std::vector<ArrayAccessSite>>(collect_accesses(*kernel));
    for (const KernelParam& p : kernel->params) it->second.param_access.push_back(p.access);
    for (size_t p = 0; p < kernel->params.size(); ++p) it->second.overwrites.push_back(overwrites_before_reading(*kernel, p));
  }
  return it->second;
}

void Trace::settle_zeros(const std::vector<TraceArg>& args, const KernelEntry& entry, const interp::KernelBinding& binding) {
  for (size_t p = 0; p < args.size(); ++p) {
    const std::shared_ptr<ArrayState>& a = args[p].array;
    if (!a || !a->zero_hint) continue;
    a->zero_hint = false;
    LazyStorage& storage = *a->storage;
    if (!storage.zero_pending()) continue;
    storage.set_zero_pending(false);
    // The call overwrites the whole storage before reading it, through this
    // parameter alone: the zeros are never seen.
    int64_t numel = 1;
    for (int64_t e : storage.shape()) numel *= e;
    const bool whole = a->offset == 0 && a->shape_only().numel() == numel;
    bool overwritten = whole && entry.overwrites[p] && binding.extents == a->shape;
    for (size_t q = 0; q < args.size() && overwritten; ++q) {
      overwritten = q == p || !args[q].array || args[q].array->storage != a->storage;
    }
    if (overwritten) continue;
    push_zero_fill(whole ? a : new_state(a->storage, 0, storage.shape()));
  }
}

void Trace::record(const KernelRef& kernel, const std::vector<LazyArg>& args, std::shared_ptr<ScalarState> result) {
  const Clock::time_point t0 = Clock::now();
  if (!kernel) throw UserError("lazy call: no kernel");
  const UserKernel& k = *kernel;
  if (result && !k.is_reduction()) throw UserError(fmt::format("kernel '{}' is a parallel_for; record it with call()", k.name));
  if (!result && k.is_reduction()) {
    throw UserError(fmt::format("kernel '{}' is a reduction; record it with reduce(), which returns its value", k.name));
  }
  if (args.size() != k.params.size()) {
    throw UserError(fmt::format("kernel '{}' takes {} argument{}, got {}", k.name, k.params.size(),
                                k.params.size() == 1 ? "" : "s", args.size()));
  }
  // The arrays' handles are usually cold (the last kernels streamed the
  // caches): ask for all of them at once rather than miss on each in turn.
  for (const LazyArg& a : args) {
    if (const lazy::ArrayState* st = a.array.state_.get()) {
      __builtin_prefetch(st);
      __builtin_prefetch(reinterpret_cast<const char*>(st) + 64);
      __builtin_prefetch(reinterpret_cast<const char*>(st) + 128);
    }
  }
  KernelEntry& entry = kernel_entry(kernel);
  TraceCall call;
  call.kernel = kernel.get();
  if (!spare_args_.empty()) {
    call.args = std::move(spare_args_.back());
    spare_args_.pop_back();
  }
  call.args.resize(args.size());
  for (size_t p = 0; p < args.size(); ++p) call.args[p].access = entry.param_access[p];
  // What the binding depends on, as words: a call like the kernel's last one
  // shares its binding (binding allocates, and recording must be cheap).
  bound_from_.clear();
  bool zero_hints = false;
  for (size_t p = 0; p < args.size(); ++p) {
    const LazyArg& a = args[p];
    if (a.array.valid()) {
      const std::shared_ptr<ArrayState>& state = a.array.state_;
      if (!state->belongs_to(this)) {
        throw UserError(fmt::format("kernel '{}': argument {} ('{}') is an array of another LazyRuntime", k.name, p + 1,
                                    k.params[p].name));
      }
      call.args[p].array = state;
      zero_hints = zero_hints || state->zero_hint;
      bound_from_.push_back(static_cast<int64_t>(state->dtype) - 64);
      if (state->rank_inline >= 0) {
        bound_from_.insert(bound_from_.end(), state->dims.begin(), state->dims.begin() + state->rank_inline);
      } else {
        bound_from_.insert(bound_from_.end(), state->shape.begin(), state->shape.end());
      }
      continue;
    }
    if (a.future.valid()) {
      std::shared_ptr<ScalarState> f = a.future.state_;
      if (!f->ready) {
        // Another runtime's reduction runs there first: this trace orders only its own calls.
        std::shared_ptr<Trace> owner = f->trace.lock();
        if (owner.get() != this) {
          if (!owner) throw UserError(fmt::format("kernel '{}': argument {} is the value of a reduction whose LazyRuntime was destroyed", k.name, p + 1));
          owner->flush_for(*f);
        }
      }
      if (f->ready) {
        call.args[p].scalar = is_float(f->value.dtype()) ? TraceScalar(f->value.get_f64(0)) : TraceScalar(f->value.get_i64(0));
      } else {
        call.args[p].future = f;
        // A placeholder of the parameter's kind until the value exists.
        call.args[p].scalar = is_float(k.params[p].dtype) ? TraceScalar(0.0) : TraceScalar(int64_t{0});
      }
    } else {
      call.args[p].scalar = a.is_float ? TraceScalar(a.float_value) : TraceScalar(a.int_value);
    }
    const TraceScalar& v = call.args[p].scalar;
    bound_from_.push_back(v.is_float ? -1 : -2);
    bound_from_.push_back(v.is_float ? std::bit_cast<int64_t>(v.float_value) : v.int_value);
  }
  const uint64_t hash = hash_words(bound_from_);
  call.binding = entry.find(bound_from_, hash);
  if (!call.binding) {
    call.binding = std::make_shared<const interp::KernelBinding>(interp::bind_kernel(k, arguments(call, Memory::ShapeOnly)));
    entry.keep(bound_from_, hash, call.binding);
  }
  if (zero_hints) settle_zeros(call.args, entry, *call.binding);
  call.accesses = entry.accesses.get();
  call.kernel_id = entry.id;
  call.result = std::move(result);
  ++stats_.calls;
  pending_.push_back(std::move(call));
  // What the next call writes is cold (the kernels streamed the caches since
  // it was last used): the argument vector it reuses and its slot in the
  // pending list. Ask for them now; the caller's code runs in between.
  if (!spare_args_.empty()) {
    const std::vector<TraceArg>& next = spare_args_.back();
    for (size_t b = 0; b < next.capacity() * sizeof(TraceArg); b += 64) {
      __builtin_prefetch(reinterpret_cast<const char*>(next.data()) + b, 1);
    }
  }
  if (pending_.size() < pending_.capacity()) {
    __builtin_prefetch(pending_.data() + pending_.size(), 1);
    __builtin_prefetch(reinterpret_cast<const char*>(pending_.data() + pending_.size()) + 64, 1);
  }
  stats_.record_seconds += seconds_since(t0);
  if (options_.mode == LazyOptions::Mode::Eager || options_.mode == LazyOptions::Mode::Reference) flush_all();
}

void Trace::flush_for(const ArrayState& a) {
  for (size_t i = pending_.size(); i-- > 0;) {
    const TraceCall& c = pending_[i];
    for (size_t p = 0; p < c.args.size(); ++p) {
      if (c.args[p].array && c.args[p].array->overlaps(a) && writes(c.args[p].access)) return run_closure({i});
    }
  }
}

void Trace::flush_touching(const ArrayState& a) {
  std::vector<size_t> targets;
  for (size_t i = 0; i < pending_.size(); ++i) {
    for (const TraceArg& b : pending_[i].args) {
      if (b.array && b.array->overlaps(a)) {
        targets.push_back(i);
        break;
      }
    }
  }
  if (!targets.empty()) run_closure(targets);
}

void Trace::flush_for(const ScalarState& s) {
  for (size_t i = 0; i < pending_.size(); ++i) {
    if (pending_[i].result.get() == &s) return run_closure({i});
  }
}

void Trace::flush_all() {
  std::vector<size_t> all(pending_.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  if (!all.empty()) run_closure(all);
  backend_->synchronize();  // every kernel done, and a device fault reported, before flush() returns
}

void Trace::run_closure(std::vector<size_t> targets) {
  const Clock::time_point t0 = Clock::now();
  // Walk back from the latest target: an earlier call is needed when a needed
  // call reads what it writes (read after write), writes what it reads or
  // writes (write after read, write after write), or reads its reduction's value.
  std::vector<char>& needed = scratch_->needed;
  needed.assign(pending_.size(), 0);
  for (size_t t : targets) needed[t] = 1;
  // Arrays by region: views of one storage that overlap are one array here.
  // Each region notes whether later needed calls read it, write it.
  constexpr uint8_t kRead = 1;
  constexpr uint8_t kWritten = 2;
  RegionsByStorage& later = scratch_->later;
  later.clear();
  std::vector<uint8_t>& later_access = scratch_->later_access;
  later_access.clear();
  std::set<const ScalarState*> futures_later;
  const size_t last = *std::max_element(targets.begin(), targets.end());
  ++epoch_;
  for (size_t i = last + 1; i-- > 0;) {
    TraceCall& c = pending_[i];
    if (!needed[i]) {
      bool hazard = c.result && futures_later.count(c.result.get());
      for (size_t p = 0; p < c.args.size() && !hazard; ++p) {
        const ArrayState* a = c.args[p].array.get();
        if (!a) continue;
        const ArrayAccess access = c.args[p].access;
        const uint8_t conflicts = (writes(access) ? kRead | kWritten : 0) | (reads(access) ? kWritten : 0);
        later.for_overlapping(a, [&](int r) { hazard = hazard || (later_access[static_cast<size_t>(r)] & conflicts) != 0; });
      }
      if (!hazard) continue;
      needed[i] = 1;
    }
    for (size_t p = 0; p < c.args.size(); ++p) {
      if (c.args[p].future) futures_later.insert(c.args[p].future.get());
      const ArrayState* a = c.args[p].array.get();
      if (!a) continue;
      // A handle met before in this walk has its region on it.
      if (a->stamp != epoch_) {
        a->stamp = epoch_;
        a->region = later.add(a);
        if (later_access.size() < later.regions().size()) later_access.resize(later.regions().size(), 0);
      }
      const ArrayAccess access = c.args[p].access;
      later_access[static_cast<size_t>(a->region)] |= (reads(access) ? kRead : 0) | (writes(access) ? kWritten : 0);
    }
  }
  // The rest stay pending, in order, in place; when every call is needed
  // (the common case) the partition takes pending_'s buffer whole.
  std::vector<TraceCall> partition;
  const size_t taken = static_cast<size_t>(std::count(needed.begin(), needed.end(), 1));
  if (taken == pending_.size()) {
    partition.swap(pending_);
  } else {
    partition.reserve(taken);
    size_t kept = 0;
    for (size_t i = 0; i < pending_.size(); ++i) {
      if (needed[i]) {
        partition.push_back(std::move(pending_[i]));
      } else {
        if (kept != i) pending_[kept] = std::move(pending_[i]);
        ++kept;
      }
    }
    pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(kept), pending_.end());
  }
  stats_.analysis_seconds += seconds_since(t0);
  run_partition(partition);
  // Argument vectors are kept for later calls (record() allocates none then),
  // and so is the larger buffer of calls.
  for (TraceCall& c : partition) {
    if (spare_args_.size() >= kSpareArgs || c.args.capacity() == 0) continue;
    c.args.clear();
    spare_args_.push_back(std::move(c.args));
  }
  partition.clear();
  if (pending_.empty() && partition.capacity() > pending_.capacity()) partition.swap(pending_);
}

void Trace::resolve_futures(TraceCall& call) {
  bool changed = false;
  for (size_t p = 0; p < call.args.size(); ++p) {
    if (!call.args[p].future) continue;
    const ScalarState& f = *call.args[p].future;
    STITCH_ASSERT(f.ready, "lazy: a call runs before the reduction whose value it reads");
    call.args[p].scalar = is_float(f.value.dtype()) ? TraceScalar(f.value.get_f64(0)) : TraceScalar(f.value.get_i64(0));
    call.args[p].future.reset();
    changed = true;
  }
  if (changed) call.binding = std::make_shared<const interp::KernelBinding>(interp::bind_kernel(*call.kernel, arguments(call, Memory::ShapeOnly)));
}

std::vector<KernelArg> Trace::arguments(TraceCall& call, Memory memory) {
  std::vector<KernelArg> args;
  args.reserve(call.args.size());
  for (size_t p = 0; p < call.args.size(); ++p) {
    if (const ArrayState* a = call.args[p].array.get()) {
      const bool write = writes(call.args[p].access);
      switch (memory) {
        case Memory::ShapeOnly: args.emplace_back(a->shape_only()); break;
        case Memory::Host: args.emplace_back(a->host_view(write)); break;
        case Memory::Backend: args.emplace_back(a->memory_view(*backend_, write)); break;
      }
    } else {
      args.push_back(call.args[p].scalar.arg());
    }
  }
  return args;
}

void Trace::run_partition(std::vector<TraceCall>& calls) {
  ++stats_.partitions;
  if (dump_wanted("trace")) {
    std::string text;
    for (size_t i = 0; i < calls.size(); ++i) text += fmt::format("  {}: {}\n", i, describe_call(calls[i]));
    dump("trace", text);
  }
  const bool fusing = options_.mode == LazyOptions::Mode::Fused || options_.mode == LazyOptions::Mode::FusedReference;
  if (!fusing || calls.size() == 1) {
    for (TraceCall& c : calls) c.graph ? run_graph(c) : run_single(c);
    return;
  }
  if (std::none_of(calls.begin(), calls.end(), [](const TraceCall& c) { return c.graph != nullptr; })) {
    run_fused(calls);
    return;
  }
  // Graph calls run alone; the user-kernel calls between them are fused.
  std::vector<TraceCall> run;
  for (TraceCall& c : calls) {
    if (!c.graph) {
      run.push_back(std::move(c));
      continue;
    }
    if (run.size() == 1) run_single(run[0]);
    if (run.size() > 1) run_fused(run);
    run.clear();
    run_graph(c);
  }
  if (run.size() == 1) run_single(run[0]);
  if (run.size() > 1) run_fused(run);
}

std::vector<std::shared_ptr<ArrayState>> Trace::record_graph(std::shared_ptr<const GraphCall> graph,
                                                             const std::vector<std::shared_ptr<ArrayState>>& inputs) {
  const Clock::time_point t0 = Clock::now();
  const Graph& g = graph->graph;
  std::vector<InputType> types;
  for (const std::shared_ptr<ArrayState>& a : inputs) {
    if (!a->belongs_to(this)) throw UserError(fmt::format("graph '{}': an input is an array of another LazyRuntime", g.name()));
    types.push_back({a->storage->dtype(), a->shape});
    // A graph reads its inputs whole: pending zeros are made now, on the host.
    if (a->zero_hint) {
      a->zero_hint = false;
      if (a->storage->zero_pending()) a->storage->host(false);
    }
  }
  SymbolBindings bindings = bind_input_types(g, types);
  TraceCall call;
  call.graph = std::move(graph);
  std::vector<std::shared_ptr<ArrayState>> outputs;
  for (const std::shared_ptr<ArrayState>& a : inputs) {
    call.args.push_back({a, nullptr, TraceScalar(), ArrayAccess::Read});
  }
  for (const GraphOutput& o : g.outputs()) {
    const TensorType& t = g.type(o.value);
    outputs.push_back(new_array(Tensor(t.dtype, concrete_shape(t.shape, bindings))));
    call.args.push_back({outputs.back(), nullptr, TraceScalar(), ArrayAccess::Write});
  }
  ++stats_.calls;
  pending_.push_back(std::move(call));
  stats_.record_seconds += seconds_since(t0);
  if (options_.mode == LazyOptions::Mode::Eager || options_.mode == LazyOptions::Mode::Reference) flush_all();
  return outputs;
}

void Trace::run_graph(TraceCall& call) {
  const GraphCall& gc = *call.graph;
  const size_t inputs = gc.graph.params().size();
  std::vector<Tensor> in;
  for (size_t i = 0; i < inputs; ++i) {
    // The executable takes tensors: a view's region is copied out.
    const ArrayState& a = *call.args[i].array;
    Tensor t = Tensor::uninitialized(a.storage->dtype(), a.shape);
    ArrayView v = a.host_view(false);
    if (v.nbytes() > 0) std::memcpy(t.raw(), v.data, v.nbytes());
    in.push_back(std::move(t));
  }
  std::vector<Tensor> out;
  if (options_.mode == LazyOptions::Mode::Reference || options_.mode == LazyOptions::Mode::FusedReference) {
    out = interpret(gc.graph, in);
    ++stats_.kernels;
  } else {
    Clock::time_point t0 = Clock::now();
    std::unique_ptr<BackendGraph>& exe = graphs_[gc.key];
    if (!exe) exe = backend_->compile_graph(gc.graph);
    stats_.compile_seconds += seconds_since(t0);
    t0 = Clock::now();
    out = exe->run(in);
    stats_.run_seconds += seconds_since(t0);
    stats_.kernels += exe->kernel_count();
  }
  for (size_t o = 0; o < out.size(); ++o) {
    ArrayView v = call.args[inputs + o].array->host_view(true);
    if (v.nbytes() > 0) std::memcpy(v.data, out[o].raw(), v.nbytes());
  }
}

KernelRef Trace::elementwise_kernel(OpKind op, const std::vector<std::pair<bool, DType>>& operands, int rank,
                                    const Attrs& attrs, DType* result) {
  std::vector<TensorType> types;
  for (const auto& [is_array, dtype] : operands) types.push_back(TensorType{dtype, {}});
  Attrs normalized = attrs;
  *result = infer_type(op, types, normalized).dtype;
  std::string key = fmt::format("{} {} {}", op_name(op), rank, result_key(normalized));
  for (const auto& [is_array, dtype] : operands) key += fmt::format(" {}{}", is_array ? "a" : "s", dtype_name(dtype));
  KernelRef& k = elementwise_[key];
  if (k) return k;
  // out[i0, ...] = op(a0[i0, ...], s1, ...): one index per element.
  UserKernelBuilder b(fmt::format("{}_{}", op_name(op), dtype_name(*result)));
  Shape shape;
  for (int d = 0; d < rank; ++d) shape.push_back(Dim::symbol(fmt::format("d{}", d)));
  std::vector<KExpr> index;
  std::vector<KExpr> args;
  for (size_t i = 0; i < operands.size(); ++i) {
    std::string name = fmt::format("x{}", i);
    if (operands[i].first) {
      b.array(name, operands[i].second, shape);
      args.push_back(kernel_load(name, {}));
    } else {
      args.push_back(b.scalar(name, operands[i].second));
    }
  }
  b.array("out", *result, shape);
  for (int d = 0; d < rank; ++d) index.push_back(b.index(fmt::format("i{}", d), b.symbol(fmt::format("d{}", d))));
  for (size_t i = 0; i < operands.size(); ++i) {
    if (operands[i].first) args[i] = b.load(fmt::format("x{}", i), index);
  }
  KExpr value = op == OpKind::Cast ? kernel_cast(args[0], normalized.get("to").as_dtype()) : kernel_op(op, args);
  b.store("out", index, value);
  k = std::make_shared<const UserKernel>(b.finish());
  return k;
}

void Trace::zeros(const std::shared_ptr<ArrayState>& array) {
  if (options_.mode == LazyOptions::Mode::Eager || options_.mode == LazyOptions::Mode::Reference) {
    record_zero_fill(array);
    return;
  }
  array->storage->set_zero_pending(true);
  array->zero_hint = true;
}

void Trace::record_zero_fill(const std::shared_ptr<ArrayState>& array) {
  const Clock::time_point t0 = Clock::now();
  push_zero_fill(array);
  stats_.record_seconds += seconds_since(t0);
  if (options_.mode == LazyOptions::Mode::Eager || options_.mode == LazyOptions::Mode::Reference) flush_all();
}

void Trace::push_zero_fill(const std::shared_ptr<ArrayState>& array) {
  // What record() would make of zero_fill_kernel(dtype, rank) called on the
  // array, without checking what holds by construction (one array argument
  // whose shape binds the kernel's symbols d0, d1, ... and is the range).
  const KernelRef& kernel = zero_fill_kernel(array->storage->dtype(), static_cast<int>(array->shape.size()));
  TraceCall call;
  call.kernel = kernel.get();
  call.args.push_back({array, nullptr, TraceScalar(), kernel->params[0].access});
  KernelEntry& entry = kernel_entry(kernel);
  const uint64_t hash = hash_words(array->shape);
  call.binding = entry.find(array->shape, hash);
  if (!call.binding) {
    auto b = std::make_shared<interp::KernelBinding>();
    b->scalars.resize(1);
    b->extents = array->shape;
    b->index_count = 1;
    for (int64_t e : array->shape) b->index_count *= e;
    call.binding = b;
    entry.keep(array->shape, hash, std::move(b));
  }
  call.accesses = entry.accesses.get();
  call.kernel_id = entry.id;
  ++stats_.calls;
  pending_.push_back(std::move(call));
}

KernelRef Trace::zero_fill_kernel(DType dtype, int rank) {
  KernelRef& k = zero_fills_[{dtype, rank}];
  if (k) return k;
  // x[i0, ...] = 0: what zeros() records.
  UserKernelBuilder b(fmt::format("zeros_{}", dtype_name(dtype)));
  Shape shape;
  for (int d = 0; d < rank; ++d) shape.push_back(Dim::symbol(fmt::format("d{}", d)));
  b.array("x", dtype, shape);
  std::vector<KExpr> index;
  for (int d = 0; d < rank; ++d) index.push_back(b.index(fmt::format("i{}", d), b.symbol(fmt::format("d{}", d))));
  b.store("x", index, dtype == DType::boolean ? kernel_bool(false) : kernel_literal(int64_t{0}));
  k = std::make_shared<const UserKernel>(b.finish());
  return k;
}

void Trace::run_single(TraceCall& call) {
  resolve_futures(call);
  Tensor result;
  if (options_.mode == LazyOptions::Mode::Reference || options_.mode == LazyOptions::Mode::FusedReference) {
    result = interpret_kernel(*call.kernel, arguments(call, Memory::Host));
    ++stats_.kernels;
  } else {
    std::vector<KernelArg> args = arguments(call, Memory::Backend);
    Clock::time_point t0 = Clock::now();
    lower::UserKernelShape shape = lower::user_kernel_shape(call.binding->extents);
    shape.restrict_array = runtime::cpu::restrict_flags(*call.kernel, args);
    shape.check_indices = !interp::indices_proven_in_range(*call.kernel, *call.binding, args);
    std::string key = fmt::format("{} {} {}", shape.lanes, shape.rows_per_block, shape.check_indices ? 'c' : 'u');
    for (bool r : shape.restrict_array) key += r ? '1' : '0';
    auto& compiled = singles_[{call.kernel, key}];
    if (!compiled) compiled = backend_->compile(*call.kernel, shape);
    stats_.compile_seconds += seconds_since(t0);
    t0 = Clock::now();
    result = compiled->run(*call.kernel, args);
    stats_.run_seconds += seconds_since(t0);
    ++stats_.kernels;
    stats_.checked_kernels += shape.check_indices ? 1 : 0;
  }
  if (call.result) {
    call.result->value = std::move(result);
    call.result->ready = true;
  }
}

void Trace::run_fused(std::vector<TraceCall>& calls) {
  Clock::time_point t0 = Clock::now();
  // Storages in first-use order, and the partition's structure: what decides
  // the cuts (kernels, how arrays are shared, which values are read, sizes to
  // a power of two, which storages outlive the partition). `detail` adds what
  // the fused kernels depend on beyond the cuts: the exact extents.
  Scratch& scratch = *scratch_;
  RegionsByStorage& storages = scratch.storages;
  storages.clear();
  std::unordered_map<const ScalarState*, int> result_of;
  std::string& signature = scratch.signature;
  signature.clear();
  std::string& detail = scratch.detail;
  detail.clear();
  std::vector<int>& arg_region = scratch.arg_region;  // per call and parameter, flat: the region, or -1
  arg_region.clear();
  std::vector<size_t>& first_arg = scratch.first_arg;
  first_arg.assign(calls.size() + 1, 0);
  bool reads_results = false;
  ++epoch_;
  // Handles (ArrayState objects) in these calls: how many references the
  // calls hold to each, and the last call holding one, stamped on the handle.
  std::vector<const std::shared_ptr<ArrayState>*>& handles = scratch.handles;
  handles.clear();
  signature.reserve(calls.size() * 48);
  detail.reserve(calls.size() * 16);
  arg_region.reserve(calls.size() * 4);
  for (size_t c = 0; c < calls.size(); ++c) {
    const TraceCall& call = calls[c];
    first_arg[c] = arg_region.size();
    append_word(signature, call.kernel_id);
    for (size_t p = 0; p < call.args.size(); ++p) {
      int s = -1;
      if (const std::shared_ptr<ArrayState>& a = call.args[p].array) {
        if (a->stamp != epoch_) {
          a->stamp = epoch_;
          a->refs = 0;
          a->region = storages.add(a.get());
          handles.push_back(&a);
        }
        s = a->region;
        ++a->refs;
        a->last_call = c;
      }
      if (call.args[p].future) {
        auto it = result_of.find(call.args[p].future.get());
        reads_results = reads_results || it != result_of.end();
        append_word(signature, kFutureTag + (it != result_of.end() ? it->second : -1));
      }
      arg_region.push_back(s);
      append_word(signature, s);
    }
    if (call.result) result_of[call.result.get()] = static_cast<int>(c);
    append_word(signature, std::bit_width(static_cast<uint64_t>(call.binding->index_count)));
    for (int64_t e : call.binding->extents) append_word(detail, e);
  }
  first_arg[calls.size()] = arg_region.size();
  // Whether indices are proven in range depends on the arrays' shapes too.
  for (const ArrayState* r : storages.regions()) {
    for (int64_t e : r->shape) append_word(detail, e);
  }
  // A storage dies with the segment holding its last use when every handle on
  // it is held only by these calls (no user handle, view or pending call can
  // read it again): it may then live in registers there.
  storages.number_storages();
  std::vector<char>& outlives = scratch.outlives;
  outlives.assign(static_cast<size_t>(storages.storage_count()), 0);
  std::vector<long>& handle_count = scratch.handle_count;
  handle_count.assign(outlives.size(), 0);
  std::vector<size_t>& last_use = scratch.last_use;
  last_use.assign(outlives.size(), 0);
  for (const std::shared_ptr<ArrayState>* h : handles) {
    const ArrayState& a = **h;
    const size_t st = static_cast<size_t>(storages.storage_of(a.region));
    ++handle_count[st];
    last_use[st] = std::max(last_use[st], a.last_call);
    if (h->use_count() != a.refs) outlives[st] = 1;
  }
  for (size_t r = 0; r < storages.regions().size(); ++r) {
    const size_t st = static_cast<size_t>(storages.storage_of(static_cast<int>(r)));
    if (storages.regions()[r]->storage.use_count() != handle_count[st]) outlives[st] = 1;
  }
  // Which storages are temporaries decides cuts (the cost model) and kernels: part of the structure.
  for (char o : outlives) signature += o ? 'o' : 'd';
  // Distinct regions that overlap (views of one storage): part of the structure too.
  const std::vector<std::pair<int, int>> overlapping = storages.overlapping();
  for (const auto& [a, b] : overlapping) {
    append_word(signature, kOverlapTag + static_cast<int64_t>(a) * static_cast<int64_t>(storages.regions().size()) + b);
  }
  // A program whose partitions keep changing shape would grow the plan cache
  // without end; past a bound it starts again (plans are cheap to remake).
  auto found = plans_.find(signature);
  if (found == plans_.end()) {
    if (plans_.size() >= kMaxPlans) plans_.clear();
    found = plans_.emplace(signature, PartitionCache{}).first;
  }
  PartitionCache& cached = found->second;
  std::vector<SegmentPlan>& plan = cached.segments;
  if (plan.empty()) {
    std::vector<PlannedCall> planned(calls.size());
    for (size_t c = 0; c < calls.size(); ++c) {
      PlannedCall& pc = planned[c];
      std::vector<int> call_storage(arg_region.begin() + static_cast<std::ptrdiff_t>(first_arg[c]),
                                    arg_region.begin() + static_cast<std::ptrdiff_t>(first_arg[c + 1]));
      pc.view = CallView{calls[c].kernel, calls[c].accesses, call_storage};
      pc.reduction = calls[c].kernel->is_reduction();
      if (reads_results) {
        for (const TraceArg& arg : calls[c].args) {
          const std::shared_ptr<ScalarState>& f = arg.future;
          auto it = f ? result_of.find(f.get()) : result_of.end();
          if (it != result_of.end() && it->second < static_cast<int>(c)) pc.reads_results_of.push_back(it->second);
        }
      }
      pc.extents = calls[c].binding->extents;
      for (size_t p = 0; p < calls[c].args.size(); ++p) {
        if (!calls[c].args[p].array) continue;
        ArrayAccess a = calls[c].args[p].access;
        pc.touches.push_back({call_storage[p], static_cast<int64_t>(calls[c].args[p].array->shape_only().nbytes()), reads(a), writes(a)});
      }
    }
    std::vector<char> temporary(outlives.size());
    for (size_t st = 0; st < outlives.size(); ++st) temporary[st] = !outlives[st];
    // The model counts traffic per storage; regions are what calls touch, so
    // a region is a temporary when its storage is.
    std::vector<char> region_temporary(storages.regions().size());
    for (size_t r = 0; r < region_temporary.size(); ++r) {
      region_temporary[r] = temporary[static_cast<size_t>(storages.storage_of(static_cast<int>(r)))];
    }
    CostModel model;
    model.target = backend_->target();
    PartitionPlan cuts = plan_partition(planned, overlapping, model, region_temporary);
    for (const Segment& s : cuts.segments) {
      SegmentPlan sp;
      sp.begin = s.begin;
      sp.end = s.end;
      plan.push_back(std::move(sp));
    }
    cached.detail.clear();
    if (dump_wanted("partitions")) {
      std::string text = fmt::format("  {} calls -> {} kernels (predicted {:.1f} us fused, {:.1f} us unfused)\n",
                                     calls.size(), cuts.segments.size(), cuts.predicted_seconds * 1e6,
                                     cuts.unfused_seconds * 1e6);
      for (const Segment& s : cuts.segments) text += fmt::format("  kernel: calls {}..{}\n", s.begin, s.end - 1);
      for (const std::string& r : cuts.refusals) text += "  not fused: " + r + "\n";
      dump("partitions", text);
    }
  } else {
    ++stats_.plan_cache_hits;
  }
  // Each fused segment's kernel and arguments, prepared before any runs: a
  // kernel streams the caches, and the bookkeeping after it would miss on
  // every pointer. When the exact extents and lifetimes are those the plan's
  // kernels were built for, only the arguments are gathered. A segment
  // reading a reduction's value is prepared when that value exists (its
  // extents may depend on it).
  const bool same_detail = cached.detail == detail;
  std::vector<PreparedSegment>& prepared = scratch.prepared;
  if (prepared.size() < plan.size()) prepared.resize(plan.size());
  for (size_t i = 0; i < plan.size(); ++i) prepared[i].clear();
  // `same_shapes`: the partition's extents and shapes are those of the last
  // flush of this plan, which the segment was prepared for.
  auto gather = [&](SegmentPlan& seg, PreparedSegment& out, bool same_shapes) {
    const FusedKernel& f = *seg.fused;
    stats_.arrays_in_registers += std::count(f.in_register.begin(), f.in_register.end(), 1);
    out.args.reserve(seg.regions.size() + f.scalar_sources.size() + seg.extents.size());
    // A storage in registers is never touched: its memory is not needed (nor
    // made). On a device, every array's memory is taken when the kernel runs
    // (a graph call before it may have written the host copy).
    const bool on_device = backend_->on_device();
    for (size_t s = 0; s < seg.regions.size(); ++s) {
      const ArrayState* a = storages.regions()[static_cast<size_t>(seg.regions[s])];
      const bool late = !f.in_register[s] && (on_device || !a->storage->allocated());
      if (late) out.late.emplace_back(out.args.size(), a);
      out.args.emplace_back(f.in_register[s] || late ? a->shape_only() : a->host_view(f.written[s]));
    }
    for (const auto& [c, p] : f.scalar_sources) out.args.push_back(calls[static_cast<size_t>(seg.begin + c)].args[static_cast<size_t>(p)].scalar.arg());
    for (int64_t e : seg.extents) out.args.emplace_back(e);
    // Indices proven in range for these extents and shapes (and scalars,
    // where an index reads one) hold for every run with them.
    if (same_shapes && seg.proof_known && !f.index_reads_scalars) {
      out.check_indices = !seg.proven;
      out.ready = true;
      return;
    }
    std::vector<int64_t>& proof_key = scratch.proof_key;
    proof_key.clear();
    for (const KernelArg& a : out.args) {
      if (a.is_array) {
        proof_key.insert(proof_key.end(), a.array.shape, a.array.shape + a.array.rank);
      } else if (f.index_reads_scalars) {
        proof_key.push_back(a.is_float ? std::bit_cast<int64_t>(a.float_value) : a.int_value);
      }
      proof_key.push_back(-1);
    }
    if (!seg.proof_known || seg.proof_key != proof_key) {
      seg.proven = interp::indices_proven_in_range(f.kernel, interp::bind_kernel(f.kernel, out.args), out.args);
      seg.proof_known = true;
      seg.proof_key = proof_key;
    }
    out.check_indices = !seg.proven;
    out.ready = true;
  };
  auto prepare = [&](SegmentPlan& seg, PreparedSegment& out) {
    // Segment-local storages (partition regions in first-use order) and the
    // calls as the fused-kernel builder sees them.
    std::vector<int> regions;
    std::vector<SegmentCall> seg_calls;
    for (int c = seg.begin; c < seg.end; ++c) {
      TraceCall& call = calls[static_cast<size_t>(c)];
      resolve_futures(call);
      SegmentCall sc{call.kernel, {}, call.binding.get(), call.accesses};
      for (size_t p = 0; p < call.args.size(); ++p) {
        const int r = arg_region[first_arg[static_cast<size_t>(c)] + p];
        int s = -1;
        if (r >= 0) {
          s = static_cast<int>(std::find(regions.begin(), regions.end(), r) - regions.begin());
          if (s == static_cast<int>(regions.size())) regions.push_back(r);
        }
        sc.storage.push_back(s);
      }
      seg_calls.push_back(std::move(sc));
    }
    std::vector<StorageType> types;
    std::vector<bool> dead;
    for (int r : regions) {
      const ArrayState* a = storages.regions()[static_cast<size_t>(r)];
      types.push_back({a->storage->dtype(), static_cast<int>(a->shape.size())});
      const size_t st = static_cast<size_t>(storages.storage_of(r));
      dead.push_back(!outlives[st] && last_use[st] < static_cast<size_t>(seg.end));
    }
    // The fused range: the first `rank` dimensions (the smallest range's), each the largest extent.
    size_t rank = seg_calls[0].binding->extents.size();
    for (const SegmentCall& sc : seg_calls) rank = std::min(rank, sc.binding->extents.size());
    std::vector<int64_t> extents(rank, 0);
    for (const SegmentCall& sc : seg_calls) {
      for (size_t d = 0; d < extents.size(); ++d) extents[d] = std::max(extents[d], sc.binding->extents[d]);
    }
    // The kernel depends on which calls are guarded, which calls' ranges hold
    // which (where temporaries may live in registers), the loop shape and the
    // temporaries: its key.
    std::string key;
    for (size_t d = 0; d < extents.size(); ++d) {
      std::vector<int64_t> distinct;
      for (const SegmentCall& sc : seg_calls) distinct.push_back(sc.binding->extents[d]);
      std::sort(distinct.begin(), distinct.end());
      distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
      for (const SegmentCall& sc : seg_calls) {
        auto rank = std::lower_bound(distinct.begin(), distinct.end(), sc.binding->extents[d]) - distinct.begin();
        key += static_cast<char>('0' + (distinct.size() - 1 - static_cast<size_t>(rank)) % 64);
      }
    }
    // Which calls run the rest of their range in one loop nest: each call's
    // rank, and whether its trailing extents are its predecessor's; and, when
    // ranks differ, every extent the calls bind (a row loop joins a run's loop
    // only when their extents are equal).
    const bool mixed = std::any_of(seg_calls.begin(), seg_calls.end(),
                                   [rank](const SegmentCall& sc) { return sc.binding->extents.size() > rank; });
    for (size_t c = 0; c < seg_calls.size() && mixed; ++c) {
      for (int64_t e : seg_calls[c].binding->extents) append_word(key, e);
      for (const auto& [symbol, value] : seg_calls[c].binding->symbols) append_word(key, value);
    }
    for (size_t c = 0; c < seg_calls.size(); ++c) {
      const std::vector<int64_t>& e = seg_calls[c].binding->extents;
      key += static_cast<char>('A' + e.size());
      const std::vector<int64_t>& prev = seg_calls[c > 0 ? c - 1 : 0].binding->extents;
      const bool same = c > 0 && e.size() > rank && e.size() == prev.size() &&
                        std::equal(e.begin() + static_cast<std::ptrdiff_t>(rank), e.end(), prev.begin() + static_cast<std::ptrdiff_t>(rank));
      key += same ? '=' : '/';
    }
    seg.shape = lower::user_kernel_shape(extents);
    append_word(key, seg.shape.lanes);
    append_word(key, seg.shape.rows_per_block);
    for (bool d : dead) key += d ? 'd' : 'l';
    if (!seg.fused || seg.fused_key != key) {
      seg.fused = std::make_shared<const FusedKernel>(build_fused_kernel(seg_calls, types, dead));
      seg.fused_key = key;
      seg.compiled.reset();
      seg.compiled_checked.reset();
      seg.proof_known = false;  // another kernel: prove it again
      if (dump_wanted("fused")) dump("fused", print_kernel(seg.fused->kernel));
    }
    seg.regions = std::move(regions);
    seg.extents = std::move(extents);
    gather(seg, out, false);
  };
  // The plan's segments, their fused kernels and prepared arguments were
  // last touched before the last flush's kernels streamed the caches. Ask for
  // them in passes, each over every segment, so that the misses overlap: the
  // segments, then what they point to, then what that points to.
  for (const SegmentPlan& seg : plan) __builtin_prefetch(&seg);
  for (size_t i = 0; i < plan.size(); ++i) {
    const SegmentPlan& seg = plan[i];
    __builtin_prefetch(seg.regions.data());
    __builtin_prefetch(seg.extents.data());
    __builtin_prefetch(&prepared[i]);
    if (const FusedKernel* f = seg.fused.get()) {
      __builtin_prefetch(&f->storage_count);
      __builtin_prefetch(reinterpret_cast<const char*>(&f->storage_count) + 64);
    }
  }
  for (size_t i = 0; i < plan.size(); ++i) {
    if (const FusedKernel* f = plan[i].fused.get()) {
      __builtin_prefetch(f->scalar_sources.data());
      __builtin_prefetch(f->in_register.data());
      __builtin_prefetch(f->written.data());
    }
    __builtin_prefetch(prepared[i].args.data(), 1);
  }
  for (size_t i = 0; i < plan.size(); ++i) {
    SegmentPlan& seg = plan[i];
    if (seg.end - seg.begin == 1) continue;
    bool waits = false;
    for (int c = seg.begin; c < seg.end && !waits; ++c) {
      for (const TraceArg& a : calls[static_cast<size_t>(c)].args) waits = waits || (a.future && !a.future->ready);
    }
    if (waits) {
      continue;  // prepared when it runs
    } else if (same_detail && seg.fused) {
      gather(seg, prepared[i], true);
    } else {
      prepare(seg, prepared[i]);
    }
  }
  // Segments waiting for a value are prepared each time they run (their
  // extents may depend on it); the others keep what they were prepared with.
  cached.detail = detail;
  stats_.analysis_seconds += seconds_since(t0);
  for (size_t i = 0; i < plan.size(); ++i) {
    SegmentPlan& seg = plan[i];
    if (seg.end - seg.begin == 1) {
      run_single(calls[static_cast<size_t>(seg.begin)]);
      continue;
    }
    PreparedSegment& ready = prepared[i];
    if (!ready.ready) {
      t0 = Clock::now();
      prepare(seg, ready);
      stats_.analysis_seconds += seconds_since(t0);
    }
    const FusedKernel& f = *seg.fused;
    // The interpreter reads host memory; kernels the back end's.
    const bool interpreted = options_.mode == LazyOptions::Mode::FusedReference;
    for (const auto& [arg, a] : ready.late) {
      const bool write = f.written[arg];
      ready.args[arg] = KernelArg(interpreted ? a->host_view(write) : a->memory_view(*backend_, write));
    }
    if (interpreted) {
      Tensor result = interpret_kernel(f.kernel, ready.args);
      ++stats_.kernels;
      set_results(calls, seg.begin, seg.end, result);
      continue;
    }
    t0 = Clock::now();
    std::shared_ptr<const BackendKernel>& compiled = ready.check_indices ? seg.compiled_checked : seg.compiled;
    if (!compiled) {
      // Every storage is one parameter, so no two overlap: all __restrict__.
      lower::UserKernelShape shape = seg.shape;
      shape.restrict_array = runtime::cpu::restrict_flags(f.kernel, ready.args);
      shape.check_indices = ready.check_indices;
      compiled = backend_->compile(f.kernel, shape);
    }
    stats_.compile_seconds += seconds_since(t0);
    t0 = Clock::now();
    Tensor result = compiled->run(f.kernel, ready.args);
    stats_.run_seconds += seconds_since(t0);
    ++stats_.kernels;
    stats_.checked_kernels += ready.check_indices ? 1 : 0;
    set_results(calls, seg.begin, seg.end, result);
  }
}

}  // namespace stitch::lazy
