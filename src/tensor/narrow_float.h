// f16 and bf16 bit-pattern conversions, in one place for the host (tensor.cpp)
// and for generated CPU code: CMake embeds this file ahead of
// src/codegen/cpu/stitch_cpu_runtime.h in every generated translation unit, so
// it is self-contained C++17 (an include guard, not #pragma once, since it is
// also pasted into a main file).
#ifndef STITCH_NARROW_FLOAT_H
#define STITCH_NARROW_FLOAT_H

#include <cmath>
#include <cstdint>
#include <cstring>

// Rounds a double once, to nearest even, into a binary format with `exp_bits`
// exponent bits and `mant_bits` stored significand bits; straight from double
// so f64 -> f16 does not round twice.
static inline uint16_t stitch_round_f64_to_narrow(double d, int exp_bits, int mant_bits) {
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof bits);
  const uint64_t sign = (bits >> 63) << (exp_bits + mant_bits);
  const uint64_t magnitude = bits & 0x7FFFFFFFFFFFFFFFull;
  const uint64_t inf = ((uint64_t{1} << exp_bits) - 1) << mant_bits;
  const uint64_t f64_inf = 0x7FF0000000000000ull;
  if (magnitude >= f64_inf) {
    if (magnitude == f64_inf) return static_cast<uint16_t>(sign | inf);
    const uint64_t payload = (magnitude & 0x000FFFFFFFFFFFFFull) >> (52 - mant_bits);
    return static_cast<uint16_t>(sign | inf | (uint64_t{1} << (mant_bits - 1)) | payload);
  }
  const int64_t f64_exp_field = static_cast<int64_t>(magnitude >> 52);
  if (f64_exp_field == 0) return static_cast<uint16_t>(sign);
  const int64_t bias = (int64_t{1} << (exp_bits - 1)) - 1;
  const int64_t exponent = f64_exp_field - 1023;
  const uint64_t significand = (magnitude & 0x000FFFFFFFFFFFFFull) | (uint64_t{1} << 52);
  const int64_t ulp_exponent = exponent > 1 - bias ? exponent : 1 - bias;
  const int64_t dropped_bits = 52 - mant_bits + (ulp_exponent - exponent);
  if (dropped_bits > 53) return static_cast<uint16_t>(sign);
  uint64_t kept = significand >> dropped_bits;
  const uint64_t remainder = significand & ((uint64_t{1} << dropped_bits) - 1);
  const uint64_t half = uint64_t{1} << (dropped_bits - 1);
  if (remainder > half || (remainder == half && (kept & 1))) ++kept;
  const int64_t encoded = ((ulp_exponent + bias - 1) << mant_bits) + static_cast<int64_t>(kept);
  if (encoded >= static_cast<int64_t>(inf)) return static_cast<uint16_t>(sign | inf);
  return static_cast<uint16_t>(sign | static_cast<uint64_t>(encoded));
}

static inline uint16_t stitch_f64_to_f16_bits(double d) { return stitch_round_f64_to_narrow(d, 5, 10); }
static inline uint16_t stitch_f64_to_bf16_bits(double d) { return stitch_round_f64_to_narrow(d, 8, 7); }

static inline float stitch_f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp_field = (h >> 10) & 0x1Fu;
  const uint32_t mantissa = h & 0x3FFu;
  uint32_t bits;
  if (exp_field == 0) {
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exp_field == 0x1F) {
    bits = sign | 0x7F800000u | (mantissa << 13);
  } else {
    bits = sign | ((exp_field - 15 + 127) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

static inline float stitch_bf16_bits_to_f32(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

#endif  // STITCH_NARROW_FLOAT_H
