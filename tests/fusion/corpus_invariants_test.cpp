// Every graph of the IR corpus and the benchmark workloads, through every
// implemented planner: the plan must be a valid, deterministic cover.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "fusion/planner.h"
#include "plan_invariants.h"

namespace stitch {
namespace {

std::vector<std::string> corpus_files() {
  std::vector<std::string> files;
  for (const char* dir : {"/tests/ir/corpus", "/bench/workloads"}) {
    for (const auto& entry : std::filesystem::directory_iterator(std::string(STITCH_SOURCE_DIR) + dir))
      if (entry.path().extension() == ".stitch") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// XLA-specific: a reduction's result is never consumed inside its own
// kernel, and a dot is alone in its kernel.
void check_xla_rules(const Graph& g, const FusionPlan& p) {
  for (const FusionGroup& grp : p.groups) {
    for (int n : grp.nodes) {
      OpCategory c = op_info(g.nodes()[n].op).category;
      if (c == OpCategory::Dot) {
        EXPECT_EQ(grp.nodes.size(), 1u) << print_plan(g, p);
      }
      for (ValueId v : g.nodes()[n].inputs) {
        int producer = g.value(v).producer;
        if (producer >= 0 && grp.contains(producer)) {
          EXPECT_NE(op_info(g.nodes()[producer].op).category, OpCategory::Reduction)
              << print_plan(g, p);
        }
      }
    }
  }
}

TEST(CorpusPlans, EveryPlannerGivesAValidCover) {
  std::vector<std::string> files = corpus_files();
  ASSERT_GE(files.size(), 20u);
  int graphs = 0;
  for (const std::string& file : files) {
    Module m = parse_file(file);
    for (const Graph& parsed : m.graphs) {
      SCOPED_TRACE(file + ": " + parsed.name());
      Graph g = canonicalize(parsed);
      ++graphs;
      for (PlannerKind k : {PlannerKind::None, PlannerKind::Xla, PlannerKind::Stitch}) {
        FusionPlan p = plan(g, k);
        testing_fusion::check_plan_invariants(g, p);
        EXPECT_EQ(print_plan(g, p), print_plan(g, plan(g, k))) << "plan is not deterministic";
        EXPECT_FALSE(print_plan_dot(g, p).empty());
        if (k == PlannerKind::None) {
          EXPECT_EQ(p.groups.size(), g.nodes().size());
        } else if (k == PlannerKind::Stitch) {
          EXPECT_LE(p.groups.size(), plan_xla(g).groups.size());
        } else {
          check_xla_rules(g, p);
        }
      }
      EXPECT_LE(plan_xla(g).groups.size(), plan_none(g).groups.size());
    }
  }
  EXPECT_GT(graphs, 30);
}

}  // namespace
}  // namespace stitch
