#include "onnx/context.h"

#include "onnx/importer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>
#include <cstring>

namespace stitch::onnx_import {

using ::onnx::AttributeProto;
using ::onnx::NodeProto;

namespace {

bool all_equal(const Tensor& t) {
  for (int64_t i = 1; i < t.numel(); ++i) {
    if (t.get_i64(i) != t.get_i64(0) || t.get_f64(i) != t.get_f64(0)) return false;
  }
  return true;
}

bool is_integral(DType d) { return d == DType::i8 || d == DType::i32 || d == DType::i64; }

}  // namespace

std::string ImportContext::sanitize(const std::string& onnx_name) {
  std::string s;
  for (char c : onnx_name) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "v_" + s;
  return s;
}

ImportContext::ImportContext(std::string path, int64_t opset, std::string graph_name)
    : path_(std::move(path)), opset_(opset), b_(std::move(graph_name)) {}

std::string ImportContext::fresh(const std::string& onnx_name) {
  std::string s = sanitize(onnx_name);
  return b_.graph().has_name(s) ? b_.fresh_name(s) : s;
}

ValueId ImportContext::value(const std::string& name) {
  if (auto it = values_.find(name); it != values_.end()) return it->second;
  if (const ShapeValue* sv = shape_value(name)) {
    std::vector<std::string> entries;
    for (const SymInt& e : sv->entries) entries.push_back(e.str());
    throw UserError(fmt::format("'{}' is computed from symbolic dims ([{}]) and used as data, which needs its value "
                                "at import time",
                                name, fmt::join(entries, ", ")));
  }
  auto k = known_.find(name);
  if (k == known_.end()) throw UserError(fmt::format("value '{}' is used but never defined", name));
  // First use as data: a splat constant when every element agrees, else a
  // parameter bound to the tensor (docs/onnx.md, Decisions).
  const Tensor& t = k->second;
  Shape shape(t.shape().begin(), t.shape().end());
  ValueId v;
  // Integers beyond 2^53 do not survive a double; they stay bound tensors.
  if (t.numel() > 0 && all_equal(t) &&
      (!is_integral(t.dtype()) || static_cast<int64_t>(t.get_f64(0)) == t.get_i64(0))) {
    v = b_.constant(t.get_f64(0), t.dtype(), shape, fresh(name));
  } else if (auto p = predeclared_.find(name); p != predeclared_.end()) {
    v = p->second;
    bound_.emplace(b_.graph().value_name(v), t);
  } else if (!b_.graph().nodes().empty()) {
    late_.push_back({name, t.dtype(), shape});
    v = b_.constant(0, t.dtype(), shape, fresh(name));
  } else {
    v = add_param(name, t.dtype(), shape);
    bound_.emplace(b_.graph().value_name(v), t);
  }
  values_[name] = v;
  return v;
}

ValueId ImportContext::bind_param(const std::string& onnx_name, Tensor t) {
  ValueId v = add_param(onnx_name, t.dtype(), Shape(t.shape().begin(), t.shape().end()));
  bound_.emplace(b_.graph().value_name(v), t);
  known_.insert_or_assign(onnx_name, std::move(t));
  return v;
}

void ImportContext::predeclare(const std::vector<Late>& late) {
  for (const Late& l : late) predeclared_[l.onnx_name] = b_.param(fresh(l.onnx_name), l.dtype, l.shape);
}

const Tensor* ImportContext::known(const std::string& name) const {
  auto k = known_.find(name);
  return k == known_.end() ? nullptr : &k->second;
}

const ShapeValue* ImportContext::shape_value(const std::string& name) const {
  auto s = shape_values_.find(name);
  return s == shape_values_.end() ? nullptr : &s->second;
}

void ImportContext::define_shape_value(const std::string& onnx_name, ShapeValue v) {
  if (onnx_name.empty()) return;
  bool all_static = true;
  for (const SymInt& e : v.entries) all_static = all_static && e.is_static();
  if (all_static) {
    Tensor t(v.dtype, v.scalar ? std::vector<int64_t>{} : std::vector<int64_t>{static_cast<int64_t>(v.entries.size())});
    for (size_t i = 0; i < v.entries.size(); ++i) t.set_i64(static_cast<int64_t>(i), v.entries[i].value);
    define_known(onnx_name, std::move(t));
    return;
  }
  values_.erase(onnx_name);
  known_.erase(onnx_name);
  shape_values_.insert_or_assign(onnx_name, std::move(v));
}

std::vector<SymInt> ImportContext::known_sym_ints(const NodeProto& n, int i, const std::string& what) const {
  if (has_input(n, i)) {
    if (const ShapeValue* sv = shape_value(n.input(i))) {
      for (const SymInt& e : sv->entries) {
        if (e.opaque) {
          throw UserError(fmt::format("{} ('{}') holds a product of a symbolic dim and another extent, which the "
                                      "IR's dims cannot name",
                                      what, n.input(i)));
        }
      }
      return sv->entries;
    }
  }
  std::vector<SymInt> out;
  for (int64_t v : ints_of(known_input(n, i, what))) out.push_back(SymInt{v, "", false});
  return out;
}

const Tensor& ImportContext::known_input(const NodeProto& n, int i, const std::string& what) const {
  if (!has_input(n, i)) throw UserError(fmt::format("{} is missing", what));
  const Tensor* t = known(n.input(i));
  if (!t && graph_inputs_.count(n.input(i))) {
    throw NeedsKnownInput(fmt::format("{} is the graph input '{}', but it must be known at import time (it decides "
                                      "a shape); give its value to specialise the model on it",
                                      what, n.input(i)),
                          n.input(i));
  }
  if (!t) {
    throw UserError(fmt::format("{} ('{}') must be known at import time (an initializer, a Constant, or computed "
                                "from static shapes), but it depends on a graph input",
                                what, n.input(i)));
  }
  return *t;
}

std::vector<int64_t> ImportContext::ints_of(const Tensor& t) {
  std::vector<int64_t> v;
  v.reserve(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.get_i64(i));
  return v;
}

DType ImportContext::dtype_of_value(const std::string& name) {
  if (const Tensor* t = known(name)) return t->dtype();
  if (const ShapeValue* sv = shape_value(name)) return sv->dtype;
  return dtype(value(name));
}

Shape ImportContext::shape_of_value(const std::string& name) {
  if (const Tensor* t = known(name)) return Shape(t->shape().begin(), t->shape().end());
  if (const ShapeValue* sv = shape_value(name)) {
    return sv->scalar ? Shape{} : Shape{Dim(static_cast<int64_t>(sv->entries.size()))};
  }
  return type(value(name)).shape;
}

void ImportContext::define(const NodeProto& n, int i, ValueId v) {
  if (!wants_output(n, i)) return;
  values_[n.output(i)] = v;
}

void ImportContext::define_known(const std::string& onnx_name, Tensor t) {
  if (onnx_name.empty()) return;
  values_.erase(onnx_name);
  shape_values_.erase(onnx_name);
  known_.insert_or_assign(onnx_name, std::move(t));
}

std::string ImportContext::out_name(const NodeProto& n, int i) {
  return wants_output(n, i) ? fresh(n.output(i)) : std::string();
}

ValueId ImportContext::add_param(const std::string& onnx_name, DType dtype, const Shape& shape) {
  ValueId v = b_.param(fresh(onnx_name), dtype, shape);
  values_[onnx_name] = v;
  return v;
}

const AttributeProto* ImportContext::attr(const NodeProto& n, const std::string& name) {
  for (const AttributeProto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t ImportContext::int_attr(const NodeProto& n, const std::string& name, int64_t fallback) {
  const AttributeProto* a = attr(n, name);
  return a ? a->i() : fallback;
}

double ImportContext::float_attr(const NodeProto& n, const std::string& name, double fallback) {
  const AttributeProto* a = attr(n, name);
  return a ? a->f() : fallback;
}

std::string ImportContext::string_attr(const NodeProto& n, const std::string& name, const std::string& fallback) {
  const AttributeProto* a = attr(n, name);
  return a ? a->s() : fallback;
}

std::optional<std::vector<int64_t>> ImportContext::ints_attr(const NodeProto& n, const std::string& name) {
  const AttributeProto* a = attr(n, name);
  if (!a) return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

void ImportContext::require_inputs(const NodeProto& n, int lo, int hi) {
  if (n.input_size() < lo || n.input_size() > hi) {
    throw UserError(lo == hi ? fmt::format("expects {} input(s), has {}", lo, n.input_size())
                             : fmt::format("expects {} to {} inputs, has {}", lo, hi, n.input_size()));
  }
}

int64_t ImportContext::normalize_axis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    throw UserError(fmt::format("axis {} is out of range for rank {}", axis, rank));
  }
  return axis < 0 ? axis + rank : axis;
}

}  // namespace stitch::onnx_import
