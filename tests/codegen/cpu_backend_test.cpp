// The C++ back end end to end: the example kernels of every composition are
// emitted into ONE translation unit, compiled once for the whole file (compiles
// are slow), run on small inputs and compared with values computed here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>

#include "codegen/cpu/cpp_emitter.h"
#include "example_kernels.h"
#include "runtime/cpu/cpu_compiler.h"
#include "stitch/error.h"

namespace stitch::codegen::cpu::testing {
namespace {

using namespace stitch::kir;
using namespace stitch::kir::examples;

using runtime::cpu::CpuModule;
using runtime::cpu::run_kernel;
using runtime::cpu::scalar_slot;
using runtime::cpu::scalar_slot_f64;

// Integer division and remainder by zero, saturating casts, NaN-propagating max,
// round half to even and f16 stores (docs/semantics.md), one element per thread.
Kernel semantics_probe_kernel() {
  KernelBuilder kb("semantics_probe");
  Expr n = kb.scalar_param("N");
  Expr alpha = kb.scalar_param("alpha", DType::f32);
  kb.buffer_param("ia", DType::i32, {n}, Access::Read);
  kb.buffer_param("ib", DType::i32, {n}, Access::Read);
  kb.buffer_param("f", DType::f32, {n}, Access::Read);
  kb.buffer_param("g", DType::f32, {n}, Access::Read);
  kb.buffer_param("q", DType::i32, {n}, Access::Write);
  kb.buffer_param("r", DType::i32, {n}, Access::Write);
  kb.buffer_param("sat", DType::i32, {n}, Access::Write);
  kb.buffer_param("mx", DType::f32, {n}, Access::Write);
  kb.buffer_param("rd", DType::f32, {n}, Access::Write);
  kb.buffer_param("h", DType::f16, {n}, Access::Write);
  kb.buffer_param("ng", DType::f32, {n}, Access::Write);
  Expr grid = ceil_div(n, 64);
  kb.launch(grid, 64);
  kb.grid("b", grid, [&](const Expr& b) {
    kb.block("t", 64, [&](const Expr& t) {
      Expr i = kb.let("i", b * 64 + t);
      kb.if_then(lt(i, n), [&] {
        Expr a = kb.load("ia", {i});
        Expr d = kb.load("ib", {i});
        Expr x = kb.load("f", {i});
        kb.store("q", {i}, op(OpKind::Div, {a, d}));
        kb.store("r", {i}, op(OpKind::Rem, {a, d}));
        kb.store("sat", {i}, cast(op(OpKind::Mul, {x, alpha}), DType::i32));
        kb.store("mx", {i}, op(OpKind::Max, {x, kb.load("g", {i})}));
        kb.store("rd", {i}, op(OpKind::Round, {x}));
        kb.store("h", {i}, cast(x, DType::f16));
        kb.store("ng", {i}, op(OpKind::Neg, {kb.load("g", {i})}));
      });
    });
  });
  return kb.finish();
}

// Per-warp sums in a plain (not warp-split) region, a local array that lives
// across a barrier, and a block-wide any: ws[b, w] = sum of warp w, any_neg[b].
Kernel warp_sums_kernel() {
  KernelBuilder kb("warp_sums");
  Expr n = kb.scalar_param("N");
  kb.buffer_param("x", DType::i32, {n, int_const(64)}, Access::Read);
  kb.buffer_param("ws", DType::i32, {n, int_const(2)}, Access::Write);
  kb.buffer_param("any_neg", DType::boolean, {n}, Access::Write);
  kb.launch(n, 64);
  kb.shared("flags", DType::boolean, 2);
  kb.grid("b", n, [&](const Expr& b) {
    kb.block("t", 64, [&](const Expr& t) {
      kb.local_array("keep", DType::i32, 1);
      kb.store("keep", {int_const(0)}, kb.load("x", {b, t}));
      Expr sum = kb.warp_reduce(OpKind::ReduceSum, kb.load("keep", {int_const(0)}), "warp_sum");
      kb.barrier();
      Expr negative = lt(kb.load("keep", {int_const(0)}), int_const(0, DType::i32));
      Expr any = kb.block_reduce(OpKind::ReduceAny, negative, "any", "flags");
      kb.if_then(op(OpKind::Eq, {t % 32, int_const(0)}), [&] { kb.store("ws", {b, t / 32}, sum); });
      kb.if_then(op(OpKind::Eq, {t, int_const(0)}), [&] { kb.store("any_neg", {b}, any); });
    });
  });
  return kb.finish();
}

class CpuBackend : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string source = emit_cpp_translation_unit(
        {add_relu_kernel(), row_normalize_kernel(), row_max_kernel(), packed_kernel(), row_argmax_kernel(),
         semantics_probe_kernel(), warp_sums_kernel(), rows_in_a_loop_kernel()});
    module_ = std::make_unique<CpuModule>(runtime::cpu::compile_and_load(source));
  }
  static void TearDownTestSuite() { module_.reset(); }

  static std::unique_ptr<CpuModule> module_;
};

std::unique_ptr<CpuModule> CpuBackend::module_;

TEST_F(CpuBackend, ElementwiseWithVectorLoop) {
  const int64_t n = 3;
  Tensor x(DType::f32, {n, 1024}), y(DType::f32, {n, 1024}), out(DType::f32, {n, 1024});
  fill_random(x, 1);
  fill_random(y, 2);
  run_kernel(*module_, add_relu_kernel(), {&x, &y, &out}, {scalar_slot(n)});
  for (int64_t e = 0; e < x.numel(); ++e) {
    const float sum = x.data<float>()[e] + y.data<float>()[e];
    ASSERT_EQ(out.data<float>()[e], sum > 0 ? sum : 0.0f) << "element " << e;
  }
}

TEST_F(CpuBackend, BlockReductionAndBarrier) {
  const int64_t n = 3;
  Tensor x(DType::f32, {n, 1024}), y(DType::f32, {n, 1024});
  // Multiples of 1/8: every partial sum is exact, so any combination order gives one answer.
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t c = 0; c < 1024; ++c) x.data<float>()[b * 1024 + c] = 0.125f * static_cast<float>((b * 1031 + c * 7) % 13 + 1);
  }
  run_kernel(*module_, row_normalize_kernel(), {&x, &y}, {scalar_slot(n)});
  for (int64_t b = 0; b < n; ++b) {
    float sum = 0;
    for (int64_t c = 0; c < 1024; ++c) sum += x.data<float>()[b * 1024 + c];
    for (int64_t c = 0; c < 1024; ++c) {
      ASSERT_EQ(y.data<float>()[b * 1024 + c], x.data<float>()[b * 1024 + c] / sum) << b << ", " << c;
    }
  }
}

TEST_F(CpuBackend, WarpReductionRowMaxWithPartialBlockAndNaN) {
  const int64_t m = 13;  // not a multiple of the 8 rows per block
  Tensor x(DType::f32, {m, 128}), y(DType::f32, {m});
  fill_random(x, 3);
  x.data<float>()[5 * 128 + 77] = std::numeric_limits<float>::quiet_NaN();
  run_kernel(*module_, row_max_kernel(), {&x, &y}, {scalar_slot(m)});
  for (int64_t row = 0; row < m; ++row) {
    float best = -INFINITY;
    for (int64_t c = 0; c < 128; ++c) {
      const float v = x.data<float>()[row * 128 + c];
      best = (std::isnan(best) || std::isnan(v)) ? NAN : std::max(best, v);
    }
    if (std::isnan(best)) {
      EXPECT_TRUE(std::isnan(y.data<float>()[row])) << "row " << row;
    } else {
      EXPECT_EQ(y.data<float>()[row], best) << "row " << row;
    }
  }
}

TEST_F(CpuBackend, PackedKernelWritesBothOutputs) {
  const int64_t n = 300, m = 70;  // neither a multiple of the block size
  Tensor a(DType::f32, {n}), ya(DType::f32, {n}), c(DType::f64, {m}), yc(DType::f64, {2 * m});
  fill_random(a, 4);
  fill_random(c, 5);
  run_kernel(*module_, packed_kernel(), {&a, &ya, &c, &yc}, {scalar_slot(n), scalar_slot(m)});
  for (int64_t i = 0; i < n; ++i) EXPECT_FLOAT_EQ(ya.data<float>()[i], std::exp(a.data<float>()[i])) << i;
  for (int64_t j = 0; j < m; ++j) {
    EXPECT_EQ(yc.data<double>()[2 * j], -c.data<double>()[j]) << j;
    EXPECT_EQ(yc.data<double>()[2 * j + 1], 0.0) << "stride gap " << j << " was written";
  }
}

TEST_F(CpuBackend, BlockArgmaxFirstIndexOnTiesAndNaN) {
  const int64_t n = 4;
  Tensor x(DType::f16, {n, 64}), idx(DType::i64, {n});
  fill_random(x, 6);
  for (int64_t c = 0; c < 64; ++c) x.set_f64(1 * 64 + c, 1.5);  // all tied -> 0
  x.set_f64(2 * 64 + 10, 100.0);                                // tie at 10 and 40 -> 10
  x.set_f64(2 * 64 + 40, 100.0);
  x.set_f64(3 * 64 + 50, NAN);  // the first NaN wins
  x.set_f64(3 * 64 + 20, NAN);
  x.set_f64(3 * 64 + 30, 100.0);
  run_kernel(*module_, row_argmax_kernel(), {&x, &idx}, {scalar_slot(n)});
  int64_t expected_row0 = 0;
  for (int64_t c = 1; c < 64; ++c) {
    if (x.get_f64(c) > x.get_f64(expected_row0)) expected_row0 = c;
  }
  EXPECT_EQ(idx.data<int64_t>()[0], expected_row0);
  EXPECT_EQ(idx.data<int64_t>()[1], 0);
  EXPECT_EQ(idx.data<int64_t>()[2], 10);
  EXPECT_EQ(idx.data<int64_t>()[3], 20);
}

TEST_F(CpuBackend, OpSemanticsFollowTheInterpreter) {
  const int64_t n = 7;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const int32_t min32 = std::numeric_limits<int32_t>::min();
  Tensor ia(DType::i32, {n}), ib(DType::i32, {n}), f(DType::f32, {n}), g(DType::f32, {n});
  Tensor q(DType::i32, {n}), r(DType::i32, {n}), sat(DType::i32, {n}), mx(DType::f32, {n}), rd(DType::f32, {n}),
      h(DType::f16, {n}), ng(DType::f32, {n});
  const int32_t a_values[n] = {7, -7, 5, min32, min32, 9, 0};
  const int32_t b_values[n] = {2, 2, 0, -1, 0, -4, 3};
  const float f_values[n] = {0.5f, 2.5f, -0.5f, 1e10f, -1e10f, nan, 3.75f};
  const float g_values[n] = {1.0f, nan, -1.0f, 0.0f, 0.0f, 1.0f, 3.0f};
  for (int64_t i = 0; i < n; ++i) {
    ia.data<int32_t>()[i] = a_values[i];
    ib.data<int32_t>()[i] = b_values[i];
    f.data<float>()[i] = f_values[i];
    g.data<float>()[i] = g_values[i];
  }
  run_kernel(*module_, semantics_probe_kernel(), {&ia, &ib, &f, &g, &q, &r, &sat, &mx, &rd, &h, &ng},
             {scalar_slot(n), scalar_slot_f64(2.0)});
  const int32_t q_expected[n] = {3, -3, 0, min32, 0, -2, 0};
  const int32_t r_expected[n] = {1, -1, 0, 0, 0, 1, 0};
  const int32_t sat_expected[n] = {1, 5, -1, std::numeric_limits<int32_t>::max(), min32, 0, 7};
  const float rd_expected[n] = {0.0f, 2.0f, -0.0f, 1e10f, -1e10f, nan, 4.0f};
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(q.data<int32_t>()[i], q_expected[i]) << i;
    EXPECT_EQ(r.data<int32_t>()[i], r_expected[i]) << i;
    EXPECT_EQ(sat.data<int32_t>()[i], sat_expected[i]) << i;
    if (std::isnan(rd_expected[i])) {
      EXPECT_TRUE(std::isnan(rd.data<float>()[i])) << i;
    } else {
      EXPECT_EQ(rd.data<float>()[i], rd_expected[i]) << i;
      EXPECT_EQ(std::signbit(rd.data<float>()[i]), std::signbit(rd_expected[i])) << i;
    }
    EXPECT_EQ(h.data<uint16_t>()[i], f32_to_f16_bits(f_values[i])) << i;
  }
  // neg flips the sign of zero.
  EXPECT_EQ(ng.data<float>()[3], 0.0f);
  EXPECT_TRUE(std::signbit(ng.data<float>()[3]));
  EXPECT_EQ(ng.data<float>()[0], -1.0f);
  // NaN in either operand of max gives NaN.
  EXPECT_EQ(mx.data<float>()[0], 1.0f);
  EXPECT_TRUE(std::isnan(mx.data<float>()[1]));
  EXPECT_EQ(mx.data<float>()[2], -0.5f);
  EXPECT_TRUE(std::isnan(mx.data<float>()[5]));
  EXPECT_EQ(mx.data<float>()[6], 3.75f);
}

TEST_F(CpuBackend, WarpSumsWrapAndBlockAny) {
  const int64_t n = 3;
  Tensor x(DType::i32, {n, 64}), ws(DType::i32, {n, 2}), any_neg(DType::boolean, {n});
  for (int64_t e = 0; e < x.numel(); ++e) x.data<int32_t>()[e] = static_cast<int32_t>(e % 5 + 1);
  x.data<int32_t>()[1 * 64 + 40] = -3;
  for (int64_t c = 0; c < 32; ++c) x.data<int32_t>()[2 * 64 + c] = std::numeric_limits<int32_t>::max();
  run_kernel(*module_, warp_sums_kernel(), {&x, &ws, &any_neg}, {scalar_slot(n)});
  for (int64_t b = 0; b < n; ++b) {
    bool negative = false;
    for (int64_t w = 0; w < 2; ++w) {
      uint32_t sum = 0;  // two's-complement wrap, as docs/semantics.md requires
      for (int64_t l = 0; l < 32; ++l) {
        const int32_t v = x.data<int32_t>()[b * 64 + w * 32 + l];
        sum += static_cast<uint32_t>(v);
        negative = negative || v < 0;
      }
      EXPECT_EQ(ws.data<int32_t>()[b * 2 + w], static_cast<int32_t>(sum)) << b << ", " << w;
    }
    EXPECT_EQ(any_neg.get_i64(b) != 0, negative) << b;
  }
}

TEST_F(CpuBackend, BlockReductionsInASerialLoopOfRows) {
  // The loop's body splits into phases of its own (a thread loop each side of
  // the reduction), run once per row; `col` lives across the iterations.
  const int64_t n = 4;
  Tensor x(DType::f32, {n * kRows, 64}), y(DType::f32, {n * kRows, 64}), cols(DType::f32, {n, 64});
  // Multiples of 1/8: every sum is exact, so any combination order gives one answer.
  for (int64_t e = 0; e < x.numel(); ++e) x.data<float>()[e] = 0.125f * static_cast<float>((e * 7) % 23 - 11);
  run_kernel(*module_, rows_in_a_loop_kernel(), {&x, &y, &cols}, {scalar_slot(n)});
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t t = 0; t < 64; ++t) {
      float col = 0;
      for (int64_t r = 0; r < kRows; ++r) {
        const float* row = x.data<float>() + (b * kRows + r) * 64;
        float sum = 0;
        for (int64_t c = 0; c < 64; ++c) sum += row[c];
        ASSERT_EQ(y.data<float>()[(b * kRows + r) * 64 + t], row[t] - sum / 64.0f) << b << ", " << r << ", " << t;
        col += row[t];
      }
      ASSERT_EQ(cols.data<float>()[b * 64 + t], col) << b << ", " << t;
    }
  }
}

TEST_F(CpuBackend, RejectsMismatchedArguments) {
  Tensor x(DType::f32, {2, 1024}), y(DType::f32, {2, 1024}), small(DType::f32, {2, 1000});
  Tensor wrong(DType::f64, {2, 1024});
  EXPECT_THROW(run_kernel(*module_, row_normalize_kernel(), {&x}, {scalar_slot(2)}), UserError);
  EXPECT_THROW(run_kernel(*module_, row_normalize_kernel(), {&x, &wrong}, {scalar_slot(2)}), UserError);
  EXPECT_THROW(run_kernel(*module_, row_normalize_kernel(), {&x, &small}, {scalar_slot(2)}), UserError);
}

}  // namespace
}  // namespace stitch::codegen::cpu::testing
