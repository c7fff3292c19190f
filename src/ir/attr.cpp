#include "stitch/attr.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "stitch/error.h"

namespace stitch {

namespace {

bool same_float(double a, double b) {
  return a == b ? std::signbit(a) == std::signbit(b) : (std::isnan(a) && std::isnan(b));
}

}  // namespace

// Shortest text that parses back to the same double, and always reads as a
// float (never as an integer) so a round trip keeps the attribute's kind.
std::string format_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  STITCH_ASSERT(ec == std::errc(), "to_chars failed");
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

bool AttrValue::operator==(const AttrValue& o) const {
  if (v_.index() != o.v_.index()) return false;
  if (is_float()) return same_float(as_float(), o.as_float());
  if (is_floats()) {
    const Floats& a = as_floats();
    const Floats& b = o.as_floats();
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!same_float(a[i], b[i])) return false;
    }
    return true;
  }
  return v_ == o.v_;
}

std::string AttrValue::str() const {
  if (is_int()) return std::to_string(as_int());
  if (is_float()) return format_float(as_float());
  if (is_bool()) return as_bool() ? "true" : "false";
  if (is_dtype()) return std::string(dtype_name(as_dtype()));
  if (is_string()) {
    std::string out = "\"";
    for (char c : as_string()) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    return out + "\"";
  }
  if (is_shape()) return shape_str(as_shape());
  std::string out = "[";
  if (is_ints()) {
    for (size_t i = 0; i < as_ints().size(); ++i) out += (i ? ", " : "") + std::to_string(as_ints()[i]);
  } else {
    for (size_t i = 0; i < as_floats().size(); ++i) out += (i ? ", " : "") + format_float(as_floats()[i]);
  }
  return out + "]";
}

Attrs::Attrs(std::initializer_list<std::pair<std::string, AttrValue>> init) {
  for (const auto& [k, v] : init) set(k, v);
}

void Attrs::set(const std::string& name, AttrValue v) {
  auto it = std::lower_bound(items_.begin(), items_.end(), name,
                             [](const auto& item, const std::string& n) { return item.first < n; });
  if (it != items_.end() && it->first == name) {
    it->second = std::move(v);
  } else {
    items_.insert(it, {name, std::move(v)});
  }
}

const AttrValue* Attrs::find(const std::string& name) const {
  auto it = std::lower_bound(items_.begin(), items_.end(), name,
                             [](const auto& item, const std::string& n) { return item.first < n; });
  return it != items_.end() && it->first == name ? &it->second : nullptr;
}

const AttrValue& Attrs::get(const std::string& name) const {
  const AttrValue* v = find(name);
  STITCH_ASSERT(v != nullptr, "missing attribute '" + name + "' after validation");
  return *v;
}

void Attrs::erase(const std::string& name) {
  std::erase_if(items_, [&](const auto& item) { return item.first == name; });
}

}  // namespace stitch
