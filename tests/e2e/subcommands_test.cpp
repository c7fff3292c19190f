// `stitch plan`, `emit`, `check` and `bench` end to end (docs/cli.md), and
// `run`'s default back end.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace stitch {
namespace {

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

class Subcommands : public CliTest {
 protected:
  std::string softmax() { return src("bench/workloads/softmax.stitch") + " --graph softmax_small"; }
};

TEST_F(Subcommands, PlanTextListsGroupsBytesAndWhyEdgesStayUnfused) {
  CliResult r = run_cli("plan " + softmax());
  ASSERT_EQ(r.status, 0) << r.output;
  // xla (the default) splits softmax around its two reductions: 4 kernels.
  EXPECT_EQ(r.output.rfind("plan softmax_small (planner xla): 4 groups\n", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("group 0 [reduction] root y_max: y_max = reduce_max(x)\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("not fused: y_max -> y_max_bcast: xla does not fuse a consumer into a reduction's kernel"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(count(r.output, "not fused: "), 4) << r.output;
  // x is f32[37, 100]: group 0 reads 14800 bytes and writes 37 floats.
  EXPECT_NE(r.output.find("bytes group 0: 14800 read, 148 written\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("bytes total: 59496 read, 29896 written, 4 kernels\n"), std::string::npos) << r.output;

  CliResult none = run_cli("plan " + softmax() + " --planner none");
  ASSERT_EQ(none.status, 0) << none.output;
  // Operator at a time: one group per op of the canonical graph, every edge refused.
  EXPECT_NE(none.output.find("(planner none): 7 groups"), std::string::npos) << none.output;
  EXPECT_EQ(count(none.output, "\ngroup "), 7) << none.output;
}

TEST_F(Subcommands, PlanJsonGivesGroupsSchedulesPredictionsAndTheSearch) {
  CliResult r = run_cli("plan " + softmax() + " --planner ilp --format json");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.rfind("{", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("\"planner\": \"ilp\""), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"kernels\": 1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"kind\": \"stitched\""), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"schedule_target\": \"cpu\""), std::string::npos) << r.output;
  // The schedule stage's value (docs/pipeline.md): a row schedule with its row cache.
  EXPECT_NE(r.output.find("\"schedule\": \"row warp-per-row"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"cached\": ["), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"optimal\": true"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"predicted_seconds\""), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"op\": \"reduce_max\""), std::string::npos) << r.output;
  CliResult xla = run_cli("plan " + softmax() + " --format json");
  ASSERT_EQ(xla.status, 0) << xla.output;
  EXPECT_NE(xla.output.find("\"kernels\": 4"), std::string::npos) << xla.output;
  // Every unfused edge with its cause: a reduction's consumer is illegal for
  // xla, a second copy of exp unprofitable.
  EXPECT_NE(xla.output.find("\"cause\": \"illegal\""), std::string::npos) << xla.output;
  EXPECT_NE(xla.output.find("\"cause\": \"unprofitable\""), std::string::npos) << xla.output;
  EXPECT_EQ(xla.output.find("\"search\""), std::string::npos) << xla.output;
}

TEST_F(Subcommands, PlanDotHasOneClusterPerGroupAndLabelledUnfusedEdges) {
  CliResult r = run_cli("plan " + softmax() + " --format dot");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.rfind("digraph \"softmax_small\" {", 0), 0u) << r.output;
  EXPECT_EQ(count(r.output, "subgraph cluster_"), 4) << r.output;
  EXPECT_EQ(count(r.output, "style=dashed"), 4) << r.output;
  EXPECT_NE(r.output.find("label=\"exp has 2 consumers; xla does not duplicate an expensive op\""),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.substr(r.output.size() - 2), "}\n");

  std::string out = (dir_ / "plan.dot").string();
  CliResult to_file = run_cli("plan " + softmax() + " --format dot -o " + out);
  ASSERT_EQ(to_file.status, 0) << to_file.output;
  EXPECT_EQ(to_file.output, "");
  EXPECT_EQ(read(out), r.output);
}

TEST_F(Subcommands, EmitPrintsOneKernelPerGroup) {
  CliResult r = run_cli("emit " + softmax());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(count(r.output, "extern \"C\" void k_softmax_small_g"), 4) << r.output;
  CliResult none = run_cli("emit " + softmax() + " --planner none");
  ASSERT_EQ(none.status, 0) << none.output;
  EXPECT_EQ(count(none.output, "extern \"C\" void k_softmax_small_g"), 7) << none.output;
}

TEST_F(Subcommands, CheckPassesOnEveryGraphOfAWorkload) {
  CliResult r = run_cli("check " + src("bench/workloads/add.stitch") + " " + src("bench/workloads/layernorm.stitch") +
                        " --dim N=5 --dim B=2");
  ASSERT_EQ(r.status, 0) << r.output;
  // Three graphs per file, five planners, one output each.
  EXPECT_NE(r.output.find("30 ok, 0 failed, 0 unsupported, 0 bad input"), std::string::npos) << r.output;
  EXPECT_EQ(count(r.output, "MISMATCH"), 0) << r.output;
  for (const char* row : {"add_dyn", "layernorm_small", "layernorm_dyn"}) {
    EXPECT_EQ(count(r.output, std::string("\n") + row + " "), 5) << row << "\n" << r.output;
  }
  // Elementwise adds compare exactly; layer norm allows for its reductions
  // (two of length 100 plus rsqrt: (32 + 4 * 200) eps of 1 + |want|).
  EXPECT_NE(r.output.find("exact  ok"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("832eps  ok"), std::string::npos) << r.output;
}

TEST_F(Subcommands, CheckFailsWhenAResultIsWrong) {
  std::string file = src("bench/workloads/add.stitch") + " --graph add_small";
  CliResult r = run_cli("check " + file, "STITCH_TEST_PERTURB_CHECK=1");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(count(r.output, "MISMATCH: 1 of 3001 elements differ"), 5) << r.output;
  EXPECT_NE(r.output.find("0 ok, 5 failed"), std::string::npos) << r.output;
  // The hook is the only difference: without it the same check passes.
  EXPECT_EQ(run_cli("check " + file).status, 0);
}

TEST_F(Subcommands, CheckBindsUnboundSymbolsToThree) {
  std::string file = write("dyn.stitch", R"(graph g(x: f32[N, 4]) -> (f32[N]) {
  s = reduce_sum(x, axes=[1])
  return s
}
)");
  CliResult r = run_cli("check " + file);
  ASSERT_EQ(r.status, 0) << r.output;
  // Row reductions of length 4: 16 eps.
  EXPECT_NE(r.output.find("16eps+bound  ok"), std::string::npos) << r.output;
}

TEST_F(Subcommands, CheckReportsGraphsTheInterpreterRejectsAsBadInput) {
  // Every op lowers to the CPU back end now, so no graph reaches check's
  // "unsupported" path; argmax over a static empty axis (the one case the
  // lowering refuses) is rejected by the interpreter first: bad input, exit 2,
  // never counted as ok. The sum beside it is still checked.
  std::string file = write("am.stitch", R"(graph am(x: f32[4, 0]) -> (i64[4]) {
  i = argmax(x, axes=[1])
  return i
}
graph sum(x: f32[4, 8]) -> (f32[4]) {
  s = reduce_sum(x, axes=[1])
  return s
}
)");
  CliResult r = run_cli("check " + file);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("axis 1 has extent 0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("5 ok, 0 failed, 0 unsupported, 1 bad input"), std::string::npos) << r.output;
  EXPECT_EQ(run_cli("check " + file + " --allow-unsupported").status, 2);
  // A mismatch still fails when unsupported paths are allowed.
  EXPECT_EQ(run_cli("check " + file + " --graph sum --allow-unsupported", "STITCH_TEST_PERTURB_CHECK=1").status, 1);
}

TEST_F(Subcommands, BenchWritesTheDocumentedJson) {
  std::string json_path = (dir_ / "bench.json").string();
  CliResult r = run_cli("bench " + src("bench/workloads/softmax.stitch") + " --graph softmax_small --repeat 2 --warmup 1 --json " +
              json_path);
  ASSERT_EQ(r.status, 0) << r.output;
  nlohmann::json doc = nlohmann::json::parse(read(json_path));
  EXPECT_EQ(doc["backend"], "cpu");
  EXPECT_GT(doc["copy_gbps"].get<double>(), 0);
  for (const char* key : {"cpu", "cores", "compiler", "date"}) EXPECT_TRUE(doc["machine"].contains(key)) << key;
  ASSERT_EQ(doc["results"].size(), 2u) << doc.dump(2);
  const char* planners[] = {"none", "xla"};
  const int kernels[] = {7, 4};
  for (size_t i = 0; i < 2; ++i) {
    const nlohmann::json& row = doc["results"][i];
    EXPECT_EQ(row["workload"], "softmax_small");
    EXPECT_EQ(row["planner"], planners[i]);
    EXPECT_EQ(row["kernels"], kernels[i]);
    // x and y, f32[37, 100] each.
    EXPECT_EQ(row["bytes_min"], 2 * 37 * 100 * 4);
    double median_s = row["median_s"].get<double>();
    EXPECT_GT(median_s, 0);
    EXPECT_DOUBLE_EQ(row["gbps"].get<double>(), 29600 / median_s / 1e9);
    EXPECT_DOUBLE_EQ(row["fraction_of_copy"].get<double>(),
                     row["gbps"].get<double>() / row["copy_gbps"].get<double>());
    EXPECT_GT(row["compile_s"].get<double>(), 0);
    EXPECT_GT(row["load_s"].get<double>(), 0);
    EXPECT_EQ(row["outputs"], "reused");
  }
}

TEST_F(Subcommands, BenchFreshOutputsSaysSoInTheTableAndTheJson) {
  std::string json_path = (dir_ / "bench.json").string();
  CliResult r = run_cli("bench " + softmax() + " --planners xla --repeat 1 --warmup 0 --fresh-outputs --json " +
                        json_path);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.rfind("outputs allocated in every timed run\n", 0), 0u) << r.output;
  nlohmann::json doc = nlohmann::json::parse(read(json_path));
  ASSERT_EQ(doc["results"].size(), 1u) << doc.dump(2);
  EXPECT_EQ(doc["results"][0]["outputs"], "fresh");
  EXPECT_GT(doc["results"][0]["median_s"].get<double>(), 0);
}

TEST_F(Subcommands, BadInputsExitTwoWithAClearMessage) {
  std::string add = src("bench/workloads/add.stitch");
  struct Case {
    std::string args;
    std::string expected;
  };
  std::vector<Case> cases = {
      {"plan " + add + " --format svg", "--format svg: use --format text, dot, json or html"},
      {"plan " + add + " --planner fastest", "unknown planner 'fastest'"},
      {"plan " + add + " --graph nope", "no graph named 'nope'"},
      {"emit " + add + " --backend rocm", "--backend rocm: that back end is not built yet"},
      {"check " + (dir_ / "absent.stitch").string(), "absent.stitch"},
      {"check " + add + " --graph nope", "no graph named 'nope'"},
      {"check " + add + " --dim N=x", "--dim N=x: 'x' is not a non-negative integer"},
      {"bench " + add + " --backend rocm", "--backend: rocm not in {cpu,cuda,cuda-sim}"},
      {"bench " + add + " --repeat 0", "--repeat must be at least 1"},
      {"bench " + add + " --backend cuda --fresh-outputs", "--fresh-outputs: only --backend cpu"},
      {"bench " + add + " --graph add_dyn", "symbolic dim N is not bound"},
      {"bench", "FILE is required"},
  };
  for (const Case& c : cases) {
    CliResult r = run_cli(c.args);
    EXPECT_EQ(r.status, 2) << c.args << ": " << r.output;
    EXPECT_NE(r.output.find(c.expected), std::string::npos) << c.args << ": " << r.output;
  }
}

TEST_F(Subcommands, RunUsesTheCpuBackendByDefault) {
  CliResult r = run_cli("run " + softmax() + " --random-inputs 1", "STITCH_DUMP=cache");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("cache: hits=0 remote_hits=0 misses=1"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace stitch
