#include "runtime/cuda/gpu_dot.h"

#include <cstdint>

#include "runtime/cpu/dot_call.h"
#include "runtime/cuda/cublas.h"
#include "stitch/error.h"
#include "stitch/tensor.h"

namespace stitch::runtime::cuda {
namespace {

// Integer and bool dots: cuBLAS has no exact 64-bit integer product, so the
// operands go to the host, through the CPU's wrapping loop, and back. Slow
// (two copies and a wait), but exact; dots of integers are rare in the
// memory-bound programs Stitch is for.
void run_dot_on_host(CudaContext& context, DType dtype, const std::vector<int64_t>& a_shape,
                     const std::vector<int64_t>& b_shape, const std::vector<int64_t>& out_shape, CUdeviceptr a,
                     CUdeviceptr b, CUdeviceptr out) {
  const DriverApi& api = context.api();
  Tensor ha(dtype, a_shape), hb(dtype, b_shape), hout(dtype, out_shape);
  if (ha.nbytes()) check(api, api.cuMemcpyDtoHAsync(ha.raw(), a, ha.nbytes(), context.stream()), "cuMemcpyDtoHAsync");
  if (hb.nbytes()) check(api, api.cuMemcpyDtoHAsync(hb.raw(), b, hb.nbytes(), context.stream()), "cuMemcpyDtoHAsync");
  context.synchronize();
  cpu::run_dot(dtype, a_shape, b_shape, out_shape, ha.raw(), hb.raw(), hout.raw());
  if (hout.nbytes()) {
    check(api, api.cuMemcpyHtoDAsync(out, hout.raw(), hout.nbytes(), context.stream()), "cuMemcpyHtoDAsync");
  }
  context.synchronize();  // hout dies here
}

}  // namespace

void run_gpu_dot(CudaContext& context, DType dtype, const std::vector<int64_t>& a_shape,
                 const std::vector<int64_t>& b_shape, const std::vector<int64_t>& out_shape, CUdeviceptr a,
                 CUdeviceptr b, CUdeviceptr out) {
  // The simulated driver has no cuBLAS (docs/cuda-sim.md): its float dots
  // take the host path too, the CPU back end's dot.
  if (!is_float(dtype) || context.api().loads_ptx) {
    run_dot_on_host(context, dtype, a_shape, b_shape, out_shape, a, b, out);
    return;
  }
  run_dot_cuda(context.api(), context.cublas(), context.cublas_handle().get(), context.stream(), dtype, a_shape,
               b_shape, out_shape, a, b, out);
}

}  // namespace stitch::runtime::cuda
