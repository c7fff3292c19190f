// Hand-built example kernels, one per composition: the Kernel IR printer's
// golden tests print them and the C++ back end's tests compile and run them.
#pragma once

#include <cmath>
#include <cstdint>

#include "kir/kernel_builder.h"

namespace stitch::kir::examples {

inline Expr lt(Expr a, Expr b) { return op(OpKind::Lt, {std::move(a), std::move(b)}); }
inline Expr ceil_div(Expr a, int64_t b) { return (std::move(a) + (b - 1)) / b; }

// out[b, c] = relu(x + y) with grid, block and vector loops; rows of 1024.
inline Kernel add_relu_kernel() {
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
  return kb.finish();
}

// y[b, (c + 1) % 1024] = x[b, ...] / sum(x[b, :]): a block reduction, then a
// barrier before each thread reads elements another thread cached in shared memory.
inline Kernel row_normalize_kernel() {
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
      kb.serial("j", int_const(4), [&](const Expr& j) {
        Expr c = kb.let("c2", (j * 256 + t + 1) % 1024);
        kb.store("y", {b, c}, kb.load("row", {c}) / sum);
      });
    });
  });
  return kb.finish();
}

// y[row] = max(x[row, :]) for rows of 128, one warp per row, 8 rows per block.
inline Kernel row_max_kernel() {
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
  return kb.finish();
}

// Two independent kernels packed into one launch: ya = exp(a), yc = -c with yc strided by 2.
inline Kernel packed_kernel() {
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
  return kb.finish();
}

// idx[b] = argmax(x[b, :]) over rows of 64 f16 values, through a local array.
inline Kernel row_argmax_kernel() {
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
      auto [best, at] = kb.block_arg_reduce(OpKind::ArgMax, kb.load("cache", {int_const(0)}), t, "best", "at",
                                            "vals", "poss");
      kb.if_then(op(OpKind::Eq, {t, int_const(0)}), [&] { kb.store("idx", {b}, at); });
    });
  });
  return kb.finish();
}

// A block that owns kRows rows in a serial loop: each row's sum through a
// block reduction inside the loop, the row less its mean stored, and each
// thread's column sums over the block's rows kept across the iterations:
// y[b * kRows + r, t] = x - mean of the row, cols[b, t] = sum over r of x.
inline constexpr int64_t kRows = 3;
inline Kernel rows_in_a_loop_kernel() {
  KernelBuilder kb("rows_in_a_loop");
  Expr n = kb.scalar_param("N");
  kb.buffer_param("x", DType::f32, {n * kRows, int_const(64)}, Access::Read);
  kb.buffer_param("y", DType::f32, {n * kRows, int_const(64)}, Access::Write);
  kb.buffer_param("cols", DType::f32, {n, int_const(64)}, Access::Write);
  kb.launch(n, 64);
  kb.shared("partials", DType::f32, 2);
  kb.grid("b", n, [&](const Expr& b) {
    kb.block("t", 64, [&](const Expr& t) {
      Expr col = kb.let("col", float_const(0.0, DType::f32));
      kb.serial("r", int_const(kRows), [&](const Expr& r) {
        Expr row = kb.let("row", b * kRows + r);
        Expr v = kb.let("v", kb.load("x", {row, t}));
        Expr sum = kb.block_reduce(OpKind::ReduceSum, v, "sum", "partials");
        kb.store("y", {row, t}, v - sum / float_const(64.0, DType::f32));
        kb.assign(col, col + v);
      });
      kb.store("cols", {b, t}, col);
    });
  });
  return kb.finish();
}

}  // namespace stitch::kir::examples
