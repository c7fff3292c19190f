// `stitch run|check --backend cuda-sim` (docs/cuda-sim.md): the built CLI
// finds the simulated driver (here through $STITCH_CUDA_SIM_DRIVER; when that
// names nothing, it says so with status 2) and runs the CUDA back end on it;
// `check` compares every planner's results with the interpreter's.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

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

// Attention (expanded into its composite for CUDA) and a static axis cut to a
// symbol's length: every planner against the interpreter, and a length past
// the axis refused with status 2.
TEST(CliCudaSim, AttentionAndSymbolicPrefixesPassEveryPlanner) {
  const std::string cli = "STITCH_CUDA_SIM_DRIVER=" STITCH_CUDA_SIM_DRIVER " " STITCH_CLI;
  const std::string corpus = STITCH_SOURCE_DIR "/tests/ir/corpus/";
  for (const std::string& args : {"check " + corpus + "attention.stitch --backend cuda-sim",
                                 "check " + corpus + "symbolic_prefix.stitch --dim T=7 --backend cuda-sim"}) {
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
