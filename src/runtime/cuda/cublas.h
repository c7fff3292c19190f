// Dots on the GPU through cuBLAS (docs/cuda-allocator-and-cublas.md, cuBLAS):
// loaded with dlopen like the driver, so a CUDA-enabled Stitch starts without
// it; the toolkit's cublas_v2.h supplies the types and prototypes only.
#pragma once

#include <cublas_v2.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/cuda/driver.h"
#include "stitch/dtype.h"

namespace stitch::runtime::cuda {

// The cuBLAS entry points Stitch calls. cublas_v2.h's macros map the first
// three to their _v2 symbols, which are the ones looked up.
#define STITCH_CUBLAS_FUNCTIONS(X) \
  X(cublasCreate)                  \
  X(cublasDestroy)                 \
  X(cublasSetStream)               \
  X(cublasSetMathMode)             \
  X(cublasGetStatusName)           \
  X(cublasGetStatusString)

struct CublasApi {
#define STITCH_CUBLAS_POINTER(name) decltype(&::name) name = nullptr;
  STITCH_CUBLAS_FUNCTIONS(STITCH_CUBLAS_POINTER)
#undef STITCH_CUBLAS_POINTER
  // Spelled out: in C++ cublas_api.h overloads both names with inline
  // wrappers taking the pre-11 cudaDataType compute type.
  cublasStatus_t (*cublasGemmEx)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int m, int n, int k,
                                 const void* alpha, const void* a, cudaDataType a_type, int lda, const void* b,
                                 cudaDataType b_type, int ldb, const void* beta, void* c, cudaDataType c_type, int ldc,
                                 cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  cublasStatus_t (*cublasGemmStridedBatchedEx)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int m, int n,
                                               int k, const void* alpha, const void* a, cudaDataType a_type, int lda,
                                               long long stride_a, const void* b, cudaDataType b_type, int ldb,
                                               long long stride_b, const void* beta, void* c, cudaDataType c_type,
                                               int ldc, long long stride_c, int batch_count, cublasComputeType_t,
                                               cublasGemmAlgo_t) = nullptr;
  std::string library;  // the file that was loaded
};

// cuBLAS, loaded once per process (thread-safe): libcublas.so.13, else
// libcublas.so.12. nullptr with `why` set when neither loads or one lacks an
// entry point.
const CublasApi* load_cublas(std::string* why);
// The same from the first of `libraries` that loads (tests name missing ones).
const CublasApi* load_cublas(std::string* why, const std::vector<std::string>& libraries);

// "CUBLAS_STATUS_NOT_INITIALIZED (the library was not initialized)".
std::string describe_status(const CublasApi& api, cublasStatus_t status);
// Throws stitch::InternalError "<what> failed: <describe_status>" unless success.
void check_cublas(const CublasApi& api, cublasStatus_t status, const char* what);

// A cuBLAS handle bound to `stream`, with the math mode dots need (see
// cublas.cpp); destroyed with the object. Needs the device's primary context
// current: cuBLAS works through the runtime API, which uses that context.
class CublasHandle {
 public:
  CublasHandle(const CublasApi& api, CUstream stream);
  ~CublasHandle();
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return handle_; }

 private:
  const CublasApi& api_;
  cublasHandle_t handle_ = nullptr;
};

// One strided-batched gemm of the row-major problem out = a @ b, in elements:
// matrix i of the call reads a at a_offset + i * a_stride, b at b_offset +
// i * b_stride and writes out at out_offset + i * out_stride. A stride of 0
// is a broadcast operand; a single matrix has all strides 0.
struct GemmCall {
  int64_t a_offset = 0, b_offset = 0, out_offset = 0;
  int64_t a_stride = 0, b_stride = 0, out_stride = 0;
  int64_t batch_count = 0;
  bool operator==(const GemmCall&) const = default;
};

// A dot as gemm calls (numpy matmul, docs/semantics.md, dot): a is m x k and
// b k x n per batch, row-major and contiguous. Batch dims that step
// uniformly together are merged; the largest merged dim becomes the batch of
// each call and the others are looped over, so a dot whose operands broadcast
// uniformly is one call. No calls when the output is empty; zero_output when
// k is 0.
struct GemmPlan {
  int64_t m = 0, n = 0, k = 0;
  int64_t batch_count = 0;    // matrices in the output
  int64_t out_elements = 0;   // batch_count * m * n
  bool zero_output = false;   // k == 0: the output is all zeros, no gemm
  std::vector<GemmCall> calls;
};
GemmPlan plan_gemm(const std::vector<int64_t>& a_shape, const std::vector<int64_t>& b_shape,
                   const std::vector<int64_t>& out_shape);

// out = dot(a, b) on `stream`, with the CPU's run_dot semantics (numpy matmul;
// every buffer contiguous, row-major, of `dtype`). f32 and f64 compute in
// their own precision, f16 and bf16 in f32 with the output rounded once.
// Integer and bool dots are a UserError: cuBLAS has no exact integer gemm.
// The driver is needed for k == 0, whose output is zero-filled.
void run_dot_cuda(const DriverApi& driver, const CublasApi& cublas, cublasHandle_t handle, CUstream stream,
                  DType dtype, const std::vector<int64_t>& a_shape, const std::vector<int64_t>& b_shape,
                  const std::vector<int64_t>& out_shape, CUdeviceptr a, CUdeviceptr b, CUdeviceptr out);

}  // namespace stitch::runtime::cuda
