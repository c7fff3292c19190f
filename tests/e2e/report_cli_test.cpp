// `stitch report` and `stitch plan --format html` end to end (docs/report.md).
#include <gtest/gtest.h>

#include "cli_runner.h"

namespace stitch {
namespace {

class ReportCli : public CliTest {
 protected:
  std::string softmax() { return src("bench/workloads/softmax.stitch") + " --graph softmax_small"; }
};

TEST_F(ReportCli, WritesOnePageThatPlanFormatHtmlWritesToo) {
  const std::string page = (dir_ / "r.html").string();
  CliResult r = run_cli("report " + softmax() + " -o " + page);
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string report = read(page);
  EXPECT_EQ(report.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* part : {"Fusion report: softmax_small", "id=\"group-0\"", "k_softmax_small_g3", "<svg",
                           "as predicted (not run)"}) {
    EXPECT_NE(report.find(part), std::string::npos) << part;
  }
  CliResult plan = run_cli("plan " + softmax() + " --format html");
  ASSERT_EQ(plan.status, 0) << plan.output;
  EXPECT_EQ(plan.output, report);
}

TEST_F(ReportCli, RunPutsEachLaunchsMeasuredTimeInThePage) {
  CliResult r = run_cli("report " + softmax() + " --planner stitch --run --random-inputs 3 --repeat 2");
  ASSERT_EQ(r.status, 0) << r.output.substr(0, 2000);
  EXPECT_NE(r.output.find("<th>run</th><th>of copy</th>"), std::string::npos);
  EXPECT_NE(r.output.find("measured on this machine&#39;s CPU"), std::string::npos);
  EXPECT_NE(r.output.find("as run."), std::string::npos);
  EXPECT_NE(r.output.find("; ran "), std::string::npos) << "the stitched kernel's own time";
}

TEST_F(ReportCli, OnTheSimulatedGpuTheRunTimesAreTheGpuModels) {
  CliResult r = run_cli("report " + softmax() + " --backend cuda-sim --planner stitch --run --random-inputs 3");
  if (r.output.find("built without the CUDA toolkit") != std::string::npos) GTEST_SKIP() << r.output;
  ASSERT_EQ(r.status, 0) << r.output.substr(0, 2000);
  EXPECT_NE(r.output.find("<th>GPU model</th>"), std::string::npos);
  EXPECT_NE(r.output.find("the GPU model&#39;s predictions for the h200"), std::string::npos);
  EXPECT_NE(r.output.find("__global__"), std::string::npos);
}

TEST_F(ReportCli, BadInputExitsTwoWithTheReason) {
  const std::string bad = write("bad.stitch", "graph g(x: f32[4]) -> (f32[4]) {\n  y = nosuchop(x)\n  return y\n}\n");
  CliResult parse = run_cli("report " + bad + " -o " + (dir_ / "bad.html").string());
  EXPECT_EQ(parse.status, 2) << parse.output;
  EXPECT_NE(parse.output.find("bad.stitch:2"), std::string::npos) << parse.output;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "bad.html"));
  CliResult inputs = run_cli("report " + softmax() + " --random-inputs 1");
  EXPECT_EQ(inputs.status, 2);
  EXPECT_NE(inputs.output.find("add --run"), std::string::npos) << inputs.output;
  CliResult backend = run_cli("report " + softmax() + " --backend tpu");
  EXPECT_EQ(backend.status, 2) << backend.output;
  CliResult missing = run_cli("report " + softmax() + " --run");
  EXPECT_EQ(missing.status, 2) << missing.output;
}

}  // namespace
}  // namespace stitch
