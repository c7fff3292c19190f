// Primitive op kinds and their static properties (DESIGN.md, Graph IR).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace stitch {

enum class OpKind : uint8_t {
#define OP(name, text, category, min_in, max_in) name,
#include "stitch/ops.def"
#undef OP
};

// What the planners need to know about an op kind.
enum class OpCategory : uint8_t {
  LightElementwise,  // cheap per element: duplicated freely into consumers
  HeavyElementwise,  // transcendental / division: not duplicated by XLA-style fusion
  Broadcast,
  Layout,            // reshape, transpose, slice, concat, pad
  Gather,
  Source,            // iota, constant: no inputs
  Reduction,
  Dot,
};

struct OpInfo {
  OpKind kind;
  std::string_view name;
  OpCategory category;
  int min_inputs;
  int max_inputs;  // -1: variadic
};

const OpInfo& op_info(OpKind k);
inline std::string_view op_name(OpKind k) { return op_info(k).name; }
std::optional<OpKind> parse_op_kind(std::string_view name);
std::string_view category_name(OpCategory c);
int op_kind_count();

bool is_unary_elementwise(OpKind k);
bool is_binary_elementwise(OpKind k);
bool is_elementwise(OpKind k);  // unary, binary, select, clamp, cast
bool is_comparison(OpKind k);   // eq ne lt le gt ge: result bool
bool is_reduction(OpKind k);    // reduce_* and argmax/argmin

}  // namespace stitch
