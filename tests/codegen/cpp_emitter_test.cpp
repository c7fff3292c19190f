// Golden text of emitted C++ for one tiny kernel (the OpenMP grid loop, the
// phase loops around a barrier, an index let recomputed after it rather than
// kept per thread, in plain arithmetic since t + 1 cannot overflow), the compiler's diagnostics on a broken source,
// a uniform serial loop of phases, and the explicit refusal of constructs the
// emitter does not handle yet.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <functional>

#include "codegen/cpu/cpp_emitter.h"
#include "example_kernels.h"
#include "runtime/cpu/cpu_compiler.h"
#include "stitch/error.h"

namespace stitch::codegen::cpu::testing {
namespace {

using namespace stitch::kir;
using namespace stitch::kir::examples;

// y[b, t] = x[b, (t + 1) % 32]: each thread reads what its neighbour cached.
Kernel rotate_kernel() {
  KernelBuilder kb("rotate");
  Expr n = kb.scalar_param("N");
  kb.buffer_param("x", DType::f32, {n, int_const(32)}, Access::Read);
  kb.buffer_param("y", DType::f32, {n, int_const(32)}, Access::Write);
  kb.launch(n, 32);
  kb.shared("s", DType::f32, 32);
  kb.grid("b", n, [&](const Expr& b) {
    kb.block("t", 32, [&](const Expr& t) {
      Expr next = kb.let("next", (t + 1) % 32);
      kb.store("s", {t}, kb.load("x", {b, t}));
      kb.barrier();
      kb.store("y", {b, t}, kb.load("s", {next}));
    });
  });
  return kb.finish();
}

TEST(CppEmitter, GoldenThreadRegionSplitAtBarrier) {
  EXPECT_EQ(emit_cpp_kernel(rotate_kernel()),
            R"(extern "C" void rotate(void* const* stitch_buffers, const int64_t* stitch_scalars) {
  const float* __restrict__ const x = static_cast<const float*>(stitch_buffers[0]);
  float* __restrict__ const y = static_cast<float*>(stitch_buffers[1]);
  const int64_t N = static_cast<int64_t>(stitch_scalars[0]);
  const int64_t stitch_grid = N;
  #pragma omp parallel for schedule(static) if (stitch_grid > 1)
  for (int64_t b = 0; b < stitch_grid; ++b) {
    float s[32];
    {  // thread region: 32 threads, 2 phase(s)
      // phase 1 of 2
      #pragma omp simd
      for (int64_t t = 0; t < 32; ++t) {
        s[t] = x[(b) * (int64_t(32LL)) + (t)];
      }
      // phase 2 of 2
      #pragma omp simd
      for (int64_t t = 0; t < 32; ++t) {
        const int64_t next = int64_t(uint32_t((t + int64_t(1LL))) % 32u);
        y[(b) * (int64_t(32LL)) + (t)] = s[next];
      }
    }
  }
}
)");
}

// A grid known to be one block enters no OpenMP region: entering one, even
// under a false `if`, makes a team and wakes the pool (a futex call a run).
TEST(CppEmitter, GoldenOneBlockGridRunsWithoutAParallelRegion) {
  KernelBuilder kb("one_block");
  kb.buffer_param("x", DType::f32, {int_const(8)}, Access::Read);
  kb.buffer_param("y", DType::f32, {int_const(8)}, Access::Write);
  kb.launch(int_const(1), 8);
  kb.grid("b", int_const(1), [&](const Expr&) {
    kb.block("t", 8, [&](const Expr& t) { kb.store("y", {t}, kb.load("x", {t})); });
  });
  EXPECT_EQ(emit_cpp_kernel(kb.finish()), R"(extern "C" void one_block(void* const* stitch_buffers, const int64_t* stitch_scalars) {
  const float* __restrict__ const x = static_cast<const float*>(stitch_buffers[0]);
  float* __restrict__ const y = static_cast<float*>(stitch_buffers[1]);
  const int64_t stitch_grid = int64_t(1LL);
  {
    for (int64_t b = 0; b < stitch_grid; ++b) {
      {  // thread region: 8 threads, 1 phase(s)
        // phase 1 of 1
        #pragma omp simd
        for (int64_t t = 0; t < 8; ++t) {
          y[t] = x[t];
        }
      }
    }
  }
}
)");
}

TEST(CppEmitter, TranslationUnitEmbedsTheHelperHeaderOnce) {
  const std::string tu = emit_cpp_translation_unit({rotate_kernel(), add_relu_kernel()});
  EXPECT_NE(tu.find("stitch_round_f64_to_narrow"), std::string::npos);
  EXPECT_EQ(tu.find("static inline T stitch_max"), tu.rfind("static inline T stitch_max"));
  EXPECT_NE(tu.find("extern \"C\" void rotate("), std::string::npos);
  EXPECT_NE(tu.find("#pragma omp simd"), std::string::npos);  // add_relu's vector loop
}

// A thread region with a barrier that `place` puts inside some control flow,
// then a store.
Kernel nested_barrier_kernel(const std::function<void(KernelBuilder&, const Expr& block)>& place) {
  KernelBuilder kb("nested_barrier");
  Expr n = kb.scalar_param("N");
  kb.buffer_param("y", DType::f32, {n, int_const(32)}, Access::Write);
  kb.launch(n, 32);
  kb.grid("b", n, [&](const Expr& b) {
    kb.block("t", 32, [&](const Expr& t) {
      place(kb, b);
      kb.store("y", {b, t}, float_const(1.0, DType::f32));
    });
  });
  return kb.finish();
}

TEST(CppEmitter, BarrierInsideAUniformSerialLoopSplitsTheLoopsBody) {
  const std::string text = emit_cpp_kernel(nested_barrier_kernel([](KernelBuilder& kb, const Expr&) {
    kb.serial("i", int_const(2), [&](const Expr&) { kb.barrier(); });
  }));
  EXPECT_NE(text.find("for (int64_t i = 0; i < int64_t(2LL); ++i) {  // a serial loop of phases"), std::string::npos)
      << text;
}

TEST(CppEmitter, BarrierInsideAnIfOfThreadRegionIsRefused) {
  Kernel k = nested_barrier_kernel([](KernelBuilder& kb, const Expr& b) {
    kb.if_then(op(OpKind::Lt, {b, int_const(1)}), [&] { kb.barrier(); });
  });
  try {
    emit_cpp_kernel(k);
    FAIL() << "expected InternalError";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("C++ emitter: a barrier or reduction nested in control flow of a "
                                         "thread region not supported yet"),
              std::string::npos)
        << e.what();
  }
}

TEST(CpuCompiler, CommandIsPrintableAndCarriesTheFlags) {
  const std::string command = runtime::cpu::compile_command({}, "/tmp/k.cpp", "/tmp/k.so");
#ifdef STITCH_SANITIZED
  // A sanitized build compiles generated kernels with its sanitizers too.
  const std::string sanitizers = " -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer";
#else
  const std::string sanitizers;
#endif
  EXPECT_EQ(command,
            "c++ -std=c++17 -O3 -march=native -fopenmp -fPIC -shared -ffp-contract=off -fno-math-errno "
            "-fno-trapping-math -mprefer-vector-width=512" + sanitizers + " -o '/tmp/k.so' '/tmp/k.cpp' -lsleefgnuabi");
}

TEST(CpuCompiler, BrokenSourceReportsTheCompilersMessage) {
  try {
    runtime::cpu::compile_shared_object("extern \"C\" void broken() { undeclared_thing(); }\n",
                                        std::filesystem::path(STITCH_BINARY_DIR) / "codegen_broken_test.so");
    FAIL() << "expected CompileError";
  } catch (const runtime::cpu::CompileError& e) {
    EXPECT_NE(e.diagnostics().find("undeclared_thing"), std::string::npos) << e.diagnostics();
    EXPECT_NE(std::string(e.what()).find("undeclared_thing"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("-fopenmp"), std::string::npos);
  }
}

}  // namespace
}  // namespace stitch::codegen::cpu::testing
