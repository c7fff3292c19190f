// Golden text for hand-built kernels, one per composition the lowering will
// emit: thread (elementwise), block (shared memory + barrier), warp (shuffles)
// and kernel packing. Each kernel also passes the verifier.
#include <gtest/gtest.h>

#include <cmath>

#include "kir/kernel_builder.h"
#include "kir/printer.h"
#include "kir/verifier.h"

namespace stitch::kir {
namespace {

Expr lt(Expr a, Expr b) { return op(OpKind::Lt, {std::move(a), std::move(b)}); }
Expr ceil_div(Expr a, int64_t b) { return (std::move(a) + (b - 1)) / b; }

TEST(KernelPrinter, ElementwiseWithVectorLoop) {
  KernelBuilder kb("add_relu");
  Expr n = kb.scalar_param("N");
  kb.buffer_param("x", DType::f32, {n, int_const(1024)}, Access::Read);
  kb.buffer_param("y", DType::f32, {n, int_const(1024)}, Access::Read);
  kb.buffer_param("out", DType::f32, {n, int_const(1024)}, Access::Write);
  kb.launch(n, 256);
  kb.grid("b", n, [&](const Expr& b) {
    kb.block("t", 256, [&](const Expr& t) {
      kb.loop("v", int_const(4), LoopLevel::Vector, [&](const Expr& v) {
        Expr c = kb.let("c", t * 4 + v);
        Expr sum = op(OpKind::Add, {kb.load("x", {b, c}), kb.load("y", {b, c})});
        kb.store("out", {b, c}, op(OpKind::Relu, {sum}));
      });
    });
  });
  Kernel k = kb.finish();
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
  KernelBuilder kb("row_normalize");
  Expr n = kb.scalar_param("N");
  kb.buffer_param("x", DType::f32, {n, int_const(1024)}, Access::Read);
  kb.buffer_param("y", DType::f32, {n, int_const(1024)}, Access::Write);
  kb.launch(n, 256);
  kb.shared("row", DType::f32, 1024);
  kb.shared("partials", DType::f32, 8);
  kb.grid("b", n, [&](const Expr& b) {
    kb.block("t", 256, [&](const Expr& t) {
      Expr acc = kb.let("acc", float_const(0.0, DType::f32));
      kb.serial("i", int_const(4), [&](const Expr& i) {
        Expr c = kb.let("c", i * 256 + t);
        Expr v = kb.let("v", kb.load("x", {b, c}));
        kb.store("row", {c}, v);
        kb.assign(acc, acc + v);
      });
      Expr sum = kb.block_reduce(OpKind::ReduceSum, acc, "sum", "partials");
      kb.barrier();
      // Each thread reads elements another thread cached: the barrier is needed.
      kb.serial("j", int_const(4), [&](const Expr& j) {
        Expr c = kb.let("c2", (j * 256 + t + 1) % 1024);
        kb.store("y", {b, c}, kb.load("row", {c}) / sum);
      });
    });
  });
  EXPECT_EQ(print_kernel(kb.finish()),
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
  KernelBuilder kb("row_max");
  Expr m = kb.scalar_param("M");
  kb.buffer_param("x", DType::f32, {m, int_const(128)}, Access::Read);
  kb.buffer_param("y", DType::f32, {m}, Access::Write);
  Expr grid = ceil_div(m, 8);
  kb.launch(grid, 256);
  kb.grid("b", grid, [&](const Expr& b) {
    kb.block("w", 8, [&](const Expr& w) {
      kb.warp("l", [&](const Expr& l) {
        Expr row = kb.let("row", b * 8 + w);
        Expr acc = kb.let("acc", float_const(-INFINITY, DType::f32));
        kb.if_then(lt(row, m), [&] {
          kb.loop("i", int_const(4), LoopLevel::Unroll, [&](const Expr& i) {
            kb.assign(acc, op(OpKind::Max, {acc, kb.load("x", {row, i * 32 + l})}));
          });
        });
        Expr best = kb.warp_reduce(OpKind::ReduceMax, acc, "best");
        Expr first_lane = op(OpKind::Eq, {l, int_const(0)});
        kb.if_then(op(OpKind::And, {lt(row, m), first_lane}), [&] { kb.store("y", {row}, best); });
      });
    });
  });
  EXPECT_EQ(print_kernel(kb.finish()),
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

TEST(KernelPrinter, PackedKernelWithBlockRanges) {
  KernelBuilder kb("packed");
  Expr n = kb.scalar_param("N");
  Expr m = kb.scalar_param("M");
  kb.buffer_param("a", DType::f32, {n}, Access::Read);
  kb.buffer_param("ya", DType::f32, {n}, Access::Write);
  kb.buffer_param("c", DType::f64, {m}, Access::Read);
  kb.buffer_param("yc", DType::f64, {m}, Access::Write, {int_const(2)});
  Expr grid = ceil_div(n, 256) + ceil_div(m, 256);
  kb.launch(grid, 256);
  kb.grid("b", grid, [&](const Expr& b) {
    Expr blocks_a = kb.let("blocks_a", ceil_div(n, 256));
    kb.if_then(
        lt(b, blocks_a),
        [&] {
          kb.block("t", 256, [&](const Expr& t) {
            Expr i = kb.let("i", b * 256 + t);
            kb.if_then(lt(i, n), [&] { kb.store("ya", {i}, op(OpKind::Exp, {kb.load("a", {i})})); });
          });
        },
        [&] {
          kb.block("t2", 256, [&](const Expr& t) {
            Expr j = kb.let("j", (b - blocks_a) * 256 + t);
            kb.if_then(lt(j, m), [&] { kb.store("yc", {j}, op(OpKind::Neg, {kb.load("c", {j})})); });
          });
        });
  });
  EXPECT_EQ(print_kernel(kb.finish()),
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
  KernelBuilder kb("row_argmax");
  Expr n = kb.scalar_param("N");
  kb.buffer_param("x", DType::f16, {n, int_const(64)}, Access::Read);
  kb.buffer_param("idx", DType::i64, {n}, Access::Write);
  kb.launch(n, 64);
  kb.shared("vals", DType::f32, 2);
  kb.shared("poss", DType::i64, 2);
  kb.grid("b", n, [&](const Expr& b) {
    kb.block("t", 64, [&](const Expr& t) {
      kb.local_array("cache", DType::f32, 1);
      kb.store("cache", {int_const(0)}, cast(kb.load("x", {b, t}), DType::f32));
      auto [best, at] = kb.block_arg_reduce(OpKind::ArgMax, kb.load("cache", {int_const(0)}), t, "best",
                                            "at", "vals", "poss");
      kb.if_then(op(OpKind::Eq, {t, int_const(0)}), [&] { kb.store("idx", {b}, at); });
    });
  });
  EXPECT_EQ(print_kernel(kb.finish()),
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
