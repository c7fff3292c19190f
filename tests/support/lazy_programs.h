// Random lazy programs (docs/lazy.md), shared by tests/lazy (the CPU, the
// interpreter) and tests/gpu (CUDA): calls drawn from a pool of kernels with
// neighbour, reversed, strided and conditional accesses, arrays bound at
// random (aliasing included), reductions whose values feed later calls, reads
// in the middle, and temporaries dropped.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "stitch/lazy.h"
#include "stitch/text.h"
#include "tensor/compare.h"

namespace stitch::lazy_programs {

// Two elementwise kernels for small hand-written programs.
constexpr const char* kScaleAdd = R"(
kernel scale(a: f32, x: f32[n], y: f32[n]) over i < n {
  y[i] = a * x[i]
}
kernel add(x: f32[n], y: f32[n], z: f32[n]) over i < n {
  z[i] = x[i] + y[i]
}
)";

constexpr const char* kPool = R"(
kernel k_scale(a: f32, x: f32[n], y: f32[n]) over i < n {
  y[i] = a * x[i]
}
kernel k_add(x: f32[n], y: f32[n], z: f32[n]) over i < n {
  z[i] = x[i] + y[i]
}
kernel k_inc(x: f32[n]) over i < n {
  x[i] += 1
}
kernel k_shift(x: f32[n], y: f32[n]) over i < n - 1 {
  y[i] = x[i + 1]
}
kernel k_shift_w(x: f32[n], y: f32[n]) over i < n - 1 {
  y[i + 1] = x[i] * 0.5
}
kernel k_rev(x: f32[n], y: f32[n]) over i < n {
  y[i] = x[n - 1 - i]
}
kernel k_even(x: f32[n], y: f32[n]) over i < n / 2 {
  y[2 * i] = x[2 * i + 1]
}
kernel k_gap(x: f32[n], y: f32[n]) over i < n - 3 {
  y[i] = x[i] - x[i + 3]
}
kernel k_cond(x: f32[n], y: f32[n]) over i < n {
  if x[i] > 0 {
    y[i] = x[i]
  } else {
    y[i] = -x[i]
  }
}
kernel k_loop(x: f32[n], y: f32[n]) over i < n {
  let s: f32 = 0
  for j < 3 {
    s += x[i] * f32(j)
  }
  y[i] = s
}
kernel k_offset(a: f32, x: f32[n]) over i < n {
  x[i] = x[i] * 0.5 + a * 0.001
}
kernel k_sum(x: f32[n]) -> sum f32 over i < n {
  yield x[i]
}
kernel k_max(x: f32[n], y: f32[n]) -> max f32 over i < n {
  yield x[i] * y[i]
}
)";

constexpr int64_t kLength = 97;

struct Step {
  std::string kernel;
  std::vector<int> arrays;  // per array parameter, which array
  int future = -1;          // k_offset: which earlier reduction's value (-1: a literal)
  double literal = 0.5;
  int read_after = -1;      // an array to read after this call (-1: none)
  // No call: array `arrays[0]` is replaced by a fresh one, so the old one is a
  // temporary whose handle is gone (what pending calls still use of it stays).
  bool drop = false;
};

struct Program {
  int arrays = 3;
  // Empty: separate arrays. Otherwise each array is rows [offset, offset + kLength)
  // of one storage, so arrays may overlap.
  std::vector<int64_t> offsets;
  std::vector<Step> steps;
};

inline Program random_program(std::mt19937_64& rng) {
  static const std::vector<std::pair<std::string, int>> kernels = {
      {"k_scale", 2}, {"k_add", 3}, {"k_inc", 1},  {"k_shift", 2}, {"k_shift_w", 2}, {"k_rev", 2},    {"k_even", 2},
      {"k_gap", 2},   {"k_cond", 2}, {"k_loop", 2}, {"k_offset", 1}, {"k_sum", 1},    {"k_max", 2}};
  Program p;
  p.arrays = 2 + static_cast<int>(rng() % 3);
  if (rng() % 3 == 0) {
    for (int a = 0; a < p.arrays; ++a) p.offsets.push_back(static_cast<int64_t>(rng() % (2 * kLength)));
  }
  int steps = 4 + static_cast<int>(rng() % 9);
  int reductions = 0;
  for (int s = 0; s < steps; ++s) {
    if (rng() % 5 == 0) {
      Step drop;
      drop.drop = true;
      drop.arrays.push_back(static_cast<int>(rng() % static_cast<uint64_t>(p.arrays)));
      p.steps.push_back(drop);
    }
    const auto& [name, count] = kernels[rng() % kernels.size()];
    Step step;
    step.kernel = name;
    for (int a = 0; a < count; ++a) step.arrays.push_back(static_cast<int>(rng() % static_cast<uint64_t>(p.arrays)));
    if (name == "k_offset" && reductions > 0 && rng() % 2) step.future = static_cast<int>(rng() % static_cast<uint64_t>(reductions));
    step.literal = static_cast<double>(rng() % 5) * 0.25;
    if (rng() % 5 == 0) step.read_after = static_cast<int>(rng() % static_cast<uint64_t>(p.arrays));
    if (name == "k_sum" || name == "k_max") ++reductions;
    p.steps.push_back(step);
  }
  return p;
}

struct Outcome {
  std::vector<Tensor> arrays;
  std::vector<double> values;
  LazyStats stats;
};

// Runs `p` in `rt` from arrays seeded by `seed`; `kernels` is kPool's.
inline Outcome run_on(const Program& p, LazyRuntime& rt, uint64_t seed, const std::map<std::string, KernelRef>& kernels) {
  std::vector<Array> arrays;
  if (p.offsets.empty()) {
    for (int a = 0; a < p.arrays; ++a) {
      Tensor t(DType::f32, {kLength});
      fill_random(t, seed + static_cast<uint64_t>(a));
      arrays.push_back(rt.array(t));
    }
  } else {
    Tensor t(DType::f32, {3 * kLength});
    fill_random(t, seed);
    Array storage = rt.array(t);
    for (int64_t offset : p.offsets) arrays.push_back(storage.slice(offset, offset + kLength));
  }
  std::vector<Scalar> values;
  Outcome o;
  for (const Step& s : p.steps) {
    if (s.drop) {
      arrays[static_cast<size_t>(s.arrays[0])] = rt.zeros(DType::f32, {kLength});
      continue;
    }
    const KernelRef& k = kernels.at(s.kernel);
    std::vector<LazyArg> args;
    size_t next = 0;
    for (const KernelParam& param : k->params) {
      if (param.is_array) {
        args.emplace_back(arrays[static_cast<size_t>(s.arrays[next++])]);
      } else if (s.future >= 0) {
        args.emplace_back(values[static_cast<size_t>(s.future)]);
      } else {
        args.emplace_back(s.literal);
      }
    }
    if (k->is_reduction()) {
      values.push_back(rt.reduce(k, args));
    } else {
      rt.call(k, args);
    }
    if (s.read_after >= 0) o.arrays.push_back(arrays[static_cast<size_t>(s.read_after)].to_host());
  }
  rt.flush();
  for (const Array& a : arrays) o.arrays.push_back(a.to_host());
  for (const Scalar& v : values) o.values.push_back(v.to_double());
  o.stats = rt.stats();
  return o;
}

// The same in a runtime made with `options`.
inline Outcome run(const Program& p, const LazyOptions& options, uint64_t seed,
                   const std::map<std::string, KernelRef>& kernels) {
  LazyRuntime rt(options);
  return run_on(p, rt, seed, kernels);
}

inline void expect_same(const Outcome& got, const Outcome& want, const std::string& what) {
  ASSERT_EQ(got.arrays.size(), want.arrays.size());
  // Values downstream of a float sum may differ by its other order; everything else is exact.
  const ErrorAllowance allowance{false, 4 * kLength};
  for (size_t i = 0; i < want.arrays.size(); ++i) {
    TensorComparison c = compare_with_interpreter(got.arrays[i], want.arrays[i], allowance);
    EXPECT_TRUE(c.ok) << what << " array read " << i << ": " << c.describe();
  }
  for (size_t i = 0; i < want.values.size(); ++i) {
    EXPECT_NEAR(got.values[i], want.values[i], 1e-3 * (1 + std::fabs(want.values[i]))) << what << " value " << i;
  }
}

inline std::string describe(const Program& p) {
  std::string s = fmt::format("{} arrays{}:", p.arrays, p.offsets.empty() ? "" : " (views)");
  for (const Step& step : p.steps) {
    if (step.drop) {
      s += fmt::format(" drop {}", step.arrays[0]);
      continue;
    }
    s += " " + step.kernel + "(";
    for (int a : step.arrays) s += std::to_string(a) + ",";
    s += step.future >= 0 ? fmt::format("v{}", step.future) : "";
    s += ")";
    if (step.read_after >= 0) s += fmt::format(" read {}", step.read_after);
  }
  return s;
}


}  // namespace stitch::lazy_programs
