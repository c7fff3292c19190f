// dot(a, b) on the CPU as a library call (DESIGN.md, Fusion planners: "dots
// are library calls"; docs/cpu-backend.md, Dots). f32 goes to oneDNN's sgemm,
// f64 to OpenBLAS's CBLAS dgemm; f16 and bf16 are widened to f32, multiplied by
// sgemm and rounded once; integers use an exact loop that wraps like the
// interpreter.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "runtime/common/dot_panels.h"
#include "stitch/dtype.h"

namespace stitch::runtime::cpu {

// numpy matmul semantics (docs/semantics.md, dot): 1-D `a` is a row, 1-D `b`
// a column, leading dims are batch dims that broadcast. Shapes are concrete;
// every buffer is contiguous (C order) and holds `dtype` elements.
// With `transpose_b` (f32 and f64 only), `b` holds B transposed in its last two
// axes ([..., n, k]) and the gemm reads it so, by its flag.
void run_dot(DType dtype, const std::vector<int64_t>& a_shape, const std::vector<int64_t>& b_shape,
             const std::vector<int64_t>& out_shape, const void* a, const void* b, void* out, bool transpose_b = false);

// A dot with an epilogue (fusion/dot_epilogues.h), f32 or f64, both operands
// of rank 2 or more, a row being the last axis of the result and rows counted
// over every other axis (batches included). With two panels or more, the
// panels run in parallel on every core (OpenMP): each computes its rows by a
// one-thread BLAS call and then calls `epilogue(i)` on the same core, while
// its rows are in that core's cache; the epilogue's own parallel loop is
// nested there, so it runs on that core alone (OpenMP's default of one active
// level). With one panel: the whole dot
// on BLAS's threads, then `epilogue(0)`. `epilogue` must not throw.
void run_dot_panels(DType dtype, const std::vector<int64_t>& a_shape, const std::vector<int64_t>& b_shape,
                    const std::vector<int64_t>& out_shape, const void* a, const void* b, void* out,
                    const std::vector<DotPanel>& panels, const std::function<void(size_t panel)>& epilogue,
                    bool transpose_b = false);

}  // namespace stitch::runtime::cpu
