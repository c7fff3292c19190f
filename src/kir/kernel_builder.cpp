#include "kir/kernel_builder.h"

#include <cstdint>

#include "kir/verifier.h"
#include "stitch/error.h"

namespace stitch::kir {

KernelBuilder::KernelBuilder(std::string name) {
  kernel_.name = std::move(name);
  kernel_.launch.grid = int_const(1);
  open_.push_back(&kernel_.body);
}

Expr KernelBuilder::scalar_param(std::string name, DType dtype) {
  kernel_.scalars.push_back({name, dtype});
  return var(std::move(name), dtype);
}

void KernelBuilder::buffer_param(std::string name, DType dtype, std::vector<Expr> shape,
                                 Access access, std::vector<Expr> strides) {
  declare_element_type(name, dtype);
  kernel_.buffers.push_back({std::move(name), dtype, std::move(shape), std::move(strides), access});
}

void KernelBuilder::launch(Expr grid, int64_t block_size) {
  kernel_.launch = {std::move(grid), block_size};
}

void KernelBuilder::place_shared(int64_t arena_bytes, const std::map<std::string, int64_t>& offsets) {
  kernel_.shared_arena_bytes = arena_bytes;
  for (SharedBuffer& s : kernel_.shared) {
    auto it = offsets.find(s.name);
    STITCH_ASSERT(it != offsets.end(), "place_shared: no offset for shared buffer " + s.name);
    s.offset = it->second;
  }
}

int64_t KernelBuilder::shared_bytes() const {
  int64_t bytes = 0;
  for (const SharedBuffer& s : kernel_.shared) bytes += (s.count * shared_element_bytes(s.dtype) + 15) / 16 * 16;
  return bytes;
}

int64_t KernelBuilder::place_shared_sequentially() {
  std::map<std::string, int64_t> offsets;
  int64_t end = 0;
  for (const SharedBuffer& s : kernel_.shared) {
    offsets[s.name] = end;
    end += (s.count * shared_element_bytes(s.dtype) + 15) / 16 * 16;
  }
  place_shared(end, offsets);
  return end;
}

void KernelBuilder::shared(std::string name, DType dtype, int64_t count) {
  declare_element_type(name, dtype);
  kernel_.shared.push_back({std::move(name), dtype, count});
}

void KernelBuilder::loop(std::string var_name, Expr extent, LoopLevel level, const LoopBodyFn& body) {
  ForStmt loop{var_name, std::move(extent), level, {}};
  open_.push_back(&loop.body);
  body(var(std::move(var_name)));
  open_.pop_back();
  current().push_back({std::move(loop)});
}

void KernelBuilder::grid(std::string var_name, Expr extent, const LoopBodyFn& body) {
  loop(std::move(var_name), std::move(extent), LoopLevel::Grid, body);
}

void KernelBuilder::block(std::string var_name, int64_t extent, const LoopBodyFn& body) {
  loop(std::move(var_name), int_const(extent), LoopLevel::Block, body);
}

void KernelBuilder::warp(std::string var_name, const LoopBodyFn& body) {
  loop(std::move(var_name), int_const(kWarpSize), LoopLevel::Warp, body);
}

void KernelBuilder::serial(std::string var_name, Expr extent, const LoopBodyFn& body) {
  loop(std::move(var_name), std::move(extent), LoopLevel::Serial, body);
}

void KernelBuilder::if_then(Expr cond, const BodyFn& then_body, const BodyFn& else_body) {
  IfStmt s{std::move(cond), {}, {}};
  open_.push_back(&s.then_body);
  then_body();
  open_.back() = &s.else_body;
  if (else_body) else_body();
  open_.pop_back();
  current().push_back({std::move(s)});
}

void KernelBuilder::if_then_after(const std::function<Expr()>& cond, const BodyFn& then_body,
                                  const BodyFn& else_body) {
  IfStmt s{{}, {}, {}};
  open_.push_back(&s.then_body);
  then_body();
  open_.back() = &s.else_body;
  if (else_body) else_body();
  open_.pop_back();
  s.cond = cond();
  if (!s.cond.defined()) {
    for (Stmt& stmt : s.then_body) current().push_back(std::move(stmt));
    return;
  }
  current().push_back({std::move(s)});
}

Expr KernelBuilder::let(std::string name, Expr init) {
  DType dtype = init.dtype();
  current().push_back({LetStmt{name, dtype, std::move(init)}});
  return var(std::move(name), dtype);
}

Expr KernelBuilder::let(std::string name, DType dtype) {
  current().push_back({LetStmt{name, dtype, Expr()}});
  return var(std::move(name), dtype);
}

void KernelBuilder::assign(const Expr& local, Expr value) {
  STITCH_ASSERT(local->kind == ExprKind::Var, "assign needs a local variable");
  current().push_back({AssignStmt{local->name, std::move(value)}});
}

void KernelBuilder::local_array(std::string name, DType dtype, int64_t count) {
  declare_element_type(name, dtype);
  current().push_back({LocalArrayStmt{std::move(name), dtype, count}});
}

void KernelBuilder::store(std::string buffer, std::vector<Expr> index, Expr value) {
  current().push_back({StoreStmt{std::move(buffer), std::move(index), std::move(value)}});
}

void KernelBuilder::prefetch(std::string buffer, Expr first, Expr count) {
  current().push_back({PrefetchStmt{std::move(buffer), std::move(first), std::move(count)}});
}

void KernelBuilder::vector_move(bool store, std::string buffer, std::vector<Expr> index, std::string array,
                                Expr array_first, int64_t count) {
  current().push_back(
      {VectorMoveStmt{store, std::move(buffer), std::move(index), std::move(array), std::move(array_first), count}});
}

void KernelBuilder::barrier() { current().push_back({BarrierStmt{}}); }

void KernelBuilder::transpose_tile(std::string buffer, int64_t size) {
  current().push_back({TransposeTileStmt{std::move(buffer), size}});
}

Expr KernelBuilder::warp_reduce(OpKind op, Expr value, std::string result, int64_t width) {
  DType dtype = value.dtype();
  current().push_back({ReduceStmt{ReduceScope::Warp, op, std::move(value), Expr(), result, "", "", "", width}});
  return var(std::move(result), dtype);
}

Expr KernelBuilder::block_reduce(OpKind op, Expr value, std::string result, std::string scratch) {
  DType dtype = value.dtype();
  current().push_back(
      {ReduceStmt{ReduceScope::Block, op, std::move(value), Expr(), result, "", std::move(scratch), ""}});
  return var(std::move(result), dtype);
}

std::pair<Expr, Expr> KernelBuilder::warp_arg_reduce(OpKind op, Expr value, Expr index,
                                                     std::string result, std::string index_result,
                                                     int64_t width) {
  DType dtype = value.dtype();
  current().push_back({ReduceStmt{ReduceScope::Warp, op, std::move(value), std::move(index), result,
                                  index_result, "", "", width}});
  return {var(std::move(result), dtype), var(std::move(index_result))};
}

std::pair<Expr, Expr> KernelBuilder::block_arg_reduce(OpKind op, Expr value, Expr index,
                                                      std::string result, std::string index_result,
                                                      std::string scratch, std::string index_scratch) {
  DType dtype = value.dtype();
  current().push_back({ReduceStmt{ReduceScope::Block, op, std::move(value), std::move(index), result,
                                  index_result, std::move(scratch), std::move(index_scratch)}});
  return {var(std::move(result), dtype), var(std::move(index_result))};
}

void KernelBuilder::append(Stmt stmt) { current().push_back(std::move(stmt)); }

Expr KernelBuilder::load(const std::string& buffer, std::vector<Expr> index) const {
  auto it = element_types_.find(buffer);
  STITCH_ASSERT(it != element_types_.end(), "load from undeclared buffer '" + buffer + "'");
  return kir::load(buffer, it->second, std::move(index));
}

Kernel KernelBuilder::finish() {
  Kernel k = finish_unverified();
  verify_kernel_or_throw(k);
  return k;
}

Kernel KernelBuilder::finish_unverified() {
  STITCH_ASSERT(open_.size() == 1, "finish() inside an open body");
  return kernel_;
}

void KernelBuilder::declare_element_type(const std::string& name, DType dtype) {
  element_types_[name] = dtype;
}

}  // namespace stitch::kir
