// Index simplification (codegen/common/index_simplify.h): the identities a
// reshape's delinearise-then-linearise needs, the cases that must stay as
// written (a dividend of unknown sign), and random index expressions whose
// simplified form must take the same value at every point of their loops.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>

#include "codegen/common/index_simplify.h"
#include "kir/kernel_builder.h"
#include "kir/printer.h"
#include "stitch/error.h"

namespace stitch::codegen::common {
namespace {

using kir::Expr;
using kir::ExprKind;
using kir::int_const;
using kir::var;

// The value of an i64 index expression with KIR's semantics (truncating
// division, x / 0 = 0, x % 0 = 0).
int64_t eval(const Expr& e, const std::map<std::string, int64_t>& env) {
  if (e->kind == ExprKind::Const) return e->int_value;
  if (e->kind == ExprKind::Var) return env.at(e->name);
  const int64_t a = eval(e->operands[0], env);
  const int64_t b = e->operands.size() > 1 ? eval(e->operands[1], env) : 0;
  switch (e->op) {
    case OpKind::Add: return a + b;
    case OpKind::Sub: return a - b;
    case OpKind::Mul: return a * b;
    case OpKind::Div: return b == 0 ? 0 : a / b;
    case OpKind::Rem: return b == 0 ? 0 : a % b;
    case OpKind::Min: return std::min(a, b);
    case OpKind::Max: return std::max(a, b);
    default: ADD_FAILURE() << "unexpected op in " << kir::print_expr(e); return 0;
  }
}

std::string text(const Expr& e) { return kir::print_expr(e); }

// A block's linear index over 344 blocks of 4 parts of 256 threads.
Expr lin() { return (var("blk") * 4 + var("part")) * 256 + var("thr"); }
const std::map<std::string, int64_t> kLoops = {{"blk", 344}, {"part", 4}, {"thr", 256}};

// lin in the rewrite's own order: terms by decreasing coefficient.
const char* kLinSum = "add(add(mul(blk, 1024), mul(part, 256)), thr)";

TEST(IndexSimplify, AReshapeOfContiguousDataIsTheLinearIndex) {
  // [512, 688] seen as [4, 128, 688]: the three digits of lin, linearised again.
  const Expr i0 = lin() / 88064, i1 = (lin() / 688) % 128, i2 = lin() % 688;
  const Expr r = (i0 * 128 + i1) * 688 + i2;
  EXPECT_EQ(text(simplify_index_expr(r, kLoops)), kLinSum);
  // Four digits, [8, 64, 43, 16].
  const Expr j0 = lin() / 44032, j1 = (lin() / 688) % 64, j2 = (lin() / 16) % 43, j3 = lin() % 16;
  const Expr s = ((j0 * 64 + j1) * 43 + j2) * 16 + j3;
  EXPECT_EQ(text(simplify_index_expr(s, kLoops)), kLinSum);
  // Row r of the [512, 688] view, column c: the 2-D index of the same element.
  EXPECT_EQ(text(simplify_index_expr((s / 688) * 688 + s % 688, kLoops)), kLinSum);
}

TEST(IndexSimplify, DigitsOfDigits) {
  const std::map<std::string, int64_t> loops = {{"x", 1 << 20}};
  const Expr x = var("x");
  EXPECT_EQ(text(simplify_index_expr((x / 4) / 8, loops)), text(x / 32));
  EXPECT_EQ(text(simplify_index_expr((x % 96) % 8, loops)), text(x % 8));
  EXPECT_EQ(text(simplify_index_expr(((x % 96) / 8) * 8 + x % 8, loops)), text(x % 96));
  // (x % 96) / 8 is (x / 8) % 12, no cheaper: left as written.
  EXPECT_EQ(text(simplify_index_expr((x % 96) / 8, loops)), text((x % 96) / 8));
  EXPECT_EQ(text(simplify_index_expr(((x / 8) % 12) * 8 + x % 8, loops)), text(x % 96));
  EXPECT_EQ(text(simplify_index_expr((x / 8) * 8 + x % 8, loops)), "x");
  // A value below the divisor is its own remainder, and its quotient is 0.
  EXPECT_EQ(text(simplify_index_expr(var("t") % 688, {{"t", 256}})), "t");
  EXPECT_EQ(text(simplify_index_expr(var("t") / 688, {{"t", 256}})), "0");
  // A multiple of the divisor leaves the remainder: (688 r + t) % 688 = t.
  EXPECT_EQ(text(simplify_index_expr((var("r") * 688 + var("t")) % 688, {{"r", 100}, {"t", 688}})), "t");
  EXPECT_EQ(text(simplify_index_expr((var("r") * 688 + var("t")) / 688, {{"r", 100}, {"t", 688}})), "r");
}

TEST(IndexSimplify, ADividendOfUnknownSignStaysAsWritten) {
  // n is a parameter: (n / 8) * 8 + n % 8 is n only for n >= 0 under C's
  // truncating division (it is n for negative n too, but the rewrite does
  // not know the digits' rules hold there), so nothing changes.
  const Expr n = var("n");
  const Expr e = (n / 4) / 8;
  EXPECT_EQ(text(simplify_index_expr(e)), text(e));
  // Linear parts still fold: no division is involved.
  EXPECT_EQ(text(simplify_index_expr((n + 3) * 2 - n * 2)), "6");
}

TEST(IndexSimplify, NeverCostsMore) {
  // Already minimal: the thread index stays last, as the emitters' thread split expects.
  const Expr e = lin();
  EXPECT_EQ(text(simplify_index_expr(e, kLoops)), text(e));
}

// The rest of a sum beside a multiple of d leaves a division and a remainder
// by d: a strip's columns start at a multiple of its width.
TEST(IndexSimplify, MultiplesOfTheDivisorLeave) {
  const std::map<std::string, int64_t> loops = {{"blk", 9}, {"thr", 256}};
  const Expr x = var("blk") * 768 + var("thr");
  EXPECT_EQ(text(simplify_index_expr(x % 64, loops)), "rem(thr, 64)");
  EXPECT_EQ(text(simplify_index_expr((x / 64) % 12, loops)), "div(thr, 64)");
}

// A kernel: a grid over blocks, a let col0 = 256 (blk / 256), an if on it and
// a thread loop storing `value(col0 + thr)` inside, simplified; the text.
std::string kernel_text(const std::function<Expr(const Expr&)>& value, const std::function<Expr(const Expr&)>& cond) {
  kir::KernelBuilder kb("facts");
  kb.buffer_param("out", DType::i64, {int_const(1 << 20)}, kir::Access::Write);
  kb.launch(int_const(2304), 256);
  kb.grid("blk", int_const(2304), [&](const Expr& blk) {
    const Expr col0 = kb.let("col0", (blk / 256) * 256);
    kb.if_then(cond(col0), [&] {
      kb.block("thr", 256, [&](const Expr& thr) {
        const Expr column = kb.let("c", col0 + thr);
        kb.store("out", {blk * 256 + thr}, value(column));
      });
    });
  });
  return kir::print_kernel(simplify_indices(kb.finish()));
}

// Inside `if (col0 >= 768 && col0 + 255 < 1536)` col0 / 256 is 3 to 5, so the
// column less 768 is a non-negative sum: its remainder by 64 is the thread's.
// The same store outside such an if stays a remainder of the whole.
TEST(IndexSimplify, AnIfsConditionBoundsItsThenBody) {
  auto value = [](const Expr& c) { return (c - 768) % 64; };
  const std::string guarded = kernel_text(value, [](const Expr& col0) {
    return kir::op(OpKind::And, {kir::op(OpKind::Ge, {col0, int_const(768)}),
                                 kir::op(OpKind::Lt, {col0 + 255, int_const(1536)})});
  });
  EXPECT_NE(guarded.find("rem(thr, 64)"), std::string::npos) << guarded;
  const std::string unguarded =
      kernel_text(value, [](const Expr& col0) { return kir::op(OpKind::Ge, {col0, int_const(0)}); });
  EXPECT_EQ(unguarded.find("rem(thr, 64)"), std::string::npos) << unguarded;
}

// Random trees over three loop variables of small extents: every point of the
// loops must give the same value before and after.
Expr random_expr(std::mt19937& rng, int depth) {
  std::uniform_int_distribution<int> pick(0, 9);
  static const char* kVars[] = {"a", "b", "c"};
  if (depth == 0 || pick(rng) < 2) {
    if (pick(rng) < 6) return var(kVars[pick(rng) % 3]);
    return int_const(std::uniform_int_distribution<int>(0, 12)(rng));
  }
  const Expr x = random_expr(rng, depth - 1);
  const int64_t d = std::uniform_int_distribution<int>(1, 12)(rng);
  switch (pick(rng)) {
    case 0:
    case 1: return x + random_expr(rng, depth - 1);
    case 2: return x - random_expr(rng, depth - 1);
    case 3: return x * d;
    case 4:
    case 5: return x / d;
    case 6:
    case 7: return x % d;
    case 8: return x * d + random_expr(rng, depth - 1);
    default: return kir::op(OpKind::Max, {x, random_expr(rng, depth - 1)});
  }
}

TEST(IndexSimplify, RandomExpressionsKeepTheirValues) {
  std::mt19937 rng(20261202);
  const std::map<std::string, int64_t> loops = {{"a", 7}, {"b", 12}, {"c", 30}};
  int rewritten = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const Expr e = random_expr(rng, 5);
    const Expr s = simplify_index_expr(e, loops);
    if (text(s) != text(e)) ++rewritten;
    std::map<std::string, int64_t> env;
    for (int64_t a = 0; a < 7; ++a) {
      for (int64_t b = 0; b < 12; ++b) {
        for (int64_t c = 0; c < 30; ++c) {
          env = {{"a", a}, {"b", b}, {"c", c}};
          ASSERT_EQ(eval(s, env), eval(e, env)) << text(e) << "\n  became " << text(s) << "\n  at a=" << a
                                                << " b=" << b << " c=" << c;
        }
      }
    }
  }
  // The test means something only if the rewrite fires often.
  EXPECT_GT(rewritten, 300);
}

}  // namespace
}  // namespace stitch::codegen::common
