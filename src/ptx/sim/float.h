// Floating-point semantics of PTX for the interpreter (docs/ptx-interpreter.md,
// Rounding): IEEE results under the four rounding modifiers, computed exactly
// without changing the host's rounding mode. An operation's result is formed
// as its round-to-nearest value in double plus the sign of what that value
// missed (from error-free transformations), and then rounded once to the
// destination format in the requested direction.
#pragma once

#include <cstdint>

#include "ptx/sim/program.h"

namespace stitch::ptx::sim {

// A binary floating-point format: precision in bits (with the hidden bit),
// the minimum normal exponent and the maximum exponent.
struct FloatFormat {
  int precision;
  int emin;
  int emax;
};
inline constexpr FloatFormat kF16{11, -14, 15};
inline constexpr FloatFormat kBF16{8, -126, 127};
inline constexpr FloatFormat kF32{24, -126, 127};
inline constexpr FloatFormat kF64{53, -1022, 1023};

// The value hi + e rounded to `fmt` under `mode`, where e is an infinitesimal
// of sign `err_sign` (-1, 0, 1): hi is the double nearest the exact result
// and err_sign says on which side of hi the exact result lies.
double round_to(double hi, int err_sign, FloatFormat fmt, Rounding mode);

// f32 arithmetic under a rounding modifier (ftz handled by the callers).
float f32_add(float a, float b, Rounding m);
float f32_mul(float a, float b, Rounding m);
float f32_fma(float a, float b, float c, Rounding m);
float f32_div(float a, float b, Rounding m);
float f32_sqrt(float a, Rounding m);
double f64_add(double a, double b, Rounding m);
double f64_mul(double a, double b, Rounding m);
double f64_fma(double a, double b, double c, Rounding m);
double f64_div(double a, double b, Rounding m);
double f64_sqrt(double a, Rounding m);

// Subnormal f32 to a zero of the same sign (.ftz).
float flush(float x);
// .sat: clamp to [0, 1], NaN to +0.
float saturate(float x);
double saturate(double x);

// Bits of a half or bfloat16 from a double under `mode` (exact input).
uint16_t to_f16_bits(double x, Rounding mode);
uint16_t to_bf16_bits(double x, Rounding mode);
double from_f16_bits(uint16_t h);
double from_bf16_bits(uint16_t h);

// Float to integer (cvt.rni/rzi/rmi/rpi.s32.f32 and friends): rounded to an
// integral value under `mode`, clamped to [lo, hi]; NaN gives 0.
int64_t float_to_signed(double x, Rounding mode, int64_t lo, int64_t hi);
uint64_t float_to_unsigned(double x, Rounding mode, uint64_t hi);
// Integer to float: the integer rounded once to `fmt` under `mode`.
double signed_to_float(int64_t v, FloatFormat fmt, Rounding mode);
double unsigned_to_float(uint64_t v, FloatFormat fmt, Rounding mode);
// cvt.rni.f32.f32 and friends: round to an integral value in the same format.
double round_integral(double x, Rounding mode);

// The approximate functions, modelled as the correctly rounded f32 result of
// the function evaluated in double (within every bound the PTX ISA states;
// docs/ptx-interpreter.md, Approximate functions), with the ISA's special
// cases for zeros, infinities and NaN.
float approx_ex2(float x);
float approx_lg2(float x);
float approx_rcp(float x);
float approx_rsqrt(float x);
float approx_sqrt(float x);
float approx_sin(float x);
float approx_cos(float x);
float approx_tanh(float x);
double approx_rcp(double x);
double approx_rsqrt(double x);

}  // namespace stitch::ptx::sim
