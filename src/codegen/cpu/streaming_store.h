// Which stores of a thread loop the C++ emitter writes with non-temporal
// (streaming) stores (docs/cpu-backend.md, Streaming stores): a store to a
// buffer the lowering marked `streaming` whose element offset is U + t, with
// t the thread (or lane) variable and U the same for every thread of the
// loop, so that 16 consecutive threads write 16 consecutive elements.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "codegen/common/index_facts.h"
#include "kir/kernel.h"

namespace stitch::codegen::cpu {

using common::IndexFacts;

// Threads per streamed chunk: one 64-byte line of f32, two of f64.
inline constexpr int64_t kStreamChunk = 16;

// The thread axis of a loop: `thread` is the variable whose consecutive
// values are consecutive threads of the loop; `fixed` names a variable that
// is constant over the loop (the warp of a warp-split region). `varies` says
// whether any other name differs between threads.
struct ThreadAxis {
  std::string thread;
  std::string fixed;
  std::function<bool(const std::string&)> varies;
};

// c when `e` (i64) is U + c * thread with U the same for every thread of the
// axis, looking through the lets `facts` recomputes; nullopt when unknown.
std::optional<int64_t> thread_coefficient(const kir::Expr& e, const ThreadAxis& axis, const IndexFacts& facts);

// The element offset of `b[index]` as an expression: the strided sum, the
// cancelled linear value, or the row-major Horner form.
kir::Expr element_offset(const kir::BufferParam& b, const std::vector<kir::Expr>& index, const IndexFacts& facts);

// Whether the emitter streams stores of this buffer: marked streaming and
// stored as float or double (other element types are written normally).
bool streams(const kir::BufferParam& b);

}  // namespace stitch::codegen::cpu
