// The `stitch` binary end to end: the acceptance paths of the CLI and its
// exit statuses on bad input (DESIGN.md, CLI).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>

#include <array>

#include <cmath>
#include <filesystem>
#include <regex>
#include <string>

#include "cli_runner.h"
#include "stitch/npy.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;

using Result = CliResult;
using Cli = CliTest;

const char* kAxpy = R"(# y = a*x + b, with a symbolic batch
graph axpy(x: f32[B, 4], b: f32[4]) -> (f32[B, 4]) {
  y = add(mul(x, 2.0), b)
  return y
}
)";

TEST_F(Cli, LayerNormWorkloadWritesItsResult) {
  fs::path out = dir_ / "out";
  Result r = run_cli("run " + src("bench/workloads/layernorm.stitch") +
                     " --graph layernorm_small --backend interp --random-inputs 1 --output-dir " + out.string());
  ASSERT_EQ(r.status, 0) << r.output;
  int files = 0;
  for (const auto& e : fs::directory_iterator(out)) {
    EXPECT_EQ(e.path().extension(), ".npy");
    Tensor t = read_npy(e.path().string());
    EXPECT_EQ(t.dtype(), DType::f32);
    EXPECT_GT(t.numel(), 0);
    ++files;
  }
  EXPECT_EQ(files, 1);
}

TEST_F(Cli, InputsBindByNameAndResultsAreExact) {
  Tensor x(DType::f32, {2, 4}), b(DType::f32, {4});
  for (int i = 0; i < 8; ++i) x.set_f64(i, i);
  for (int i = 0; i < 4; ++i) b.set_f64(i, 100 * i);
  std::string file = write("axpy.stitch", kAxpy);
  Result r = run_cli("run " + file + " --input x=" + write_npy_file("x.npy", x) + " --input b=" +
                     write_npy_file("b.npy", b) + " --output-dir " + (dir_ / "o").string());
  ASSERT_EQ(r.status, 0) << r.output;
  Tensor y = read_npy((dir_ / "o" / "y.npy").string());
  ASSERT_EQ(y.shape(), (std::vector<int64_t>{2, 4}));
  for (int i = 0; i < 8; ++i) EXPECT_EQ(y.get_f64(i), 2.0 * i + 100 * (i % 4));
}

TEST_F(Cli, PrintShowsValues) {
  std::string file = write("axpy.stitch", kAxpy);
  Result r = run_cli("run " + file + " --random-inputs 3 --dim B=2 --print");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("y = "), std::string::npos) << r.output;
}

TEST_F(Cli, RandomInputsAreReproducible) {
  std::string file = write("axpy.stitch", kAxpy);
  Result a = run_cli("run " + file + " --random-inputs 7 --dim B=3 --print");
  Result b = run_cli("run " + file + " --random-inputs 7 --dim B=3 --print");
  Result c = run_cli("run " + file + " --random-inputs 8 --dim B=3 --print");
  ASSERT_EQ(a.status, 0) << a.output;
  EXPECT_EQ(a.output, b.output);
  EXPECT_NE(a.output, c.output);
}

struct BadRun {
  const char* name;
  std::string args;       // after "run FILE"
  std::string expected;   // a substring of the message
};

TEST_F(Cli, BadInputsExitTwoWithAClearMessage) {
  std::string file = write("axpy.stitch", kAxpy);
  Tensor x(DType::f32, {2, 4}), x_i32(DType::i32, {2, 4}), x_wide(DType::f32, {2, 5}), b(DType::f32, {4}),
      b3(DType::f32, {3}), x3(DType::f32, {3, 4});
  std::string xf = write_npy_file("x.npy", x), bf = write_npy_file("b.npy", b);
  std::string xi = write_npy_file("xi.npy", x_i32), xw = write_npy_file("xw.npy", x_wide);
  std::string b3f = write_npy_file("b3.npy", b3);
  std::string garbage = write("garbage.npy", "not an npy file");
  std::vector<BadRun> cases = {
      {"missing input", "--input x=" + xf, "missing input 'b'"},
      {"extra input", "--input x=" + xf + " --input b=" + bf + " --input z=" + bf, "has no parameter 'z'"},
      {"bound twice", "--input x=" + xf + " --input x=" + xf + " --input b=" + bf, "bound twice"},
      {"dtype mismatch", "--input x=" + xi + " --input b=" + bf, "input 'x': expected f32[B, 4], got i32[2, 4]"},
      {"shape mismatch", "--input x=" + xw + " --input b=" + bf, "dim 1 is 5, not 4"},
      {"static mismatch", "--input x=" + xf + " --input b=" + b3f, "input 'b': expected f32[4], got f32[3]"},
      {"unbound symbol", "--random-inputs 1", "symbolic dim B is not bound"},
      {"bad npy", "--input x=" + garbage + " --input b=" + bf, "garbage.npy"},
      {"missing npy", "--input x=" + (dir_ / "nope.npy").string() + " --input b=" + bf, "nope.npy"},
      {"bad binding syntax", "--input x", "expects NAME=VALUE"},
      {"unknown graph", "--graph nope --random-inputs 1", "no graph named 'nope' (graphs: axpy)"},
      {"unknown backend", "--backend tpu", "backend"},
      {"unknown option", "--frobnicate", "frobnicate"},
  };
  for (const BadRun& c : cases) {
    Result r = run_cli("run " + file + " " + c.args);
    EXPECT_EQ(r.status, 2) << c.name << ": " << r.output;
    EXPECT_NE(r.output.find(c.expected), std::string::npos) << c.name << ": " << r.output;
  }
}

// A static axis cut to a symbol's length (graph-ir.md, Symbolic dims): a length
// past the axis is bad input, on the interpreter and the CPU back end alike.
TEST_F(Cli, ASymbolicPrefixPastItsAxisExitsTwo) {
  std::string file = write("prefix.stitch", R"(graph g(mask: bool[16, 16], s: f32[T, T]) {
  m = slice(mask, stop=[T, T])
  y = select(m, s, constant(value=0.0, shape=[], dtype=f32))
  return y
}
)");
  for (const char* backend : {"interp", "cpu"}) {
    Result r = run_cli("run " + file + " --random-inputs 1 --dim T=17 --backend " + backend);
    EXPECT_EQ(r.status, 2) << backend << ": " << r.output;
    EXPECT_NE(r.output.find("slice to T = 17 passes axis 0 of extent 16"), std::string::npos) << r.output;
    EXPECT_EQ(run_cli("run " + file + " --random-inputs 1 --dim T=16 --backend " + backend).status, 0) << backend;
  }
}

TEST_F(Cli, SymbolicDimsMustBindConsistently) {
  std::string file = write("two.stitch", R"(graph g(a: f32[N, 2], b: f32[N, 2]) {
  c = add(a, b)
  return c
}
)");
  Tensor a(DType::f32, {3, 2}), b(DType::f32, {5, 2});
  Result r = run_cli("run " + file + " --input a=" + write_npy_file("a.npy", a) + " --input b=" +
                     write_npy_file("b.npy", b));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("input 'b': dim 0 binds N = 5, but input 'a' bound N = 3"), std::string::npos)
      << r.output;
  Tensor b3(DType::f32, {3, 2});
  r = run_cli("run " + file + " --input a=" + write_npy_file("a.npy", a) + " --input b=" +
              write_npy_file("b3.npy", b3));
  EXPECT_EQ(r.status, 0) << r.output;
}

TEST_F(Cli, MalformedFileReportsFileLineColumn) {
  std::string file = write("bad.stitch", "graph g(x: f32[4]) {\n  y = exp(x\n  return y\n}\n");
  Result r = run_cli("run " + file + " --random-inputs 1");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(r.output.rfind(file + ":3:", 0), 0u) << r.output;
  EXPECT_NE(r.output.find(": error: "), std::string::npos) << r.output;
}

TEST_F(Cli, UnknownOpAndBadAxisAreLocated) {
  std::string file = write("bad.stitch", "graph g(x: f32[4]) {\n  y = reduce_sum(x, axes=[3])\n  return y\n}\n");
  Result r = run_cli("print " + file);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(r.output.rfind(file + ":2:", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("axis 3 is out of range for rank 1"), std::string::npos) << r.output;
  file = write("bad2.stitch", "graph g(x: f32[4]) {\n  y = frob(x)\n  return y\n}\n");
  r = run_cli("run " + file + " --random-inputs 1");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("unknown op 'frob'"), std::string::npos) << r.output;
}

TEST_F(Cli, MissingFileAndNoArgumentsExitTwo) {
  EXPECT_EQ(run_cli("run " + (dir_ / "absent.stitch").string()).status, 2);
  EXPECT_EQ(run_cli("").status, 2);
  EXPECT_EQ(run_cli("frobnicate").status, 2);
  EXPECT_EQ(run_cli("--help").status, 0);
}

TEST_F(Cli, PrintGivesTheCanonicalFormWhichReparses) {
  std::string file = write("axpy.stitch", kAxpy);
  Result r = run_cli("print " + file);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("broadcast("), std::string::npos) << r.output;
  std::string again = write("again.stitch", r.output);
  Result r2 = run_cli("print " + again);
  ASSERT_EQ(r2.status, 0) << r2.output;
  EXPECT_EQ(r.output, r2.output);
}

TEST_F(Cli, DumpPrintsTheGraphAfterEveryCanonicalisationPass) {
  std::string file = write("axpy.stitch", kAxpy);
  Result r = run_cli("run " + file + " --random-inputs 1 --dim B=2");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.find("STITCH_DUMP"), std::string::npos) << r.output;
  Result dumped = run_cli("run " + file + " --random-inputs 1 --dim B=2", "STITCH_DUMP=graph");
  ASSERT_EQ(dumped.status, 0) << dumped.output;
  for (const char* stage : {"as parsed", "after explicit-broadcasts", "after fold-layout-identities", "after cse",
                            "after dce"}) {
    EXPECT_NE(dumped.output.find(std::string("// STITCH_DUMP graph: ") + stage), std::string::npos) << stage;
  }
}

TEST_F(Cli, EveryWorkloadRunsOnItsSmallGraph) {
  for (const auto& e : fs::directory_iterator(src("bench/workloads"))) {
    if (e.path().extension() != ".stitch") continue;
    std::string stem = e.path().stem().string();
    Result r = run_cli("print " + e.path().string());
    ASSERT_EQ(r.status, 0) << stem << ": " << r.output;
    // Every workload ships a small variant named <graph>_small for tests.
    std::string graph_name;
    size_t at = r.output.find("graph ");
    size_t paren = r.output.find('(', at);
    graph_name = r.output.substr(at + 6, paren - at - 6);
    r = run_cli("run " + e.path().string() + " --graph " + graph_name + "_small --random-inputs 5 --output-dir " +
                (dir_ / stem).string());
    EXPECT_EQ(r.status, 0) << stem << ": " << r.output;
  }
}

// STITCH_STREAM_MIN_BYTES (docs/cpu-backend.md, Streaming stores) must be an
// integer: anything else is bad input, exit 2 with the value named.
TEST_F(Cli, MalformedStreamThresholdIsBadInput) {
  std::string env = "STITCH_STREAM_MIN_BYTES=4MiB STITCH_CACHE_DIR=" + (dir_ / "cache").string();
  Result r = run_cli("run " + src("bench/workloads/swish.stitch") + " --graph swish_small --random-inputs 1", env);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("STITCH_STREAM_MIN_BYTES=4MiB: not an integer"), std::string::npos) << r.output;
}

// A STITCH_DUMP name that is no stage (options/options.h) is bad input: exit
// 2, the name and the stages it takes in the message, nothing run.
TEST_F(Cli, UnknownDumpStageIsBadInput) {
  std::string env = "STITCH_DUMP=plan,shedule STITCH_CACHE_DIR=" + (dir_ / "cache").string();
  Result r = run_cli("run " + src("bench/workloads/swish.stitch") + " --graph swish_small --random-inputs 1", env);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("STITCH_DUMP=plan,shedule: no stage 'shedule'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("schedule"), std::string::npos) << r.output;
}

// An on/off environment switch: `bad` is bad input (exit 2, the value named),
// 0 is a valid run of a small graph.
void expect_zero_or_one_switch(const fs::path& cache_dir, const std::string& name, const std::string& bad) {
  const std::string cache = " STITCH_CACHE_DIR=" + cache_dir.string();
  const std::string args =
      "run " + std::string(STITCH_SOURCE_DIR) + "/bench/workloads/swish.stitch --graph swish_small --random-inputs 1";
  Result r = run_cli(args, name + "=" + bad + cache);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find(name + "=" + bad + ": not 0 or 1"), std::string::npos) << r.output;
  Result off = run_cli(args, name + "=0" + cache);
  EXPECT_EQ(off.status, 0) << off.output;
}

// STITCH_PREFETCH (docs/lowering.md, Prefetch) is 0 or 1.
TEST_F(Cli, PrefetchSwitchIsZeroOrOne) { expect_zero_or_one_switch(dir_ / "cache", "STITCH_PREFETCH", "yes"); }

// STITCH_DOT_EPILOGUES (docs/fusion.md, Dot epilogues) is 0 or 1.
TEST_F(Cli, DotEpiloguesSwitchIsZeroOrOne) {
  expect_zero_or_one_switch(dir_ / "cache", "STITCH_DOT_EPILOGUES", "maybe");
}

// STITCH_HUGE_PAGES (docs/executable.md, Tensor storage) is 0 or 1, checked
// on every run, even one with no tensor large enough to map on its own.
TEST_F(Cli, HugePagesSwitchIsZeroOrOne) { expect_zero_or_one_switch(dir_ / "cache", "STITCH_HUGE_PAGES", "on"); }

// --backend cpu compiles through the kernel cache; each test gets its own
// STITCH_CACHE_DIR so a hit can only come from the same test.
TEST_F(Cli, CpuBackendMatchesInterpreterOnLayerNorm) {
  std::string env = "STITCH_CACHE_DIR=" + (dir_ / "cache").string();
  std::string common = "run " + src("bench/workloads/layernorm.stitch") + " --graph layernorm_small --random-inputs 4";
  Result interp = run_cli(common + " --backend interp --output-dir " + (dir_ / "interp").string());
  ASSERT_EQ(interp.status, 0) << interp.output;
  Result cpu = run_cli(common + " --backend cpu --planner xla --output-dir " + (dir_ / "cpu").string(), env);
  ASSERT_EQ(cpu.status, 0) << cpu.output;
  Tensor want = read_npy((dir_ / "interp" / "y.npy").string());
  Tensor got = read_npy((dir_ / "cpu" / "y.npy").string());
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.shape(), want.shape());
  // f32 row reductions of length 100 in another order, plus rsqrt: the bound
  // of tests/lower ((32 + 4 * 100) ulps of 1 + |want|), rounded up.
  for (int64_t i = 0; i < want.numel(); ++i) {
    ASSERT_NEAR(got.get_f64(i), want.get_f64(i), 1e-4 * (1 + std::fabs(want.get_f64(i)))) << "element " << i;
  }
}

TEST_F(Cli, CpuBackendSecondRunHitsTheKernelCache) {
  std::string env = "STITCH_DUMP=cache STITCH_CACHE_DIR=" + (dir_ / "cache").string();
  std::string args = "run " + src("bench/workloads/layernorm.stitch") +
                     " --graph layernorm_small --backend cpu --planner xla --random-inputs 4";
  Result first = run_cli(args, env);
  ASSERT_EQ(first.status, 0) << first.output;
  EXPECT_NE(first.output.find("cache: hits=0 remote_hits=0 misses=1"), std::string::npos) << first.output;
  Result second = run_cli(args, env);
  ASSERT_EQ(second.status, 0) << second.output;
  EXPECT_NE(second.output.find("cache: hits=1 remote_hits=0 misses=0"), std::string::npos) << second.output;
}

TEST_F(Cli, CpuBackendSecondRunStartsNoCompilerProcess) {
  // `c++` on PATH is a wrapper that logs every invocation (compiles and
  // --version probes alike) and then runs the real compiler.
  FILE* which = popen("command -v c++", "r");
  ASSERT_NE(which, nullptr);
  std::array<char, 4096> buf{};
  std::string real = fgets(buf.data(), buf.size(), which) ? std::string(buf.data()) : "";
  pclose(which);
  while (!real.empty() && (real.back() == '\n' || real.back() == ' ')) real.pop_back();
  ASSERT_FALSE(real.empty());
  fs::create_directories(dir_ / "bin");
  const fs::path log = dir_ / "compiler.log";
  write("bin/c++", "#!/bin/sh\necho \"$*\" >> '" + log.string() + "'\nexec '" + real + "' \"$@\"\n");
  fs::permissions(dir_ / "bin" / "c++", fs::perms::owner_all);
  auto invocations = [&] {
    std::ifstream in(log);
    int lines = 0;
    for (std::string line; std::getline(in, line);) ++lines;
    return lines;
  };
  std::string env = "PATH=" + (dir_ / "bin").string() + ":$PATH STITCH_DUMP=cache STITCH_CACHE_DIR=" +
                    (dir_ / "cache").string();
  std::string args = "run " + src("bench/workloads/swish.stitch") + " --graph swish_small --random-inputs 2";
  Result first = run_cli(args, env);
  ASSERT_EQ(first.status, 0) << first.output;
  const int after_first = invocations();
  EXPECT_GE(after_first, 2) << "expected a --version probe and a compile";
  Result second = run_cli(args, env);
  ASSERT_EQ(second.status, 0) << second.output;
  EXPECT_NE(second.output.find("cache: hits=1 remote_hits=0 misses=0"), std::string::npos) << second.output;
  EXPECT_EQ(invocations(), after_first) << "the second run started the compiler";
  EXPECT_EQ(first.output.substr(first.output.find("y:")), second.output.substr(second.output.find("y:")));
}

TEST_F(Cli, CpuBackendDumpsPlanKernelsAndSource) {
  std::string env = "STITCH_DUMP=plan,kir,source STITCH_CACHE_DIR=" + (dir_ / "cache").string();
  Result r = run_cli("run " + src("bench/workloads/softmax.stitch") +
                         " --graph softmax_small --backend cpu --planner none --random-inputs 1",
                     env);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("plan softmax_small (planner none)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("kernel k_softmax_small_g0("), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("extern \"C\""), std::string::npos) << r.output;
}

// docs/pipeline.md, Dumps: every stage by its name, the schedule stage's
// values among them.
TEST_F(Cli, DumpsEveryPipelineStageByName) {
  std::string env = "STITCH_DUMP=split-reductions,attention,conv,plan,schedule,lower,emit,compile STITCH_CACHE_DIR=" +
                    (dir_ / "cache").string();
  Result r = run_cli("run " + src("bench/workloads/softmax.stitch") +
                         " --graph softmax_small --backend cpu --planner stitch --random-inputs 1",
                     env);
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* stage : {"split-reductions", "attention", "conv", "plan", "schedule", "lower", "emit", "compile"}) {
    EXPECT_NE(r.output.find(std::string("// STITCH_DUMP ") + stage + "\n"), std::string::npos) << stage;
  }
  EXPECT_NE(r.output.find("schedules of softmax_small (planner stitch): 1 groups"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("group 0 [stitched] y: row "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("compile: 1 kernels loaded"), std::string::npos) << r.output;
}

// docs/tuning.md: --tune measures once; the second run reads the choice back.
TEST_F(Cli, TunedRunMeasuresOnceThenHitsTheTuningCache) {
  std::string env = "STITCH_DUMP=tune STITCH_CACHE_DIR=" + (dir_ / "cache").string();
  std::string args = "run " + src("bench/workloads/softmax.stitch") +
                     " --graph softmax_small --planner stitch --random-inputs 3 --tune";
  Result first = run_cli(args, env);
  ASSERT_EQ(first.status, 0) << first.output;
  EXPECT_NE(first.output.find("0 from the tuning cache, 1 measured"), std::string::npos) << first.output;
  EXPECT_NE(first.output.find("// STITCH_DUMP tune\n"), std::string::npos) << first.output;
  EXPECT_NE(first.output.find("\ngroup 0: "), std::string::npos) << first.output;
  // The stitched softmax is xla's four kernels fused: a contested decision, measured.
  EXPECT_NE(first.output.find("tuned 1 fusion decisions: 0 from the tuning cache, 1 measured"), std::string::npos)
      << first.output;
  EXPECT_NE(first.output.find("kernel 0: fused "), std::string::npos) << first.output;
  Result second = run_cli(args, env);
  ASSERT_EQ(second.status, 0) << second.output;
  EXPECT_NE(second.output.find("1 from the tuning cache, 0 measured"), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("tuned 1 fusion decisions: 1 from the tuning cache, 0 measured"), std::string::npos)
      << second.output;
  EXPECT_EQ(first.output.substr(first.output.find("y:")), second.output.substr(second.output.find("y:")));
  // STITCH_TUNE=1 is --tune; anything but 0 or 1 is bad input.
  Result by_env = run_cli("run " + src("bench/workloads/softmax.stitch") +
                              " --graph softmax_small --planner stitch --random-inputs 3",
                          env + " STITCH_TUNE=1");
  EXPECT_NE(by_env.output.find("1 from the tuning cache, 0 measured"), std::string::npos) << by_env.output;
  Result bad = run_cli("run " + src("bench/workloads/softmax.stitch") + " --random-inputs 3", "STITCH_TUNE=yes");
  EXPECT_EQ(bad.status, 2) << bad.output;
  EXPECT_NE(bad.output.find("STITCH_TUNE=yes"), std::string::npos) << bad.output;
}

// --tune applies to the compiled back ends: the interpreter has no schedule
// to tune; --backend cuda tunes on the device (docs/tuning.md, On a GPU), so
// without one it fails as any --backend cuda run does, with exit status 2.
TEST_F(Cli, TuneNeedsACompiledBackEnd) {
  const std::string softmax = src("bench/workloads/softmax.stitch") + " --graph softmax_small --random-inputs 3 --tune";
  Result interp = run_cli("run " + softmax + " --backend interp");
  EXPECT_EQ(interp.status, 2) << interp.output;
  EXPECT_NE(interp.output.find("the interpreter has no schedules to tune"), std::string::npos) << interp.output;
  Result cuda = run_cli("run " + softmax + " --backend cuda", "CUDA_VISIBLE_DEVICES=-1");
  if (cuda.status == 0) GTEST_SKIP() << "a GPU answered despite CUDA_VISIBLE_DEVICES=-1";
  EXPECT_EQ(cuda.status, 2) << cuda.output;
  EXPECT_EQ(cuda.output.find("CPU only"), std::string::npos) << cuda.output;
}

TEST_F(Cli, CpuBackendRefusesWhatItCannotRunYet) {
  // argmax over a static empty axis does not lower to a CPU kernel
  // (docs/lowering.md, Not supported yet); the interpreter rejects it at run time.
  std::string am = write("am.stitch", R"(graph am(x: f32[4, 0]) -> (i64[4]) {
  i = argmax(x, axes=[1])
  return i
}
)");
  Result r = run_cli("run " + am + " --backend cpu --random-inputs 1");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("cannot run this graph yet"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("argmax over an empty axis"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("use --backend interp"), std::string::npos) << r.output;
  r = run_cli("run " + am + " --backend interp --random-inputs 1");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("axis 1 has extent 0"), std::string::npos) << r.output;
  r = run_cli("run " + am + " --backend cpu --planner ilp --random-inputs 1");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("cannot run this graph yet"), std::string::npos) << r.output;
}

// Without a usable GPU (this machine, CI), --backend cuda is a clear usage
// error naming what is missing, never a crash (docs/cuda-runtime.md).
// Whether this machine has the NVIDIA driver library (the paths below need
// its absence, or a GPU).
bool has_cuda_driver() {
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (handle) dlclose(handle);
  return handle != nullptr;
}

TEST(CliErrors, BackendCudaWithoutAGpuExitsTwo) {
  if (has_cuda_driver()) GTEST_SKIP() << "the NVIDIA driver is present";
  Result r = run_cli("run " + std::string(STITCH_SOURCE_DIR) +
                     "/bench/workloads/softmax.stitch --graph softmax_small --backend cuda --random-inputs 1");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("error: --backend cuda"), std::string::npos) << r.output;
}

// check and bench say the same before any row or timing (a GPU machine runs
// these paths for real: tests/gpu, scripts/gpu-check.sh).
TEST(CliErrors, CheckAndBenchOnCudaWithoutAGpuExitTwo) {
  if (has_cuda_driver()) GTEST_SKIP() << "the NVIDIA driver is present";
  const std::string file = std::string(STITCH_SOURCE_DIR) + "/bench/workloads/softmax.stitch";
  for (const std::string& command : {"check " + file + " --graph softmax_small --backend cuda",
                                    "bench " + file + " --graph softmax_small --backend cuda --repeat 1"}) {
    Result r = run_cli(command);
    EXPECT_EQ(r.status, 2) << command << "\n" << r.output;
    EXPECT_NE(r.output.find("error: --backend cuda needs an NVIDIA GPU"), std::string::npos) << r.output;
  }
}

// With a GPU: run and check on cuda end to end (the gpu label's suites cover
// the paths in depth).
TEST(CliCuda, RunAndCheckOnTheGpu) {
  if (!has_cuda_driver()) GTEST_SKIP() << "no GPU: libcuda.so.1 is absent";
  const std::string file = std::string(STITCH_SOURCE_DIR) + "/bench/workloads/layernorm.stitch";
  Result run = run_cli("run " + file + " --graph layernorm_small --backend cuda --planner stitch --random-inputs 1");
  EXPECT_EQ(run.status, 0) << run.output;
  Result check = run_cli("check " + file + " --graph layernorm_small --backend cuda");
  EXPECT_EQ(check.status, 0) << check.output;
  // One row per planner, each within tolerance of the interpreter.
  EXPECT_NE(check.output.find("5 ok, 0 failed, 0 unsupported, 0 bad input"), std::string::npos) << check.output;
  for (const char* planner : {"none", "xla", "stitch", "greedy", "ilp"}) {
    const std::regex row(std::string("layernorm_small +") + planner + " +cuda +y .* ok\\n");
    EXPECT_TRUE(std::regex_search(check.output, row)) << planner << "\n" << check.output;
  }
}

}  // namespace
}  // namespace stitch
