// Graphs that the CPU and GPU executable tests share (header-only: the
// runtime_cuda tests include it without the support library).
#pragma once

namespace stitch::testing {

// Every dot shape class numpy matmul has (matrix, vector operands, batch
// broadcast, empty contraction) in every dtype the type rules allow, with
// fused elementwise work around them.
inline const char* const kDotShapeClassesGraph =
    R"(graph dots(a: f32[5, 7], b: f32[7, 3], v: f32[7], ba: f32[2, 1, 4, 7], bb: f32[3, 7, 6],
                  d1: f64[4, 9], d2: f64[9, 2], h1: f16[3, 8], h2: f16[8, 5], g1: bf16[3, 8], g2: bf16[8, 5],
                  i1: i32[4, 6], i2: i32[6, 3], e1: f32[3, 0], e2: f32[0, 4], j1: i8[2, 5], j2: i8[5, 2])
    -> (f32[5, 3], f32[5], f32[3], f32[], f32[2, 3, 4, 6], f64[4, 2], f16[3, 5], bf16[3, 5], i32[4, 3],
        f32[3, 4], i8[2, 2]) {
  a2 = mul(a, 2.0)
  mm = dot(a2, b)
  r = add(mm, 1.0)
  mv = dot(a, v)
  vm = dot(v, b)
  vv = dot(v, v)
  bmm = dot(ba, bb)
  dd = dot(d1, d2)
  hh = dot(h1, h2)
  gg = dot(g1, g2)
  ii = dot(i1, i2)
  ee = dot(e1, e2)
  jj = dot(j1, j2)
  return r, mv, vm, vv, bmm, dd, hh, gg, ii, ee, jj
})";;

}  // namespace stitch::testing
