#include "kir/kernel.h"

#include <cstdint>

#include "stitch/error.h"

namespace stitch::kir {

std::string_view access_name(Access a) {
  switch (a) {
    case Access::Read: return "read";
    case Access::Write: return "write";
    case Access::ReadWrite: return "readwrite";
  }
  STITCH_ASSERT(false, "unknown buffer access");
}

std::string_view loop_level_name(LoopLevel l) {
  switch (l) {
    case LoopLevel::Serial: return "serial";
    case LoopLevel::Unroll: return "unroll";
    case LoopLevel::Vector: return "vector";
    case LoopLevel::Grid: return "grid";
    case LoopLevel::Block: return "block";
    case LoopLevel::Warp: return "warp";
  }
  STITCH_ASSERT(false, "unknown loop level");
}

std::string_view reduce_scope_name(ReduceScope s) {
  switch (s) {
    case ReduceScope::Warp: return "warp";
    case ReduceScope::Block: return "block";
  }
  STITCH_ASSERT(false, "unknown reduction scope");
}

int64_t shared_element_bytes(DType dtype) {
  return (dtype == DType::f16 || dtype == DType::bf16) ? 4 : static_cast<int64_t>(dtype_size(dtype));
}

bool is_parallel(LoopLevel l) {
  return l == LoopLevel::Grid || l == LoopLevel::Block || l == LoopLevel::Warp;
}

namespace {

template <typename T>
const T* find_named(const std::vector<T>& items, std::string_view name) {
  for (const T& item : items) {
    if (item.name == name) return &item;
  }
  return nullptr;
}

}  // namespace

const BufferParam* Kernel::find_buffer(std::string_view name) const { return find_named(buffers, name); }
const ScalarParam* Kernel::find_scalar(std::string_view name) const { return find_named(scalars, name); }
const SharedBuffer* Kernel::find_shared(std::string_view name) const { return find_named(shared, name); }

}  // namespace stitch::kir
