#include "runtime/cuda/context.h"

#include <cstdint>
#include <cstdlib>

#include <fmt/format.h>

#include "options/options.h"
#include "runtime/cuda/cublas.h"
#include "runtime/cuda/device_allocator.h"
#include "stitch/error.h"

namespace stitch::runtime::cuda {

std::shared_ptr<CudaContext> CudaContext::open(std::string* why, int ordinal, const std::string& driver_library) {
  const DriverApi* api = load_driver(why, driver_library);
  if (!api) return nullptr;
  int count = 0;
  check(*api, api->cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (ordinal < 0 || ordinal >= count) {
    if (why) *why = fmt::format("there is no CUDA device {} (the driver reports {})", ordinal, count);
    return nullptr;
  }
  std::shared_ptr<CudaContext> context(new CudaContext());
  context->api_ = api;
  check(*api, api->cuDeviceGet(&context->device_, ordinal), "cuDeviceGet");
  // The primary context is the one the CUDA runtime and the frameworks use,
  // so Stitch's buffers and theirs live in one address space.
  if (CUresult r = api->cuDevicePrimaryCtxRetain(&context->context_, context->device_); r != CUDA_SUCCESS) {
    if (why) *why = fmt::format("cuDevicePrimaryCtxRetain failed: {}", describe_result(*api, r));
    context->context_ = nullptr;
    return nullptr;
  }
  context->make_current();
  check(*api, api->cuStreamCreate(&context->stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  context->properties_ = query_device(*api, ordinal);
  context->allocator_ = std::make_unique<DeviceAllocator>(*api);
  return context;
}

std::shared_ptr<CudaContext> CudaContext::shared(std::string* why) {
  struct Opened {
    std::shared_ptr<CudaContext> context;
    std::string why;
  };
  static const Opened opened = [] {
    Opened o;
    // $STITCH_CUDA_DRIVER names another driver library: libstitch_cuda_sim.so
    // runs Backend::Cuda (the library, lazy arrays, Python) on the PTX
    // interpreter (docs/cuda-sim.md).
    const std::string driver = environment_options().cuda_driver;
    o.context = !driver.empty() ? open(&o.why, 0, driver.c_str()) : open(&o.why);
    return o;
  }();
  if (why) *why = opened.why;
  return opened.context;
}

CudaContext::~CudaContext() {
  if (!api_ || !context_) return;
  api_->cuCtxSetCurrent(context_);
  if (stream_) api_->cuStreamSynchronize(stream_);
  cublas_handle_.reset();
  allocator_.reset();  // gives every cached block back while the context lives
  if (stream_) api_->cuStreamDestroy(stream_);
  api_->cuDevicePrimaryCtxRelease(device_);
}

void CudaContext::make_current() const { check(*api_, api_->cuCtxSetCurrent(context_), "cuCtxSetCurrent"); }

void CudaContext::synchronize() const {
  check(*api_, api_->cuStreamSynchronize(stream_), "cuStreamSynchronize (an earlier copy or kernel failed)");
}

const CublasApi& CudaContext::cublas() {
  if (!cublas_) {
    // cuBLAS would launch its own cubins on a context the simulated driver
    // made up: there, a dot that needs cuBLAS is refused (docs/cuda-sim.md).
    if (api_->loads_ptx) {
      throw UserError("--backend cuda-sim has no cuBLAS: this graph has a dot that the CUDA back end runs through "
                      "cuBLAS (dots computed inside the emitted kernels, and integer dots, do run)");
    }
    std::string why;
    cublas_ = load_cublas(&why);
    if (!cublas_) throw UserError("--backend cuda runs dots through cuBLAS, which could not be loaded: " + why);
  }
  return *cublas_;
}

CublasHandle& CudaContext::cublas_handle() {
  if (!cublas_handle_) {
    make_current();
    cublas_handle_ = std::make_unique<CublasHandle>(cublas(), stream_);
  }
  return *cublas_handle_;
}

DeviceBuffer::DeviceBuffer(std::shared_ptr<CudaContext> context, size_t bytes, std::string_view what)
    : context_(std::move(context)), bytes_(bytes) {
  // An empty tensor has no memory: kernels never dereference its pointer.
  if (bytes > 0) ptr_ = context_->allocator().allocate(bytes, what);
}

DeviceBuffer::~DeviceBuffer() { reset(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : context_(std::move(other.context_)), ptr_(other.ptr_), bytes_(other.bytes_) {
  other.ptr_ = 0;
  other.bytes_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    context_ = std::move(other.context_);
    ptr_ = other.ptr_;
    bytes_ = other.bytes_;
    other.ptr_ = 0;
    other.bytes_ = 0;
  }
  return *this;
}

void DeviceBuffer::reset() {
  // Stream order makes the block safe to hand out again at once: any later
  // user queues its work behind whatever still reads or writes it.
  if (context_ && ptr_) context_->allocator().release(ptr_);
  context_.reset();
  ptr_ = 0;
  bytes_ = 0;
}

int64_t DeviceTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

DeviceTensor upload(const std::shared_ptr<CudaContext>& context, const Tensor& host, std::string_view what) {
  DeviceTensor t;
  t.dtype = host.dtype();
  t.shape = host.shape();
  t.buffer = DeviceBuffer(context, host.nbytes(), what);
  if (host.nbytes() > 0) {
    const DriverApi& api = context->api();
    check(api, api.cuMemcpyHtoDAsync(t.buffer.get(), host.raw(), host.nbytes(), context->stream()), "cuMemcpyHtoDAsync");
  }
  return t;
}

Tensor download(CudaContext& context, const DeviceTensor& device) {
  Tensor host(device.dtype, device.shape);
  STITCH_ASSERT(host.nbytes() == device.nbytes(), "device tensor size disagrees with its shape");
  if (host.nbytes() > 0) {
    const DriverApi& api = context.api();
    check(api, api.cuMemcpyDtoHAsync(host.raw(), device.buffer.get(), host.nbytes(), context.stream()),
          "cuMemcpyDtoHAsync");
  }
  context.synchronize();
  return host;
}

}  // namespace stitch::runtime::cuda
