#include "stitch/builder.h"

#include <cstdint>

#include <fmt/format.h>

#include "ir/composites.h"
#include "ir/type_inference.h"
#include "ir/verifier.h"

namespace stitch {

GraphBuilder::GraphBuilder(std::string graph_name) : g_(std::move(graph_name)) {}

bool GraphBuilder::is_known_op(std::string_view op_name) {
  return parse_op_kind(op_name).has_value() || is_composite_op(op_name);
}

bool GraphBuilder::is_composite(std::string_view op_name) { return is_composite_op(op_name); }

std::string GraphBuilder::fresh_name(const std::string& hint) const {
  std::string base = hint.empty() ? "t" : hint;
  auto taken = [&](const std::string& n) { return g_.has_name(n) || reserved_.count(n); };
  if (!taken(base)) return base;
  int& next = next_suffix_.try_emplace(base, 1).first->second;
  for (;; ++next) {
    std::string candidate = fmt::format("{}_{}", base, next);
    if (!taken(candidate)) return candidate;
  }
}

ValueId GraphBuilder::param(const std::string& name, DType dtype, Shape shape) {
  if (g_.has_name(name)) throw UserError(fmt::format("'{}' is already defined", name));
  if (!g_.nodes().empty()) throw UserError("parameters must be declared before any op");
  for (const Dim& d : shape) {
    if (d.is_static() && d.extent() < 0) {
      throw UserError(fmt::format("parameter '{}' has negative extent {}", name, d.extent()));
    }
  }
  check_static_size(fmt::format("parameter '{}'", name), {dtype, shape});
  return g_.add_param(name, {dtype, std::move(shape)});
}

std::vector<ValueId> GraphBuilder::materialize_literals(OpKind kind, const std::vector<Operand>& args) {
  // A literal takes the dtype of the op's data operands (select's condition is not one).
  size_t first_data = kind == OpKind::Select ? 1 : 0;
  std::optional<DType> dtype;
  for (size_t i = first_data; i < args.size() && !dtype; ++i) {
    if (!args[i].is_literal) dtype = g_.type(args[i].value).dtype;
  }
  std::vector<ValueId> values;
  for (size_t i = 0; i < args.size(); ++i) {
    const Operand& a = args[i];
    if (!a.is_literal) {
      if (!a.value.valid() || a.value.index >= g_.num_values()) {
        throw UserError(fmt::format("operand {} of {} is not a value of graph '{}'", i, op_name(kind), g_.name()));
      }
      values.push_back(a.value);
      continue;
    }
    if (i < first_data) {
      throw UserError(fmt::format("the condition of {} cannot be a literal", op_name(kind)));
    }
    if (!dtype) {
      throw UserError(fmt::format("cannot tell the dtype of literal {} in {}: no operand is a value; "
                                  "write constant(value=..., dtype=...)", a.literal.str(), op_name(kind)));
    }
    Attrs attrs{{"value", a.literal}, {"dtype", AttrValue(*dtype)}, {"shape", AttrValue(Shape{})}};
    values.push_back(add_primitive(OpKind::Constant, {}, std::move(attrs), ""));
  }
  return values;
}

ValueId GraphBuilder::add_primitive(OpKind kind, std::vector<ValueId> inputs, Attrs attrs,
                                    const std::string& name) {
  std::vector<TensorType> types;
  for (ValueId v : inputs) types.push_back(g_.type(v));
  TensorType t = infer_type(kind, types, attrs);
  std::string n = name.empty() ? fresh_name(std::string(op_name(kind))) : name;
  if (g_.has_name(n)) throw UserError(fmt::format("'{}' is already defined", n));
  // Every value is checked as it is made, so later passes may multiply static
  // extents without overflow (docs/limits.md).
  check_static_size(fmt::format("{} '{}'", op_name(kind), n), t);
  return g_.add_node(kind, std::move(inputs), std::move(attrs), std::move(t), n, loc_);
}

ValueId GraphBuilder::op(OpKind kind, std::vector<Operand> args, Attrs attrs, const std::string& name) {
  std::vector<ValueId> inputs = materialize_literals(kind, args);
  return add_primitive(kind, std::move(inputs), std::move(attrs), name);
}

ValueId GraphBuilder::op(std::string_view op_name, std::vector<Operand> args, Attrs attrs,
                         const std::string& name) {
  if (auto kind = parse_op_kind(op_name)) return op(*kind, std::move(args), std::move(attrs), name);
  if (!is_composite_op(op_name)) throw UserError(fmt::format("unknown op '{}'", op_name));
  std::vector<ValueId> values;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].is_literal) {
      throw UserError(fmt::format("operand {} of {} must be a value, not a literal", i, op_name));
    }
    values.push_back(args[i].value);
  }
  std::string result = name.empty() ? fresh_name(std::string(op_name)) : name;
  return expand_composite(*this, op_name, values, attrs, result);
}

ValueId GraphBuilder::constant(double value, DType dtype, Shape shape, const std::string& name) {
  Attrs attrs{{"dtype", AttrValue(dtype)}, {"shape", AttrValue(std::move(shape))}};
  if (is_float(dtype)) {
    attrs.set("value", AttrValue(value));
  } else {
    attrs.set("value", AttrValue(static_cast<int64_t>(value)));
  }
  return op(OpKind::Constant, {}, std::move(attrs), name);
}

ValueId GraphBuilder::cast(ValueId x, DType to, const std::string& name) {
  return op(OpKind::Cast, {x}, {{"to", AttrValue(to)}}, name);
}

ValueId GraphBuilder::reduce(OpKind kind, ValueId x, std::vector<int64_t> axes, bool keepdims,
                             const std::string& name) {
  return op(kind, {x}, {{"axes", AttrValue(std::move(axes))}, {"keepdims", AttrValue(keepdims)}}, name);
}

ValueId GraphBuilder::reshape(ValueId x, Shape shape, const std::string& name) {
  return op(OpKind::Reshape, {x}, {{"shape", AttrValue(std::move(shape))}}, name);
}

ValueId GraphBuilder::broadcast(ValueId x, Shape shape, const std::string& name) {
  return op(OpKind::Broadcast, {x}, {{"shape", AttrValue(std::move(shape))}}, name);
}

ValueId GraphBuilder::transpose(ValueId x, std::vector<int64_t> perm, const std::string& name) {
  return op(OpKind::Transpose, {x}, {{"perm", AttrValue(std::move(perm))}}, name);
}

void GraphBuilder::output(ValueId v, const std::string& name) {
  g_.add_output(name.empty() ? g_.value_name(v) : name, v);
}

Graph GraphBuilder::finish() {
  if (g_.outputs().empty()) throw UserError(fmt::format("graph '{}' returns nothing", g_.name()));
  verify_or_throw(g_);
  return std::move(g_);
}

}  // namespace stitch
