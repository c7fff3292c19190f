// Builds a Kernel statement by statement, with nested bodies as callbacks, so
// tests and the lowering read like the printed kernel.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kir/kernel.h"

namespace stitch::kir {

class KernelBuilder {
 public:
  using BodyFn = std::function<void()>;
  using LoopBodyFn = std::function<void(const Expr& loop_var)>;

  explicit KernelBuilder(std::string name);

  // Declarations.
  Expr scalar_param(std::string name, DType dtype = DType::i64);
  void buffer_param(std::string name, DType dtype, std::vector<Expr> shape, Access access,
                    std::vector<Expr> strides = {});
  void launch(Expr grid, int64_t block_size);
  // The kernel is for the CPU alone (Kernel::cpu_only).
  void cpu_only() { kernel_.cpu_only = true; }
  void shared(std::string name, DType dtype, int64_t count);
  // Places the shared buffers in one arena of `arena_bytes`: offsets[name] is
  // each buffer's byte offset (every declared buffer must have one).
  void place_shared(int64_t arena_bytes, const std::map<std::string, int64_t>& offsets);
  // Places every shared buffer one after another (16-byte aligned) in one
  // arena, no space shared; returns the arena's bytes.
  int64_t place_shared_sequentially();
  // Bytes of the shared buffers declared so far, each 16-byte aligned.
  int64_t shared_bytes() const;
  // The kernel's body is written for buffers aligned to `bytes` (Kernel::aligned_bytes).
  void align_buffers(int64_t bytes) { kernel_.aligned_bytes = bytes; }

  // Statements, appended to the innermost open body.
  void loop(std::string var_name, Expr extent, LoopLevel level, const LoopBodyFn& body);
  void grid(std::string var_name, Expr extent, const LoopBodyFn& body);
  void block(std::string var_name, int64_t extent, const LoopBodyFn& body);
  void warp(std::string var_name, const LoopBodyFn& body);
  void serial(std::string var_name, Expr extent, const LoopBodyFn& body);
  void if_then(Expr cond, const BodyFn& then_body, const BodyFn& else_body = {});
  // An if whose condition is known only once its bodies are built (it tests
  // what building them assumed): `cond` runs after both. When it returns an
  // absent Expr the then-body is unconditional: its statements are appended
  // in place of the if and the else-body is dropped.
  void if_then_after(const std::function<Expr()>& cond, const BodyFn& then_body, const BodyFn& else_body = {});
  Expr let(std::string name, Expr init);  // the local takes init's dtype
  Expr let(std::string name, DType dtype);
  void assign(const Expr& local, Expr value);
  void local_array(std::string name, DType dtype, int64_t count);
  void store(std::string buffer, std::vector<Expr> index, Expr value);
  void prefetch(std::string buffer, Expr first, Expr count);
  // kir::VectorMoveStmt: `count` elements of `buffer` from `index` into (store:
  // out of) local array `array` from slot `array_first`.
  void vector_move(bool store, std::string buffer, std::vector<Expr> index, std::string array, Expr array_first,
                   int64_t count);
  void barrier();
  void transpose_tile(std::string buffer, int64_t size);
  // `width` < 32: each segment of `width` consecutive lanes reduces alone.
  Expr warp_reduce(OpKind op, Expr value, std::string result, int64_t width = kWarpSize);
  Expr block_reduce(OpKind op, Expr value, std::string result, std::string scratch);
  // argmax/argmin: returns (extremum, its index).
  std::pair<Expr, Expr> warp_arg_reduce(OpKind op, Expr value, Expr index, std::string result,
                                        std::string index_result, int64_t width = kWarpSize);
  std::pair<Expr, Expr> block_arg_reduce(OpKind op, Expr value, Expr index, std::string result,
                                         std::string index_result, std::string scratch,
                                         std::string index_scratch);
  void append(Stmt stmt);

  // A load whose dtype is the declared element type of `buffer` (a parameter,
  // shared buffer or local array declared so far).
  Expr load(const std::string& buffer, std::vector<Expr> index) const;

  // The kernel, verified: a kernel Stitch built that fails the verifier is an
  // internal error (InternalError listing the problems).
  Kernel finish();
  // Without verification, for the verifier's own tests.
  Kernel finish_unverified();

 private:
  StmtList& current() { return *open_.back(); }
  void declare_element_type(const std::string& name, DType dtype);

  Kernel kernel_;
  std::vector<StmtList*> open_;
  std::unordered_map<std::string, DType> element_types_;
};

}  // namespace stitch::kir
