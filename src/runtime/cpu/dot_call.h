// dot(a, b) on the CPU as a library call (DESIGN.md, Fusion planners: "dots
// are library calls"; docs/cpu-backend.md, Dots). f32 and f64 go to the CBLAS
// gemm of OpenBLAS; f16 and bf16 are widened to f32, multiplied by sgemm and
// rounded once; integers use an exact loop that wraps like the interpreter.
#pragma once

#include <cstdint>
#include <vector>

#include "stitch/dtype.h"

namespace stitch::runtime::cpu {

// numpy matmul semantics (docs/semantics.md, dot): 1-D `a` is a row, 1-D `b`
// a column, leading dims are batch dims that broadcast. Shapes are concrete;
// every buffer is contiguous (C order) and holds `dtype` elements.
void run_dot(DType dtype, const std::vector<int64_t>& a_shape, const std::vector<int64_t>& b_shape,
             const std::vector<int64_t>& out_shape, const void* a, const void* b, void* out);

}  // namespace stitch::runtime::cpu
