// One user-kernel call on the device (runtime/cuda/user_kernel_cuda.h) on the
// fake CUDA driver: the launch's grid, block and arguments (device pointers,
// scalars in their CUDA types, symbols), one device buffer for an array passed
// twice, a reduction's partials, and no device memory left behind. The fake
// runs no kernel; results on a real GPU are tests/gpu/user_kernel_gpu_test.cpp's.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "fake_cuda_driver.h"
#include "runtime/cuda/context.h"
#include "runtime/cuda/device_allocator.h"
#include "pipeline/cuda/user_kernel_cuda_route.h"
#include "runtime/cuda/user_kernel_cuda.h"
#include "stitch/text.h"

namespace stitch::runtime::cuda {
namespace {

namespace fs = std::filesystem;

TEST(UserKernelCudaFake, LaunchGridArgumentsAndBuffers) {
  std::string why;
  std::shared_ptr<CudaContext> context = CudaContext::open(&why, 0, STITCH_FAKE_CUDA_DRIVER);
  ASSERT_TRUE(context) << why;
  fake_cuda::Inspection fake;
  ASSERT_TRUE(fake.open(STITCH_FAKE_CUDA_DRIVER, &why)) << why;
  const fs::path dir = fs::temp_directory_path() / ("stitch-uk-cuda-fake-" + std::to_string(::getpid()));
  {
    CubinCache cubins(dir);
    Module m = parse_module(R"(
kernel saxpy(a: f32, x: f32[n], y: f32[n]) over i < n {
  y[i] = a * x[i] + y[i]
}
kernel dot(x: f32[n], y: f32[n]) -> sum f64 over i < n {
  yield f64(x[i] * y[i])
}
)");
    const int64_t in_use_before = context->allocator().stats().bytes_in_use;
    const int launches_before = fake.stitch_fake_cuda_launch_count();
    const size_t sizes[] = {8, 8, 4, 8};  // x, y, a (float), n
    fake.stitch_fake_cuda_record_param_sizes(sizes, 4);
    Tensor x(DType::f32, {1000});
    Tensor y(DType::f32, {1000});
    EXPECT_EQ(pipeline::run_user_kernel_cuda(context, cubins, m.kernels[0], {2.5, x, y}).numel(), 0);
    ASSERT_EQ(fake.stitch_fake_cuda_launch_count(), launches_before + 1);
    StitchFakeCudaLaunch launch;
    ASSERT_EQ(fake.stitch_fake_cuda_get_launch(launches_before, &launch), 1);
    EXPECT_EQ(std::string(launch.function_name), "uk_saxpy");
    EXPECT_EQ(launch.grid[0], 4u);  // 1000 indices, 256 per block
    EXPECT_EQ(launch.block[0], 256u);
    CUdeviceptr px = 0;
    CUdeviceptr py = 0;
    float a = 0;
    int64_t n = 0;
    ASSERT_EQ(fake.stitch_fake_cuda_get_launch_param(launches_before, 0, &px, 8), 1);
    ASSERT_EQ(fake.stitch_fake_cuda_get_launch_param(launches_before, 1, &py, 8), 1);
    ASSERT_EQ(fake.stitch_fake_cuda_get_launch_param(launches_before, 2, &a, 4), 1);
    ASSERT_EQ(fake.stitch_fake_cuda_get_launch_param(launches_before, 3, &n, 8), 1);
    EXPECT_NE(px, py);
    EXPECT_EQ(a, 2.5f);
    EXPECT_EQ(n, 1000);

    // The same array twice: one device buffer, both parameters point at it.
    pipeline::run_user_kernel_cuda(context, cubins, m.kernels[0], {2.5, x, x});
    ASSERT_EQ(fake.stitch_fake_cuda_get_launch_param(launches_before + 1, 0, &px, 8), 1);
    ASSERT_EQ(fake.stitch_fake_cuda_get_launch_param(launches_before + 1, 1, &py, 8), 1);
    EXPECT_EQ(px, py);

    // A reduction: one launch, its value combined from the partials (zeros: the fake runs nothing).
    Tensor got = pipeline::run_user_kernel_cuda(context, cubins, m.kernels[1], {x, y});
    EXPECT_EQ(fake.stitch_fake_cuda_launch_count(), launches_before + 3);
    EXPECT_EQ(got.dtype(), DType::f64);
    // An empty range launches nothing.
    Tensor empty(DType::f32, {0});
    pipeline::run_user_kernel_cuda(context, cubins, m.kernels[0], {1.0, empty, empty});
    EXPECT_EQ(fake.stitch_fake_cuda_launch_count(), launches_before + 3);
    context->synchronize();
    EXPECT_EQ(context->allocator().stats().bytes_in_use, in_use_before);  // every buffer given back (cached)
    // A partial overlap cannot keep its meaning across two device buffers.
    Module views = parse_module("kernel k(x: f32[n], y: f32[n]) over i < n {\n  y[i] = x[i]\n}\n");
    Tensor big(DType::f32, {10});
    int64_t shape[] = {6};
    ArrayView first{big.raw(), DType::f32, shape, 1};
    ArrayView second{big.raw() + 4 * sizeof(float), DType::f32, shape, 1};
    EXPECT_THROW(pipeline::run_user_kernel_cuda(context, cubins, views.kernels[0], {first, second}), UserError);

    // An index that cannot be proven in range: the checked variant, whose
    // errors buffer follows the arrays (the fake runs nothing, so none is noted).
    Module gather = parse_module("kernel g(idx: i64[n], x: f32[m], y: f32[n]) over i < n {\n  y[i] = x[idx[i]]\n}\n");
    const int before = fake.stitch_fake_cuda_launch_count();
    const size_t gather_sizes[] = {8, 8, 8, 8, 8, 8};  // idx, x, y, index_errors, n, m
    fake.stitch_fake_cuda_record_param_sizes(gather_sizes, 6);
    Tensor idx(DType::i64, {100});
    Tensor xs(DType::f32, {10});
    Tensor ys(DType::f32, {100});
    pipeline::run_user_kernel_cuda(context, cubins, gather.kernels[0], {idx, xs, ys});
    ASSERT_EQ(fake.stitch_fake_cuda_launch_count(), before + 1);
    CUdeviceptr errors = 0;
    int64_t n_value = 0;
    ASSERT_EQ(fake.stitch_fake_cuda_get_launch_param(before, 3, &errors, 8), 1);
    ASSERT_EQ(fake.stitch_fake_cuda_get_launch_param(before, 4, &n_value, 8), 1);
    EXPECT_NE(errors, 0u);
    EXPECT_EQ(n_value, 100);
    context->synchronize();
    EXPECT_EQ(context->allocator().stats().bytes_in_use, in_use_before);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace stitch::runtime::cuda
