// The CPU back end of lazy arrays: see lazy_backend.h.
#include "lazy/lazy_backend.h"

#include <filesystem>

#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "runtime/cpu/kernel_cache.h"
#include "pipeline/user_kernel_route.h"
#include "runtime/cpu/user_kernel_call.h"
#include "stitch/error.h"

namespace stitch::lazy {

namespace {

class CpuKernel final : public BackendKernel {
 public:
  explicit CpuKernel(std::shared_ptr<const runtime::cpu::CompiledUserKernel> compiled) : compiled_(std::move(compiled)) {}
  Tensor run(const UserKernel& kernel, const std::vector<KernelArg>& args) const override {
    return compiled_->run(kernel, args);
  }

 private:
  std::shared_ptr<const runtime::cpu::CompiledUserKernel> compiled_;
};

class CpuGraph final : public BackendGraph {
 public:
  explicit CpuGraph(runtime::cpu::CpuExecutable exe) : exe_(std::move(exe)) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override { return exe_.run(inputs); }
  int kernel_count() const override { return exe_.kernel_count(); }

 private:
  runtime::cpu::CpuExecutable exe_;
};

class CpuBackend final : public LazyBackend {
 public:
  explicit CpuBackend(const std::string& cache_dir)
      : cache_(cache_dir.empty() ? runtime::cpu::default_cache_directory() : std::filesystem::path(cache_dir)) {}
  Backend kind() const override { return Backend::Cpu; }
  bool on_device() const override { return false; }
  std::unique_ptr<DeviceCopy> allocate(size_t) override {
    STITCH_ASSERT(false, "the CPU back end of lazy arrays has no device memory");
    return nullptr;
  }
  std::shared_ptr<const BackendKernel> compile(const UserKernel& kernel, const kir::UserKernelShape& shape) override {
    return std::make_shared<const CpuKernel>(pipeline::compile_user_kernel_cpu(kernel, shape, cache_));
  }
  std::unique_ptr<BackendGraph> compile_graph(const Graph& canonical) override {
    return std::make_unique<CpuGraph>(pipeline::compile_cpu(canonical, PlannerKind::Stitch, cache_));
  }
  TargetModel target() const override { return cpu_target_model(); }
  void synchronize() override {}

 private:
  runtime::cpu::KernelCache cache_;
};

}  // namespace

std::unique_ptr<LazyBackend> make_cpu_backend(const std::string& cache_dir) {
  return std::make_unique<CpuBackend>(cache_dir);
}

}  // namespace stitch::lazy
