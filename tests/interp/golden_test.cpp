// The interpreter against numpy: every case in tests/interp/golden/cases.txt,
// written by scripts/gen_interp_golden.py, is one op applied to the case's
// in*.npy files and compared with its out.npy under the case's tolerance.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "single_op.h"
#include "stitch/npy.h"
#include "tensor_compare.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;

const fs::path kGoldenDir = fs::path(STITCH_SOURCE_DIR) / "tests" / "interp" / "golden";

struct GoldenCase {
  std::string name;
  std::string op;
  std::string tolerance;
  std::string attrs;  // as written in the manifest
};

// Manifest attribute values: [ints], true/false, a dtype, "string", a float
// (has '.', 'e', inf or nan), else an int.
AttrValue parse_attr_value(const std::string& text) {
  if (text.starts_with('[')) {
    AttrValue::Ints ints;
    std::stringstream items(text.substr(1, text.size() - 2));
    for (std::string item; std::getline(items, item, ',');) ints.push_back(std::stoll(item));
    return AttrValue(ints);
  }
  if (text == "true" || text == "false") return AttrValue(text == "true");
  if (auto dtype = parse_dtype(text)) return AttrValue(*dtype);
  if (text.starts_with('"')) return AttrValue(text.substr(1, text.size() - 2));
  if (text.find_first_of(".eEn") != std::string::npos) return AttrValue(std::stod(text));
  return AttrValue(static_cast<int64_t>(std::stoll(text)));
}

Attrs parse_attrs(const std::string& text) {
  Attrs attrs;
  if (text == "-") return attrs;
  std::stringstream items(text);
  for (std::string item; std::getline(items, item, ';');) {
    size_t eq = item.find('=');
    attrs.set(item.substr(0, eq), parse_attr_value(item.substr(eq + 1)));
  }
  return attrs;
}

std::vector<GoldenCase> load_cases() {
  std::ifstream manifest(kGoldenDir / "cases.txt");
  std::vector<GoldenCase> cases;
  for (std::string line; std::getline(manifest, line);) {
    if (line.empty() || line.starts_with('#')) continue;
    std::stringstream fields(line);
    GoldenCase c;
    fields >> c.name >> c.op >> c.tolerance >> c.attrs;
    cases.push_back(c);
  }
  return cases;
}

// Names the case in failure messages instead of dumping its bytes.
void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.name; }

class GoldenTest : public ::testing::TestWithParam<GoldenCase> {};

TEST(GoldenManifest, HasCases) { EXPECT_GT(load_cases().size(), 300u) << "missing " << kGoldenDir / "cases.txt"; }

TEST_P(GoldenTest, MatchesNumpy) {
  const GoldenCase& c = GetParam();
  const fs::path dir = kGoldenDir / c.name;
  std::vector<Tensor> inputs;
  for (int i = 0; fs::exists(dir / ("in" + std::to_string(i) + ".npy")); ++i) {
    inputs.push_back(read_npy((dir / ("in" + std::to_string(i) + ".npy")).string()));
  }
  const Tensor got = testing::run_single_op(c.op, inputs, parse_attrs(c.attrs));
  const Tensor want = read_npy((dir / "out.npy").string());
  Tensor bound;
  testing::Tolerance tol;
  if (c.tolerance == "exact") {
    tol = testing::Tolerance::exact();
  } else if (c.tolerance == "signed") {
    tol = testing::Tolerance::signed_exact();
  } else if (c.tolerance.starts_with("ulp:")) {
    tol = testing::Tolerance::within_ulps(std::stoi(c.tolerance.substr(4)));
  } else {
    ASSERT_EQ(c.tolerance, "bound");
    bound = read_npy((dir / "tol.npy").string());
    tol = testing::Tolerance::per_element(bound);
  }
  EXPECT_TRUE(testing::tensors_match(got, want, tol)) << c.name << ": " << c.op << " " << c.attrs;
}

INSTANTIATE_TEST_SUITE_P(Numpy, GoldenTest, ::testing::ValuesIn(load_cases()),
                         [](const ::testing::TestParamInfo<GoldenCase>& info) { return info.param.name; });

}  // namespace
}  // namespace stitch
