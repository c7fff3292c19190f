// Layout ops in loop kernels (docs/lowering.md, Layout ops in loop kernels):
// every graph of bench/layout/layout_chain.stitch (a reshape, an added or
// removed unit axis, a broadcast row, a transpose of outer axes, a slice, in
// front of or behind an elementwise chain) matches the interpreter on the CPU
// back end, and its kernel's inner loop is the same kind of loop as the chain
// alone: the compiler vectorises it (a 64-bit division of an element's index
// would keep it scalar) and the kernel has no gather. Before index
// simplification and blocks that divide the row, these kernels divided every
// element's 64-bit index and ran scalar, 60 to 120 times slower.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "ir/canonicalize.h"
#include "random_graph.h"
#include "run_command.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"
#include "tensor_compare.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;
using runtime::cpu::CpuExecutable;
using runtime::cpu::KernelCache;

Module layout_module() {
  return parse_file(std::string(STITCH_SOURCE_DIR) + "/bench/layout/layout_chain.stitch");
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class LayoutLoops : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("stitch-layout-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The generated translation unit compiled to assembly with the back end's
  // flags; the vectoriser's report of it in `report`.
  std::string assembly(const std::string& source, const std::string& name, std::string& report) {
    const fs::path cpp = dir_ / (name + ".cpp"), s = dir_ / (name + ".s"), info = dir_ / (name + ".vec");
    std::ofstream(cpp) << source;
    runtime::cpu::CompilerOptions options;
    std::string command = options.compiler;
    for (const std::string& f : options.flags) {
      if (f != "-shared") command += " " + f;
    }
    command += " -S -fopt-info-vec-optimized=" + info.string() + " -o " + s.string() + " " + cpp.string();
    const testing::CommandRun r = testing::run_command(command);
    EXPECT_EQ(r.status, 0) << r.output;
    report = read(info);
    return read(s);
  }

  // The graph compiled under the stitch planner with no fallback, its outputs
  // checked against the interpreter's on random inputs.
  CpuExecutable compiled_and_checked(const Graph& canonical, KernelCache& cache) {
    CpuExecutable exe = pipeline::compile_cpu(canonical, PlannerKind::Stitch, cache);
    EXPECT_EQ(exe.fallback(), "");
    const std::vector<Tensor> inputs = testing::random_inputs(canonical, 7, {});
    EXPECT_TRUE(testing::outputs_match_interpreter(exe.run(inputs), interpret(canonical, inputs), true, 0));
    return exe;
  }

  fs::path dir_;
};

// The lines of the generated source the loop over a block's threads spans.
std::pair<int, int> thread_loop_lines(const std::string& source) {
  std::istringstream in(source);
  std::string line;
  int first = -1, depth = 0;
  for (int n = 1; std::getline(in, line); ++n) {
    if (first < 0 && line.find("for (int64_t thr = 0;") != std::string::npos) first = n;
    if (first < 0) continue;
    for (char c : line) depth += c == '{' ? 1 : c == '}' ? -1 : 0;
    if (depth == 0) return {first, n};
  }
  return {first, -1};
}

// Whether the vectoriser's report has a loop vectorised within [first, last].
bool vectorised_within(const std::string& report, std::pair<int, int> lines) {
  static const std::regex kLine(R"(\.cpp:(\d+):\d+: optimized: loop vectorized)");
  for (auto it = std::sregex_iterator(report.begin(), report.end(), kLine); it != std::sregex_iterator(); ++it) {
    const int n = std::stoi((*it)[1]);
    if (n >= lines.first && n <= lines.second) return true;
  }
  return false;
}

std::string first_match(const std::string& text, const std::regex& re) {
  std::smatch m;
  return std::regex_search(text, m, re) ? m.str(0) : "";
}

TEST_F(LayoutLoops, EachGraphMatchesTheInterpreterAndVectorisesLikeThePlainChain) {
  const Module m = layout_module();
  ASSERT_GE(m.graphs.size(), 10u);
  KernelCache cache(dir_ / "cache");
  for (const Graph& g : m.graphs) {
    SCOPED_TRACE(g.name());
    CpuExecutable exe = compiled_and_checked(canonicalize(g), cache);
    EXPECT_EQ(exe.kernel_count(), 1);

    std::string report;
    const std::string s = assembly(exe.source(), g.name(), report);
    const std::pair<int, int> lines = thread_loop_lines(exe.source());
    ASSERT_GT(lines.second, lines.first) << exe.source();
    EXPECT_TRUE(vectorised_within(report, lines))
        << "the thread loop (lines " << lines.first << "-" << lines.second << ") did not vectorise:\n"
        << report << "\n" << exe.source();
    EXPECT_EQ(first_match(s, std::regex(R"(\tv(p)?gather\w*)")), "") << exe.source();
  }
}

// Whether the innermost loop around each line containing `needle` (from the
// nearest `for` above it to that loop's closing brace) is one the vectoriser
// reports; false if no line contains it.
bool loops_holding_vectorised(const std::string& source, const std::string& report, const std::string& needle) {
  std::vector<std::string> lines;
  std::istringstream in(source);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  int found = 0;
  for (size_t n = 0; n < lines.size(); ++n) {
    if (lines[n].find(needle) == std::string::npos) continue;
    ++found;
    size_t first = n;
    while (first > 0 && lines[first].find("for (") == std::string::npos) --first;
    size_t last = first;
    for (int depth = 0; last < lines.size(); ++last) {
      for (char c : lines[last]) depth += c == '{' ? 1 : c == '}' ? -1 : 0;
      if (depth == 0 && last > first) break;
    }
    if (!vectorised_within(report, {static_cast<int>(first) + 1, static_cast<int>(last) + 1})) return false;
  }
  return found > 0;
}

// A select whose operand is loaded (here a 0-d input broadcast, as the fill
// value of a masked softmax arrives from PyTorch in training) vectorises like
// one of constants: both operands are evaluated before the choice
// (stitch_select). Written as `c ? in[0] : x`, the load was conditional and the
// loops stayed scalar: a Llama block's masked softmax ran 8x slower. Likewise
// `and`/`or` of loaded masks, which are not written as && and ||.
TEST_F(LayoutLoops, ASelectOfALoadedValueVectorises) {
  const Module m = parse_module(R"(
graph masked_softmax(x: f32[64, 128], keep: bool[64, 128], fill: f32[]) -> (f32[64, 128]) {
  s = div(x, 5.65)
  drop = not(keep)
  filled = select(drop, fill, s)
  p = softmax(filled, axis=1)
  return p
}
graph masked_fill(x: f32[64, 128], keep: bool[64, 128], fill: f32[]) -> (f32[64, 128]) {
  drop = not(keep)
  filled = select(drop, fill, x)
  y = exp(filled)
  return y
}
graph two_masks(x: f32[64, 128], keep: bool[64, 128], pad: bool[64, 128], fill: f32[]) -> (f32[64, 128]) {
  positive = gt(x, 0.0)
  both = and(positive, keep)
  either = or(both, pad)
  filled = select(either, fill, x)
  y = exp(filled)
  return y
}
)");
  KernelCache cache(dir_ / "cache");
  for (const Graph& g : m.graphs) {
    SCOPED_TRACE(g.name());
    CpuExecutable exe = compiled_and_checked(canonicalize(g), cache);
    std::string report;
    assembly(exe.source(), g.name(), report);
    EXPECT_TRUE(loops_holding_vectorised(exe.source(), report, "stitch_select<"))
        << "a loop holding the select did not vectorise:\n" << report << "\n" << exe.source();
  }
}

// Rows whose length is not a multiple of the lanes (ViT's 197 tokens, warp per
// row: 32 lanes, 6 full steps and one of 5): the last, partial step of each row
// loop moves back to end at the row's end (tail_guard.h)
// instead of testing each lane around exp, which GCC left scalar (a softmax over
// rows of 197 ran 2.8x slower than over 192). Every loop holding exp vectorises,
// and the lanes the shift leaves out write nothing twice: a constant row's
// probabilities are all the same bits. The moved-back step reads and writes
// through the shifted row position as the full steps do, at one linear offset:
// printed as the delinearised index it was, its divisions kept the loops that
// read the input or store the output scalar (ViT's bf16 attention softmax,
// [8, 12, 197, 197], 7.9 ms; 3.3 ms with the linear offset).
TEST_F(LayoutLoops, APartialLastStepOfARowVectorises) {
  const Module m = parse_module(R"(
graph rows_197(x: f32[1, 12, 197, 197]) -> (f32[1, 12, 197, 197]) {
  s = mul(x, 0.125)
  p = softmax(s, axis=3)
  return p
}
graph rows_200(x: f32[1, 12, 100, 200]) -> (f32[1, 12, 100, 200]) {
  p = softmax(x, axis=3)
  return p
}
graph rows_197_bf16(x: bf16[2, 12, 197, 197]) -> (bf16[2, 12, 197, 197]) {
  w = cast(x, to=f32)
  s = mul(w, 0.125)
  r = cast(s, to=bf16)
  v = cast(r, to=f32)
  p = softmax(v, axis=3)
  q = cast(p, to=bf16)
  return q
}
)");
  KernelCache cache(dir_ / "cache");
  for (const Graph& g : m.graphs) {
    SCOPED_TRACE(g.name());
    const Graph canonical = canonicalize(g);
    CpuExecutable exe = compiled_and_checked(canonical, cache);
    EXPECT_NE(exe.source().find("stitch_shift"), std::string::npos) << exe.source();
    std::string report;
    assembly(exe.source(), g.name(), report);
    EXPECT_TRUE(loops_holding_vectorised(exe.source(), report, "= std::exp(e"))
        << "a loop holding exp did not vectorise:\n" << report << "\n" << exe.source();
    const std::string store = g.name() == "rows_197_bf16" ? "out_q[" : "out_p[";
    EXPECT_TRUE(loops_holding_vectorised(exe.source(), report, "(in_x["))
        << "a loop reading the input did not vectorise:\n" << report << "\n" << exe.source();
    EXPECT_TRUE(loops_holding_vectorised(exe.source(), report, store))
        << "a loop storing the output did not vectorise:\n" << report << "\n" << exe.source();
    const TensorType& x = canonical.type(canonical.params()[0]);
    Tensor constant(x.dtype, concrete_shape(x.shape, {}));
    for (int64_t i = 0; i < constant.numel(); ++i) constant.set_f64(i, 0.75);
    const Tensor p = exe.run({constant}).at(0);
    for (int64_t i = 0; i < p.numel(); ++i) ASSERT_EQ(p.get_f64(i), p.get_f64(0)) << "element " << i;
  }
}

// A partial last step whose store index the emitter would resolve through the
// lets to the thread (a column of a [384, 9] weight, one op per kernel: the
// store's offset cancelled to `offset + thr`): moved back, every index must be
// the shifted one. Unshifted, elements 256..383 stayed zero and the step wrote
// past the end (found on MobileNetV2's depthwise weights under planner none).
TEST_F(LayoutLoops, AMovedBackStepShiftsEveryIndex) {
  const Module m = parse_module(R"(
graph column(w: f32[384, 9]) -> (f32[1, 384, 1, 1]) {
  c = slice(w, start=[0, 4], stop=[384, 5])
  y = reshape(c, shape=[1, 384, 1, 1])
  return y
}
)");
  KernelCache cache(dir_ / "cache");
  const Graph canonical = canonicalize(m.graphs.at(0));
  for (PlannerKind planner : {PlannerKind::None, PlannerKind::Xla}) {
    CpuExecutable exe = pipeline::compile_cpu(canonical, planner, cache);
    const std::vector<Tensor> inputs = testing::random_inputs(canonical, 11, {});
    EXPECT_TRUE(testing::outputs_match_interpreter(exe.run(inputs), interpret(canonical, inputs), true, 0))
        << exe.source();
  }
}

}  // namespace
}  // namespace stitch
