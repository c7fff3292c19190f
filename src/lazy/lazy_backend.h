// Where a lazy runtime's kernels run and its arrays live (docs/lazy.md, Back
// ends): the CPU, whose kernels work on the arrays' host memory, or a GPU,
// whose kernels work on a copy of each storage in device memory that the
// trace keeps current (LazyStorage). The trace plans, fuses and proves alike
// for both; only compiling, launching and memory differ.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fusion/delta_evaluator.h"
#include "lower/lower_user_kernel.h"
#include "stitch/graph.h"
#include "stitch/interpreter.h"
#include "stitch/kernel.h"
#include "stitch/runtime.h"

namespace stitch::lazy {

// A storage's copy in device memory. Both copies complete before returning.
class DeviceCopy {
 public:
  virtual ~DeviceCopy() = default;
  virtual uint64_t address() const = 0;
  // Host -> device, done when it returns.
  virtual void upload(const std::byte* host, size_t bytes) = 0;
  // Device -> host, after every kernel queued before it.
  virtual void download(std::byte* host, size_t bytes) = 0;
};

// A user kernel compiled for a back end (one lowering shape).
class BackendKernel {
 public:
  virtual ~BackendKernel() = default;
  // Runs a call bound against the kernel; array arguments point into the
  // back end's memory (host memory, or device addresses). The reduction's
  // value (0-d) or an empty tensor.
  virtual Tensor run(const UserKernel& kernel, const std::vector<KernelArg>& args) const = 0;
};

// A graph compiled for a back end: host tensors in and out.
class BackendGraph {
 public:
  virtual ~BackendGraph() = default;
  virtual std::vector<Tensor> run(const std::vector<Tensor>& inputs) = 0;
  virtual int kernel_count() const = 0;
};

class LazyBackend {
 public:
  virtual ~LazyBackend() = default;
  virtual Backend kind() const = 0;
  // Whether kernels take device addresses (from allocate()) rather than host memory.
  virtual bool on_device() const = 0;
  // Device memory of `bytes` (on_device() back ends only).
  virtual std::unique_ptr<DeviceCopy> allocate(size_t bytes) = 0;
  // Lowers `kernel` for `shape` and compiles it through the back end's cache.
  virtual std::shared_ptr<const BackendKernel> compile(const UserKernel& kernel, const kir::UserKernelShape& shape) = 0;
  // Plans (the stitch planner), lowers and compiles a canonical graph.
  virtual std::unique_ptr<BackendGraph> compile_graph(const Graph& canonical) = 0;
  // What the partition planner's cost model predicts kernels with.
  virtual TargetModel target() const = 0;
  // Waits for every queued kernel; a kernel's failure surfaces here.
  virtual void synchronize() = 0;
};

// The CPU: kernels through the kernel cache in `cache_dir` (empty: the default).
std::unique_ptr<LazyBackend> make_cpu_backend(const std::string& cache_dir);

}  // namespace stitch::lazy
