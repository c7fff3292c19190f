// The CUDA emitter on hand-built kernels: the Kernel IR examples (every
// composition: vector loops, block and warp reductions, barriers, packing,
// argmax over f16), every elementwise op and cast on every dtype the typing
// rule accepts, and literals of every kind, all compiled by NVRTC; golden text
// for a warp-split row reduction and for the lowered swish_small kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>

#include "codegen/cuda/cuda_emitter.h"
#include "codegen/cuda/nvrtc_check.h"
#include "cuda_corpus.h"
#include "example_kernels.h"
#include "kir/kernel_builder.h"
#include "stitch/error.h"
#include "stitch/text.h"

namespace stitch::testing {
namespace {

using codegen::cuda::compile_with_nvrtc;
using codegen::cuda::emit_cuda;
using codegen::cuda::emit_cuda_translation_unit;
using namespace stitch::kir;

// out_N[t] = OP(x[t], y[t], ...) for every op the typing rule accepts on `dtype`,
// and out_N[t] = cast(x[t], to) for every target dtype.
Kernel every_op_kernel(DType dtype) {
  KernelBuilder kb(fmt::format("every_op_{}", dtype_name(dtype)));
  kb.buffer_param("x", dtype, {int_const(32)}, Access::Read);
  kb.buffer_param("y", dtype, {int_const(32)}, Access::Read);
  kb.buffer_param("z", dtype, {int_const(32)}, Access::Read);
  kb.buffer_param("c", DType::boolean, {int_const(32)}, Access::Read);
  struct Out {
    OpKind op;
    DType result;
    int arity;
    DType cast_to;
  };
  std::vector<Out> outs;
  for (int k = 0; k < op_kind_count(); ++k) {
    const OpKind op = static_cast<OpKind>(k);
    const bool ternary = op == OpKind::Clamp || op == OpKind::Select;
    if (!is_unary_elementwise(op) && !is_binary_elementwise(op) && !ternary) continue;
    if (op == OpKind::Cast) continue;
    const int arity = ternary ? 3 : is_unary_elementwise(op) ? 1 : 2;
    std::vector<DType> in(arity, dtype);
    if (op == OpKind::Select) in[0] = DType::boolean;
    DType result;
    std::string problem;
    if (infer_op_dtype(op, in, dtype, &result, &problem)) outs.push_back({op, result, arity, dtype});
  }
  for (DType to : kAllDTypes) outs.push_back({OpKind::Cast, to, 1, to});
  for (size_t n = 0; n < outs.size(); ++n) {
    kb.buffer_param(fmt::format("out{}", n), outs[n].result, {int_const(32)}, Access::Write);
  }
  kb.launch(int_const(1), 32);
  kb.grid("b", int_const(1), [&](const Expr&) {
    kb.block("t", 32, [&](const Expr& t) {
      const Expr x = kb.load("x", {t});
      const Expr y = kb.load("y", {t});
      const Expr z = kb.load("z", {t});
      for (size_t n = 0; n < outs.size(); ++n) {
        const Out& o = outs[n];
        Expr value;
        if (o.op == OpKind::Cast) {
          value = cast(x, o.cast_to);
        } else if (o.op == OpKind::Select) {
          value = op(OpKind::Select, {kb.load("c", {t}), x, y});
        } else if (o.arity == 3) {
          value = op(o.op, {x, y, z});
        } else {
          value = o.arity == 1 ? op(o.op, {x}) : op(o.op, {x, y});
        }
        kb.store(fmt::format("out{}", n), {t}, value);
      }
    });
  });
  return kb.finish();
}

// Literals: NaN, infinities, signed zero and the most negative i64, in every dtype.
Kernel literal_kernel() {
  KernelBuilder kb("literals");
  std::vector<std::pair<std::string, Expr>> values;
  const double specials[] = {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity(), -0.0, 0.1, 65504.0};
  for (DType t : {DType::f16, DType::bf16, DType::f32, DType::f64}) {
    for (double v : specials) values.push_back({fmt::format("f{}", values.size()), float_const(v, t)});
  }
  values.push_back({"imin", int_const(std::numeric_limits<int64_t>::min())});
  values.push_back({"ibig", int_const(int64_t{1} << 40)});
  values.push_back({"i8", int_const(-128, DType::i8)});
  values.push_back({"b", bool_const(true)});
  for (const auto& [name, e] : values) kb.buffer_param("o_" + name, e.dtype(), {int_const(1)}, Access::Write);
  kb.launch(int_const(1), 32);
  kb.grid("g", int_const(1), [&](const Expr&) {
    kb.block("t", 32, [&](const Expr& t) {
      kb.if_then(op(OpKind::Eq, {t, int_const(0)}), [&] {
        for (const auto& [name, e] : values) kb.store("o_" + name, {int_const(0)}, e);
      });
    });
  });
  return kb.finish();
}

void expect_compiles(const std::string& source, const std::string& name) {
  for (const char* arch : {"sm_80", "sm_90"}) {
    const codegen::cuda::NvrtcResult r = compile_with_nvrtc(source, arch, name);
    ASSERT_TRUE(r.ok) << arch << "\n" << r.log << "\n---- source ----\n" << source;
    const codegen::cuda::ToolResult ptxas = codegen::cuda::run_ptxas(r.ptx, arch);
    EXPECT_TRUE(ptxas.ok) << ptxas.command << "\n" << ptxas.output;
  }
}

TEST(CudaEmitter, ExampleKernelsCompile) {
  using namespace stitch::kir::examples;
  expect_compiles(emit_cuda_translation_unit({add_relu_kernel(), row_normalize_kernel(), row_max_kernel(),
                                              packed_kernel(), row_argmax_kernel(), rows_in_a_loop_kernel()}),
                  "examples.cu");
}

// A tile transpose (kir::TransposeTileStmt) between two thread phases: the
// CPU's lowering makes them, and CUDA emits them as pair swaps.
TEST(CudaEmitter, TransposeTileCompiles) {
  KernelBuilder kb("flip");
  kb.buffer_param("x", DType::f32, {int_const(256)}, Access::Read);
  kb.buffer_param("y", DType::f32, {int_const(256)}, Access::Write);
  kb.shared("tile", DType::f32, 256);
  kb.launch(int_const(1), 32);
  kb.grid("b", int_const(1), [&](const Expr&) {
    kb.block("t", 32, [&](const Expr& t) {
      kb.loop("s", int_const(8), LoopLevel::Serial, [&](const Expr& s) {
        Expr at = op(OpKind::Add, {op(OpKind::Mul, {s, int_const(32)}), t});
        kb.store("tile", {at}, kb.load("x", {at}));
      });
      kb.transpose_tile("tile", 16);
      kb.loop("j", int_const(8), LoopLevel::Serial, [&](const Expr& j) {
        Expr at = op(OpKind::Add, {op(OpKind::Mul, {j, int_const(32)}), t});
        kb.store("y", {at}, kb.load("tile", {at}));
      });
    });
  });
  const std::string source = emit_cuda_translation_unit({kb.finish()});
  EXPECT_NE(source.find("stitch_r < stitch_c"), std::string::npos) << source;
  expect_compiles(source, "transpose_tile.cu");
}

TEST(CudaEmitter, EveryOpAndCastOnEveryDTypeCompiles) {
  std::vector<Kernel> kernels;
  for (DType t : kAllDTypes) kernels.push_back(every_op_kernel(t));
  kernels.push_back(literal_kernel());
  expect_compiles(emit_cuda_translation_unit(kernels), "every_op.cu");
}

TEST(CudaEmitter, NarrowFloatHeadersOnlyWhenUsed) {
  using namespace stitch::kir::examples;
  EXPECT_EQ(emit_cuda_translation_unit({add_relu_kernel()}).find("#define STITCH_NARROW_FLOATS"), std::string::npos);
  EXPECT_NE(emit_cuda_translation_unit({row_argmax_kernel()}).find("#define STITCH_NARROW_FLOATS 1"),
            std::string::npos);
}

TEST(CudaEmitter, ReservedNamesAreRefused) {
  KernelBuilder kb("threadIdx");
  kb.launch(int_const(1), 32);
  kb.grid("b", int_const(1), [&](const Expr&) { kb.block("t", 32, [&](const Expr&) {}); });
  EXPECT_THROW(emit_cuda(kb.finish()), InternalError);
}

// A kernel lowered for the CPU alone (blocks of whole rows as vector loops) is
// never emitted as CUDA.
TEST(CudaEmitter, CpuOnlyKernelsAreRefused) {
  KernelBuilder kb("rows");
  kb.launch(int_const(1), 32);
  kb.cpu_only();
  kb.grid("b", int_const(1), [&](const Expr&) { kb.block("t", 32, [&](const Expr&) {}); });
  EXPECT_THROW(emit_cuda(kb.finish()), InternalError);
}

TEST(CudaEmitter, BrokenSourceReportsNvrtcLog) {
  const codegen::cuda::NvrtcResult r =
      compile_with_nvrtc("extern \"C\" __global__ void k() { undefined_name(); }", "sm_90", "broken.cu");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("undefined_name"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("broken.cu"), std::string::npos) << r.log;
}

// Golden files live in tests/codegen_cuda/golden; STITCH_UPDATE_GOLDEN=1 rewrites them.
void expect_golden(const std::string& text, const std::string& file) {
  const std::string path = std::string(STITCH_SOURCE_DIR) + "/tests/codegen_cuda/golden/" + file;
  if (std::getenv("STITCH_UPDATE_GOLDEN")) std::ofstream(path) << text;
  std::ifstream in(path);
  ASSERT_TRUE(in) << "missing golden file " << path << " (run with STITCH_UPDATE_GOLDEN=1)";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(text, want.str()) << "golden mismatch: " << path;
}

TEST(CudaEmitter, GoldenWarpRowMax) { expect_golden(emit_cuda(kir::examples::row_max_kernel()), "row_max.cu"); }

TEST(CudaEmitter, GoldenBlockRowNormalize) {
  expect_golden(emit_cuda(kir::examples::row_normalize_kernel()), "row_normalize.cu");
}

TEST(CudaEmitter, GoldenLoweredSwishSmall) {
  const Module m = parse_file(std::string(STITCH_SOURCE_DIR) + "/bench/workloads/swish.stitch");
  for (const Graph& g : m.graphs) {
    if (g.name() != "swish_small") continue;
    LoweredKernels lowered = lower_for_cuda(g, PlannerKind::Xla, "k_swish_small");
    ASSERT_EQ(lowered.kernels.size(), 1u);
    expect_golden(emit_cuda(lowered.kernels[0]), "swish_small_xla.cu");
    return;
  }
  FAIL() << "swish_small went missing";
}

// An elementwise loop over f32[8, 3072]: its loads and store index the
// buffers by the linear value the loop delinearises, not by (i0) * (3072) +
// (i1); a broadcast operand (b, one row) still reads at its own index. The
// loads are in the loop that batches them (lower/batch_loads.h).
TEST(CudaEmitter, ElementwiseAccessesUseTheLinearIndex) {
  const Graph g = parse_module(R"(graph e(x: f32[8, 3072], b: f32[3072]) -> (f32[8, 3072]) {
  y = add(x, b)
  return y
})").graphs.front();
  LoweredKernels lowered = lower_for_cuda(g, PlannerKind::Xla, "k_e");
  ASSERT_EQ(lowered.kernels.size(), 1u);
  const std::string text = emit_cuda(lowered.kernels[0]);
  EXPECT_NE(text.find("in_x[lin_ahead]"), std::string::npos) << text;
  EXPECT_NE(text.find("out_y[lin] = "), std::string::npos) << text;
  EXPECT_EQ(text.find("* (3072) +"), std::string::npos) << text;
  EXPECT_NE(text.find("in_b[i1_ahead]"), std::string::npos) << text;
  expect_compiles(emit_cuda_translation_unit(lowered.kernels), "linear_index.cu");
}

}  // namespace
}  // namespace stitch::testing
