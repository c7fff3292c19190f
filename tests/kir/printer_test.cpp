// Golden text for hand-built kernels, one per composition the lowering will
// emit: thread (elementwise), block (shared memory + barrier), warp (shuffles)
// and kernel packing. Each kernel also passes the verifier.
#include <gtest/gtest.h>

#include <cmath>

#include "example_kernels.h"
#include "kir/kernel_builder.h"
#include "kir/printer.h"
#include "kir/verifier.h"

namespace stitch::kir {
namespace {

using namespace examples;

TEST(KernelPrinter, ElementwiseWithVectorLoop) {
  Kernel k = examples::add_relu_kernel();
  EXPECT_EQ(print_kernel(k),
            "kernel add_relu(x: global f32[N, 1024] read, y: global f32[N, 1024] read, "
            "out: global f32[N, 1024] write, N: i64) launch(grid=N, block=256) {\n"
            "  for b in grid(N) {\n"
            "    for t in block(256) {\n"
            "      for v in vector(4) {\n"
            "        let c: i64 = add(mul(t, 4), v)\n"
            "        out[b, c] = relu(add(x[b, c], y[b, c]))\n"
            "      }\n"
            "    }\n"
            "  }\n"
            "}\n");
}

TEST(KernelPrinter, RowReductionThroughSharedMemory) {
  Kernel k = examples::row_normalize_kernel();
  EXPECT_EQ(print_kernel(k),
            "kernel row_normalize(x: global f32[N, 1024] read, y: global f32[N, 1024] write, N: i64) "
            "launch(grid=N, block=256) {\n"
            "  shared row: f32[1024]\n"
            "  shared partials: f32[8]\n"
            "  for b in grid(N) {\n"
            "    for t in block(256) {\n"
            "      let acc: f32 = 0.0:f32\n"
            "      for i in serial(4) {\n"
            "        let c: i64 = add(mul(i, 256), t)\n"
            "        let v: f32 = x[b, c]\n"
            "        row[c] = v\n"
            "        acc = add(acc, v)\n"
            "      }\n"
            "      sum = block.reduce_sum(acc, scratch=partials)\n"
            "      barrier\n"
            "      for j in serial(4) {\n"
            "        let c2: i64 = rem(add(add(mul(j, 256), t), 1), 1024)\n"
            "        y[b, c2] = div(row[c2], sum)\n"
            "      }\n"
            "    }\n"
            "  }\n"
            "}\n");
}

TEST(KernelPrinter, WarpShuffleRowReduction) {
  Kernel k = examples::row_max_kernel();
  EXPECT_EQ(print_kernel(k),
            "kernel row_max(x: global f32[M, 128] read, y: global f32[M] write, M: i64) "
            "launch(grid=div(add(M, 7), 8), block=256) {\n"
            "  for b in grid(div(add(M, 7), 8)) {\n"
            "    for w in block(8) {\n"
            "      for l in warp(32) {\n"
            "        let row: i64 = add(mul(b, 8), w)\n"
            "        let acc: f32 = -inf:f32\n"
            "        if lt(row, M) {\n"
            "          for i in unroll(4) {\n"
            "            acc = max(acc, x[row, add(mul(i, 32), l)])\n"
            "          }\n"
            "        }\n"
            "        best = warp.reduce_max(acc)\n"
            "        if and(lt(row, M), eq(l, 0)) {\n"
            "          y[row] = best\n"
            "        }\n"
            "      }\n"
            "    }\n"
            "  }\n"
            "}\n");
}

TEST(KernelPrinter, PrefetchOfTheNextBlock) {
  KernelBuilder kb("copy_ahead");
  Expr n = kb.scalar_param("N");
  kb.buffer_param("x", DType::f32, {n}, Access::Read);
  kb.buffer_param("y", DType::f32, {n}, Access::Write);
  kb.launch(n / 256, 256);
  kb.grid("b", n / 256, [&](const Expr& b) {
    kb.block("t", 256, [&](const Expr& t) { kb.store("y", {b * 256 + t}, kb.load("x", {b * 256 + t})); });
    kb.prefetch("x", (b + 1) * 256, int_const(256));
  });
  EXPECT_EQ(print_kernel(kb.finish()),
            "kernel copy_ahead(x: global f32[N] read, y: global f32[N] write, N: i64) "
            "launch(grid=div(N, 256), block=256) {\n"
            "  for b in grid(div(N, 256)) {\n"
            "    for t in block(256) {\n"
            "      y[add(mul(b, 256), t)] = x[add(mul(b, 256), t)]\n"
            "    }\n"
            "    prefetch x[mul(add(b, 1), 256) +: 256]\n"
            "  }\n"
            "}\n");
}

TEST(KernelPrinter, TransposeTileBetweenTwoPhases) {
  KernelBuilder kb("flip");
  kb.buffer_param("x", DType::f32, {int_const(256)}, Access::Read);
  kb.buffer_param("y", DType::f32, {int_const(256)}, Access::Write);
  kb.shared("tile", DType::f32, 256);
  kb.launch(int_const(1), 16);
  kb.grid("b", int_const(1), [&](const Expr&) {
    kb.block("t", 16, [&](const Expr& t) {
      kb.loop("s", int_const(16), LoopLevel::Serial, [&](const Expr& s) {
        kb.store("tile", {s * 16 + t}, kb.load("x", {s * 16 + t}));
      });
      kb.transpose_tile("tile", 16);
      kb.loop("j", int_const(16), LoopLevel::Serial, [&](const Expr& j) {
        kb.store("y", {j * 16 + t}, kb.load("tile", {j * 16 + t}));
      });
    });
  });
  const std::string text = print_kernel(kb.finish());
  EXPECT_NE(text.find("      }\n      transpose_tile tile[16x16]\n      for j in serial(16) {\n"), std::string::npos)
      << text;
}

TEST(KernelPrinter, PackedKernelWithBlockRanges) {
  Kernel k = examples::packed_kernel();
  EXPECT_EQ(print_kernel(k),
            "kernel packed(a: global f32[N] read, ya: global f32[N] write, c: global f64[M] read, "
            "yc: global f64[M] strides[2] write, N: i64, M: i64) "
            "launch(grid=add(div(add(N, 255), 256), div(add(M, 255), 256)), block=256) {\n"
            "  for b in grid(add(div(add(N, 255), 256), div(add(M, 255), 256))) {\n"
            "    let blocks_a: i64 = div(add(N, 255), 256)\n"
            "    if lt(b, blocks_a) {\n"
            "      for t in block(256) {\n"
            "        let i: i64 = add(mul(b, 256), t)\n"
            "        if lt(i, N) {\n"
            "          ya[i] = exp(a[i])\n"
            "        }\n"
            "      }\n"
            "    } else {\n"
            "      for t2 in block(256) {\n"
            "        let j: i64 = add(mul(sub(b, blocks_a), 256), t2)\n"
            "        if lt(j, M) {\n"
            "          yc[j] = neg(c[j])\n"
            "        }\n"
            "      }\n"
            "    }\n"
            "  }\n"
            "}\n");
}

TEST(KernelPrinter, BlockArgmaxWithLocalArray) {
  Kernel k = examples::row_argmax_kernel();
  EXPECT_EQ(print_kernel(k),
            "kernel row_argmax(x: global f16[N, 64] read, idx: global i64[N] write, N: i64) "
            "launch(grid=N, block=64) {\n"
            "  shared vals: f32[2]\n"
            "  shared poss: i64[2]\n"
            "  for b in grid(N) {\n"
            "    for t in block(64) {\n"
            "      local cache: f32[1]\n"
            "      cache[0] = cast(x[b, t], to=f32)\n"
            "      best, at = block.argmax(cache[0], t, scratch=vals, index_scratch=poss)\n"
            "      if eq(t, 0) {\n"
            "        idx[b] = at\n"
            "      }\n"
            "    }\n"
            "  }\n"
            "}\n");
}

TEST(KernelPrinter, LiteralsCarryTheirDtype) {
  EXPECT_EQ(print_expr(int_const(7)), "7");
  EXPECT_EQ(print_expr(int_const(-3, DType::i32)), "-3:i32");
  EXPECT_EQ(print_expr(int_const(5, DType::i8)), "5:i8");
  EXPECT_EQ(print_expr(bool_const(true)), "true");
  EXPECT_EQ(print_expr(float_const(1.5, DType::f16)), "1.5:f16");
  EXPECT_EQ(print_expr(float_const(2.0, DType::f64)), "2.0:f64");
  EXPECT_EQ(print_expr(float_const(0.1, DType::f32)), "0.1:f32");
  EXPECT_EQ(print_expr(float_const(1e300, DType::f64)), "1e+300:f64");
  EXPECT_EQ(print_expr(float_const(NAN, DType::bf16)), "nan:bf16");
  EXPECT_EQ(print_expr(float_const(INFINITY, DType::f32)), "inf:f32");
  EXPECT_EQ(print_expr(cast(var("n"), DType::f32)), "cast(n, to=f32)");
}

}  // namespace
}  // namespace stitch::kir
