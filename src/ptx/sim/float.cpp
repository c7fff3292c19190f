#include "ptx/sim/float.h"

#include <bit>
#include <cmath>
#include <limits>

#include "stitch/tensor.h"

namespace stitch::ptx::sim {

namespace {

int sign_of(double x) { return x > 0 ? 1 : (x < 0 ? -1 : 0); }

// Knuth's TwoSum: s + err == a + b exactly, s = fl(a + b).
double two_sum_error(double a, double b, double s) {
  const double bb = s - a;
  return (a - (s - bb)) + (b - bb);
}

// The sign of the exact sum of `n` doubles: Shewchuk's GROW-EXPANSION keeps
// the running sum as non-overlapping components of increasing magnitude, so
// the largest nonzero one carries the sign ("Adaptive Precision
// Floating-Point Arithmetic and Fast Robust Geometric Predicates", 1997, §2).
int sign_of_exact_sum(const double* v, int n) {
  double e[8];
  int len = 0;
  for (int i = 0; i < n; ++i) {
    double q = v[i];
    int out = 0;
    for (int j = 0; j < len; ++j) {
      const double s = q + e[j];
      const double err = two_sum_error(q, e[j], s);
      q = s;
      if (err != 0) e[out++] = err;
    }
    if (q != 0) e[out++] = q;
    len = out;
  }
  return len == 0 ? 0 : sign_of(e[len - 1]);
}

// f64 result under a directed mode from its round-to-nearest value `r`
// and the sign of (exact - r). Overflow to infinity of finite operands is
// the caller's `overflow`.
double directed(double r, int err, Rounding m, bool overflow) {
  constexpr double kMax = std::numeric_limits<double>::max();
  if (overflow) {
    if (m == Rounding::Zero || (m == Rounding::Down && r > 0) || (m == Rounding::Up && r < 0)) {
      return std::copysign(kMax, r);
    }
    return r;
  }
  if (err == 0 || !std::isfinite(r)) return r;
  const bool down = m == Rounding::Down || (m == Rounding::Zero && r > 0);
  const bool up = m == Rounding::Up || (m == Rounding::Zero && r < 0);
  if (down && err < 0) return std::nextafter(r, -std::numeric_limits<double>::infinity());
  if (up && err > 0) return std::nextafter(r, std::numeric_limits<double>::infinity());
  return r;
}

// The sign of an exact zero sum under `m` (IEEE 754 §6.3): -0 under
// round-down unless both addends are +0, else +0 unless both are -0.
double zero_sum(double a, double b, Rounding m) {
  if (m == Rounding::Down) return (std::signbit(a) || std::signbit(b)) ? -0.0 : 0.0;
  return (std::signbit(a) && std::signbit(b)) ? -0.0 : 0.0;
}

}  // namespace

double round_to(double hi, int err, FloatFormat fmt, Rounding mode) {
  if (std::isnan(hi) || std::isinf(hi)) return hi;
  if (hi == 0) {
    if (err == 0) return hi;
    const double tiny = std::ldexp(1.0, fmt.emin - (fmt.precision - 1));
    if (mode == Rounding::Down && err < 0) return -tiny;
    if (mode == Rounding::Up && err > 0) return tiny;
    return err < 0 ? -0.0 : 0.0;
  }
  const bool neg = std::signbit(hi);
  const double a = std::fabs(hi);
  const int s = neg ? -err : err;  // on which side of |hi| the exact magnitude lies
  // 0: to nearest; 1: toward zero; 2: away from zero (all in magnitude).
  const int dir = mode == Rounding::Nearest ? 0
                  : mode == Rounding::Zero  ? 1
                  : mode == Rounding::Down  ? (neg ? 2 : 1)
                                            : (neg ? 1 : 2);
  const int e = std::max(std::ilogb(a), fmt.emin);
  const int q = e - (fmt.precision - 1);
  const double scaled = std::ldexp(a, -q);
  const double n = std::floor(scaled);
  const double frac = scaled - n;
  double m;
  if (dir == 1 && frac == 0 && s < 0) {
    // Just below a grid point: one quantum down, half a quantum at the bottom of a binade.
    const bool binade_start = n == std::ldexp(1.0, fmt.precision - 1) && e > fmt.emin;
    m = std::ldexp(n, q) - std::ldexp(1.0, binade_start ? q - 1 : q);
  } else {
    bool up;
    if (dir == 0) {
      up = frac > 0.5 || (frac == 0.5 && (s > 0 || (s == 0 && std::fmod(n, 2.0) != 0)));
    } else if (dir == 1) {
      up = false;
    } else {
      up = frac > 0 || s > 0;
    }
    m = std::ldexp(n + (up ? 1 : 0), q);
  }
  const double max_finite = std::ldexp(2.0 - std::ldexp(1.0, 1 - fmt.precision), fmt.emax);
  if (m > max_finite) m = dir == 1 ? max_finite : std::numeric_limits<double>::infinity();
  return neg ? -m : m;
}

float f32_add(float a, float b, Rounding m) {
  const double x = a, y = b, s = x + y;
  if (s == 0) return static_cast<float>(zero_sum(x, y, m));
  // Double rounding through double is innocuous for +, -, *, / and sqrt of
  // floats (53 >= 2 * 24 + 2: Figueroa, "When is double rounding innocuous?", 1995).
  if (m == Rounding::Nearest || !std::isfinite(s)) return static_cast<float>(s);
  return static_cast<float>(round_to(s, sign_of(two_sum_error(x, y, s)), kF32, m));
}

float f32_mul(float a, float b, Rounding m) {
  const double p = static_cast<double>(a) * static_cast<double>(b);  // exact: 48 bits
  return static_cast<float>(round_to(p, 0, kF32, m));
}

float f32_fma(float a, float b, float c, Rounding m) {
  const double p = static_cast<double>(a) * static_cast<double>(b);
  const double z = c, s = p + z;
  if (!std::isfinite(s)) return static_cast<float>(s);
  if (s == 0 && two_sum_error(p, z, s) == 0) return static_cast<float>(zero_sum(p, z, m));
  return static_cast<float>(round_to(s, sign_of(two_sum_error(p, z, s)), kF32, m));
}

float f32_div(float a, float b, Rounding m) {
  const double x = a, y = b, q = x / y;
  if (m == Rounding::Nearest || !std::isfinite(q) || q == 0) return static_cast<float>(q);
  // The remainder x - q*y is exact in one fma.
  const int err = sign_of(std::fma(-q, y, x)) * sign_of(y);
  return static_cast<float>(round_to(q, err, kF32, m));
}

float f32_sqrt(float a, Rounding m) {
  const double x = a, r = std::sqrt(x);
  if (m == Rounding::Nearest || !std::isfinite(r) || r == 0) return static_cast<float>(r);
  return static_cast<float>(round_to(r, sign_of(std::fma(-r, r, x)), kF32, m));
}

double f64_add(double a, double b, Rounding m) {
  const double s = a + b;
  if (s == 0) return two_sum_error(a, b, s) == 0 ? zero_sum(a, b, m) : s;
  if (m == Rounding::Nearest) return s;
  return directed(s, sign_of(two_sum_error(a, b, s)), m, std::isinf(s) && std::isfinite(a) && std::isfinite(b));
}

double f64_mul(double a, double b, Rounding m) {
  const double p = a * b;
  if (m == Rounding::Nearest) return p;
  return directed(p, sign_of(std::fma(a, b, -p)), m, std::isinf(p) && std::isfinite(a) && std::isfinite(b));
}

double f64_fma(double a, double b, double c, Rounding m) {
  const double r = std::fma(a, b, c);
  if (m == Rounding::Nearest) return r;
  const bool overflow = std::isinf(r) && std::isfinite(a) && std::isfinite(b) && std::isfinite(c);
  if (!std::isfinite(r)) return directed(r, 0, m, overflow);
  const double p = a * b;
  const double parts[4] = {p, std::fma(a, b, -p), c, -r};
  if (r == 0 && sign_of_exact_sum(parts, 4) == 0) return zero_sum(p, c, m);
  return directed(r, sign_of_exact_sum(parts, 4), m, false);
}

double f64_div(double a, double b, Rounding m) {
  const double q = a / b;
  if (m == Rounding::Nearest || q == 0) return q;
  const bool overflow = std::isinf(q) && std::isfinite(a) && b != 0;
  if (!std::isfinite(q)) return directed(q, 0, m, overflow);
  return directed(q, sign_of(std::fma(-q, b, a)) * sign_of(b), m, false);
}

double f64_sqrt(double a, Rounding m) {
  const double r = std::sqrt(a);
  if (m == Rounding::Nearest || !std::isfinite(r) || r == 0) return r;
  return directed(r, sign_of(std::fma(-r, r, a)), m, false);
}

float flush(float x) {
  return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x;
}

float saturate(float x) {
  if (std::isnan(x)) return 0.0f;
  return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x);
}

double saturate(double x) {
  if (std::isnan(x)) return 0.0;
  return x < 0.0 ? 0.0 : (x > 1.0 ? 1.0 : x);
}

uint16_t to_f16_bits(double x, Rounding mode) { return f64_to_f16_bits(round_to(x, 0, kF16, mode)); }
uint16_t to_bf16_bits(double x, Rounding mode) { return f64_to_bf16_bits(round_to(x, 0, kBF16, mode)); }
double from_f16_bits(uint16_t h) { return f16_bits_to_f32(h); }
double from_bf16_bits(uint16_t h) { return bf16_bits_to_f32(h); }

double round_integral(double x, Rounding mode) {
  switch (mode) {
    case Rounding::Nearest: return std::nearbyint(x);
    case Rounding::Zero: return std::trunc(x);
    case Rounding::Down: return std::floor(x);
    case Rounding::Up: return std::ceil(x);
  }
  return x;
}

int64_t float_to_signed(double x, Rounding mode, int64_t lo, int64_t hi) {
  if (std::isnan(x)) return 0;
  const double r = round_integral(x, mode);
  if (r <= static_cast<double>(lo)) return lo;
  // hi + 1 is a power of two, exact in double.
  if (r >= static_cast<double>(hi) + 1.0 || r >= std::ldexp(1.0, 63)) return hi;
  return std::min<int64_t>(static_cast<int64_t>(r), hi);
}

uint64_t float_to_unsigned(double x, Rounding mode, uint64_t hi) {
  if (std::isnan(x)) return 0;
  const double r = round_integral(x, mode);
  if (r <= 0) return 0;
  if (r >= std::ldexp(1.0, 64)) return hi;
  return std::min<uint64_t>(static_cast<uint64_t>(r), hi);
}

double signed_to_float(int64_t v, FloatFormat fmt, Rounding mode) {
  const double hi = static_cast<double>(v);
  const __int128 diff = static_cast<__int128>(v) - static_cast<__int128>(hi);
  return round_to(hi, diff > 0 ? 1 : (diff < 0 ? -1 : 0), fmt, mode);
}

double unsigned_to_float(uint64_t v, FloatFormat fmt, Rounding mode) {
  const double hi = static_cast<double>(v);
  const __int128 diff = static_cast<__int128>(v) - static_cast<__int128>(hi);
  return round_to(hi, diff > 0 ? 1 : (diff < 0 ? -1 : 0), fmt, mode);
}

float approx_ex2(float x) { return static_cast<float>(std::exp2(static_cast<double>(x))); }

float approx_lg2(float x) {
  if (x == 0) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(std::log2(static_cast<double>(x)));
}

float approx_rcp(float x) { return static_cast<float>(1.0 / static_cast<double>(x)); }

float approx_rsqrt(float x) {
  if (x == 0) return std::copysign(std::numeric_limits<float>::infinity(), x);
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(x)));
}

float approx_sqrt(float x) { return static_cast<float>(std::sqrt(static_cast<double>(x))); }
float approx_sin(float x) { return static_cast<float>(std::sin(static_cast<double>(x))); }
float approx_cos(float x) { return static_cast<float>(std::cos(static_cast<double>(x))); }
float approx_tanh(float x) { return static_cast<float>(std::tanh(static_cast<double>(x))); }
double approx_rcp(double x) { return 1.0 / x; }

double approx_rsqrt(double x) {
  if (x == 0) return std::copysign(std::numeric_limits<double>::infinity(), x);
  return 1.0 / std::sqrt(x);
}

}  // namespace stitch::ptx::sim
