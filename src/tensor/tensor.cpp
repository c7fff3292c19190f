#include "stitch/tensor.h"

#include <fmt/format.h>

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>

#include "stitch/error.h"
#include "stitch/shape.h"
#include "tensor/narrow_float.h"

namespace stitch {

namespace {


// Integers above 2^53 round on the way to double; rounding to odd there makes
// the second rounding (to f16 or bf16, far fewer bits) come out as a single one.
double int64_to_f64_round_to_odd(int64_t v) {
  const bool negative = v < 0;
  uint64_t magnitude = negative ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  const int excess_bits = std::max(0, static_cast<int>(std::bit_width(magnitude)) - 53);
  if (excess_bits > 0) {
    const bool sticky = (magnitude & ((uint64_t{1} << excess_bits) - 1)) != 0;
    magnitude = (magnitude >> excess_bits) | (sticky ? 1 : 0);
  }
  const double result = std::ldexp(static_cast<double>(magnitude), excess_bits);
  return negative ? -result : result;
}

template <class Int>
Int saturating_f64_to_int(double v) {
  if (std::isnan(v)) return 0;
  // Compared in double: the limits of i8 and i32 are exact, and 2^63 is the
  // first double above the i64 range, so every comparison is exact.
  constexpr double kMin = static_cast<double>(std::numeric_limits<Int>::min());
  constexpr double kAboveMax = -kMin;
  if (v <= kMin) return std::numeric_limits<Int>::min();
  if (v >= kAboveMax) return std::numeric_limits<Int>::max();
  return static_cast<Int>(v);
}

template <class T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <class T>
void store(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

// splitmix64 (Steele, Lea, Flood 2014): a few integer operations, so every
// machine and compiler draws the same stream for a seed.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E37'79B9'7F4A'7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58'476D'1CE4'E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D0'49BB'1331'11EBull;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_;
};

// Significand bits including the implicit one.
int float_precision(DType t) {
  switch (t) {
    case DType::f16: return 11;
    case DType::bf16: return 8;
    case DType::f32: return 24;
    case DType::f64: return 53;
    default: STITCH_ASSERT(false, "not a float dtype");
  }
}

void append_element(std::string& out, const Tensor& t, int64_t i) {
  char buf[64];
  std::to_chars_result r{};
  switch (t.dtype()) {
    case DType::boolean:
      out += t.get_i64(i) != 0 ? "true" : "false";
      return;
    case DType::i8:
    case DType::i32:
    case DType::i64:
      r = std::to_chars(buf, buf + sizeof buf, t.get_i64(i));
      break;
    case DType::f64:
      r = std::to_chars(buf, buf + sizeof buf, t.get_f64(i));
      break;
    // Shortest text that reads back as the same float; every f16 and bf16 value is a float.
    case DType::f16:
    case DType::bf16:
    case DType::f32:
      r = std::to_chars(buf, buf + sizeof buf, static_cast<float>(t.get_f64(i)));
      break;
  }
  out.append(buf, r.ptr);
}

}  // namespace

uint16_t f64_to_f16_bits(double d) { return stitch_f64_to_f16_bits(d); }
uint16_t f64_to_bf16_bits(double d) { return stitch_f64_to_bf16_bits(d); }
uint16_t f32_to_f16_bits(float f) { return f64_to_f16_bits(static_cast<double>(f)); }

uint16_t f32_to_bf16_bits(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7FFF'FFFFu) > 0x7F80'0000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  // Adding 0x7FFF plus the lowest kept bit rounds to nearest even in one step;
  // a carry into the exponent is the correct result, up to infinity.
  const uint32_t lowest_kept_bit = (bits >> 16) & 1u;
  return static_cast<uint16_t>((bits + 0x7FFFu + lowest_kept_bit) >> 16);
}

float bf16_bits_to_f32(uint16_t h) { return stitch_bf16_bits_to_f32(h); }
float f16_bits_to_f32(uint16_t h) { return stitch_f16_bits_to_f32(h); }

Tensor::Tensor(DType dtype, std::vector<int64_t> shape) : Tensor(dtype, std::move(shape), NoFill{}) {
  // A new anonymous mapping is zero already (the kernel zeroes it).
  if (!bytes_.empty() && !detail::storage_is_zeroed(bytes_.data())) std::memset(bytes_.data(), 0, bytes_.size());
}

Tensor Tensor::uninitialized(DType dtype, std::vector<int64_t> shape) { return Tensor(dtype, std::move(shape), NoFill{}); }

Tensor::Tensor(DType dtype, std::vector<int64_t> shape, NoFill) : dtype_(dtype), shape_(std::move(shape)) {
  for (int64_t d : shape_) STITCH_ASSERT(d >= 0, "negative dimension in tensor shape");
  // Every reader of a size checks it against the limit (docs/limits.md); a
  // shape that comes here unchecked is still bad input, never a wrapped size.
  check_tensor_size("tensor", dtype_, shape_);
  numel_ = 1;
  for (int64_t d : shape_) numel_ *= d;
  // numel_ * element size <= kMaxTensorBytes: no overflow.
  const int64_t bytes = numel_ * dtype_size(dtype_);
  try {
    bytes_.resize(static_cast<size_t>(bytes));
  } catch (const std::bad_alloc&) {
    throw UserError(fmt::format("out of memory: the host did not give the {} bytes of a {} tensor", bytes,
                                TensorType{dtype_, Shape(shape_.begin(), shape_.end())}.str()));
  }
}

Tensor allocate_tensor(const std::string& what, DType dtype, std::vector<int64_t> shape) {
  try {
    return Tensor(dtype, std::move(shape));
  } catch (const UserError& e) {
    throw UserError(fmt::format("{}: {}", what, e.what()));
  }
}

double element_get_f64(const std::byte* p, DType dtype) {
  switch (dtype) {
    case DType::f16: return f16_bits_to_f32(load<uint16_t>(p));
    case DType::bf16: return bf16_bits_to_f32(load<uint16_t>(p));
    case DType::f32: return load<float>(p);
    case DType::f64: return load<double>(p);
    case DType::i8: return load<int8_t>(p);
    case DType::i32: return load<int32_t>(p);
    case DType::i64: return static_cast<double>(load<int64_t>(p));
    case DType::boolean: return load<uint8_t>(p) != 0 ? 1.0 : 0.0;
  }
  STITCH_ASSERT(false, "unknown dtype");
}

void element_set_f64(std::byte* p, DType dtype, double v) {
  switch (dtype) {
    case DType::f16: return store(p, f64_to_f16_bits(v));
    case DType::bf16: return store(p, f64_to_bf16_bits(v));
    case DType::f32: return store(p, static_cast<float>(v));
    case DType::f64: return store(p, v);
    case DType::i8: return store(p, saturating_f64_to_int<int8_t>(v));
    case DType::i32: return store(p, saturating_f64_to_int<int32_t>(v));
    case DType::i64: return store(p, saturating_f64_to_int<int64_t>(v));
    // NaN compares unequal to zero, so it reads as true, as in numpy.
    case DType::boolean: return store(p, static_cast<uint8_t>(v != 0.0 ? 1 : 0));
  }
  STITCH_ASSERT(false, "unknown dtype");
}

int64_t element_get_i64(const std::byte* p, DType dtype) {
  switch (dtype) {
    case DType::i8: return load<int8_t>(p);
    case DType::i32: return load<int32_t>(p);
    case DType::i64: return load<int64_t>(p);
    case DType::boolean: return load<uint8_t>(p) != 0 ? 1 : 0;
    case DType::f16:
    case DType::bf16:
    case DType::f32:
    case DType::f64: return saturating_f64_to_int<int64_t>(element_get_f64(p, dtype));
  }
  STITCH_ASSERT(false, "unknown dtype");
}

void element_set_i64(std::byte* p, DType dtype, int64_t v) {
  switch (dtype) {
    // Narrowing to a signed type is modular since C++20.
    case DType::i8: return store(p, static_cast<int8_t>(v));
    case DType::i32: return store(p, static_cast<int32_t>(v));
    case DType::i64: return store(p, v);
    case DType::boolean: return store(p, static_cast<uint8_t>(v != 0 ? 1 : 0));
    case DType::f16: return store(p, f64_to_f16_bits(int64_to_f64_round_to_odd(v)));
    case DType::bf16: return store(p, f64_to_bf16_bits(int64_to_f64_round_to_odd(v)));
    case DType::f32: return store(p, static_cast<float>(v));
    case DType::f64: return store(p, static_cast<double>(v));
  }
  STITCH_ASSERT(false, "unknown dtype");
}

std::byte* Tensor::element(int64_t i) const {
  STITCH_ASSERT(i >= 0 && i < numel_, "tensor element index out of range");
  return const_cast<std::byte*>(bytes_.data()) + i * dtype_size(dtype_);
}

double Tensor::get_f64(int64_t i) const { return element_get_f64(element(i), dtype_); }
void Tensor::set_f64(int64_t i, double v) { element_set_f64(element(i), dtype_, v); }
int64_t Tensor::get_i64(int64_t i) const { return element_get_i64(element(i), dtype_); }
void Tensor::set_i64(int64_t i, int64_t v) { element_set_i64(element(i), dtype_, v); }

int64_t ArrayView::numel() const {
  int64_t n = 1;
  for (int d = 0; d < rank; ++d) n *= shape[d];
  return n;
}

size_t ArrayView::nbytes() const { return static_cast<size_t>(numel()) * static_cast<size_t>(dtype_size(dtype)); }

std::string Tensor::str(int max_elements) const {
  std::string out(dtype_name(dtype_));
  out += '[';
  for (size_t d = 0; d < shape_.size(); ++d) {
    if (d > 0) out += ", ";
    out += std::to_string(shape_[d]);
  }
  out += "] {";
  const int64_t shown = std::min<int64_t>(numel_, std::max(max_elements, 0));
  for (int64_t i = 0; i < shown; ++i) {
    if (i > 0) out += ", ";
    append_element(out, *this, i);
  }
  if (shown < numel_) out += shown > 0 ? ", ..." : "...";
  out += '}';
  return out;
}

void fill_random(Tensor& t, uint64_t seed) {
  SplitMix64 rng(seed);
  const DType dtype = t.dtype();
  if (is_float(dtype)) {
    // k * 2^(2-p) - 2 for a p-bit k is exact in a p-bit significand, so no
    // rounding can push a value onto 2 and every dtype sees the same grid shape.
    // The power of two is exact, so k * step is the ldexp of k; f32 and f64
    // are written directly (the value is exact in both), the narrow floats
    // through their rounding conversion. A model's weights are hundreds of
    // millions of elements: no per-element dispatch.
    const int precision = float_precision(dtype);
    const double step = std::ldexp(1.0, 2 - precision);
    const int64_t n = t.numel();
    const auto value = [&] { return static_cast<double>(rng.next() >> (64 - precision)) * step - 2.0; };
    if (dtype == DType::f32) {
      float* out = t.data<float>();
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(value());
    } else if (dtype == DType::f64) {
      double* out = t.data<double>();
      for (int64_t i = 0; i < n; ++i) out[i] = value();
    } else {
      for (int64_t i = 0; i < n; ++i) t.set_f64(i, value());
    }
    return;
  }
  const int value_bits = is_bool(dtype) ? 1 : 4;
  const int64_t offset = is_bool(dtype) ? 0 : 8;
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.set_i64(i, static_cast<int64_t>(rng.next() >> (64 - value_bits)) - offset);
  }
}

}  // namespace stitch
