// `stitch package` and `stitch run model.stitchpkg` (docs/packages.md,
// docs/cli.md): the package runs where no compiler is (STITCH_CXX=false, an
// empty cache), and writes what `stitch run` on the graph writes.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli_runner.h"
#include "text_contains.h"

namespace stitch {
namespace {

using testing::contains;

class CliPackage : public CliTest {};

TEST_F(CliPackage, APackageRunsWithoutACompilerAndComputesWhatTheGraphDoes) {
  const std::string graph = src("bench/workloads/layernorm.stitch") + " --graph layernorm_small";
  const std::string package = (dir_ / "ln.stitchpkg").string();
  CliResult built = run_cli("package " + graph + " --arch x86-64-v2,native -o " + package);
  ASSERT_EQ(built.status, 0) << built.output;
  EXPECT_TRUE(contains(built.output, "wrote " + package + ": graph layernorm_small, planner stitch, targets x86-64-v2, native"))
      << built.output;

  CliResult direct = run_cli("run " + graph + " --planner stitch --random-inputs 3 --output-dir " + (dir_ / "direct").string());
  ASSERT_EQ(direct.status, 0) << direct.output;
  const std::string no_compiler = "STITCH_CXX=false STITCH_CACHE_DIR=" + (dir_ / "empty").string() + " STITCH_DUMP=cache";
  CliResult packaged = run_cli("run " + package + " --random-inputs 3 --output-dir " + (dir_ / "packaged").string(), no_compiler);
  ASSERT_EQ(packaged.status, 0) << packaged.output;
  EXPECT_FALSE(contains(packaged.output, "warning")) << packaged.output;  // no fallback, no compile
  EXPECT_EQ(read(dir_ / "direct" / "y.npy"), read(dir_ / "packaged" / "y.npy"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "empty" / "cpu"));

  CliResult fixed = run_cli("run " + package + " --planner xla --random-inputs 3");
  EXPECT_EQ(fixed.status, 2) << fixed.output;
  EXPECT_TRUE(contains(fixed.output, "is a package")) << fixed.output;
  CliResult unknown = run_cli("package " + graph + " --arch z80 -o " + package);
  EXPECT_EQ(unknown.status, 2) << unknown.output;
  EXPECT_TRUE(contains(unknown.output, "--arch z80: not a CPU target")) << unknown.output;
  CliResult onnx = run_cli("package " + write("m.onnx", "not read") + " -o " + package);
  EXPECT_EQ(onnx.status, 2) << onnx.output;
  EXPECT_TRUE(contains(onnx.output, "ONNX models are not packaged yet")) << onnx.output;
}

}  // namespace
}  // namespace stitch
