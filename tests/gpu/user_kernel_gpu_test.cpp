// User kernels on a real GPU (label gpu; skipped without one): every kernel of
// tests/ir/kernels/corpus.stitch and the PyFuser subjects' simple ones, called
// with random arrays on the device and compared with the interpreter, and an
// aliased call (docs/kernel-language.md, Lowering (CUDA)).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "gpu_context.h"
#include "interp/kernel_binding.h"
#include "pipeline/cuda/user_kernel_cuda_route.h"
#include "runtime/cuda/user_kernel_cuda.h"
#include "stitch/text.h"
#include "tensor/compare.h"

namespace stitch {
namespace {

using gpu_testing::GpuTest;

class UserKernelGpu : public GpuTest {};

// Every array random; symbols 300 (or 2, 3 for the 3-D one's outer axes); scalars 0.75 or 3.
void call_on_gpu_and_interpreter(const std::shared_ptr<runtime::cuda::CudaContext>& context, runtime::cuda::CubinCache& cubins,
                                 const UserKernel& k, uint64_t seed) {
  SCOPED_TRACE(k.name);
  SymbolBindings dims;
  for (const std::string& s : k.symbols()) dims[s] = 300;
  std::vector<Tensor> want_arrays;
  for (const KernelParam& p : k.params) {
    if (!p.is_array) continue;
    want_arrays.emplace_back(p.dtype, concrete_shape(p.shape, dims));
    fill_random(want_arrays.back(), seed++);
  }
  std::vector<Tensor> got_arrays = want_arrays;
  auto bind = [&](std::vector<Tensor>& arrays) {
    std::vector<KernelArg> args;
    size_t a = 0;
    for (const KernelParam& p : k.params) {
      if (p.is_array) {
        args.emplace_back(arrays[a++]);
      } else if (is_float(p.dtype)) {
        args.emplace_back(0.75);
      } else {
        args.emplace_back(int64_t{3});
      }
    }
    return args;
  };
  std::vector<KernelArg> want_args = bind(want_arrays);
  std::vector<KernelArg> got_args = bind(got_arrays);
  Tensor want;
  try {
    want = interpret_kernel(k, want_args);
  } catch (const UserError& e) {
    GTEST_SKIP() << "not a valid call at these sizes: " << e.what();
  }
  Tensor got = pipeline::run_user_kernel_cuda(context, cubins, k, got_args);
  ErrorAllowance allowance;
  allowance.transcendental = print_kernel(k).find("exp(") != std::string::npos || print_kernel(k).find("log(") != std::string::npos;
  if (k.is_reduction() && is_float(k.result_dtype)) allowance.reduction_length = interp::bind_kernel(k, want_args).index_count;
  if (k.is_reduction()) {
    TensorComparison c = compare_with_interpreter(got, want, allowance);
    EXPECT_TRUE(c.ok) << c.describe();
  }
  for (size_t i = 0; i < want_arrays.size(); ++i) {
    TensorComparison c = compare_with_interpreter(got_arrays[i], want_arrays[i], allowance);
    EXPECT_TRUE(c.ok) << "array " << i << ": " << c.describe();
  }
}

TEST_F(UserKernelGpu, CorpusKernelsMatchTheInterpreter) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("stitch-uk-gpu-" + std::to_string(::getpid()));
  runtime::cuda::CubinCache cubins(dir);
  Module m = parse_file(std::string(STITCH_SOURCE_DIR) + "/tests/ir/kernels/corpus.stitch");
  uint64_t seed = 1;
  for (const UserKernel& k : m.kernels) call_on_gpu_and_interpreter(context(), cubins, k, seed += 10);
  std::filesystem::remove_all(dir);
}

TEST_F(UserKernelGpu, AnArrayPassedTwiceIsOneDeviceBuffer) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("stitch-uk-gpu-alias-" + std::to_string(::getpid()));
  runtime::cuda::CubinCache cubins(dir);
  Module m = parse_module("kernel saxpy(a: f32, x: f32[n], y: f32[n]) over i < n {\n  y[i] = a * x[i] + y[i]\n}\n");
  Tensor x(DType::f32, {5000});
  fill_random(x, 9);
  Tensor want = x;
  interpret_kernel(m.kernels[0], {2.0, want, want});
  pipeline::run_user_kernel_cuda(context(), cubins, m.kernels[0], {2.0, x, x});
  TensorComparison c = compare_with_interpreter(x, want, ErrorAllowance{});
  EXPECT_TRUE(c.ok) << c.describe();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace stitch
