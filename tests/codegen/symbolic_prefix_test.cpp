// A static axis sliced to a symbol's length (graph-ir.md, Symbolic dims): a
// causal mask and a rotary table cut to the sequence length, as the torch
// backend writes them under dynamic shapes. One CPU executable runs several
// lengths, under every planner, matching the interpreter; a length past the
// axis is a clear error when the symbols are bound, in both.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <unistd.h>

#include "ir/canonicalize.h"
#include "random_graph.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"
#include "tensor_compare.h"

namespace stitch::runtime::cpu {
namespace {

namespace fs = std::filesystem;

constexpr const char* kMaskedSoftmax = R"(graph masked(s: f32[B, 4, T, T], mask: bool[1, 1, 16, 16], cos: f32[16, 8],
                     q: f32[B, 4, T, 8]) {
  m = slice(mask, stop=[1, 1, T, T])
  filled = select(m, s, constant(value=-inf, shape=[], dtype=f32))
  p = softmax(filled, axis=3)
  c = slice(cos, stop=[T, 8])
  r = mul(q, c)
  return p, r
})";

TEST(SymbolicPrefix, OneExecutableRunsEveryLengthUpToTheAxis) {
  const Graph g = canonicalize(parse_module(kMaskedSoftmax, "prefix.stitch").graphs.front());
  const fs::path dir = fs::temp_directory_path() / ("stitch-symbolic-prefix-" + std::to_string(getpid()));
  KernelCache cache(dir);
  for (PlannerKind planner : kEveryPlanner) {
    CpuExecutable exe = pipeline::compile_cpu(g, planner, cache);
    for (int64_t t : {1, 5, 16}) {
      SCOPED_TRACE("T = " + std::to_string(t) + " under " + std::string(planner_name(planner)));
      const std::vector<Tensor> inputs = testing::random_inputs(g, 7, {{"B", 2}, {"T", t}});
      const std::vector<Tensor> want = interpret(g, inputs);
      ASSERT_EQ(want.at(0).shape(), (std::vector<int64_t>{2, 4, t, t}));
      EXPECT_TRUE(testing::outputs_match_interpreter(exe.run(inputs), want, true, 16));
    }
    const std::vector<Tensor> too_long = testing::random_inputs(g, 7, {{"B", 2}, {"T", 17}});
    try {
      exe.run(too_long);
      ADD_FAILURE() << "T = 17 ran past the mask's 16 rows";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("slice to T = 17 passes axis 2 of extent 16"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(interpret(g, testing::random_inputs(g, 7, {{"B", 2}, {"T", 17}})), UserError);
  fs::remove_all(dir);
}

TEST(SymbolicPrefix, OnlyAPrefixMayEndAtASymbol) {
  for (const char* slice : {"slice(x, start=[1], stop=[T])", "slice(x, stop=[T], step=[2])"}) {
    const std::string text = std::string("graph g(x: f32[16], y: f32[T]) {\n  s = ") + slice +
                             "\n  z = add(s, y)\n  return z\n}\n";
    try {
      parse_module(text, "bad.stitch");
      ADD_FAILURE() << slice << " parsed";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("slice: stop T on static axis 0 needs start 0 and step 1"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace stitch::runtime::cpu
