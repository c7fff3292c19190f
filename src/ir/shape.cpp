#include "stitch/shape.h"

#include <fmt/format.h>

#include <cstdint>
#include <limits>

#include "stitch/error.h"

namespace stitch {

int64_t Dim::extent() const {
  STITCH_ASSERT(is_static(), "extent() of symbolic dim " + symbol_);
  return extent_;
}

std::string Dim::str() const { return is_static() ? std::to_string(extent_) : symbol_; }

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += s[i].str();
  }
  return out + "]";
}

bool is_static(const Shape& s) {
  for (const Dim& d : s) {
    if (d.is_symbolic()) return false;
  }
  return true;
}

std::vector<int64_t> concrete_shape(const Shape& s, const SymbolBindings& b) {
  std::vector<int64_t> out;
  out.reserve(s.size());
  for (const Dim& d : s) {
    if (d.is_static()) {
      out.push_back(d.extent());
      continue;
    }
    auto it = b.find(d.name());
    if (it == b.end()) throw UserError(fmt::format("symbolic dim '{}' is not bound by any input", d.name()));
    out.push_back(it->second);
  }
  return out;
}

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    STITCH_ASSERT(d >= 0, "negative extent");
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) {
      throw UserError("tensor has more than 2^63 elements");
    }
    n *= d;
  }
  return n;
}

std::string TensorType::str() const {
  return std::string(dtype_name(dtype)) + shape_str(shape);
}

}  // namespace stitch
