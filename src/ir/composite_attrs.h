// Reads a composite op's attributes with their kinds checked: what each
// composite's expansion (ir/composites*.cpp) takes from its Attrs.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stitch/attr.h"
#include "stitch/error.h"

namespace stitch {

class CompositeAttrs {
 public:
  CompositeAttrs(std::string_view op, const Attrs& attrs) : op_(op), attrs_(attrs) {}

  int64_t integer(const char* name, int64_t fallback) const {
    const AttrValue* v = attrs_.find(name);
    if (!v) return fallback;
    if (!v->is_int()) throw kind_error(name, "an integer", *v);
    return v->as_int();
  }
  double number(const char* name, double fallback) const {
    const AttrValue* v = attrs_.find(name);
    if (!v) return fallback;
    if (!v->is_number()) throw kind_error(name, "a number", *v);
    return v->as_number();
  }
  bool boolean(const char* name, bool fallback) const {
    const AttrValue* v = attrs_.find(name);
    if (!v) return fallback;
    if (!v->is_bool()) throw kind_error(name, "true or false", *v);
    return v->as_bool();
  }
  std::string string(const char* name, const char* fallback) const {
    const AttrValue* v = attrs_.find(name);
    if (!v) return fallback;
    if (!v->is_string()) throw kind_error(name, "a string", *v);
    return v->as_string();
  }
  std::optional<std::vector<int64_t>> ints(const char* name) const {
    const AttrValue* v = attrs_.find(name);
    if (!v) return std::nullopt;
    if (!v->is_ints()) throw kind_error(name, "a list of integers", *v);
    return v->as_ints();
  }
  // A list of numbers; integers are taken as floats.
  std::optional<std::vector<double>> floats(const char* name) const {
    const AttrValue* v = attrs_.find(name);
    if (!v) return std::nullopt;
    if (v->is_floats()) return v->as_floats();
    if (!v->is_ints()) throw kind_error(name, "a list of numbers", *v);
    return std::vector<double>(v->as_ints().begin(), v->as_ints().end());
  }

 private:
  UserError kind_error(const char* name, const char* kind, const AttrValue& v) const {
    return UserError(fmt::format("attribute '{}' of {} must be {}, got {}", name, op_, kind, v.str()));
  }
  std::string_view op_;
  const Attrs& attrs_;
};

}  // namespace stitch
