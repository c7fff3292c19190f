#include "onnx/shape_values.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace stitch::onnx_import {

namespace {

using ::onnx::NodeProto;
using Entries = std::vector<SymInt>;

SymInt number(int64_t v) { return SymInt{v, "", false}; }
SymInt opaque() { return SymInt{0, "", true}; }

// Input i as a shape value, a known integer tensor's entries (rank 0 or 1),
// or nullopt for anything else.
std::optional<ShapeValue> operand(const ImportContext& ctx, const NodeProto& n, int i) {
  if (!ImportContext::has_input(n, i)) return std::nullopt;
  if (const ShapeValue* sv = ctx.shape_value(n.input(i))) return *sv;
  const Tensor* t = ctx.known(n.input(i));
  if (!t || t->rank() > 1 || !(is_integer(t->dtype()) || t->dtype() == DType::boolean)) return std::nullopt;
  ShapeValue v;
  v.scalar = t->rank() == 0;
  v.dtype = t->dtype();
  for (int64_t k = 0; k < t->numel(); ++k) v.entries.push_back(number(t->get_i64(k)));
  return v;
}

// a OP b with a symbol on either side: x * 1, x + 0, x - 0 and x / 1 stay x.
SymInt arithmetic(const std::string& op, const SymInt& a, const SymInt& b) {
  if (a.is_static() && b.is_static()) {
    if (op == "Add") return number(a.value + b.value);
    if (op == "Sub") return number(a.value - b.value);
    if (op == "Mul") return number(a.value * b.value);
    if (b.value == 0) throw UserError("integer division by 0 in shape arithmetic");
    return number(a.value / b.value);
  }
  if (a.opaque || b.opaque) return opaque();
  if (b.is_static() && ((op == "Mul" || op == "Div") ? b.value == 1 : b.value == 0)) return a;
  if (a.is_static() && ((op == "Mul" && a.value == 1) || (op == "Add" && a.value == 0))) return b;
  return opaque();
}

// a == b where it is decided: a symbol is an extent, so never negative, and
// equals itself.
std::optional<bool> equal(const SymInt& a, const SymInt& b) {
  if (a.is_static() && b.is_static()) return a.value == b.value;
  if (a.opaque || b.opaque) return std::nullopt;
  if (!a.symbol.empty() && a.symbol == b.symbol) return true;
  if ((a.is_static() && a.value < 0) || (b.is_static() && b.value < 0)) return false;
  return std::nullopt;
}

// Elementwise over operands of rank 0 or 1 with numpy broadcasting.
std::optional<ShapeValue> elementwise(const std::vector<ShapeValue>& in,
                                      const std::function<std::optional<SymInt>(const std::vector<SymInt>&)>& f) {
  size_t count = 1;
  bool scalar = true;
  for (const ShapeValue& v : in) {
    if (!v.scalar) {
      scalar = false;
      if (v.entries.size() != 1 && count != 1 && v.entries.size() != count) return std::nullopt;
      if (v.entries.size() != 1) count = v.entries.size();
    }
  }
  ShapeValue out;
  out.scalar = scalar;
  for (size_t k = 0; k < count; ++k) {
    std::vector<SymInt> args;
    for (const ShapeValue& v : in) args.push_back(v.entries.size() == 1 ? v.entries[0] : v.entries[k]);
    std::optional<SymInt> r = f(args);
    if (!r) return std::nullopt;
    out.entries.push_back(*r);
  }
  return out;
}

std::vector<int64_t> ints_of(const ShapeValue& v, const std::string& what) {
  std::vector<int64_t> out;
  for (const SymInt& e : v.entries) {
    if (!e.is_static()) throw UserError(fmt::format("{} holds the symbolic dim {}", what, e.str()));
    out.push_back(e.value);
  }
  return out;
}

std::optional<ShapeValue> gather(const ShapeValue& data, const ShapeValue& index) {
  if (data.scalar) return std::nullopt;
  ShapeValue out;
  out.scalar = index.scalar;
  out.dtype = data.dtype;
  const auto n = static_cast<int64_t>(data.entries.size());
  for (int64_t i : ints_of(index, "the indices")) {
    if (i < -n || i >= n) throw UserError(fmt::format("index {} is out of range for {} entries", i, n));
    out.entries.push_back(data.entries[static_cast<size_t>(i < 0 ? i + n : i)]);
  }
  return out;
}

std::optional<ShapeValue> slice(const ImportContext& ctx, const NodeProto& n, const ShapeValue& data) {
  auto bound = [&](int i) -> std::optional<int64_t> {
    std::optional<ShapeValue> v = operand(ctx, n, i);
    if (!v) return std::nullopt;
    std::vector<int64_t> ints = ints_of(*v, "a Slice bound");
    if (ints.size() != 1) return std::nullopt;
    return ints[0];
  };
  std::optional<int64_t> start = bound(1), end = bound(2);
  std::optional<int64_t> step = ImportContext::has_input(n, 4) ? bound(4) : std::optional<int64_t>(1);
  if (data.scalar || !start || !end || !step || *step <= 0) return std::nullopt;
  const auto size = static_cast<int64_t>(data.entries.size());
  auto clamp = [size](int64_t v) { return std::clamp(v < 0 ? v + size : v, int64_t{0}, size); };
  ShapeValue out = data;
  out.entries.clear();
  for (int64_t k = clamp(*start); k < clamp(*end); k += *step) out.entries.push_back(data.entries[static_cast<size_t>(k)]);
  return out;
}

std::optional<ShapeValue> evaluate(const ImportContext& ctx, const NodeProto& n, std::vector<ShapeValue> in) {
  const std::string& op = n.op_type();
  if (op == "Identity") return in[0];
  if (op == "Cast") {
    auto to = dtype_of_onnx(static_cast<int32_t>(ImportContext::int_attr(n, "to", 0)));
    if (!to || !is_integer(*to)) return std::nullopt;
    in[0].dtype = *to;
    return in[0];
  }
  if (op == "Gather" && in.size() == 2 && ImportContext::int_attr(n, "axis", 0) == 0) return gather(in[0], in[1]);
  if (op == "Slice" && in.size() >= 3 && (in.size() < 4 || ints_of(in[3], "the Slice axes") == std::vector<int64_t>{0})) {
    return slice(ctx, n, in[0]);
  }
  if (op == "Unsqueeze" || op == "Squeeze" || op == "Reshape") {
    // Between a scalar and one entry, or a vector kept a vector.
    ShapeValue out = in[0];
    if (op == "Unsqueeze") {
      if (!out.scalar) return std::nullopt;
      out.scalar = false;
    } else if (op == "Squeeze") {
      if (out.scalar || out.entries.size() != 1) return std::nullopt;
      out.scalar = true;
    } else {
      std::vector<int64_t> shape = ints_of(in.at(1), "the Reshape shape");
      if (shape.size() > 1 || (shape.size() == 1 && shape[0] != -1 &&
                               shape[0] != static_cast<int64_t>(out.entries.size()))) {
        return std::nullopt;
      }
      out.scalar = shape.empty();
    }
    return out;
  }
  if (op == "Concat") {
    ShapeValue out;
    out.dtype = in[0].dtype;
    for (const ShapeValue& v : in) {
      if (v.scalar) return std::nullopt;
      out.entries.insert(out.entries.end(), v.entries.begin(), v.entries.end());
    }
    return out;
  }
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
    std::optional<ShapeValue> out = elementwise(in, [&](const std::vector<SymInt>& a) {
      return std::optional<SymInt>(arithmetic(op, a[0], a[1]));
    });
    if (out) out->dtype = in[0].dtype;
    return out;
  }
  if (op == "Equal") {
    std::optional<ShapeValue> out = elementwise(in, [](const std::vector<SymInt>& a) -> std::optional<SymInt> {
      std::optional<bool> e = equal(a[0], a[1]);
      if (!e) return std::nullopt;
      return number(*e ? 1 : 0);
    });
    if (out) out->dtype = DType::boolean;
    return out;
  }
  if (op == "Where") {
    std::optional<ShapeValue> out = elementwise(in, [](const std::vector<SymInt>& a) -> std::optional<SymInt> {
      if (!a[0].is_static()) return std::nullopt;
      return a[0].value != 0 ? a[1] : a[2];
    });
    if (out) out->dtype = in[1].dtype;
    return out;
  }
  return std::nullopt;
}

}  // namespace

bool has_shape_value_input(const ImportContext& ctx, const NodeProto& n) {
  for (const std::string& i : n.input()) {
    if (!i.empty() && ctx.shape_value(i)) return true;
  }
  return false;
}

bool fold_shape_values(ImportContext& ctx, const NodeProto& n) {
  if (n.output_size() != 1) return false;
  const std::string& op = n.op_type();
  if (op == "Shape") {
    // The shape of a shape value: its entry count, static.
    Tensor t(DType::i64, {ctx.shape_of_value(n.input(0)).empty() ? 0 : 1});
    if (t.numel() == 1) t.set_i64(0, ctx.shape_of_value(n.input(0))[0].extent());
    ctx.define_known(n, 0, std::move(t));
    return true;
  }
  if (op == "ConstantOfShape") {
    // A fill of a symbolic shape is a graph constant.
    std::vector<SymInt> entries = ctx.known_sym_ints(n, 0, "the shape input");
    Shape shape;
    for (const SymInt& e : entries) shape.push_back(e.is_static() ? Dim(e.value) : Dim::symbol(e.symbol));
    Tensor fill(DType::f32, {1});
    if (const auto* v = ImportContext::attr(n, "value")) fill = tensor_from_proto(v->t());
    if (fill.numel() != 1) throw UserError("the value attribute must hold one element");
    ctx.define(n, ctx.builder().constant(fill.get_f64(0), fill.dtype(), shape, ctx.out_name(n)));
    return true;
  }
  std::vector<ShapeValue> in;
  for (int i = 0; i < n.input_size(); ++i) {
    std::optional<ShapeValue> v = operand(ctx, n, i);
    if (!v) return false;
    in.push_back(std::move(*v));
  }
  std::optional<ShapeValue> out = evaluate(ctx, n, std::move(in));
  if (!out) return false;
  ctx.define_shape_value(n.output(0), std::move(*out));
  return true;
}

}  // namespace stitch::onnx_import
