// Per-element semantics of every op, on the interpreter's wide values (double
// for floats, int64 for integers and bools). These functions are the normative
// text of docs/semantics.md in code form; the compiled back ends must match them.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "stitch/dtype.h"
#include "stitch/error.h"

namespace stitch::interp::scalar {

// ---- floating point: IEEE double, rounded to the dtype by the caller --------

// numpy `maximum`/`minimum`: a NaN in either operand is the result; on equal
// operands (including -0 vs +0) the first one wins.
inline double maximum(double a, double b) { return (a >= b || std::isnan(a)) ? a : b; }
inline double minimum(double a, double b) { return (a <= b || std::isnan(a)) ? a : b; }

// max(x, 0) that never returns -0: relu(-0) = +0, relu(NaN) = NaN.
inline double relu(double x) { return x > 0 || std::isnan(x) ? x : 0.0; }

inline double sign(double x) {
  if (std::isnan(x)) return x;
  return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0;
}

// Two branches so exp never overflows: exp(-|x|) is in (0, 1].
inline double sigmoid(double x) {
  if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
  double e = std::exp(x);
  return e / (1.0 + e);
}

inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }

// The interpreter never changes the rounding mode, so this is round half to even.
inline double round_half_even(double x) { return std::nearbyint(x); }

inline double clamp(double x, double lo, double hi) { return minimum(maximum(x, lo), hi); }

// ---- integers: computed in 64 bits, wrapped to the dtype's width by the caller.
// Wrapping commutes with +, -, *, so 64-bit results wrapped to 8 or 32 bits are
// what 8- or 32-bit two's-complement arithmetic gives.

inline int64_t wrapping_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrapping_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
inline int64_t wrapping_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
inline int64_t wrapping_neg(int64_t a) { return wrapping_sub(0, a); }
inline int64_t wrapping_abs(int64_t a) { return a < 0 ? wrapping_neg(a) : a; }

// Truncating division; x / 0 is 0 and MIN / -1 wraps to MIN (as the negation does).
inline int64_t int_div(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return wrapping_neg(a);
  return a / b;
}

// C `%`: the result has the dividend's sign; x % 0 and x % -1 are 0.
inline int64_t int_rem(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  return a % b;
}

// Exponentiation by squaring with wrap-around. A negative exponent gives the
// truncated value of 1 / base^-e: 0, except for the bases 1 and -1.
inline int64_t int_pow(int64_t base, int64_t exponent) {
  if (exponent < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exponent & 1) ? -1 : 1;
    return 0;
  }
  uint64_t result = 1;
  uint64_t b = static_cast<uint64_t>(base);
  uint64_t e = static_cast<uint64_t>(exponent);
  while (e != 0) {
    if (e & 1) result *= b;
    b *= b;
    e >>= 1;
  }
  return static_cast<int64_t>(result);
}

inline int64_t int_sign(int64_t x) { return (x > 0) - (x < 0); }
inline int64_t int_relu(int64_t x) { return x > 0 ? x : 0; }
inline int64_t int_clamp(int64_t x, int64_t lo, int64_t hi) {
  int64_t m = x > lo ? x : lo;
  return m < hi ? m : hi;
}

// ---- casts -------------------------------------------------------------------

inline int64_t int_min_of(DType t) {
  switch (t) {
    case DType::i8: return std::numeric_limits<int8_t>::min();
    case DType::i32: return std::numeric_limits<int32_t>::min();
    case DType::i64: return std::numeric_limits<int64_t>::min();
    case DType::boolean: return 0;
    default: break;
  }
  STITCH_ASSERT(false, "int_min_of: not an integer dtype");
}

inline int64_t int_max_of(DType t) {
  switch (t) {
    case DType::i8: return std::numeric_limits<int8_t>::max();
    case DType::i32: return std::numeric_limits<int32_t>::max();
    case DType::i64: return std::numeric_limits<int64_t>::max();
    case DType::boolean: return 1;
    default: break;
  }
  STITCH_ASSERT(false, "int_max_of: not an integer dtype");
}

// Truncates toward zero and saturates to the integer dtype's range; NaN is 0.
inline int64_t float_to_int_saturating(double v, DType to) {
  if (std::isnan(v)) return 0;
  // -MIN is 2^7, 2^31 or 2^63: exact in double, and the first value past MAX.
  const double min = static_cast<double>(int_min_of(to));
  if (v <= min) return int_min_of(to);
  if (v >= -min) return int_max_of(to);
  return static_cast<int64_t>(v);
}

// An int64 as the nearest double, except that above 2^53 the result is rounded
// to odd: a later rounding to f32, f16 or bf16 (far fewer bits) then equals a
// single correct rounding of the integer.
inline double int_to_double_round_to_odd(int64_t v) {
  const bool negative = v < 0;
  uint64_t magnitude = negative ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  const int excess_bits = std::bit_width(magnitude) > 53 ? std::bit_width(magnitude) - 53 : 0;
  if (excess_bits > 0) {
    const bool sticky = (magnitude & ((uint64_t{1} << excess_bits) - 1)) != 0;
    magnitude = (magnitude >> excess_bits) | (sticky ? 1 : 0);
  }
  const double result = std::ldexp(static_cast<double>(magnitude), excess_bits);
  return negative ? -result : result;
}

}  // namespace stitch::interp::scalar
