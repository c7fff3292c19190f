// One GPU as the CUDA executable uses it (docs/cuda-runtime.md, Context):
// the device's primary context, one stream that every copy, launch and
// library call goes to (so work is ordered without events between steps),
// the caching allocator, and device tensors that give their memory back to
// it. Opening one needs the driver and a device; without them `open` says why.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/cuda/device.h"
#include "runtime/cuda/driver.h"
#include "stitch/tensor.h"

namespace stitch::runtime::cuda {

class DeviceAllocator;
class CublasHandle;
struct CublasApi;

class CudaContext {
 public:
  // The device `ordinal` through `driver_library` (tests name a fake driver),
  // or nullptr with `why`: no driver, no such device, or a context that
  // cannot be made.
  static std::shared_ptr<CudaContext> open(std::string* why, int ordinal = 0,
                                           const std::string& driver_library = "libcuda.so.1");
  // Device 0 through libcuda.so.1 (or the driver library $STITCH_CUDA_DRIVER
  // names), opened on the first call and kept for the process: what Backend::Cuda executables and lazy runtimes share, so that
  // they share one stream and one allocator. nullptr with `why` (the same
  // answer every time) where there is no usable GPU.
  static std::shared_ptr<CudaContext> shared(std::string* why);
  ~CudaContext();
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;

  const DriverApi& api() const { return *api_; }
  const DeviceProperties& device() const { return properties_; }
  CUstream stream() const { return stream_; }
  DeviceAllocator& allocator() { return *allocator_; }

  // Makes the context current on the calling thread; every entry point of
  // the executable calls it first, so any thread may use a context.
  void make_current() const;
  // Waits for everything queued on the stream; a failure of earlier
  // asynchronous work (a kernel fault) surfaces here, loudly.
  void synchronize() const;

  // cuBLAS with a handle bound to the stream, loaded on the first dot; a
  // UserError saying why when cuBLAS cannot be loaded.
  const CublasApi& cublas();
  CublasHandle& cublas_handle();

 private:
  CudaContext() = default;

  const DriverApi* api_ = nullptr;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  DeviceProperties properties_;
  std::unique_ptr<DeviceAllocator> allocator_;
  const CublasApi* cublas_ = nullptr;
  std::unique_ptr<CublasHandle> cublas_handle_;
};

// Device memory from the context's allocator, given back when destroyed.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // `what` names the buffer in an out-of-memory message.
  DeviceBuffer(std::shared_ptr<CudaContext> context, size_t bytes, std::string_view what = {});
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  CUdeviceptr get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void reset();

  std::shared_ptr<CudaContext> context_;
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

// A dense row-major tensor in device memory (the layout of stitch::Tensor).
struct DeviceTensor {
  DType dtype = DType::f32;
  std::vector<int64_t> shape;
  DeviceBuffer buffer;

  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
};

// Host -> device: queued on the stream (the host tensor must stay alive and
// unchanged until the stream is synchronised).
DeviceTensor upload(const std::shared_ptr<CudaContext>& context, const Tensor& host, std::string_view what = {});
// Device -> host, waiting for the stream.
Tensor download(CudaContext& context, const DeviceTensor& device);

}  // namespace stitch::runtime::cuda
