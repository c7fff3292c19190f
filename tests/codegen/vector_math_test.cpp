// Vector math in generated CPU code (docs/cpu-backend.md, Vector math): every
// transcendental the emitter calls runs through compiled kernels over edge
// cases (+-0, +-inf, NaN, denormals, huge arguments) and a wide spread of
// ordinary values, and must stay within the documented ulp bound of the
// interpreter (glibc in double, rounded once), with NaN and inf exactly where
// the interpreter has them. The translation unit must also really call
// SLEEF's vector variants, or the loops did not vectorise.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "ir/canonicalize.h"
#include "runtime/cpu/cpu_compiler.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"

namespace stitch::runtime::cpu {
namespace {

namespace fs = std::filesystem;

// The documented bound per op, in ulps of the dtype, against the interpreter
// (docs/cpu-backend.md, the ulp table). SLEEF's u10 functions are within 1 ulp
// of the exact value and the interpreter within 0.5 ulp plus glibc's error,
// so 2 ulps; tanh 3 (Stitch's own, from exp and a polynomial, measured within
// 1.33 ulp of the exact value); sigmoid adds a division to exp, and pow/atan2
// get 2 as well. erf on float is Stitch's own too (a polynomial below 1 and
// a rational function of |x| - 1 above, in float, measured within 1.36 ulp
// over every float), with no vector-library call to look for.
struct MathCase {
  const char* op;
  int arity;
  int64_t max_ulps;
  const char* vector_symbol_f32;  // a fragment of the SLEEF symbol the f32 loop must call
  const char* vector_symbol_f64;
};

const std::vector<MathCase>& math_cases() {
  static const std::vector<MathCase> cases = {
      {"exp", 1, 2, "v_expf", "v_exp"},        {"exp2", 1, 2, "v_exp2f", "v_exp2"},
      {"expm1", 1, 2, "v_expm1f", "v_expm1"},  {"log", 1, 2, "v_logf", "v_log"},
      {"log2", 1, 2, "v_log2f", "v_log2"},     {"log1p", 1, 2, "v_log1pf", "v_log1p"},
      {"sin", 1, 2, "v_sinf", "v_sin"},        {"cos", 1, 2, "v_cosf", "v_cos"},
      {"tan", 1, 2, "v_tanf", "v_tan"},        {"tanh", 1, 3, "v_expf", "v_exp"},
      {"erf", 1, 2, nullptr, "v_erf"},        {"sigmoid", 1, 3, "v_expf", "v_exp"},
      {"sqrt", 1, 0, nullptr, nullptr},        {"rsqrt", 1, 1, nullptr, nullptr},
      {"pow", 2, 2, "vv_powf", "vv_pow"},      {"atan2", 2, 2, "vv_atan2f", "vv_atan2"},
  };
  return cases;
}

constexpr int64_t kElements = 8192;  // a multiple of the loop kernels' 1024: no guard, vector path

// Edge cases first, then values spread over magnitudes 2^-40 .. 2^40 and an
// ordinary range, both signs; `salt` makes the second operand differ.
std::vector<double> inputs(DType dtype, uint64_t salt) {
  const bool f32 = dtype == DType::f32;
  const double inf = std::numeric_limits<double>::infinity();
  const double denorm = f32 ? 1e-40 : 1e-310;
  const double tiny = f32 ? std::numeric_limits<float>::min() : std::numeric_limits<double>::min();
  const double huge = f32 ? std::numeric_limits<float>::max() : std::numeric_limits<double>::max();
  std::vector<double> v = {0.0,    -0.0,  inf,   -inf,   std::nan(""), denorm, -denorm, tiny,   -tiny,
                           huge,   -huge, 1.0,   -1.0,   0.5,          2.0,    88.7,    -88.7,  89.0,
                           -104.0, 709.0, -745.0, 1e4,   -1e4,         1e6,    1e30,    -1e30,  3.14159265,
                           1.5707963, 20.0, -20.0, 9.0,  -9.0,         1e-8,   -1e-8,   0.999999, -0.999999,
                           0.625, -0.625, 0.62499994, -0.62499994, 0.62500006,  // tanh's two branches
                           0.99999994, -0.99999994, 1.00000012, 3.92, -3.92, 3.9200001, 3.9199998,
                           0.98548365, 1.00063038};  // erf's branches and its worst points
  std::mt19937_64 rng(42 + salt);
  std::uniform_real_distribution<double> exponent(-40.0, 40.0), ordinary(-10.0, 10.0), coin(0.0, 1.0);
  while (static_cast<int64_t>(v.size()) < kElements) {
    const double sign = coin(rng) < 0.5 ? -1.0 : 1.0;
    v.push_back(coin(rng) < 0.5 ? sign * std::exp2(exponent(rng)) : ordinary(rng));
  }
  return v;
}

Tensor tensor_of(DType dtype, const std::vector<double>& values) {
  Tensor t(dtype, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) t.set_f64(static_cast<int64_t>(i), values[i]);
  return t;
}

// Distance in representable values; -0 and +0 are the same point.
int64_t ulp_distance(double a, double b, DType dtype) {
  auto ordinal = [&](double x) -> int64_t {
    if (dtype == DType::f32) {
      float f = static_cast<float>(x);
      int32_t bits;
      std::memcpy(&bits, &f, sizeof bits);
      return bits < 0 ? -static_cast<int64_t>(bits & 0x7fffffff) : bits;
    }
    int64_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    return bits < 0 ? -(bits & 0x7fffffffffffffffLL) : bits;
  };
  const int64_t d = ordinal(a) - ordinal(b);
  return d < 0 ? -d : d;
}

std::string graph_text(DType dtype) {
  const std::string t = std::string(dtype_name(dtype)) + "[" + std::to_string(kElements) + "]";
  std::string text = "graph vector_math(x: " + t + ", y: " + t + ") -> (";
  std::string body;
  for (size_t i = 0; i < math_cases().size(); ++i) {
    const MathCase& c = math_cases()[i];
    text += (i ? ", " : "") + t;
    body += "  r" + std::to_string(i) + " = " + c.op + (c.arity == 1 ? "(x)\n" : "(x, y)\n");
  }
  text += ") {\n" + body + "  return ";
  for (size_t i = 0; i < math_cases().size(); ++i) text += (i ? ", r" : "r") + std::to_string(i);
  return text + "\n}\n";
}

std::string read_binary(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class VectorMath : public ::testing::TestWithParam<DType> {};

TEST_P(VectorMath, WithinDocumentedUlpsOfTheInterpreterAndVectorised) {
  const DType dtype = GetParam();
  const fs::path dir = fs::temp_directory_path() / ("stitch_vector_math_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  KernelCache cache(dir / "cache");
  Graph g = canonicalize(parse_module(graph_text(dtype)).graphs.front());
  CpuExecutable exe = pipeline::compile_cpu(g, PlannerKind::Xla, cache);

  const std::vector<double> xs = inputs(dtype, 0), ys = inputs(dtype, 1);
  const std::vector<Tensor> args = {tensor_of(dtype, xs), tensor_of(dtype, ys)};
  const std::vector<Tensor> want = interpret(g, args);
  const std::vector<Tensor> got = exe.run(args);
  ASSERT_EQ(got.size(), math_cases().size());

  for (size_t k = 0; k < math_cases().size(); ++k) {
    const MathCase& c = math_cases()[k];
    SCOPED_TRACE(std::string(c.op) + " on " + std::string(dtype_name(dtype)));
    int64_t worst = 0, failures = 0;
    for (int64_t i = 0; i < kElements; ++i) {
      const double w = want[k].get_f64(i), r = got[k].get_f64(i);
      const bool ok_special = std::isnan(w) == std::isnan(r) && (!std::isinf(w) && !std::isinf(r) ? true : w == r);
      const int64_t ulps = std::isnan(w) || std::isinf(w) || std::isinf(r) ? 0 : ulp_distance(w, r, dtype);
      if (ok_special) worst = std::max(worst, ulps);
      if ((!ok_special || ulps > c.max_ulps) && failures++ < 5) {
        ADD_FAILURE() << c.op << "(" << xs[i] << (c.arity == 2 ? ", " + std::to_string(ys[i]) : "") << "): got " << r
                      << ", interpreter " << w << " (" << ulps << " ulps, bound " << c.max_ulps << ")";
      }
    }
    EXPECT_EQ(failures, 0);
    RecordProperty(std::string(c.op) + "_" + std::string(dtype_name(dtype)) + "_max_ulps", std::to_string(worst));
  }

  // The same source compiled with the same command must reference SLEEF's
  // vector variants (_ZGV<isa>N<lanes>v_<name>): the proof that loops vectorised.
  // The command is an unsanitized Stitch's: a sanitized build (STITCH_SANITIZED)
  // instruments its kernels, and the instrumentation keeps GCC from vectorising.
  CompilerOptions unsanitized;
  std::erase_if(unsanitized.flags, [](const std::string& flag) {
    return flag.starts_with("-fsanitize") || flag.starts_with("-fno-sanitize") || flag == "-fno-omit-frame-pointer";
  });
  compile_shared_object(exe.source(), dir / "kernels.so", unsanitized);
  const std::string binary = read_binary(dir / "kernels.so");
  for (const MathCase& c : math_cases()) {
    const char* symbol = dtype == DType::f32 ? c.vector_symbol_f32 : c.vector_symbol_f64;
    if (!symbol) continue;
    bool found = false;
    for (size_t at = binary.find("_ZGV"); at != std::string::npos && !found; at = binary.find("_ZGV", at + 1)) {
      const size_t end = binary.find('\0', at);
      const std::string name = binary.substr(at, end - at);
      found = name.size() > std::strlen(symbol) && name.compare(name.size() - std::strlen(symbol), std::string::npos, symbol) == 0 &&
              name[name.size() - std::strlen(symbol) - 1] >= '0' && name[name.size() - std::strlen(symbol) - 1] <= '9';
    }
    EXPECT_TRUE(found) << c.op << ": no vector call ending in " << symbol;
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, VectorMath, ::testing::Values(DType::f32, DType::f64),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(dtype_name(info.param));
                         });

}  // namespace
}  // namespace stitch::runtime::cpu
