// `stitch plan --explain` end to end (docs/schedule.md, Explaining a plan).
#include <gtest/gtest.h>

#include "cli_runner.h"

namespace stitch {
namespace {

class PlanExplain : public CliTest {
 protected:
  std::string softmax() { return src("bench/workloads/softmax.stitch") + " --graph softmax_small"; }
};

TEST_F(PlanExplain, RanksEachGroupAfterThePlan) {
  CliResult r = run_cli("plan " + softmax() + " --explain --target sm_80");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.rfind("plan softmax_small (planner xla): 4 groups\n", 0), 0u) << r.output;
  const size_t ranking = r.output.find("schedule candidates on sm_80 (A100-SXM4-40GB)");
  ASSERT_NE(ranking, std::string::npos) << r.output;
  EXPECT_GT(ranking, r.output.find("bytes total:")) << r.output;
  for (const char* group : {"group 0 [reduction]: row reduction", "group 1 [loop]: elementwise",
                            "group 2 [reduction]: row reduction", "group 3 [loop]: elementwise"}) {
    EXPECT_NE(r.output.find(group, ranking), std::string::npos) << group << "\n" << r.output;
  }
}

TEST_F(PlanExplain, WithoutTheFlagThePlanIsUnchanged) {
  CliResult r = run_cli("plan " + softmax());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.find("schedule candidates"), std::string::npos) << r.output;
}

TEST_F(PlanExplain, UsageErrors) {
  CliResult target = run_cli("plan " + softmax() + " --explain --target sm_70");
  EXPECT_EQ(target.status, 2);
  EXPECT_NE(target.output.find("--target sm_70: no GPU table entry; use sm_80 or sm_90"), std::string::npos)
      << target.output;
  CliResult dot = run_cli("plan " + softmax() + " --explain --format dot");
  EXPECT_EQ(dot.status, 2);
  EXPECT_NE(dot.output.find("--explain prints text; use it with --format text"), std::string::npos) << dot.output;
  CliResult backend = run_cli("plan " + softmax() + " --explain --backend rocm");
  EXPECT_EQ(backend.status, 2);
  EXPECT_NE(backend.output.find("plan --backend rocm: use cpu or cuda"), std::string::npos) << backend.output;
  CliResult both = run_cli("plan " + softmax() + " --explain --backend cuda --target cpu");
  EXPECT_EQ(both.status, 2);
  EXPECT_NE(both.output.find("--backend cuda and --target cpu disagree"), std::string::npos) << both.output;
}

TEST_F(PlanExplain, TheCudaBackendShowsTheGpuModelBesideTheLatencyEvaluator) {
  CliResult r = run_cli("plan " + softmax() + " --planner stitch --explain --backend cuda");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("latency evaluator estimates and the h100 model's (model_us)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("the h100 model's fastest"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace stitch
