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

namespace {

// Products of extents up to 2^126, then saturated: exact for every message
// about a tensor over the limit that a real shape spells.
using Wide = unsigned __int128;
constexpr Wide kWideCap = Wide{1} << 126;

Wide saturating_mul(Wide a, Wide b) {
  if (a != 0 && b > kWideCap / a) return kWideCap;
  return a * b;
}

std::string wide_str(Wide v) {
  if (v >= kWideCap) return "more than 2^126";
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  } while (v != 0);
  return digits;
}

// The limit in a message: "281474976710656 bytes (2^48)".
std::string limit_str() { return fmt::format("{} bytes (2^48)", kMaxTensorBytes); }

struct Span {
  Wide elements = 1;  // zero extents counted as 0
  Wide span = 1;      // zero extents counted as 1
  bool has_zero = false;
};

Span span_of(DType dtype, const std::vector<int64_t>& shape) {
  Span s;
  s.span = static_cast<Wide>(dtype_size(dtype));
  for (int64_t d : shape) {
    STITCH_ASSERT(d >= 0, "negative extent");
    if (d == 0) s.has_zero = true;
    s.elements = saturating_mul(s.elements, static_cast<Wide>(d));
    s.span = saturating_mul(s.span, static_cast<Wide>(d == 0 ? 1 : d));
  }
  return s;
}

[[noreturn]] void fail_size(const std::string& what, const std::string& type, DType dtype, const Span& s,
                            const std::string& note) {
  const std::string bytes = s.has_zero ? fmt::format("{} bytes counting each zero extent as 1", wide_str(s.span))
                                       : fmt::format("{} bytes", wide_str(s.span));
  throw UserError(fmt::format("{}: {} has {} elements of {} byte{} ({}{}); the limit is {} per tensor", what, type,
                              wide_str(s.elements), dtype_size(dtype), dtype_size(dtype) == 1 ? "" : "s", bytes,
                              note, limit_str()));
}

}  // namespace

std::optional<int64_t> tensor_span_bytes(DType dtype, const std::vector<int64_t>& shape) {
  const Span s = span_of(dtype, shape);
  if (s.span > static_cast<Wide>(kMaxTensorBytes)) return std::nullopt;
  return static_cast<int64_t>(s.span);
}

void check_tensor_size(const std::string& what, DType dtype, const std::vector<int64_t>& shape) {
  const Span s = span_of(dtype, shape);
  if (s.span <= static_cast<Wide>(kMaxTensorBytes)) return;
  std::string type = std::string(dtype_name(dtype)) + "[";
  for (size_t i = 0; i < shape.size(); ++i) type += (i ? ", " : "") + std::to_string(shape[i]);
  fail_size(what, type + "]", dtype, s, "");
}

void check_bound_size(const std::string& what, const TensorType& t, const SymbolBindings& b) {
  std::vector<int64_t> extents;
  extents.reserve(t.shape.size());
  bool symbolic = false;
  for (const Dim& d : t.shape) {
    if (d.is_static()) {
      // A negative static extent is reported where the shape is read.
      extents.push_back(d.extent() < 0 ? 0 : d.extent());
      continue;
    }
    auto it = b.find(d.name());
    extents.push_back(it == b.end() ? 1 : it->second);
    symbolic = true;
  }
  const Span s = span_of(t.dtype, extents);
  if (s.span <= static_cast<Wide>(kMaxTensorBytes)) return;
  std::string bound;
  for (const Dim& d : t.shape) {
    if (d.is_static() || bound.find(d.name() + " = ") != std::string::npos) continue;
    auto it = b.find(d.name());
    bound += fmt::format("{}{} = {}", bound.empty() ? "" : ", ", d.name(),
                         it == b.end() ? std::string("1 (unbound)") : std::to_string(it->second));
  }
  fail_size(what, t.str(), t.dtype, s, symbolic ? "; with " + bound : "");
}

void check_static_size(const std::string& what, const TensorType& t) {
  if (is_static(t.shape)) return check_bound_size(what, t, {});
  std::vector<int64_t> extents;
  for (const Dim& d : t.shape) extents.push_back(d.is_static() && d.extent() > 0 ? d.extent() : 1);
  const Span s = span_of(t.dtype, extents);
  if (s.span <= static_cast<Wide>(kMaxTensorBytes)) return;
  throw UserError(fmt::format("{}: {} spans at least {} bytes (each symbol counted as 1); the limit is {} per tensor",
                              what, t.str(), wide_str(s.span), limit_str()));
}

void check_extent(const std::string& what, int64_t extent) {
  if (extent < 0) throw UserError(fmt::format("{} is {}: an extent cannot be negative", what, extent));
  if (extent > kMaxTensorBytes) {
    throw UserError(fmt::format("{} is {}, more than the limit of {} on any extent (docs/limits.md)", what, extent,
                                kMaxTensorBytes));
  }
}

std::string TensorType::str() const {
  return std::string(dtype_name(dtype)) + shape_str(shape);
}

}  // namespace stitch
