// Dots through cuBLAS (docs/cuda-allocator-and-cublas.md, cuBLAS). Without a
// GPU: loading, the shape -> gemm plan, and run_dot_cuda's calls checked by a
// host stand-in for cuBLAS's two gemms on the fake driver's host memory,
// against the CPU's run_dot. With a GPU (label gpu): real cuBLAS against it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "fake_driver_fixture.h"
#include "runtime/cpu/dot_call.h"
#include "runtime/cuda/cublas.h"
#include "runtime/cuda/device_allocator.h"
#include "stitch/error.h"
#include "tensor/narrow_float.h"

namespace stitch::runtime::cuda {
namespace {

using Shape = std::vector<int64_t>;

TEST(CublasLoading, MissingLibrariesGiveEveryReason) {
  std::string why;
  EXPECT_EQ(load_cublas(&why, {"libstitch-no-such-cublas.so.13", "libstitch-no-such-cublas.so.12"}), nullptr);
  EXPECT_NE(why.find("cuBLAS could not be loaded"), std::string::npos) << why;
  EXPECT_NE(why.find("libstitch-no-such-cublas.so.13"), std::string::npos) << why;
  EXPECT_NE(why.find("libstitch-no-such-cublas.so.12"), std::string::npos) << why;
}

TEST(CublasLoading, ALibraryWithoutTheEntryPointsIsRefused) {
  std::string why;
  EXPECT_EQ(load_cublas(&why, {"libc.so.6"}), nullptr);
  EXPECT_NE(why.find("lacks cublasCreate_v2"), std::string::npos) << why;
  EXPECT_NE(why.find("cublasGemmStridedBatchedEx"), std::string::npos) << why;
}

// The toolkit's cuBLAS loads without a GPU; where it is absent the reason says so.
TEST(CublasLoading, TheDefaultLibraryLoadsOrSaysWhy) {
  std::string why;
  const CublasApi* api = load_cublas(&why);
  if (!api) {
    EXPECT_NE(why.find("libcublas.so.13"), std::string::npos) << why;
    GTEST_SKIP() << "no cuBLAS: " << why;
  }
  EXPECT_NE(api->cublasCreate, nullptr);
  EXPECT_NE(api->cublasGemmEx, nullptr);
  EXPECT_NE(api->cublasGemmStridedBatchedEx, nullptr);
  EXPECT_EQ(describe_status(*api, CUBLAS_STATUS_NOT_INITIALIZED).rfind("CUBLAS_STATUS_NOT_INITIALIZED", 0), 0u);
  EXPECT_THROW(check_cublas(*api, CUBLAS_STATUS_INVALID_VALUE, "cublasGemmEx"), InternalError);
}

// ---- the shape -> gemm plan ----

GemmCall call(int64_t a_offset, int64_t b_offset, int64_t out_offset, int64_t a_stride, int64_t b_stride,
              int64_t out_stride, int64_t count) {
  return GemmCall{a_offset, b_offset, out_offset, a_stride, b_stride, out_stride, count};
}

TEST(GemmPlan, OneMatrix) {
  const GemmPlan p = plan_gemm({3, 4}, {4, 5}, {3, 5});
  EXPECT_EQ(p.m, 3);
  EXPECT_EQ(p.k, 4);
  EXPECT_EQ(p.n, 5);
  EXPECT_EQ(p.batch_count, 1);
  EXPECT_EQ(p.out_elements, 15);
  EXPECT_FALSE(p.zero_output);
  EXPECT_EQ(p.calls, std::vector<GemmCall>{call(0, 0, 0, 0, 0, 0, 1)});
}

TEST(GemmPlan, VectorsAreARowAndAColumn) {
  GemmPlan p = plan_gemm({4}, {4}, {});
  EXPECT_EQ(p.m, 1);
  EXPECT_EQ(p.n, 1);
  EXPECT_EQ(p.k, 4);
  EXPECT_EQ(p.calls, std::vector<GemmCall>{call(0, 0, 0, 0, 0, 0, 1)});
  p = plan_gemm({4}, {4, 6}, {6});
  EXPECT_EQ(p.m, 1);
  EXPECT_EQ(p.n, 6);
  p = plan_gemm({3, 4}, {4}, {3});
  EXPECT_EQ(p.m, 3);
  EXPECT_EQ(p.n, 1);
  // A row against a batch of matrices: a is broadcast (stride 0).
  p = plan_gemm({4}, {2, 4, 5}, {2, 5});
  EXPECT_EQ(p.m, 1);
  EXPECT_EQ(p.calls, std::vector<GemmCall>{call(0, 0, 0, 0, 20, 5, 2)});
  // A batch of matrices against a column: b is broadcast.
  p = plan_gemm({2, 3, 4}, {4}, {2, 3});
  EXPECT_EQ(p.n, 1);
  EXPECT_EQ(p.calls, std::vector<GemmCall>{call(0, 0, 0, 12, 0, 3, 2)});
}

TEST(GemmPlan, ContiguousBatchDimsMergeIntoOneCall) {
  const GemmPlan p = plan_gemm({6, 2, 3, 4}, {6, 2, 4, 5}, {6, 2, 3, 5});
  EXPECT_EQ(p.batch_count, 12);
  EXPECT_EQ(p.calls, std::vector<GemmCall>{call(0, 0, 0, 12, 20, 15, 12)});
}

TEST(GemmPlan, ABroadcastMatrixHasStrideZero) {
  GemmPlan p = plan_gemm({2, 3, 3, 4}, {4, 5}, {2, 3, 3, 5});
  EXPECT_EQ(p.calls, std::vector<GemmCall>{call(0, 0, 0, 12, 0, 15, 6)});
  // Size-1 batch dims broadcast too, and vanish from the plan.
  p = plan_gemm({1, 3, 4}, {7, 4, 5}, {7, 3, 5});
  EXPECT_EQ(p.calls, std::vector<GemmCall>{call(0, 0, 0, 0, 20, 15, 7)});
  // A doubly broadcast operand merges: its two zero strides continue each other.
  p = plan_gemm({2, 3, 3, 4}, {1, 1, 4, 5}, {2, 3, 3, 5});
  EXPECT_EQ(p.calls, std::vector<GemmCall>{call(0, 0, 0, 12, 0, 15, 6)});
}

TEST(GemmPlan, CrossBroadcastLoopsOverTheSmallerDim) {
  // a [2,1] and b [1,5] batches: neither dim merges with the other; the larger
  // (5) is batched inside each call, the 2 is looped over.
  GemmPlan p = plan_gemm({2, 1, 3, 4}, {1, 5, 4, 6}, {2, 5, 3, 6});
  EXPECT_EQ(p.batch_count, 10);
  EXPECT_EQ(p.calls, (std::vector<GemmCall>{call(0, 0, 0, 0, 24, 18, 5), call(12, 0, 90, 0, 24, 18, 5)}));
  // The larger dim outermost: the calls loop over the inner one.
  p = plan_gemm({4, 1, 3, 4}, {1, 2, 4, 6}, {4, 2, 3, 6});
  EXPECT_EQ(p.calls, (std::vector<GemmCall>{call(0, 0, 0, 12, 0, 36, 4), call(0, 24, 18, 12, 0, 36, 4)}));
  // Ranks differ: b's batch [2,1] against a's [5] gives the output batch [2,5].
  p = plan_gemm({5, 3, 4}, {2, 1, 4, 6}, {2, 5, 3, 6});
  EXPECT_EQ(p.calls, (std::vector<GemmCall>{call(0, 0, 0, 12, 0, 18, 5), call(0, 24, 90, 12, 0, 18, 5)}));
}

TEST(GemmPlan, EmptyDims) {
  // k == 0: the sum over nothing is zero everywhere.
  GemmPlan p = plan_gemm({2, 3, 0}, {0, 4}, {2, 3, 4});
  EXPECT_TRUE(p.zero_output);
  EXPECT_EQ(p.out_elements, 24);
  EXPECT_TRUE(p.calls.empty());
  // m, n or a batch dim of 0: nothing to write.
  for (const auto& [a, b, out] : {std::tuple<Shape, Shape, Shape>{{0, 4}, {4, 5}, {0, 5}},
                                  {{3, 4}, {4, 0}, {3, 0}},
                                  {{0, 3, 4}, {4, 5}, {0, 3, 5}},
                                  {{0, 3, 0}, {0, 5}, {0, 3, 5}}}) {
    p = plan_gemm(a, b, out);
    EXPECT_FALSE(p.zero_output);
    EXPECT_EQ(p.out_elements, 0);
    EXPECT_TRUE(p.calls.empty());
  }
}

TEST(GemmPlan, InconsistentShapesAreInternalErrors) {
  EXPECT_THROW(plan_gemm({3, 4}, {5, 6}, {3, 6}), InternalError);
  EXPECT_THROW(plan_gemm({2, 3, 4}, {3, 4, 5}, {3, 3, 5}), InternalError);
}

// ---- run_dot_cuda against the CPU, with a host stand-in for cuBLAS ----

// Column-major C = A B for op N/N, as cuBLAS defines it, on host pointers
// (the fake driver's device memory is host memory).
double load(const void* base, cudaDataType type, int64_t index) {
  switch (type) {
    case CUDA_R_32F: return static_cast<const float*>(base)[index];
    case CUDA_R_64F: return static_cast<const double*>(base)[index];
    case CUDA_R_16F: return stitch_f16_bits_to_f32(static_cast<const uint16_t*>(base)[index]);
    case CUDA_R_16BF: return stitch_bf16_bits_to_f32(static_cast<const uint16_t*>(base)[index]);
    default: ADD_FAILURE() << "unexpected cudaDataType " << type; return 0;
  }
}

void store(void* base, cudaDataType type, int64_t index, double value) {
  switch (type) {
    case CUDA_R_32F: static_cast<float*>(base)[index] = static_cast<float>(value); break;
    case CUDA_R_64F: static_cast<double*>(base)[index] = value; break;
    case CUDA_R_16F: static_cast<uint16_t*>(base)[index] = stitch_f64_to_f16_bits(value); break;
    case CUDA_R_16BF: static_cast<uint16_t*>(base)[index] = stitch_f64_to_bf16_bits(value); break;
    default: ADD_FAILURE() << "unexpected cudaDataType " << type;
  }
}

int stand_in_gemm_calls = 0;
int stand_in_batched_calls = 0;

cublasStatus_t gemm_on_host(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void* a,
                            cudaDataType a_type, int lda, long long stride_a, const void* b, cudaDataType b_type,
                            int ldb, long long stride_b, void* c, cudaDataType c_type, int ldc, long long stride_c,
                            int batch_count, cublasComputeType_t compute) {
  if (ta != CUBLAS_OP_N || tb != CUBLAS_OP_N || a_type != b_type || a_type != c_type) return CUBLAS_STATUS_INVALID_VALUE;
  if (lda < std::max(1, m) || ldb < std::max(1, k) || ldc < std::max(1, m)) return CUBLAS_STATUS_INVALID_VALUE;
  if (compute != (a_type == CUDA_R_64F ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F)) return CUBLAS_STATUS_INVALID_VALUE;
  const int64_t size = a_type == CUDA_R_64F ? 8 : a_type == CUDA_R_32F ? 4 : 2;
  for (int batch = 0; batch < batch_count; ++batch) {
    const char* ab = static_cast<const char*>(a) + batch * stride_a * size;
    const char* bb = static_cast<const char*>(b) + batch * stride_b * size;
    char* cb = static_cast<char*>(c) + batch * stride_c * size;
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < n; ++j) {
        double sum = 0;
        for (int l = 0; l < k; ++l) {
          sum += load(ab, a_type, i + int64_t{l} * lda) * load(bb, b_type, l + int64_t{j} * ldb);
        }
        store(cb, c_type, i + int64_t{j} * ldc, sum);
      }
    }
  }
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t stand_in_gemm_strided_batched(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                             int k, const void*, const void* a, cudaDataType a_type, int lda,
                                             long long stride_a, const void* b, cudaDataType b_type, int ldb,
                                             long long stride_b, const void*, void* c, cudaDataType c_type, int ldc,
                                             long long stride_c, int batch_count, cublasComputeType_t compute,
                                             cublasGemmAlgo_t) {
  ++stand_in_batched_calls;
  return gemm_on_host(ta, tb, m, n, k, a, a_type, lda, stride_a, b, b_type, ldb, stride_b, c, c_type, ldc, stride_c,
                      batch_count, compute);
}

cublasStatus_t stand_in_gemm(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                             const void*, const void* a, cudaDataType a_type, int lda, const void* b,
                             cudaDataType b_type, int ldb, const void*, void* c, cudaDataType c_type, int ldc,
                             cublasComputeType_t compute, cublasGemmAlgo_t) {
  ++stand_in_gemm_calls;
  return gemm_on_host(ta, tb, m, n, k, a, a_type, lda, 0, b, b_type, ldb, 0, c, c_type, ldc, 0, 1, compute);
}

cublasStatus_t stand_in_set_stream(cublasHandle_t, cudaStream_t) { return CUBLAS_STATUS_SUCCESS; }

class DotWithAStandInCublas : public FakeDriverTest {
 protected:
  void SetUp() override {
    FakeDriverTest::SetUp();
    if (HasFatalFailure()) return;
    driver_ = api_;
    cublas_.cublasSetStream = stand_in_set_stream;
    cublas_.cublasGemmEx = stand_in_gemm;
    cublas_.cublasGemmStridedBatchedEx = stand_in_gemm_strided_batched;
    stand_in_gemm_calls = stand_in_batched_calls = 0;
  }
  // Runs the dot both ways on small integers (every sum exact in every
  // float type, so the results must be equal bit for bit).
  void expect_matches_cpu(DType dtype, const Shape& a_shape, const Shape& b_shape, const Shape& out_shape) {
    SCOPED_TRACE(::testing::Message() << dtype_name(dtype) << " a" << ::testing::PrintToString(a_shape) << " b"
                                      << ::testing::PrintToString(b_shape));
    auto bytes_of = [&](const Shape& s) {
      int64_t n = dtype_size(dtype);
      for (int64_t d : s) n *= d;
      return static_cast<size_t>(n);
    };
    auto filled = [&](const Shape& s, int seed) {
      std::vector<char> data(bytes_of(s));
      const int64_t count = static_cast<int64_t>(data.size()) / dtype_size(dtype);
      for (int64_t i = 0; i < count; ++i) {
        store(data.data(), type_of(dtype), i, static_cast<double>((i * 5 + seed) % 7 - 3));
      }
      return data;
    };
    const std::vector<char> a = filled(a_shape, 1), b = filled(b_shape, 4);
    std::vector<char> expected(bytes_of(out_shape)), actual(bytes_of(out_shape));
    cpu::run_dot(dtype, a_shape, b_shape, out_shape, a.data(), b.data(), expected.data());
    DeviceAllocator allocator(*driver_);
    const CUdeviceptr da = allocator.allocate(a.size()), db = allocator.allocate(b.size());
    const CUdeviceptr dout = allocator.allocate(actual.size());
    check(*driver_, driver_->cuMemcpyHtoDAsync(da, a.data(), a.size(), nullptr), "copy a");
    check(*driver_, driver_->cuMemcpyHtoDAsync(db, b.data(), b.size(), nullptr), "copy b");
    run_dot_cuda(*driver_, cublas_, fake_handle(), nullptr, dtype, a_shape, b_shape, out_shape, da, db, dout);
    check(*driver_, driver_->cuMemcpyDtoHAsync(actual.data(), dout, actual.size(), nullptr), "copy out");
    EXPECT_EQ(0, std::memcmp(actual.data(), expected.data(), actual.size()));
    for (CUdeviceptr p : {da, db, dout}) allocator.release(p);
  }

  static cudaDataType type_of(DType dtype) {
    switch (dtype) {
      case DType::f64: return CUDA_R_64F;
      case DType::f16: return CUDA_R_16F;
      case DType::bf16: return CUDA_R_16BF;
      default: return CUDA_R_32F;
    }
  }
  static cublasHandle_t fake_handle() { return reinterpret_cast<cublasHandle_t>(0x10); }

  const DriverApi* driver_ = nullptr;
  CublasApi cublas_;
};

TEST_F(DotWithAStandInCublas, MatchesTheCpuOnEveryBroadcastShape) {
  const std::vector<std::tuple<Shape, Shape, Shape>> cases = {
      {{3, 4}, {4, 5}, {3, 5}},
      {{4}, {4}, {}},
      {{4}, {4, 5}, {5}},
      {{3, 4}, {4}, {3}},
      {{4}, {2, 4, 5}, {2, 5}},
      {{2, 3, 4}, {4}, {2, 3}},
      {{6, 2, 3, 4}, {6, 2, 4, 5}, {6, 2, 3, 5}},
      {{2, 3, 3, 4}, {4, 5}, {2, 3, 3, 5}},
      {{1, 3, 4}, {7, 4, 5}, {7, 3, 5}},
      {{2, 1, 3, 4}, {1, 5, 4, 6}, {2, 5, 3, 6}},
      {{4, 1, 3, 4}, {1, 2, 4, 6}, {4, 2, 3, 6}},
      {{5, 3, 4}, {2, 1, 4, 6}, {2, 5, 3, 6}},
      {{1, 1}, {1, 1}, {1, 1}},
  };
  for (DType dtype : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    for (const auto& [a, b, out] : cases) expect_matches_cpu(dtype, a, b, out);
  }
  EXPECT_GT(stand_in_gemm_calls, 0);
  EXPECT_GT(stand_in_batched_calls, 0);
}

TEST_F(DotWithAStandInCublas, AnEmptyContractionWritesZeros) {
  DeviceAllocator allocator(*driver_);
  const CUdeviceptr out = allocator.allocate(2 * 3 * 4 * sizeof(float));  // the fake fills new memory with 0xff
  const CUdeviceptr a = allocator.allocate(0), b = allocator.allocate(0);
  run_dot_cuda(*driver_, cublas_, fake_handle(), nullptr, DType::f32, {2, 3, 0}, {0, 4}, {2, 3, 4}, a, b, out);
  std::vector<float> host(24, 1.0f);
  check(*driver_, driver_->cuMemcpyDtoHAsync(host.data(), out, 24 * sizeof(float), nullptr), "copy out");
  for (float v : host) EXPECT_EQ(v, 0.0f);
  EXPECT_EQ(stand_in_gemm_calls + stand_in_batched_calls, 0);
}

TEST_F(DotWithAStandInCublas, AnEmptyOutputCallsNothing) {
  run_dot_cuda(*driver_, cublas_, fake_handle(), nullptr, DType::f32, {0, 4}, {4, 5}, {0, 5}, 0, 0, 0);
  run_dot_cuda(*driver_, cublas_, fake_handle(), nullptr, DType::f64, {0, 3, 0}, {0, 5}, {0, 3, 5}, 0, 0, 0);
  EXPECT_EQ(stand_in_gemm_calls + stand_in_batched_calls, 0);
}

TEST_F(DotWithAStandInCublas, IntegerDotsAreNotSupportedYet) {
  for (DType dtype : {DType::i8, DType::i32, DType::i64, DType::boolean}) {
    try {
      run_dot_cuda(*driver_, cublas_, fake_handle(), nullptr, dtype, {2, 2}, {2, 2}, {2, 2}, 0, 0, 0);
      ADD_FAILURE() << "expected a UserError for " << dtype_name(dtype);
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()),
                "--backend cuda: dot of " + std::string(dtype_name(dtype)) + " is not supported on the GPU yet");
    }
  }
}

// ---- label gpu: real cuBLAS on a real device against the CPU ----

TEST(CublasGpu, GemmsMatchTheCpu) {
  std::string why;
  const DriverApi* driver = load_driver(&why);
  if (!driver) GTEST_SKIP() << "no GPU: " << why;
  const CublasApi* cublas = load_cublas(&why);
  ASSERT_NE(cublas, nullptr) << why;
  CUcontext context = nullptr;
  check(*driver, driver->cuDevicePrimaryCtxRetain(&context, 0), "cuDevicePrimaryCtxRetain");
  check(*driver, driver->cuCtxSetCurrent(context), "cuCtxSetCurrent");
  CUstream stream = nullptr;
  check(*driver, driver->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  {
    DeviceAllocator allocator(*driver);
    CublasHandle handle(*cublas, stream);
    struct Case {
      DType dtype;
      Shape a, b, out;
    };
    const std::vector<Case> cases = {
        {DType::f32, {65, 130}, {130, 33}, {65, 33}},      {DType::f64, {3, 17, 9}, {9, 11}, {3, 17, 11}},
        {DType::f32, {2, 1, 8, 16}, {1, 3, 16, 4}, {2, 3, 8, 4}}, {DType::f16, {4, 64}, {64, 8}, {4, 8}},
        {DType::bf16, {2, 5, 32}, {32}, {2, 5}},           {DType::f32, {256}, {256}, {}},
        {DType::f32, {3, 0}, {0, 2}, {3, 2}},
    };
    for (const Case& c : cases) {
      SCOPED_TRACE(::testing::Message() << dtype_name(c.dtype) << " a" << ::testing::PrintToString(c.a));
      auto count = [](const Shape& s) {
        int64_t n = 1;
        for (int64_t d : s) n *= d;
        return n;
      };
      const int64_t size = dtype_size(c.dtype);
      // Small integers: exact in every type, so only the final rounding of f16/bf16 could differ.
      auto filled = [&](const Shape& s, int seed) {
        std::vector<char> data(static_cast<size_t>(count(s) * size));
        for (int64_t i = 0; i < count(s); ++i) {
          const double v = static_cast<double>((i * 5 + seed) % 9 - 4);
          if (c.dtype == DType::f32) reinterpret_cast<float*>(data.data())[i] = static_cast<float>(v);
          if (c.dtype == DType::f64) reinterpret_cast<double*>(data.data())[i] = v;
          if (c.dtype == DType::f16) reinterpret_cast<uint16_t*>(data.data())[i] = stitch_f64_to_f16_bits(v);
          if (c.dtype == DType::bf16) reinterpret_cast<uint16_t*>(data.data())[i] = stitch_f64_to_bf16_bits(v);
        }
        return data;
      };
      const std::vector<char> a = filled(c.a, 2), b = filled(c.b, 7);
      std::vector<char> expected(static_cast<size_t>(count(c.out) * size)), actual(expected.size());
      cpu::run_dot(c.dtype, c.a, c.b, c.out, a.data(), b.data(), expected.data());
      const CUdeviceptr da = allocator.allocate(a.size()), db = allocator.allocate(b.size());
      const CUdeviceptr dout = allocator.allocate(actual.size());
      check(*driver, driver->cuMemcpyHtoDAsync(da, a.data(), a.size(), stream), "copy a");
      check(*driver, driver->cuMemcpyHtoDAsync(db, b.data(), b.size(), stream), "copy b");
      run_dot_cuda(*driver, *cublas, handle.get(), stream, c.dtype, c.a, c.b, c.out, da, db, dout);
      check(*driver, driver->cuMemcpyDtoHAsync(actual.data(), dout, actual.size(), stream), "copy out");
      check(*driver, driver->cuStreamSynchronize(stream), "cuStreamSynchronize");
      EXPECT_EQ(0, std::memcmp(actual.data(), expected.data(), actual.size()));
      for (CUdeviceptr p : {da, db, dout}) allocator.release(p);
    }
  }
  check(*driver, driver->cuStreamDestroy(stream), "cuStreamDestroy");
  check(*driver, driver->cuDevicePrimaryCtxRelease(0), "cuDevicePrimaryCtxRelease");
}

}  // namespace
}  // namespace stitch::runtime::cuda
