#include "case_backend.h"

#include <fmt/format.h>

#include <utility>

#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "runtime/cpu/kernel_cache.h"
#ifdef STITCH_HAVE_CUDA
#include "runtime/cuda/context.h"
#include "runtime/cuda/cubin_cache.h"
#include "pipeline/cuda/cuda_route.h"
#include "pipeline/cuda/device_target.h"
#include "runtime/cuda/cuda_executable.h"
#include "schedule/select.h"
#endif

namespace stitch::onnx_node {

namespace {

// Both executables run host tensors and count their kernels alike.
template <class Executable>
class ExecutableCase final : public CompiledCase {
 public:
  explicit ExecutableCase(Executable exe) : exe_(std::move(exe)) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override { return exe_.run(inputs); }
  int kernel_count() const override { return exe_.kernel_count(); }

 private:
  Executable exe_;
};

template <class Executable>
std::vector<std::unique_ptr<CompiledCase>> wrap(std::vector<Executable> batch) {
  std::vector<std::unique_ptr<CompiledCase>> cases;
  cases.reserve(batch.size());
  for (Executable& exe : batch) cases.push_back(std::make_unique<ExecutableCase<Executable>>(std::move(exe)));
  return cases;
}

class CpuBackend final : public CaseBackend {
 public:
  explicit CpuBackend(const std::filesystem::path& cache_dir) : cache_(cache_dir) {}

  std::string_view name() const override { return "CPU"; }
  std::string unsupported_reason(const Graph& canonical, PlannerKind planner) const override {
    return pipeline::cpu_unsupported_reason(canonical, planner);
  }
  std::vector<std::unique_ptr<CompiledCase>> compile_batch(const std::vector<Graph>& canonical_graphs,
                                                           PlannerKind planner) override {
    return wrap(pipeline::compile_cpu_batch(canonical_graphs, planner, cache_));
  }

 private:
  runtime::cpu::KernelCache cache_;
};

#ifdef STITCH_HAVE_CUDA
class CudaBackend final : public CaseBackend {
 public:
  CudaBackend(std::shared_ptr<runtime::cuda::CudaContext> context, const std::filesystem::path& cache_dir)
      : context_(std::move(context)),
        cache_(cache_dir),
        // What compile_batch lowers with, so a graph refused here is exactly
        // one the batch would have refused.
        rows_(schedule::RowScheduleTarget::for_device(pipeline::device_target(*context_))) {}

  std::string_view name() const override { return "CUDA"; }
  std::string description() const override { return fmt::format("CUDA on {}", context_->device().summary()); }
  std::string unsupported_reason(const Graph& canonical, PlannerKind planner) const override {
    return pipeline::cuda_unsupported_reason(canonical, planner, rows_);
  }
  std::vector<std::unique_ptr<CompiledCase>> compile_batch(const std::vector<Graph>& canonical_graphs,
                                                           PlannerKind planner) override {
    return wrap(pipeline::compile_cuda_batch(canonical_graphs, planner, context_, cache_));
  }

 private:
  std::shared_ptr<runtime::cuda::CudaContext> context_;
  runtime::cuda::CubinCache cache_;
  schedule::RowScheduleTarget rows_;
};
#endif

}  // namespace

std::unique_ptr<CaseBackend> open_backend(std::string_view name, const std::filesystem::path& cache_dir,
                                          std::string& why) {
  if (name == "cpu") return std::make_unique<CpuBackend>(cache_dir);
  if (name != "cuda" && name != "cuda-sim") {
    why = fmt::format("unknown back end '{}'", name);
    return nullptr;
  }
#ifdef STITCH_HAVE_CUDA
  // cuda-sim: the CUDA back end on the simulated driver (docs/cuda-sim.md).
  std::shared_ptr<runtime::cuda::CudaContext> context =
      name == "cuda-sim" ? runtime::cuda::CudaContext::open(&why, 0, STITCH_CUDA_SIM_DRIVER)
                         : runtime::cuda::CudaContext::open(&why);
  if (!context) return nullptr;
  return std::make_unique<CudaBackend>(std::move(context), cache_dir);
#else
  why = "this build has no CUDA back end (CMake found no CUDA toolkit)";
  return nullptr;
#endif
}

}  // namespace stitch::onnx_node
