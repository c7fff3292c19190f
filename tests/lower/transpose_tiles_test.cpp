// Transpose tiles (lower/transpose_tiles.h): which loop groups take them, and
// every case's kernel, compiled once for the suite, against the interpreter.
#include "lower/transpose_tiles.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/cpu/cpp_emitter.h"
#include "group_kernel_runner.h"
#include "ir/canonicalize.h"
#include "kir/printer.h"
#include "lower/group_expr.h"
#include "lower/lower_loop_group.h"
#include "random_graph.h"
#include "runtime/cpu/cpu_compiler.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"
#include "tensor_compare.h"

namespace stitch::lower {
namespace {


Graph parse(const std::string& text) { return canonicalize(parse_module(text).graphs.front()); }

FusionGroup whole_graph_loop_group(const Graph& g) { return testing::whole_graph_group(g, GroupKind::Loop); }

struct Case {
  std::string id;
  std::string text;
  bool transcendental = false;
};

std::vector<Case> make_cases() {
  return {
      {"add_2d", R"(graph add_2d(a: f32[48, 32], b: f32[32, 48]) -> (f32[32, 48]) {
  y = add(transpose(a, perm=[1, 0]), b)
  return y
})"},
      // The root is the transpose itself; an empty perm reverses.
      {"plain", R"(graph plain(a: f32[16, 64]) -> (f32[64, 16]) {
  y = transpose(a)
  return y
})"},
      // Leading axes, kept and moved: perm [1, 2, 0] puts axis 2 second-to-last.
      {"batched", R"(graph batched(a: f64[3, 16, 32]) -> (f64[3, 32, 16]) {
  y = neg(transpose(a, perm=[0, 2, 1]))
  return y
})"},
      // Many blocks, with a leading axis.
      {"leading", R"(graph leading(a: f32[2, 32, 128], b: f32[2, 128, 32]) -> (f32[2, 128, 32]) {
  y = add(transpose(a, perm=[0, 2, 1]), b)
  return y
})"},
      {"rotated", R"(graph rotated(c: i32[32, 2, 48]) -> (i32[2, 48, 32]) {
  z = mul(transpose(c, perm=[1, 2, 0]), 3)
  return z
})"},
      // Two transposes, one of an in-group expression with a broadcast bias.
      {"two", R"(graph two(a: f32[32, 16], b: f32[32, 16], bias: f32[16]) -> (f32[16, 32], f32[16, 32]) {
  e = exp(add(a, broadcast(bias, shape=[32, 16])))
  y = sub(transpose(e, perm=[1, 0]), transpose(b, perm=[1, 0]))
  z = mul(y, y)
  return y, z
})",
       true},
      {"narrow", R"(graph narrow(a: f16[64, 16], b: bf16[64, 16]) -> (f16[16, 64]) {
  y = add(transpose(a, perm=[1, 0]), cast(transpose(b, perm=[1, 0]), to=f16))
  return y
})"},
      {"logical", R"(graph logical(p: bool[16, 32]) -> (bool[32, 16]) {
  q = not(transpose(p, perm=[1, 0]))
  return q
})"},
      // Multiples of 32, so the GPU's tiles take them too (and "leading").
      {"wide", R"(graph wide(a: f32[96, 64], b: f32[64, 96]) -> (f32[64, 96]) {
  y = add(transpose(a, perm=[1, 0]), b)
  return y
})"},
      // The operand's innermost axis moved to the first axis.
      {"row_first", R"(graph row_first(a: f32[16, 32, 16]) -> (f32[16, 16, 32]) {
  y = transpose(a, perm=[2, 0, 1])
  return y
})"},
      // Attention's heads: the innermost axis to axis 1, a root that reshapes
      // the square's values and a root of another shape (a head permute that
      // keeps its innermost axis) computed in its own order.
      {"heads", R"(graph heads(a: f32[2, 3, 32, 64], b: f32[2, 64, 3, 32]) -> (f32[2, 64, 96], f32[2, 3, 64, 32]) {
  y = reshape(neg(transpose(a, perm=[0, 3, 1, 2])), shape=[2, 64, 96])
  z = transpose(b, perm=[0, 2, 1, 3])
  return y, z
})"},
      // Partial squares (the CPU's only): columns past a multiple of 16 (the
      // last square moved back), the channels-last copy of an image's 3
      // channels (fewer columns than a side: reads clamped), and an upsampling gather
      // of 21 channels back to channels-first (the resize of a segmentation
      // head's logits, its index inside the axis by its value range).
      {"partial_columns", R"(graph partial_columns(a: f32[20, 16], b: f32[16, 20]) -> (f32[16, 20]) {
  y = add(transpose(a), b)
  return y
})"},
      {"to_channels_last", R"(graph to_channels_last(x: f32[2, 3, 5, 24]) -> (f32[2, 5, 24, 3]) {
  y = transpose(x, perm=[0, 2, 3, 1])
  return y
})"},
      {"upsampled_channels", R"(graph upsampled_channels(a: f32[2, 6, 7, 21]) -> (f32[2, 21, 6, 18]) {
  i = clamp(cast(floor(mul(iota(shape=[18], axis=0, dtype=f64), 0.4)), to=i64), 0, 6)
  y = transpose(gather(a, i, axis=2), perm=[0, 3, 1, 2])
  return y
})"},
      {"wide_two", R"(graph wide_two(a: f64[2, 32, 64], b: f16[2, 32, 64]) -> (f64[2, 64, 32], f16[2, 64, 32]) {
  y = mul(transpose(a, perm=[0, 2, 1]), 2.0)
  z = neg(transpose(b, perm=[0, 2, 1]))
  return y, z
})"},
  };
}

bool is_gpu_case(const std::string& id) { return id.rfind("gpu_", 0) == 0; }

using Lowered = testing::LoweredGroup<Case>;

class TransposeTiles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    suite_ = std::make_unique<testing::LoweredGroups<Case>>();
    for (const Case& c : make_cases()) {
      Graph g = parse(c.text);
      FusionGroup group = whole_graph_loop_group(g);
      ASSERT_EQ(transpose_tiles_problem(g, group), "") << c.id;
      // The GPU's lowering too, where its 32 x 32 squares fit: the CPU emitter
      // runs its barrier as a phase split, so the suite checks it the same way.
      if (transpose_tiles_problem(g, group, true).empty()) {
        Case gpu = c;
        gpu.id = "gpu_" + c.id;
        kir::Kernel k = lower_transpose_tiles(g, group, "tiles_" + gpu.id, true);
        suite_->add(gpu, Graph(g), FusionGroup(group), std::move(k));
      }
      kir::Kernel k = lower_transpose_tiles(g, group, "tiles_" + c.id);
      suite_->add(c, std::move(g), std::move(group), std::move(k));
    }
    suite_->compile();
  }
  static void TearDownTestSuite() { suite_.reset(); }

  static std::vector<Tensor> run(const Lowered& l, const std::vector<Tensor>& inputs) {
    return suite_->run(l, inputs);
  }

  static std::unique_ptr<testing::LoweredGroups<Case>> suite_;
};

std::unique_ptr<testing::LoweredGroups<Case>> TransposeTiles::suite_;

TEST_F(TransposeTiles, MatchInterpreter) {
  for (const Lowered& l : suite_->all()) {
    SCOPED_TRACE(l.c.id);
    for (uint64_t seed : {1u, 2u}) {
      std::vector<Tensor> inputs = testing::random_inputs(l.graph, seed, {}, seed == 2);
      EXPECT_TRUE(testing::outputs_match_interpreter(run(l, inputs), interpret(l.graph, inputs), l.c.transcendental, 0));
    }
  }
}

// One 16 x 16 square per block, 16 threads; every transpose staged in its own
// tile and transposed once per block; the stores are the only global writes.
TEST_F(TransposeTiles, KernelShape) {
  for (const Lowered& l : suite_->all()) {
    if (is_gpu_case(l.c.id)) continue;
    SCOPED_TRACE(l.c.id);
    EXPECT_EQ(l.kernel.launch.block_size, kTransposeTile);
    const std::string text = kir::print_kernel(l.kernel);
    int transposes = 0;  // those that move their operand's innermost axis
    for (const Node& n : l.graph.nodes()) {
      const size_t rank = l.graph.type(n.output).shape.size();
      transposes += n.op == OpKind::Transpose && transpose_permutation(n, rank).back() != static_cast<int64_t>(rank) - 1;
    }
    EXPECT_EQ(static_cast<int>(l.kernel.shared.size()), transposes);
    for (int k = 0; k < transposes; ++k) {
      EXPECT_NE(text.find("transpose_tile tile" + std::to_string(k) + "[16x16]"), std::string::npos) << text;
    }
  }
}

// The GPU's: one warp a block, each tile 32 rows of 33 (padded), one barrier
// between staging and computing, and no in-place transpose: the compute reads
// the tile along its columns.
TEST_F(TransposeTiles, GpuKernelShape) {
  int gpu_cases = 0;
  for (const Lowered& l : suite_->all()) {
    if (!is_gpu_case(l.c.id)) continue;
    ++gpu_cases;
    SCOPED_TRACE(l.c.id);
    EXPECT_EQ(l.kernel.launch.block_size, kGpuTransposeTile);
    for (const kir::SharedBuffer& sb : l.kernel.shared) EXPECT_EQ(sb.count, kGpuTransposeTile * (kGpuTransposeTile + 1));
    const std::string text = kir::print_kernel(l.kernel);
    EXPECT_EQ(text.find("transpose_tile"), std::string::npos) << text;
    EXPECT_NE(text.find("barrier"), std::string::npos) << text;
    EXPECT_NE(text.find("tile0[add(mul(thr, 33), j)]"), std::string::npos) << text;
  }
  EXPECT_EQ(gpu_cases, 4);  // leading, wide, heads, wide_two
}

TEST(TransposeTilesProblem, GroupsNotTaken) {
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"the transposed rows are shorter than 16", R"(graph g(a: f32[40, 5]) -> (f32[5, 40]) {
  y = transpose(a)
  return y
})"},
      {"partial squares and a root of another shape (z)", R"(graph g(a: f32[20, 16], b: f32[320]) -> (f32[16, 20], f32[320]) {
  y = transpose(a)
  z = neg(b)
  return y, z
})"},
      {"a symbolic dimension", R"(graph g(a: f32[N, 16]) -> (f32[16, N]) {
  y = transpose(a)
  return y
})"},
      {"no transpose moves an innermost axis", R"(graph g(a: f32[16, 32, 16]) -> (f32[32, 16, 16]) {
  y = transpose(a, perm=[1, 0, 2])
  return y
})"},
      {"transposes that move their operands' innermost axes to different axes",
       R"(graph g(a: f32[16, 16, 16], b: f32[16, 16, 16]) -> (f32[16, 16, 16]) {
  y = add(transpose(a, perm=[2, 0, 1]), transpose(b, perm=[0, 2, 1]))
  return y
})"},
      {"transposes of different shapes", R"(graph g(a: f32[32, 16], b: f32[16, 32]) -> (f32[16, 32], f32[32, 16]) {
  y = transpose(a)
  z = transpose(b)
  return y, z
})"},
      {"roots of other sizes than the transposes'", R"(graph g(a: f32[32, 16]) -> (f32[16, 16]) {
  r = slice(transpose(a), start=[0, 0], stop=[16, 16])
  return r
})"},
      {"s0 reads a transpose other than elementwise", R"(graph g(a: f32[16, 16]) -> (f32[16, 16]) {
  t = transpose(a)
  s0 = slice(t, start=[0, 0], stop=[8, 16])
  s1 = slice(t, start=[8, 0], stop=[16, 16])
  r = concat(s1, s0, axis=0)
  return r
})"},
  };
  for (const auto& [why, text] : refused) {
    SCOPED_TRACE(why);
    Graph g = parse(text);
    EXPECT_EQ(transpose_tiles_problem(g, whole_graph_loop_group(g)), why);
  }
  // The GPU's lowering takes whole squares only.
  Graph g = parse(R"(graph g(a: f32[40, 32]) -> (f32[32, 40]) {
  y = transpose(a)
  return y
})");
  EXPECT_EQ(transpose_tiles_problem(g, whole_graph_loop_group(g), true), "the transposed axes are not multiples of 32");
  EXPECT_EQ(transpose_tiles_problem(g, whole_graph_loop_group(g)), "");
}

}  // namespace
}  // namespace stitch::lower
