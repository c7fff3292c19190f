// The CUDA back end of lazy arrays: see cuda_lazy_backend.h.
#include "lazy/cuda_lazy_backend.h"

#include "stitch/error.h"

#ifdef STITCH_HAVE_CUDA
#include <filesystem>

#include "runtime/cpu/kernel_cache.h"
#include "runtime/cuda/context.h"
#include "runtime/cuda/cubin_cache.h"
#include "pipeline/cuda/cuda_route.h"
#include "runtime/cuda/cuda_executable.h"
#include "pipeline/cuda/user_kernel_cuda_route.h"
#include "runtime/cuda/user_kernel_cuda.h"
#endif

namespace stitch::lazy {

#ifdef STITCH_HAVE_CUDA

namespace {

namespace cuda = runtime::cuda;

class CudaCopy final : public DeviceCopy {
 public:
  CudaCopy(std::shared_ptr<cuda::CudaContext> context, size_t bytes)
      : context_(std::move(context)), buffer_(context_, bytes) {}
  uint64_t address() const override { return buffer_.get(); }
  void upload(const std::byte* host, size_t bytes) override {
    if (bytes == 0) return;
    const cuda::DriverApi& api = context_->api();
    context_->make_current();
    cuda::check(api, api.cuMemcpyHtoDAsync(buffer_.get(), host, bytes, context_->stream()), "cuMemcpyHtoDAsync");
    context_->synchronize();  // the host memory may change once this returns
  }
  void download(std::byte* host, size_t bytes) override {
    if (bytes == 0) return;
    const cuda::DriverApi& api = context_->api();
    context_->make_current();
    cuda::check(api, api.cuMemcpyDtoHAsync(host, buffer_.get(), bytes, context_->stream()), "cuMemcpyDtoHAsync");
    context_->synchronize();
  }

 private:
  std::shared_ptr<cuda::CudaContext> context_;
  cuda::DeviceBuffer buffer_;
};

class CudaKernel final : public BackendKernel {
 public:
  explicit CudaKernel(std::shared_ptr<const cuda::CudaUserKernel> compiled) : compiled_(std::move(compiled)) {}
  Tensor run(const UserKernel& kernel, const std::vector<KernelArg>& args) const override {
    return compiled_->run(kernel, args);
  }

 private:
  std::shared_ptr<const cuda::CudaUserKernel> compiled_;
};

class CudaGraph final : public BackendGraph {
 public:
  explicit CudaGraph(cuda::CudaExecutable exe) : exe_(std::move(exe)) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override { return exe_.run(inputs); }
  int kernel_count() const override { return exe_.kernel_count(); }

 private:
  cuda::CudaExecutable exe_;
};

class CudaBackend final : public LazyBackend {
 public:
  CudaBackend(std::shared_ptr<cuda::CudaContext> context, const std::string& cache_dir)
      : context_(std::move(context)),
        cubins_(cache_dir.empty() ? runtime::cpu::default_cache_directory() : std::filesystem::path(cache_dir)) {}
  Backend kind() const override { return Backend::Cuda; }
  bool on_device() const override { return true; }
  std::unique_ptr<DeviceCopy> allocate(size_t bytes) override { return std::make_unique<CudaCopy>(context_, bytes); }
  std::shared_ptr<const BackendKernel> compile(const UserKernel& kernel, const kir::UserKernelShape& shape) override {
    return std::make_shared<const CudaKernel>(pipeline::compile_user_kernel_cuda(context_, cubins_, kernel, shape));
  }
  std::unique_ptr<BackendGraph> compile_graph(const Graph& canonical) override {
    return std::make_unique<CudaGraph>(pipeline::compile_cuda(canonical, PlannerKind::Stitch, context_, cubins_));
  }
  TargetModel target() const override { return gpu_target_model(context_->device().arch()); }
  void synchronize() override {
    context_->make_current();
    context_->synchronize();
  }

 private:
  std::shared_ptr<cuda::CudaContext> context_;
  cuda::CubinCache cubins_;
};

}  // namespace

std::unique_ptr<LazyBackend> make_cuda_backend(const std::string& cache_dir) {
  std::string why;
  std::shared_ptr<cuda::CudaContext> context = cuda::CudaContext::shared(&why);
  if (!context) throw UserError("lazy arrays on Backend::Cuda: no usable NVIDIA GPU and driver: " + why);
  return make_cuda_backend(std::move(context), cache_dir);
}

std::unique_ptr<LazyBackend> make_cuda_backend(std::shared_ptr<runtime::cuda::CudaContext> context,
                                               const std::string& cache_dir) {
  return std::make_unique<CudaBackend>(std::move(context), cache_dir);
}

#else

std::unique_ptr<LazyBackend> make_cuda_backend(const std::string&) {
  throw UserError("lazy arrays on Backend::Cuda: this build of Stitch has no CUDA support (the CUDA toolkit was not "
                  "found when it was configured)");
}

std::unique_ptr<LazyBackend> make_cuda_backend(std::shared_ptr<runtime::cuda::CudaContext>, const std::string&) {
  STITCH_ASSERT(false, "make_cuda_backend on a context in a build without CUDA support");
  return nullptr;
}

#endif

}  // namespace stitch::lazy
