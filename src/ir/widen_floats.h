// A numerics choice, not canonicalisation (docs/semantics.md, f32
// intermediates): the f16 and bf16 values a graph computes are computed and
// kept in f32 from op to op, rounded to their own dtype only where the graph
// hands them to something else. That is how Inductor's and XLA's CPU kernels
// compute narrow floats; the graph as written rounds after every op, as
// PyTorch's eager mode does.
#pragma once

#include "stitch/graph.h"

namespace stitch {

// `g` with every elementwise op (but cast) and every reduce_* whose operands
// include an f16 or bf16 value computed in f32: its narrow-float operands
// widened by a cast to f32, its result f32. A cast of a float to f16 or bf16
// is kept in f32 too (Inductor's default; eager rounds there); layout,
// broadcast and gather ops carry a widened value's f32 on. Rounded back to the
// value's own dtype (one cast each): graph outputs, and the operands of dots,
// attention, convolutions, argmax and argmin. Parameters, constants and iotas
// keep their dtypes. Returns `g` unchanged when it computes no narrow float.
Graph widen_narrow_floats(const Graph& g);

}  // namespace stitch
