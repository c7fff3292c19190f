// Lazy arrays and traced user-kernel calls (docs/lazy.md), PyFuser's model in
// C++: calls are recorded, not run. Reading an array to the host, reading a
// reduction's value, or flush() takes what the read depends on from the trace
// (a trace partition), fuses it where the safety check allows and the cost
// model gains, compiles it (cached by structure) and runs it. Results equal
// running every call at once, in order.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "stitch/attr.h"
#include "stitch/graph.h"
#include "stitch/kernel.h"
#include "stitch/runtime.h"
#include "stitch/tensor.h"

namespace stitch {

namespace lazy {
class Trace;
struct ArrayState;
struct ScalarState;
struct RuntimeFactory;  // internal: a runtime on a given back end (tests)
}  // namespace lazy

struct LazyOptions {
  enum class Mode : uint8_t {
    Fused,    // record, then fuse each partition (the default)
    Unfused,  // record, then run each call as its own kernel (the baseline)
    Eager,    // run each call when it is made, no trace
    Reference,  // run each call in the reference interpreter at once (slow; for tests)
    // Record and fuse as Fused, then run each fused kernel in the reference
    // interpreter, whose race checks fail on a fusion the safety check should
    // have refused (slow; for tests).
    FusedReference,
  };
  Mode mode = Mode::Fused;
  // Where kernels run and arrays live (docs/lazy.md, Back ends). Cuda: device
  // 0; each storage has a copy in device memory, uploaded when a kernel first
  // needs it after a host write and downloaded when the host reads it after
  // a kernel wrote it; the runtime's constructor throws UserError where this
  // build has no CUDA support or the machine no GPU. The Reference modes run
  // the interpreter on the host copies.
  Backend backend = Backend::Cpu;
  std::string cache_dir;  // the kernel cache's directory; empty: the default one
};

// Where time went (docs/lazy.md, Overheads).
struct LazyStats {
  int64_t calls = 0;             // calls recorded
  int64_t partitions = 0;        // trace partitions run
  int64_t kernels = 0;           // kernel launches (fused or not)
  int64_t plan_cache_hits = 0;   // partitions whose fusion plan and kernels were found by structure
  // Arrays a fused kernel kept in registers instead of memory, summed over its
  // runs: temporaries that nothing reads after the kernel (docs/lazy.md).
  int64_t arrays_in_registers = 0;
  // Kernel launches whose indices could not be proven in range, so they ran
  // with every index checked (docs/kernel-language.md, Index checks).
  int64_t checked_kernels = 0;
  double record_seconds = 0;     // inside call() and reduce()
  double analysis_seconds = 0;   // partitioning, safety checks, cost model, fused-kernel building
  double compile_seconds = 0;    // lowering, code generation, the compiler, loading
  double run_seconds = 0;        // inside kernels
};

class LazyRuntime;

// A lazy array: storage the runtime owns, written in place by calls.
class Array {
 public:
  Array() = default;
  bool valid() const { return state_ != nullptr; }
  DType dtype() const;
  const std::vector<int64_t>& shape() const;
  // Runs what this array's value depends on, then copies it out.
  Tensor to_host() const;
  // Copies `data` (same dtype and shape) into the array, after running every
  // pending call that reads or writes memory it shares: later calls see it,
  // earlier ones do not.
  void assign(const Tensor& data);
  // The array's own host memory, no copy (docs/lazy.md, Host memory): runs
  // every pending call that reads or writes memory it shares, then gives the
  // region, valid while the array (or a view of its storage) lives. Writes
  // through it are seen by calls that run after them; calls recorded later
  // write it when they run (flush, or the next read), so read it again after
  // those. On a device back end the device copy is taken as stale: the next
  // kernel touching it uploads it, and a kernel writing it makes this memory
  // stale until host_memory() or a read is called again.
  ArrayView host_memory();
  // Views: the same storage seen another way, so a call writing one is seen
  // by the others (docs/lazy.md, Views). Same elements with another shape:
  Array reshape(std::vector<int64_t> shape) const;
  // Rows [begin, end) of axis 0:
  Array slice(int64_t begin, int64_t end) const;

 private:
  friend class LazyRuntime;
  friend class lazy::Trace;
  std::shared_ptr<lazy::ArrayState> state_;
};

// The future value of a reduction call.
class Scalar {
 public:
  Scalar() = default;
  bool valid() const { return state_ != nullptr; }
  // Runs what the value depends on; a 0-d tensor of the reduction's dtype.
  Tensor value() const;
  double to_double() const;

 private:
  friend class LazyRuntime;
  friend class lazy::Trace;
  std::shared_ptr<lazy::ScalarState> state_;
};

// One argument of a lazy call: an array, a number, or the future of an
// earlier reduction (which then runs first).
struct LazyArg {
  Array array;
  Scalar future;
  bool is_float = false;
  double float_value = 0.0;
  int64_t int_value = 0;

  LazyArg(Array a) : array(std::move(a)) {}         // NOLINT: implicit, so calls read call(k, {x, y, 2.0})
  LazyArg(Scalar s) : future(std::move(s)) {}       // NOLINT
  LazyArg(double v) : is_float(true), float_value(v) {}  // NOLINT
  LazyArg(int64_t v) : int_value(v) {}              // NOLINT
  LazyArg(int v) : int_value(v) {}                  // NOLINT
};

using KernelRef = std::shared_ptr<const UserKernel>;

// A module's user kernels as shared references, by name (a parsed .stitch
// file's kernels, ready for LazyRuntime::call).
std::map<std::string, KernelRef> share_kernels(Module module);

class LazyRuntime {
 public:
  explicit LazyRuntime(LazyOptions options = {});
  ~LazyRuntime();
  LazyRuntime(const LazyRuntime&) = delete;
  LazyRuntime& operator=(const LazyRuntime&) = delete;

  Array array(const Tensor& data);  // a copy of `data`
  Array zeros(DType dtype, std::vector<int64_t> shape);

  // Records a parallel_for call. The arguments are checked now, as a call
  // that runs at once would check them (UserError).
  void call(const KernelRef& kernel, const std::vector<LazyArg>& args);
  // Records a parallel_reduce call; its value is computed when read.
  Scalar reduce(const KernelRef& kernel, const std::vector<LazyArg>& args);
  // A graph on lazy arrays (one array per parameter, in order), recorded like
  // a call that reads them and writes one fresh array per graph output. When
  // it runs, the graph planners fuse it as `stitch run` would; it never shares
  // a kernel with user-kernel calls (docs/lazy.md, Graph ops).
  std::vector<Array> apply(const Graph& graph, const std::vector<Array>& inputs);
  // One op of ops.def on arrays and numbers. An elementwise op whose array
  // operands have one shape becomes a user kernel, so it fuses with the calls
  // around it; any other op (broadcasting, reductions, layout, dots) is a
  // one-op graph (apply).
  Array op(const std::string& name, const std::vector<LazyArg>& operands, const Attrs& attrs = {});

  // Runs every recorded call, and waits for the device's kernels.
  void flush();
  // Runs every recorded call, then records (or runs) later calls in `mode`:
  // one program's arrays compared in two modes (benchmarks, debugging).
  void set_mode(LazyOptions::Mode mode);

  const LazyStats& stats() const;
  const LazyOptions& options() const;

 private:
  friend struct lazy::RuntimeFactory;
  explicit LazyRuntime(std::shared_ptr<lazy::Trace> trace);
  std::shared_ptr<lazy::Trace> trace_;
};

}  // namespace stitch
