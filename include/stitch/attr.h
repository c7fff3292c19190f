// Op attributes: typed values keyed by name, kept in canonical (sorted) order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "stitch/dtype.h"
#include "stitch/shape.h"

namespace stitch {


class AttrValue {
 public:
  using Ints = std::vector<int64_t>;
  using Floats = std::vector<double>;
  // Alternatives, in this order: int, float, bool, dtype, string, int list,
  // float list, shape (dims that may be symbols).
  using Storage = std::variant<int64_t, double, bool, DType, std::string, Ints, Floats, Shape>;

  AttrValue() : v_(int64_t{0}) {}
  AttrValue(int64_t i) : v_(i) {}  // NOLINT: implicit
  AttrValue(int i) : v_(int64_t{i}) {}  // NOLINT
  AttrValue(double f) : v_(f) {}  // NOLINT
  AttrValue(bool b) : v_(b) {}  // NOLINT
  AttrValue(DType t) : v_(t) {}  // NOLINT
  AttrValue(std::string s) : v_(std::move(s)) {}  // NOLINT
  AttrValue(const char* s) : v_(std::string(s)) {}  // NOLINT
  AttrValue(Ints v) : v_(std::move(v)) {}  // NOLINT
  AttrValue(Floats v) : v_(std::move(v)) {}  // NOLINT
  AttrValue(Shape v) : v_(std::move(v)) {}  // NOLINT

  bool is_int() const { return std::holds_alternative<int64_t>(v_); }
  bool is_float() const { return std::holds_alternative<double>(v_); }
  bool is_number() const { return is_int() || is_float(); }
  bool is_bool() const { return std::holds_alternative<bool>(v_); }
  bool is_dtype() const { return std::holds_alternative<DType>(v_); }
  bool is_string() const { return std::holds_alternative<std::string>(v_); }
  bool is_ints() const { return std::holds_alternative<Ints>(v_); }
  bool is_floats() const { return std::holds_alternative<Floats>(v_); }
  bool is_shape() const { return std::holds_alternative<Shape>(v_); }

  int64_t as_int() const { return std::get<int64_t>(v_); }
  double as_float() const { return std::get<double>(v_); }
  double as_number() const { return is_int() ? static_cast<double>(as_int()) : as_float(); }
  bool as_bool() const { return std::get<bool>(v_); }
  DType as_dtype() const { return std::get<DType>(v_); }
  const std::string& as_string() const { return std::get<std::string>(v_); }
  const Ints& as_ints() const { return std::get<Ints>(v_); }
  const Floats& as_floats() const { return std::get<Floats>(v_); }
  const Shape& as_shape() const { return std::get<Shape>(v_); }

  const Storage& storage() const { return v_; }
  bool operator==(const AttrValue& o) const;
  bool operator!=(const AttrValue& o) const { return !(*this == o); }
  // Text-format spelling: 3, 1e-05, inf, true, f32, "tanh", [0, 1], [B, 1024].
  std::string str() const;

 private:
  Storage v_;
};

// Attributes of one node, sorted by name; a name appears at most once.
class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<std::string, AttrValue>> init);

  void set(const std::string& name, AttrValue v);
  const AttrValue* find(const std::string& name) const;
  const AttrValue& get(const std::string& name) const;  // internal error if absent
  bool has(const std::string& name) const { return find(name) != nullptr; }
  void erase(const std::string& name);

  const std::vector<std::pair<std::string, AttrValue>>& items() const { return items_; }
  bool empty() const { return items_.empty(); }
  bool operator==(const Attrs& o) const { return items_ == o.items_; }
  bool operator!=(const Attrs& o) const { return !(*this == o); }

 private:
  std::vector<std::pair<std::string, AttrValue>> items_;
};

// Shortest text that reads back as the same double; always spelled as a float
// ("1.0", "1e-05", "inf", "-inf", "nan").
std::string format_float(double v);

}  // namespace stitch
