// The Kernel IR (DESIGN.md, Kernel IR; docs/kernel-ir.md): one kernel per fused
// group, structured enough for both the CUDA and the C++ emitter.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "kir/expr.h"

namespace stitch::kir {

// Lanes per warp on every NVIDIA GPU Stitch targets; the C++ emitter keeps the
// same grouping so warp compositions compute the same thing on both back ends.
inline constexpr int64_t kWarpSize = 32;

enum class Access : uint8_t { Read, Write, ReadWrite };

// serial/unroll/vector run inside one thread; grid/block/warp distribute
// iterations over blocks, a block's threads, and a warp's lanes.
enum class LoopLevel : uint8_t { Serial, Unroll, Vector, Grid, Block, Warp };

// A warp reduction combines the 32 lanes of each warp by shuffles; a block
// reduction combines all threads of the block through a shared scratch buffer.
enum class ReduceScope : uint8_t { Warp, Block };

std::string_view access_name(Access a);
std::string_view loop_level_name(LoopLevel l);
std::string_view reduce_scope_name(ReduceScope s);
bool is_parallel(LoopLevel l);  // grid, block, warp

// A global buffer passed by the caller. Strides empty means row-major contiguous.
struct BufferParam {
  std::string name;
  DType dtype;
  std::vector<Expr> shape;    // i64 over scalar parameters and literals
  std::vector<Expr> strides;  // in elements; empty or one per dimension
  Access access;
  // A hint for a write-only buffer that nothing reads soon after the kernel
  // (a large graph output): its stores may bypass the caches (non-temporal
  // stores on the CPU, docs/cpu-backend.md, Streaming stores). Never changes
  // a value; an emitter may ignore it.
  bool streaming = false;
  // Another buffer of the kernel may share storage with this one (user
  // kernels' arrays, docs/kernel-language.md, Restrict). Graph kernels' buffers
  // never overlap; a buffer that cannot overlap a written one is __restrict__.
  bool may_alias = false;
};

// A scalar passed by value: symbolic extents (i64) so a new batch size does
// not recompile, or a runtime constant such as an epsilon.
struct ScalarParam {
  std::string name;
  DType dtype;
};

// Block-shared memory, one-dimensional; its lifetime is one block. With an
// `offset` the buffer lives at that byte of the kernel's shared arena
// (Kernel::shared_arena_bytes), where buffers whose lifetimes do not overlap
// share space (docs/shared-memory.md, Stitched kernels); without one, in its
// own array.
struct SharedBuffer {
  std::string name;
  DType dtype;
  int64_t count;
  int64_t offset = -1;
};

// Shared memory a CUDA block gets without opting in. A kernel whose shared
// memory is larger keeps all of it in its arena, which the CUDA emitter
// declares as dynamic shared memory and the launcher sizes after raising the
// kernel's limit (docs/cuda-runtime.md, Shared memory over 48 KiB).
inline constexpr int64_t kStaticSharedBytes = 48 * 1024;

// Bytes one element of a shared buffer of `dtype` takes: f16 and bf16 are
// kept in their compute type, f32 (docs/kernel-ir.md, Shared memory).
int64_t shared_element_bytes(DType dtype);

struct Launch {
  Expr grid;               // number of blocks, i64 over scalar parameters
  int64_t block_size = 1;  // threads per block, a constant so shared sizes are static
};

struct Stmt;
using StmtList = std::vector<Stmt>;

struct ForStmt {
  std::string var;  // i64, 0 .. extent-1
  Expr extent;
  LoopLevel level;
  StmtList body;
};

struct IfStmt {
  Expr cond;  // bool
  StmtList then_body;
  StmtList else_body;
};

// A scalar local of the current thread; `init` may be absent.
struct LetStmt {
  std::string name;
  DType dtype;
  Expr init;
};

struct AssignStmt {
  std::string name;
  Expr value;
};

// A per-thread array, indexed with one i64 index.
struct LocalArrayStmt {
  std::string name;
  DType dtype;
  int64_t count;
};

// buffer[index...] = value, on a global parameter, a shared buffer or a local array.
struct StoreStmt {
  std::string buffer;
  std::vector<Expr> index;
  Expr value;
};

// A hint: the elements [first, first + count) of global buffer `buffer`, in
// row-major order of its shape, are read soon. The CPU emitter prefetches
// their cache lines (docs/cpu-backend.md, Prefetch), clipped to the buffer;
// the CUDA emitter, whose warps hide latency, ignores it, as does any emitter
// for a strided buffer. Never changes a value.
struct PrefetchStmt {
  std::string buffer;
  Expr first;
  Expr count;
};

// `count` consecutive elements along the innermost axis of global buffer
// `buffer`, the first at `index`, to or from local array `array` from slot
// `array_first`: array[array_first + k] = buffer[index + k] (a load), or
// buffer[index + k] = array[array_first + k] (a store), for k < count. The
// CUDA emitter moves them as one vector where the kernel's buffers are
// aligned (Kernel::aligned_bytes) and the buffer is dense, else one by one.
struct VectorMoveStmt {
  bool store = false;
  std::string buffer;
  std::vector<Expr> index;
  std::string array;
  Expr array_first;
  int64_t count = 1;
};

// Synchronises the threads of a block (__syncthreads; a phase split on the CPU).
struct BarrierStmt {};

// The size x size square at the start of shared buffer `buffer`, row-major,
// becomes its transpose. A block-level step like a barrier: every thread of
// the block reaches it, every write before it is seen by every read after it.
// The CPU emitter transposes in vector registers between two phases
// (docs/cpu-backend.md, Tile transpose); CUDA swaps pairs across the block
// between two __syncthreads.
struct TransposeTileStmt {
  std::string buffer;
  int64_t size = 0;
};

// `result` (and for argmax/argmin `index_result`, the index of the first
// extremum) is defined after the statement and holds the same value in every
// participating thread. `op` is a combining reduction of ops.def: reduce_sum,
// reduce_prod, reduce_max, reduce_min, reduce_any, reduce_all, argmax, argmin.
struct ReduceStmt {
  ReduceScope scope;
  OpKind op;
  Expr value;
  Expr index;  // i64 position of `value`; argmax/argmin only
  std::string result;
  std::string index_result;   // argmax/argmin only
  std::string scratch;        // block scope: shared buffer for per-warp partial values
  std::string index_scratch;  // block argmax/argmin: shared buffer for partial indices
  // Warp scope: the lanes combined together, a power of two 2..32. Below 32
  // the warp is split into segments of `width` consecutive lanes, each
  // reduced alone (several short rows per warp); 32 for block scope.
  int64_t width = kWarpSize;
};

struct Stmt {
  std::variant<ForStmt, IfStmt, LetStmt, AssignStmt, LocalArrayStmt, StoreStmt, VectorMoveStmt, PrefetchStmt,
               BarrierStmt, TransposeTileStmt, ReduceStmt>
      node;
};

// The largest block of a kernel: CUDA's limit on every architecture Stitch
// targets, and that of a cpu_only kernel, whose blocks are vector loops.
inline constexpr int64_t kCudaMaxBlockSize = 1024;
inline constexpr int64_t kCpuMaxBlockSize = 4096;

struct Kernel {
  std::string name;
  // One line for a reader of the generated code (the row schedule chosen and
  // why); the emitters print it as a comment above the kernel.
  std::string note;
  // The calling convention: buffers in order, then scalars in order.
  std::vector<BufferParam> buffers;
  std::vector<ScalarParam> scalars;
  Launch launch;
  std::vector<SharedBuffer> shared;
  int64_t shared_arena_bytes = 0;  // > 0: every shared buffer has an offset in one arena
  // > 0: a dot epilogue's kernel (fusion/dot_epilogues.h), CPU only. Its
  // caller passes a block range [first, end) as two scalars after `scalars`
  // and runs the grid range by range; block b reads the dot's result only at
  // the row-major elements [b * panel_elements, (b + 1) * panel_elements).
  int64_t panel_elements = 0;
  // > 0: the body reads and writes its buffers in vectors of this many bytes
  // where every buffer's address is a multiple of it (rows held in registers,
  // schedule/held_rows.h). Never changes a value: the CUDA emitter tells the
  // compiler the alignment under a test of the addresses, and runs the same
  // body without it for buffers that are not aligned; the C++ emitter ignores it.
  int64_t aligned_bytes = 0;
  // A kernel for the CPU alone: its blocks are the C++ emitter's vector loops,
  // which may run up to kCpuMaxBlockSize threads (a stitched column kernel's
  // block of whole rows); the CUDA emitter refuses it.
  bool cpu_only = false;
  StmtList body;

  const BufferParam* find_buffer(std::string_view name) const;
  const ScalarParam* find_scalar(std::string_view name) const;
  const SharedBuffer* find_shared(std::string_view name) const;
};

}  // namespace stitch::kir
