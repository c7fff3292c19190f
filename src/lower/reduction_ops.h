// The per-op facts of a reduction both reduction lowerings use (docs/lowering.md,
// Reduction groups, Accumulator): the accumulator dtype, the combining op, the
// empty-slice identity and the final value.
#pragma once

#include <cstdint>
#include <functional>

#include "kir/expr.h"
#include "kir/kernel_builder.h"
#include "stitch/graph.h"

namespace stitch::lower {

// f16/bf16 accumulate in f32 (the emitters cannot reduce them and the Graph
// IR's rule asks for f32); every other dtype in itself.
DType accumulator_dtype(DType t);

// The op that combines two partial results (sum and mean: add).
OpKind combine_op(OpKind op);

// The KIR block/warp reduction of `op` (mean reduces as a sum).
OpKind block_op(OpKind op);

// The empty-slice results of docs/semantics.md: sum -0 (so a slice of -0
// sums to -0), prod 1, max -inf / the integer minimum, min +inf / maximum,
// any false, all true.
kir::Expr reduction_identity(OpKind op, DType t);

// A reduce_* node's value from its full accumulation `total` over `count`
// elements: mean divides by the count, f16/bf16 round once from f32.
kir::Expr finish_reduction(const Graph& g, const Node& n, const kir::Expr& total, const kir::Expr& count);

// The row schedule's geometry for rows of `len` elements (docs/lowering.md,
// Row schedule): `threads` per block (256, or a short static row rounded up
// to a multiple of 32, as the block reduction wants), the `steps` each thread
// strides, and whether the last step needs a bounds `guard`. `static_len` is
// the row length when it is a constant, else -1.
struct RowGeometry {
  int64_t static_len = -1;
  int64_t threads = 0;
  kir::Expr steps;
  bool guard = true;
};
RowGeometry row_geometry(const kir::Expr& len, int64_t max_threads);

// The column schedule's geometry for `count` outputs, one thread each
// (docs/lowering.md, Column / general schedule): the `blocks` of `threads`,
// and whether the last block has threads past the end (`guard`): those read
// the last output's elements (lin_read = min(lin, count - 1)) and store nothing.
struct ColumnGeometry {
  kir::Expr blocks;
  bool guard = true;
};
ColumnGeometry column_geometry(const kir::Expr& count, int64_t threads);

// One thread of the column schedule: its output `lin`, the output it reads
// (`read`: lin_read where `guard`), and whether threads past the end exist,
// which must then store only where lin < count.
struct ColumnThread {
  kir::Expr lin, read;
  bool guard = true;
};
// Launches column_geometry's blocks of `threads` over `count` outputs and
// builds `body` for each thread.
void column_threads(kir::KernelBuilder& kb, const kir::Expr& count, int64_t threads,
                    const std::function<void(const ColumnThread&)>& body);

}  // namespace stitch::lower
