// One user-kernel call on the device: see user_kernel_cuda.h.
#include "runtime/cuda/user_kernel_cuda.h"

#include <cstring>
#include <map>

#include <fmt/format.h>

#include "interp/index_bounds.h"
#include "interp/kernel_binding.h"
#include "kir/user_kernel.h"
#include "runtime/cpu/user_kernel_call.h"
#include "runtime/cuda/cuda_module.h"
#include "runtime/cuda/launch_geometry.h"

namespace stitch::runtime::cuda {

namespace {

// A scalar argument in the type the CUDA emitter declares for its dtype
// (codegen/common/c_text.h, compute_type), in an 8-byte slot.
struct ScalarSlot {
  alignas(8) unsigned char bytes[8] = {};

  static ScalarSlot of(const interp::WideScalar& s) {
    ScalarSlot slot;
    auto put = [&slot](auto v) { std::memcpy(slot.bytes, &v, sizeof v); };
    switch (s.dtype) {
      case DType::f16:
      case DType::bf16:
      case DType::f32: put(static_cast<float>(s.f)); break;
      case DType::f64: put(s.f); break;
      case DType::i8: put(static_cast<int8_t>(s.i)); break;
      case DType::i32: put(static_cast<int32_t>(s.i)); break;
      case DType::i64: put(s.i); break;
      case DType::boolean: put(s.i != 0); break;
    }
    return slot;
  }
};

struct Region {
  ArrayView host;
  DeviceTensor device;
  bool written = false;
};

}  // namespace

CudaUserKernel::CudaUserKernel(std::shared_ptr<CudaContext> context, kir::LoweredUserKernel lowered, bool check_indices,
                               std::unique_ptr<CudaModule> module)
    : context_(std::move(context)), lowered_(std::move(lowered)), check_indices_(check_indices), module_(std::move(module)) {
  function_ = module_->function(lowered_.kernel.name);
}

CudaUserKernel::~CudaUserKernel() = default;

Tensor CudaUserKernel::run(const UserKernel& k, const std::vector<KernelArg>& args) const {
  const interp::KernelBinding b = interp::bind_kernel(k, args);
  const kir::Kernel& kernel = lowered_.kernel;
  context_->make_current();
  // Scalars: the scalar parameters, then the symbols (lower_user_kernel.h, calling convention).
  std::vector<ScalarSlot> slots;
  std::map<std::string, int64_t> index_scalars;  // the i64 ones, by KIR name: for the grid
  size_t scalar = 0;
  for (size_t i = 0; i < k.params.size(); ++i) {
    if (k.params[i].is_array) continue;
    slots.push_back(ScalarSlot::of(b.scalars[i]));
    if (b.scalars[i].dtype == DType::i64) index_scalars[kernel.scalars[scalar].name] = b.scalars[i].i;
    ++scalar;
  }
  for (const std::string& s : k.symbols()) {
    slots.push_back(ScalarSlot::of(interp::WideScalar{DType::i64, 0.0, b.symbols.at(s)}));
    index_scalars[kernel.scalars[scalar++].name] = b.symbols.at(s);
  }
  const int64_t blocks = b.index_count == 0 ? 0 : grid_blocks(kernel, index_scalars);
  DeviceTensor partials;
  if (k.is_reduction()) {
    partials.dtype = lowered_.accumulator_dtype;
    partials.shape = {blocks};
    if (blocks > 0) partials.buffer = DeviceBuffer(context_, partials.nbytes());
  }
  // Checked indices: the errors buffer, zeroed (lower_user_kernel.h, calling convention).
  DeviceTensor errors;
  if (check_indices_) {
    errors.dtype = DType::i64;
    errors.shape = {cpu::index_error_slots(lowered_)};
    errors.buffer = DeviceBuffer(context_, errors.nbytes());
    const DriverApi& api = context_->api();
    check(api, api.cuMemsetD8Async(errors.buffer.get(), 0, errors.nbytes(), context_->stream()), "cuMemsetD8Async");
  }
  std::vector<CUdeviceptr> pointers;
  for (size_t i = 0; i < k.params.size(); ++i) {
    if (k.params[i].is_array) pointers.push_back(reinterpret_cast<CUdeviceptr>(args[i].array.data));
  }
  if (k.is_reduction()) pointers.push_back(partials.buffer.get());
  if (check_indices_) pointers.push_back(errors.buffer.get());
  std::vector<void*> launch_args;
  for (CUdeviceptr& p : pointers) launch_args.push_back(&p);
  for (ScalarSlot& s : slots) launch_args.push_back(s.bytes);
  const DriverApi& api = context_->api();
  if (blocks > 0) {
    check(api,
          api.cuLaunchKernel(function_, static_cast<unsigned>(blocks), 1, 1,
                             static_cast<unsigned>(kernel.launch.block_size), 1, 1,
                             static_cast<unsigned>(dynamic_shared_bytes(kernel)), context_->stream(), launch_args.data(),
                             nullptr),
          fmt::format("cuLaunchKernel({})", kernel.name).c_str());
  }
  // An access out of range was skipped; the error names the first one.
  if (check_indices_ && blocks > 0) cpu::report_index_errors(k, lowered_, download(*context_, errors), args);
  if (!k.is_reduction()) return Tensor();
  Tensor host_partials = blocks > 0 ? download(*context_, partials) : Tensor(lowered_.accumulator_dtype, {0});
  return cpu::combine_partials(k, host_partials);
}

Tensor run_on_host_arrays(const CudaUserKernel& compiled, const std::shared_ptr<CudaContext>& context, const UserKernel& k,
                          const std::vector<KernelArg>& args) {

  // One device buffer per region of host memory.
  std::vector<Region> regions;
  std::vector<KernelArg> device_args = args;
  for (size_t i = 0; i < k.params.size(); ++i) {
    if (!k.params[i].is_array) continue;
    const ArrayView& v = args[i].array;
    size_t r = 0;
    for (; r < regions.size(); ++r) {
      const ArrayView& h = regions[r].host;
      if (h.data == v.data && h.nbytes() == v.nbytes()) break;
      bool overlap = v.nbytes() > 0 && h.nbytes() > 0 && v.data < h.data + h.nbytes() && h.data < v.data + v.nbytes();
      if (overlap) {
        throw UserError(fmt::format("kernel '{}': argument {} ('{}') overlaps another array argument; on CUDA, "
                                    "arguments must be the same array or not overlap",
                                    k.name, i + 1, k.params[i].name));
      }
    }
    if (r == regions.size()) {
      Tensor staged = Tensor::uninitialized(v.dtype, std::vector<int64_t>(v.shape, v.shape + v.rank));
      if (v.nbytes() > 0) std::memcpy(staged.raw(), v.data, v.nbytes());
      regions.push_back(Region{v, upload(context, staged), false});
      context->synchronize();  // `staged` must outlive its upload
    }
    ArrayAccess a = k.params[i].access;
    regions[r].written |= a == ArrayAccess::Write || a == ArrayAccess::ReadWrite;
    ArrayView& d = device_args[i].array;
    d.data = reinterpret_cast<std::byte*>(regions[r].device.buffer.get());
  }
  // A reduction's value, or an empty tensor; an index out of range throws
  // here, before any array is copied back.
  Tensor result = compiled.run(k, device_args);
  for (Region& r : regions) {
    if (!r.written || r.host.nbytes() == 0) continue;
    Tensor back = download(*context, r.device);
    std::memcpy(r.host.data, back.raw(), r.host.nbytes());
  }
  context->synchronize();
  return result;
}

}  // namespace stitch::runtime::cuda
