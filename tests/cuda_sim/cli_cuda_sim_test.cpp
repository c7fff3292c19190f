// `stitch run|check|bench --backend cuda-sim` (docs/cuda-sim.md, docs/gpu-model.md): the built CLI
// finds the simulated driver (here through $STITCH_CUDA_SIM_DRIVER; when that
// names nothing, it says so with status 2) and runs the CUDA back end on it;
// `check` compares every planner's results with the interpreter's.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "interpreter_differential.h"
#include "run_command.h"

namespace stitch {
namespace {

using ToolRun = testing::CommandRun;

ToolRun run(const std::string& command) { return testing::run_command(command); }

const std::string kSoftmax = std::string(STITCH_SOURCE_DIR) + "/bench/workloads/softmax.stitch";

TEST(CliCudaSim, RunSummarisesTheResult) {
  const ToolRun r = run("STITCH_CUDA_SIM_DRIVER=" STITCH_CUDA_SIM_DRIVER " " STITCH_CLI " run " + kSoftmax +
                        " --graph softmax_small --random-inputs 3 --backend cuda-sim");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.rfind("y: f32[37, 100]  min=", 0), 0u) << r.output;
}

// A CUDA package (docs/packages.md): built without a device, run on cuda-sim
// with no compiler; refused on the CPU.
TEST(CliCudaSim, ACudaPackageRunsOnTheSimulatedDevice) {
  const std::string package = ::testing::TempDir() + "softmax-cuda.stitchpkg";
  const ToolRun built = run(STITCH_CLI " package " + kSoftmax + " --graph softmax_small --backend cuda --arch sm_80,sm_90 -o " + package);
  ASSERT_EQ(built.status, 0) << built.output;
  EXPECT_NE(built.output.find("targets sm_80, sm_90, 2 compiled objects"), std::string::npos) << built.output;
  const ToolRun r = run("STITCH_CXX=false STITCH_CUDA_SIM_DRIVER=" STITCH_CUDA_SIM_DRIVER " " STITCH_CLI " run " + package +
                        " --random-inputs 3 --backend cuda-sim");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.rfind("y: f32[37, 100]  min=", 0), 0u) << r.output;
  const ToolRun cpu = run(STITCH_CLI " run " + package + " --random-inputs 3");
  EXPECT_EQ(cpu.status, 2) << cpu.output;
  EXPECT_NE(cpu.output.find("is a package for --backend cuda (or cuda-sim), not cpu"), std::string::npos) << cpu.output;
  std::remove(package.c_str());
}

TEST(CliCudaSim, CheckPassesEveryPlanner) {
  const ToolRun r = run("STITCH_CUDA_SIM_DRIVER=" STITCH_CUDA_SIM_DRIVER " " STITCH_CLI " check " + kSoftmax +
                        " --graph softmax_small --backend cuda-sim");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find(" 0 failed"), std::string::npos) << r.output;
}

TEST(CliCudaSim, CheckWithWeavingPassesEveryPlanner) {
  const ToolRun r = run("STITCH_CUDA_SIM_DRIVER=" STITCH_CUDA_SIM_DRIVER " " STITCH_CLI " check " STITCH_SOURCE_DIR
                        "/bench/workloads/layernorm.stitch --graph layernorm_small --backend cuda-sim --weave");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find(" 0 failed"), std::string::npos) << r.output;
}

// Corpus graphs whose ops the CUDA back end runs as composites the CPU runs
// otherwise or not at all in the workloads: attention, conv (both expanded
// for CUDA, library calls on the CPU), resize and top_k, and a static axis
// cut to a symbol's length: every planner against the interpreter, and a
// length past the axis refused with status 2.
TEST(CliCudaSim, CorpusGraphsPassEveryPlannerOnBothBackEnds) {
  const std::string cli = "STITCH_CUDA_SIM_DRIVER=" STITCH_CUDA_SIM_DRIVER " " STITCH_CLI;
  const std::string corpus = STITCH_SOURCE_DIR "/tests/ir/corpus/";
  for (const std::string& args : {"check " + corpus + "attention.stitch --backend cuda-sim",
                                 "check " + corpus + "symbolic_prefix.stitch --dim T=7 --backend cuda-sim",
                                 "check " + corpus + "resize_top_k.stitch --dim B=2 --backend cuda-sim",
                                 "check " + corpus + "resize_top_k.stitch --dim B=3 --backend cpu",
                                 "check " + corpus + "conv.stitch --backend cuda-sim",
                                 "check " + corpus + "conv.stitch --backend cpu"}) {
    const ToolRun r = run(cli + " " + args);
    EXPECT_EQ(r.status, 0) << args << ": " << r.output;
    EXPECT_NE(r.output.find(" 0 failed"), std::string::npos) << r.output;
  }
  const ToolRun past = run(cli + " run " + corpus + "symbolic_prefix.stitch --random-inputs 1 --dim T=17 --backend cuda-sim");
  EXPECT_EQ(past.status, 2) << past.output;
  EXPECT_NE(past.output.find("slice to T = 17 passes axis 0 of extent 16"), std::string::npos) << past.output;
}

TEST(CliCudaSim, ADriverThatRefusesModulesFallsBackLoudlyToTheInterpreter) {
  // The simulated driver's fault injection: every module load fails, as a
  // GPU driver's PTX JIT might.
  const std::string args = " run " + kSoftmax + " --graph softmax_small --random-inputs 1 --print";
  const ToolRun r = run("STITCH_CUDA_SIM_FAIL=load STITCH_CUDA_SIM_DRIVER=" STITCH_CUDA_SIM_DRIVER " " STITCH_CLI + args +
                        " --backend cuda-sim");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("the driver refused the module"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("reference interpreter"), std::string::npos) << r.output;
  const ToolRun want = run(STITCH_CLI + args + " --backend interp");
  EXPECT_NE(r.output.find(want.output), std::string::npos) << r.output;
  // `check` counts a plan the driver refuses as a failure: it is a check.
  const ToolRun check = run("STITCH_CUDA_SIM_FAIL=load STITCH_CUDA_SIM_DRIVER=" STITCH_CUDA_SIM_DRIVER " " STITCH_CLI
                            " check " + kSoftmax + " --graph softmax_small --backend cuda-sim");
  EXPECT_EQ(check.status, 1) << check.output;
}

TEST(CliCudaSim, AMissingDriverIsBadUsage) {
  const ToolRun r = run("STITCH_CUDA_SIM_DRIVER=/nonexistent/libstitch_cuda_sim.so " STITCH_CLI " run " + kSoftmax +
                        " --graph softmax_small --random-inputs 1 --backend cuda-sim");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--backend cuda-sim needs the simulated CUDA driver"), std::string::npos) << r.output;
}

TEST(CliCudaSim, OutOfGpuMemoryNamesTheBytesAndTheTensor) {
  // A 128 GiB intermediate (within the 2^48-byte limit on one tensor) from a
  // one-element input: the simulated device has 80 GiB.
  testing::ScratchDirectory dir("stitch-cli-gpu-oom");
  const std::string file = (dir.path() / "big.stitch").string();
  std::ofstream(file) << "graph big(x: f32[1, 1]) -> (f32[1]) {\n"
                         "  b = broadcast(x, shape=[32, 1073741824])\n"
                         "  e = exp(b)\n"
                         "  s = reduce_sum(e, axes=[1])\n"
                         "  t = reduce_sum(s, axes=[0], keepdims=true)\n"
                         "  return t\n"
                         "}\n";
  const ToolRun r = run("STITCH_CUDA_SIM_DRIVER=" STITCH_CUDA_SIM_DRIVER " " STITCH_CLI " run " + file +
                        " --random-inputs 1 --backend cuda-sim --planner none");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("out of GPU memory: 137438953472 bytes requested for intermediate 'b' of graph 'big'"),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace stitch

namespace stitch {
namespace {

// `stitch bench --backend cuda-sim --profile` (docs/gpu-model.md, CLI): the
// model's predictions, nothing timed, and the bad spellings refused.
TEST(CliCudaSim, BenchPredictsWithTheGpuModelAndTimesNothing) {
  const std::string json_path = ::testing::TempDir() + "stitch_bench_sim.json";
  const ToolRun r = run("STITCH_CUDA_SIM_DRIVER=" STITCH_CUDA_SIM_DRIVER " " STITCH_CLI " bench " + kSoftmax +
                        " --graph softmax_small --backend cuda-sim --profile h200 --planners xla,stitch --json " +
                        json_path);
  ASSERT_EQ(r.status, 0) << r.output;
  std::ifstream in(json_path);
  const nlohmann::json doc = nlohmann::json::parse(in);
  EXPECT_EQ(doc["backend"], "cuda-sim");
  EXPECT_EQ(doc["profile"]["target"], "h200");
  ASSERT_EQ(doc["results"].size(), 2u) << doc.dump(1);
  for (const nlohmann::json& row : doc["results"]) {
    for (const char* measured : {"median_s", "gbps", "copy_gbps", "fraction_of_copy"}) {
      EXPECT_TRUE(row[measured].is_null()) << measured;
    }
    EXPECT_EQ(row["bytes_min"], 2 * 37 * 100 * 4);
    EXPECT_GT(row["predicted_s"].get<double>(), 0);
    EXPECT_DOUBLE_EQ(row["predicted_of_copy"].get<double>(),
                     row["copy_predicted_s"].get<double>() / row["predicted_s"].get<double>());
    ASSERT_EQ(row["launches"].size(), row["kernels"].get<size_t>()) << row.dump(1);
    double sum = 0;
    for (const nlohmann::json& launch : row["launches"]) {
      sum += launch["predicted_s"].get<double>();
      for (const char* key : {"bound", "dram_read_bytes", "sectors_per_request", "registers", "occupancy"}) {
        EXPECT_TRUE(launch.contains(key)) << key;
      }
    }
    EXPECT_DOUBLE_EQ(sum, row["predicted_s"].get<double>());
  }
  std::remove(json_path.c_str());
}

TEST(CliCudaSim, BenchProfileSpellingsThatAreRefused) {
  const std::string bench = "STITCH_CUDA_SIM_DRIVER=" STITCH_CUDA_SIM_DRIVER " " STITCH_CLI " bench " + kSoftmax +
                            " --graph softmax_small";
  const std::pair<std::string, std::string> cases[] = {
      {" --backend cuda-sim", "give --profile h100|h200"},
      {" --backend cuda-sim --profile a100", "--profile a100: unknown target (known: h100, h200)"},
      {" --profile h200", "it needs --backend cuda-sim, not cpu"},
      {" --backend cuda --profile h200", "it needs --backend cuda-sim, not cuda"},
  };
  for (const auto& [args, message] : cases) {
    const ToolRun r = run(bench + args);
    EXPECT_EQ(r.status, 2) << args << ": " << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << args << ": " << r.output;
  }
}

}  // namespace
}  // namespace stitch
