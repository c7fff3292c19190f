#include "runtime/cuda/cublas.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/cuda/dl_symbols.h"
#include "stitch/error.h"

namespace stitch::runtime::cuda {

namespace {

using LoadedCublas = LoadedApi<CublasApi>;

LoadedCublas load_one(const std::string& library) {
  LoadedCublas out;
  DlSymbols lib(library);
  if (!lib.opened()) {
    out.why = lib.error();
    return out;
  }
  auto api = std::make_unique<CublasApi>();
  api->library = library;
#define STITCH_CUBLAS_RESOLVE(name) lib.resolve(api->name, STITCH_DL_SYMBOL_TEXT(name));
  STITCH_CUBLAS_FUNCTIONS(STITCH_CUBLAS_RESOLVE)
#undef STITCH_CUBLAS_RESOLVE
  lib.resolve(api->cublasGemmEx, "cublasGemmEx");
  lib.resolve(api->cublasGemmStridedBatchedEx, "cublasGemmStridedBatchedEx");
  if (!lib.missing().empty()) {
    out.why = fmt::format("{} lacks {}", library, lib.missing());
    return out;
  }
  out.api = std::move(api);
  return out;
}

LoadedCublas load_first(const std::vector<std::string>& libraries) {
  std::vector<std::string> reasons;
  for (const std::string& library : libraries) {
    LoadedCublas attempt = load_one(library);
    if (attempt.api) return attempt;
    reasons.push_back(std::move(attempt.why));
  }
  LoadedCublas out;
  out.why = fmt::format("cuBLAS could not be loaded ({})", fmt::join(reasons, "; "));
  return out;
}

int64_t product(const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= d;
  return p;
}

// One batch dim of the output with the element stride each operand and the
// output advance by along it (0 for an operand broadcast along it).
struct BatchDim {
  int64_t size = 1;
  int64_t a_stride = 0, b_stride = 0, out_stride = 0;
};

// `dims` (an operand's batch prefix, right-aligned against the output's) as
// element strides per output batch dim.
std::vector<int64_t> operand_batch_strides(const std::vector<int64_t>& dims, const std::vector<int64_t>& out_batch,
                                           int64_t matrix_elements) {
  std::vector<int64_t> strides(out_batch.size(), 0);
  int64_t stride = matrix_elements;
  for (size_t i = 0; i < dims.size(); ++i) {
    const size_t d = dims.size() - 1 - i;
    const size_t o = out_batch.size() - 1 - i;
    STITCH_ASSERT(dims[d] == 1 || dims[d] == out_batch[o], "dot operand batch dim neither 1 nor the result's");
    strides[o] = dims[d] == 1 ? 0 : stride;
    stride *= dims[d];
  }
  return strides;
}

}  // namespace

const CublasApi* load_cublas(std::string* why, const std::vector<std::string>& libraries) {
  // One attempt per list of names and process, as for the driver.
  static std::mutex mutex;
  static std::map<std::vector<std::string>, LoadedCublas> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = loaded.find(libraries);
  if (it == loaded.end()) it = loaded.emplace(libraries, load_first(libraries)).first;
  if (!it->second.api && why) *why = it->second.why;
  return it->second.api.get();
}

const CublasApi* load_cublas(std::string* why) {
  // cuBLAS 13 ships with the toolkit Stitch is built against; 12 keeps the
  // entry points used here with the same signatures.
  return load_cublas(why, {"libcublas.so.13", "libcublas.so.12"});
}

std::string describe_status(const CublasApi& api, cublasStatus_t status) {
  const char* name = api.cublasGetStatusName ? api.cublasGetStatusName(status) : nullptr;
  const char* text = api.cublasGetStatusString ? api.cublasGetStatusString(status) : nullptr;
  return fmt::format("{} ({})", name ? name : fmt::format("cublasStatus_t {}", static_cast<int>(status)),
                     text ? text : "no description");
}

void check_cublas(const CublasApi& api, cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    fail_internal(fmt::format("{} failed: {}", what, describe_status(api, status)), __FILE__, __LINE__);
  }
}

CublasHandle::CublasHandle(const CublasApi& api, CUstream stream) : api_(api) {
  check_cublas(api_, api_.cublasCreate(&handle_), "cublasCreate");
  // Default math with explicit compute types never uses TF32 (that takes
  // CUBLAS_COMPUTE_32F_FAST_TF32 or the TF32 math mode), so f32 dots stay
  // within docs/semantics.md's dot tolerance; pedantic math would also turn
  // off tensor cores for f16/bf16, for no accuracy gained. Reduced-precision
  // reductions are disallowed: a split-K f16 output would otherwise be summed
  // in f16, rounding more than once.
  const auto mode = static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
  try {
    check_cublas(api_, api_.cublasSetMathMode(handle_, mode), "cublasSetMathMode");
    check_cublas(api_, api_.cublasSetStream(handle_, stream), "cublasSetStream");
  } catch (...) {
    api_.cublasDestroy(handle_);
    throw;
  }
}

CublasHandle::~CublasHandle() {
  // Not checked: a destructor cannot throw, and nothing is left to recover.
  api_.cublasDestroy(handle_);
}

GemmPlan plan_gemm(const std::vector<int64_t>& a_shape, const std::vector<int64_t>& b_shape,
                   const std::vector<int64_t>& out_shape) {
  STITCH_ASSERT(!a_shape.empty() && !b_shape.empty(), "dot of a scalar");
  const bool a_vector = a_shape.size() == 1;
  const bool b_vector = b_shape.size() == 1;
  GemmPlan p;
  p.m = a_vector ? 1 : a_shape[a_shape.size() - 2];
  p.k = a_shape.back();
  p.n = b_vector ? 1 : b_shape.back();
  STITCH_ASSERT(p.k == (b_vector ? b_shape[0] : b_shape[b_shape.size() - 2]), "dot contraction lengths differ");
  const size_t matrix_dims = (a_vector ? 0 : 1) + (b_vector ? 0 : 1);
  STITCH_ASSERT(out_shape.size() >= matrix_dims, "dot result rank below its matrix dims");
  const std::vector<int64_t> out_batch(out_shape.begin(), out_shape.end() - static_cast<std::ptrdiff_t>(matrix_dims));
  STITCH_ASSERT(a_vector || out_shape[out_batch.size()] == p.m, "dot result rows differ from a's");
  STITCH_ASSERT(b_vector || out_shape.back() == p.n, "dot result columns differ from b's");
  const std::vector<int64_t> a_batch(a_shape.begin(), a_shape.end() - (a_vector ? 1 : 2));
  const std::vector<int64_t> b_batch(b_shape.begin(), b_shape.end() - (b_vector ? 1 : 2));
  STITCH_ASSERT(a_batch.size() <= out_batch.size() && b_batch.size() <= out_batch.size(),
                "dot operand batch rank above the result's");
  p.batch_count = product(out_batch);
  p.out_elements = p.batch_count * p.m * p.n;
  if (p.out_elements == 0) return p;
  if (p.k == 0) {
    p.zero_output = true;
    return p;
  }
  const std::vector<int64_t> a_strides = operand_batch_strides(a_batch, out_batch, p.m * p.k);
  const std::vector<int64_t> b_strides = operand_batch_strides(b_batch, out_batch, p.k * p.n);
  // Merge, innermost first, each dim into its inner neighbour when all three
  // strides continue the neighbour's run; size-1 dims vanish.
  std::vector<BatchDim> dims;  // innermost first
  int64_t out_stride = p.m * p.n;
  for (size_t i = out_batch.size(); i-- > 0;) {
    const BatchDim d{out_batch[i], a_strides[i], b_strides[i], out_stride};
    out_stride *= out_batch[i];
    if (d.size == 1) continue;
    if (!dims.empty()) {
      BatchDim& inner = dims.back();
      if (d.a_stride == inner.a_stride * inner.size && d.b_stride == inner.b_stride * inner.size &&
          d.out_stride == inner.out_stride * inner.size) {
        inner.size *= d.size;
        continue;
      }
    }
    dims.push_back(d);
  }
  if (dims.empty()) {
    p.calls.push_back(GemmCall{0, 0, 0, 0, 0, 0, 1});
    return p;
  }
  // The largest dim is batched inside each call; the rest are looped over,
  // outermost slowest, so the calls write the output in order.
  const auto largest = std::max_element(dims.begin(), dims.end(),
                                        [](const BatchDim& x, const BatchDim& y) { return x.size < y.size; });
  const BatchDim batched = *largest;
  dims.erase(largest);
  std::vector<int64_t> index(dims.size(), 0);
  const int64_t loops = p.batch_count / batched.size;
  for (int64_t l = 0; l < loops; ++l) {
    GemmCall call{0, 0, 0, batched.a_stride, batched.b_stride, batched.out_stride, batched.size};
    for (size_t d = 0; d < dims.size(); ++d) {
      call.a_offset += index[d] * dims[d].a_stride;
      call.b_offset += index[d] * dims[d].b_stride;
      call.out_offset += index[d] * dims[d].out_stride;
    }
    p.calls.push_back(call);
    for (size_t d = 0; d < dims.size(); ++d) {  // dims[0] is the innermost
      if (++index[d] < dims[d].size) break;
      index[d] = 0;
    }
  }
  return p;
}

namespace {

struct GemmTypes {
  cudaDataType data;
  cublasComputeType_t compute;
};

GemmTypes gemm_types(DType dtype) {
  switch (dtype) {
    case DType::f32: return {CUDA_R_32F, CUBLAS_COMPUTE_32F};
    case DType::f64: return {CUDA_R_64F, CUBLAS_COMPUTE_64F};
    // f32 accumulation with one rounding to the narrow output, as the
    // interpreter and the CPU's run_dot do.
    case DType::f16: return {CUDA_R_16F, CUBLAS_COMPUTE_32F};
    case DType::bf16: return {CUDA_R_16BF, CUBLAS_COMPUTE_32F};
    default:
      // No exact integer gemm in cuBLAS (its 32I compute takes i8 operands only).
      throw UserError(fmt::format("--backend cuda: dot of {} is not supported on the GPU yet", dtype_name(dtype)));
  }
}

int as_int(int64_t value, const char* what, const GemmPlan& p) {
  if (value > INT_MAX) {
    throw UserError(fmt::format("--backend cuda: dot with m={} n={} k={} over {} matrices: its {} ({}) exceeds "
                                "cuBLAS's 32-bit limit",
                                p.m, p.n, p.k, p.batch_count, what, value));
  }
  return static_cast<int>(value);
}

}  // namespace

void run_dot_cuda(const DriverApi& driver, const CublasApi& cublas, cublasHandle_t handle, CUstream stream,
                  DType dtype, const std::vector<int64_t>& a_shape, const std::vector<int64_t>& b_shape,
                  const std::vector<int64_t>& out_shape, CUdeviceptr a, CUdeviceptr b, CUdeviceptr out) {
  const GemmTypes types = gemm_types(dtype);
  const GemmPlan p = plan_gemm(a_shape, b_shape, out_shape);
  const int64_t element = dtype_size(dtype);
  if (p.zero_output) {
    // All-zero bits are +0.0 in every float format.
    check(driver, driver.cuMemsetD8Async(out, 0, static_cast<size_t>(p.out_elements * element), stream),
          "cuMemsetD8Async");
    return;
  }
  if (p.calls.empty()) return;
  const int m = as_int(p.m, "m", p), n = as_int(p.n, "n", p), k = as_int(p.k, "k", p);
  check_cublas(cublas, cublas.cublasSetStream(handle, stream), "cublasSetStream");
  const float one_f32 = 1.0f, zero_f32 = 0.0f;
  const double one_f64 = 1.0, zero_f64 = 0.0;
  const void* alpha = dtype == DType::f64 ? static_cast<const void*>(&one_f64) : &one_f32;
  const void* beta = dtype == DType::f64 ? static_cast<const void*>(&zero_f64) : &zero_f32;
  auto at = [element](CUdeviceptr base, int64_t offset) {
    return reinterpret_cast<void*>(base + static_cast<CUdeviceptr>(offset * element));
  };
  // cuBLAS is column-major, and a row-major matrix read column-major is its
  // transpose: out^T = b^T a^T is a column-major n x m gemm with b first, and
  // every leading dimension is the row length of the row-major matrix.
  for (const GemmCall& call : p.calls) {
    if (call.batch_count == 1) {
      check_cublas(cublas,
                   cublas.cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, alpha, at(b, call.b_offset),
                                       types.data, n, at(a, call.a_offset), types.data, k, beta,
                                       at(out, call.out_offset), types.data, n, types.compute, CUBLAS_GEMM_DEFAULT),
                   "cublasGemmEx");
    } else {
      check_cublas(cublas,
                   cublas.cublasGemmStridedBatchedEx(
                       handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, alpha, at(b, call.b_offset), types.data, n,
                       call.b_stride, at(a, call.a_offset), types.data, k, call.a_stride, beta,
                       at(out, call.out_offset), types.data, n, call.out_stride,
                       as_int(call.batch_count, "batch count", p), types.compute, CUBLAS_GEMM_DEFAULT),
                   "cublasGemmStridedBatchedEx");
    }
  }
}

}  // namespace stitch::runtime::cuda
