// User kernels lowered for CUDA (docs/kernel-language.md, Lowering): every
// kernel of the kernel corpus and of the PyFuser subjects, restrict and not,
// with indices checked at run time and not, emitted into one translation unit that NVRTC and ptxas accept. No GPU is
// involved; running them awaits the CUDA runtime's user-kernel calls.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "codegen/cuda/cuda_emitter.h"
#include "codegen/cuda/nvrtc_check.h"
#include "kir/verifier.h"
#include "lower/lower_user_kernel.h"
#include "stitch/text.h"

namespace stitch {
namespace {

TEST(UserKernelCuda, CorpusAndSubjectsCompileWithNvrtcAndPtxas) {
  std::vector<kir::Kernel> kernels;
  for (const char* file : {"tests/ir/kernels/corpus.stitch", "bench/pyfuser/subjects.stitch"}) {
    Module m = parse_file(std::string(STITCH_SOURCE_DIR) + "/" + file);
    for (const UserKernel& k : m.kernels) {
      for (int variant = 0; variant < 3; ++variant) {
        // Not restrict; restrict; restrict with every index checked at run time.
        kir::UserKernelShape shape;
        shape.restrict_array.assign(k.params.size(), variant > 0);
        shape.check_indices = variant == 2;
        std::string name = fmt::format("uk{}_{}", kernels.size(), k.name);
        kir::LoweredUserKernel l = lower::lower_user_kernel_cuda(k, shape, name);
        EXPECT_TRUE(kir::verify_kernel(l.kernel).empty()) << name;
        kernels.push_back(std::move(l.kernel));
      }
    }
  }
  ASSERT_GT(kernels.size(), 90u);
  const std::string source = codegen::cuda::emit_cuda_translation_unit(kernels);
  EXPECT_NE(source.find("double* __restrict__ a_A"), std::string::npos);  // restrict where proven
  EXPECT_NE(source.find("double* a_A"), std::string::npos);               // and not where not
  EXPECT_NE(source.find("index_errors"), std::string::npos);              // the checked variants
  const codegen::cuda::NvrtcResult r = codegen::cuda::compile_with_nvrtc(source, "sm_90", "user_kernels.cu");
  ASSERT_TRUE(r.ok) << r.log;
  const codegen::cuda::ToolResult ptxas = codegen::cuda::run_ptxas(r.ptx, "sm_90");
  EXPECT_TRUE(ptxas.ok) << ptxas.command << "\n" << ptxas.output;
}

}  // namespace
}  // namespace stitch
