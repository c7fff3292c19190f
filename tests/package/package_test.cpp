// Packages (docs/packages.md): a graph, its plan and its compiled kernels in
// one file that runs with no compiler; and everything a loader refuses.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "package/cpu_isa.h"
#include "package/package_build.h"
#include "package/package_file.h"
#include "package/package_load.h"
#include "random_graph.h"
#include "tensor_compare.h"
#include "stitch/error.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"
#include "scratch_directory.h"

namespace stitch::package {
namespace {

namespace fs = std::filesystem;

// A row reduction and its consumers (one stitched kernel) beside a dot with
// an epilogue: the package holds what both need.
constexpr const char* kGraph = R"(
graph block(x: f32[37, 100], gamma: f32[100], beta: f32[100], w: f32[100, 24]) -> (f32[37, 24]) {
  n = layer_norm(x, gamma, beta, axes=[-1], eps=1e-5)
  d = dot(n, w)
  y = tanh(d)
  return y
}
)";

class PackageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    graph_ = parse_module(kGraph).graphs.front();
  }
  void TearDown() override {
    unsetenv("STITCH_CXX");
    unsetenv("STITCH_DOT_EPILOGUES");
  }
  Package build(std::vector<std::string> arches = {}, PlannerKind planner = PlannerKind::Stitch) {
    runtime::cpu::KernelCache cache(root_ / "cache", 0, std::nullopt, nullptr);
    PackageRequest request;
    request.arches = std::move(arches);
    request.planner = planner;
    return build_cpu_package(graph_, request, cache);
  }
  std::string write(const Package& p, const std::string& name = "model.stitchpkg") {
    const std::string path = (root_ / name).string();
    write_package(path, p);
    return path;
  }
  std::vector<Tensor> inputs() const { return testing::random_inputs(graph_, 7, {}); }
  template <typename F>
  void expect_refusal(F&& f, const std::string& part) {
    try {
      f();
      ADD_FAILURE() << "not refused; expected a message with: " << part;
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  }

  stitch::testing::ScratchDirectory scratch_{"stitch-package-test"};
  const fs::path root_ = scratch_.path();
  Graph graph_;
};

TEST_F(PackageTest, APackageRunsWithoutACompiler) {
  const std::string path = write(build());
  // No compiler from here on: any compile would fail and fall back, loudly.
  setenv("STITCH_CXX", "false", 1);
  const Package p = read_package(path);
  EXPECT_EQ(p.targets.size(), 1u);
  EXPECT_EQ(p.targets[0].arch, "native");
  EXPECT_FALSE(p.targets[0].objects.empty());
  EXPECT_NE(p.plan_text.find("[stitched] root n"), std::string::npos) << p.plan_text;
  runtime::cpu::CpuExecutable exe = load_cpu_package(p, path);
  EXPECT_EQ(exe.fallback(), "");
  const std::vector<Tensor> in = inputs();
  const std::vector<Tensor> got = exe.run(in);
  const std::vector<Tensor> want = interpret(exe.graph(), in);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_TRUE(testing::outputs_match_interpreter(got, want, /*transcendental=*/true, /*reduction_length=*/100));
}

// Every planner's plan packages and runs from its objects, against the interpreter.
TEST_F(PackageTest, EveryPlannersPackageMatchesTheInterpreter) {
  for (PlannerKind planner : kEveryPlanner) {
    unsetenv("STITCH_CXX");
    const std::string path = write(build({}, planner), std::string(planner_name(planner)) + ".stitchpkg");
    setenv("STITCH_CXX", "false", 1);
    const Package p = read_package(path);
    EXPECT_EQ(p.planner, planner_name(planner));
    runtime::cpu::CpuExecutable exe = load_cpu_package(p, path);
    EXPECT_EQ(exe.fallback(), "") << planner_name(planner);
    const std::vector<Tensor> in = inputs();
    EXPECT_TRUE(testing::outputs_match_interpreter(exe.run(in), interpret(exe.graph(), in), true, 100))
        << planner_name(planner);
  }
}

TEST_F(PackageTest, TheHighestLevelThisCpuRunsIsChosen) {
  const Package p = build({"x86-64-v2", "x86-64-v3"});
  ASSERT_EQ(p.targets.size(), 2u);
  EXPECT_EQ(p.targets[0].objects.size(), p.targets[1].objects.size());
  EXPECT_NE(p.targets[0].objects[0].bytes, p.targets[1].objects[0].bytes);  // -march differs
  EXPECT_EQ(p.targets[0].objects[0].source_sha256, p.targets[1].objects[0].source_sha256);
  const std::string path = write(p);
  EXPECT_EQ(choose_cpu_target(read_package(path), path).arch, "x86-64-v3");
  setenv("STITCH_CXX", "false", 1);
  runtime::cpu::CpuExecutable exe = load_cpu_package(read_package(path), path);
  EXPECT_EQ(exe.fallback(), "");
}

// "Another ISA" simulated: a target needing a feature no CPU has.
TEST_F(PackageTest, APackageForAnotherIsaIsRefusedNamingWhatIsMissing) {
  Package p = build({"x86-64-v2"});
  p.targets[0].features.push_back("stitch_test_feature");
  p.targets[0].built_on = "Some Other CPU";
  const std::string path = write(p);
  expect_refusal([&] { load_cpu_package(read_package(path), path); },
                 "x86-64-v2 (built on Some Other CPU): this CPU lacks stitch_test_feature");
}

TEST_F(PackageTest, AnotherFormatVersionIsRefused) {
  const std::string path = write(build());
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(std::string_view("STITCHPKG ").size());
  f.put('7');
  f.close();
  expect_refusal([&] { read_package(path); }, "package format 7, but this Stitch reads format 1 only");
}

TEST_F(PackageTest, ATruncatedOrDamagedPackageIsRefused) {
  const std::string path = write(build());
  const uintmax_t size = fs::file_size(path);
  fs::resize_file(path, size - 100);
  expect_refusal([&] { read_package(path); }, "truncated");
  const std::string other = write(build(), "other.stitchpkg");
  std::fstream f(other, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(fs::file_size(other) - 10));
  f.put('\x5a');
  f.close();
  expect_refusal([&] { read_package(other); }, "SHA-256 does not match");
  std::ofstream(root_ / "not.stitchpkg") << "graph g() -> () {}\n";
  expect_refusal([&] { read_package((root_ / "not.stitchpkg").string()); }, "not a Stitch package");
}

TEST_F(PackageTest, ASwitchOfTheEnvironmentThatChangesTheCodeIsRefused) {
  const std::string path = write(build());
  setenv("STITCH_DOT_EPILOGUES", "0", 1);
  expect_refusal([&] { load_cpu_package(read_package(path), path); }, "built with dot_epilogues=1");
}

TEST_F(PackageTest, CodeThePackageDoesNotHoldIsRefused) {
  Package p = build();
  for (PackageObject& o : p.targets[0].objects) o.source_sha256 = std::string(64, '0');
  const std::string path = write(p);
  expect_refusal([&] { load_cpu_package(read_package(path), path); }, "holds no kernels for");
}

TEST_F(PackageTest, UnknownTargetsAreBadInput) {
  expect_refusal([&] { build({"pentium4"}); }, "--arch pentium4: not a CPU target (x86-64, x86-64-v2");
}

TEST(CpuIsa, LevelsAddToTheOnesBelow) {
  const std::optional<CpuIsa> v2 = cpu_isa("x86-64-v2"), v4 = cpu_isa("x86-64-v4");
  ASSERT_TRUE(v2 && v4);
  for (const std::string& f : v2->features) {
    EXPECT_NE(std::find(v4->features.begin(), v4->features.end(), f), v4->features.end()) << f;
  }
  EXPECT_EQ(v4->march, "x86-64-v4");
  EXPECT_TRUE(missing_cpu_features(cpu_isa("x86-64")->features).empty());  // every x86-64 CPU
  EXPECT_EQ(missing_cpu_features(cpu_isa("native")->features).size(), 0u);
  EXPECT_FALSE(cpu_isa("i686").has_value());
}

}  // namespace
}  // namespace stitch::package
