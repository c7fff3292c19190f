// The tile-group check (docs/fusion.md, Tile groups): reductions over
// different axes of one tile in one kernel. Accepted groups and their
// domains, and each refusal with its text.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fusion/planner.h"
#include "fusion/tile_group.h"
#include "plan_invariants.h"

namespace stitch {
namespace {

using testing_fusion::canonical_graph;

std::vector<int> all_nodes(const Graph& g) {
  std::vector<int> nodes;
  for (int n = 0; n < static_cast<int>(g.nodes().size()); ++n) nodes.push_back(n);
  return nodes;
}

std::vector<int> output_nodes(const Graph& g) {
  std::vector<int> roots;
  for (const GraphOutput& out : g.outputs()) roots.push_back(g.value(out.value).producer);
  return roots;
}

int node_named(const Graph& g, const std::string& name) {
  for (int n = 0; n < static_cast<int>(g.nodes().size()); ++n) {
    if (g.value_name(g.nodes()[n].output) == name) return n;
  }
  throw std::runtime_error("no node " + name);
}

// The whole graph as one group whose roots are its outputs.
std::string whole_graph_problem(const std::string& text, TileDomain* domain = nullptr) {
  const Graph g = canonical_graph(text);
  return tile_group_problem(g, all_nodes(g), output_nodes(g), domain);
}

const char* const kDoubleCentering = R"(graph center(x: f32[B, 32, 48]) -> (f32[B, 32, 48]) {
  rm = reduce_mean(x, axes=[2], keepdims=true)
  cm = reduce_mean(x, axes=[1], keepdims=true)
  y = sub(sub(x, broadcast(rm, shape=[B, 32, 48])), broadcast(cm, shape=[B, 32, 48]))
  return y
})";

TEST(TileGroup, DoubleCenteringIsOneTileOfOnePhase) {
  const Graph g = canonical_graph(kDoubleCentering);
  TileDomain d;
  ASSERT_EQ(tile_group_problem(g, all_nodes(g), output_nodes(g), &d), "");
  EXPECT_EQ(shape_str(d.shape), "[B, 32, 48]");
  EXPECT_EQ(d.tile, (std::vector<size_t>{1, 2}));
  EXPECT_EQ(shape_str(d.outer_shape()), "[B]");
  EXPECT_EQ(shape_str(d.tile_shape()), "[32, 48]");
  ASSERT_EQ(d.phases.size(), 1u);
  EXPECT_EQ(d.phases[0], (std::vector<int>{node_named(g, "rm"), node_named(g, "cm")}));
  // The results are indexed by the domain: rm by (b, row, -), cm by (b, -, col).
  EXPECT_EQ(*tile_value_index(g, d, g.nodes()[node_named(g, "rm")].output), (std::vector<int>{0, 1, -1}));
  EXPECT_EQ(*tile_value_index(g, d, g.nodes()[node_named(g, "cm")].output), (std::vector<int>{0, -1, 2}));
}

// The column mean reads x - row mean: a second phase.
TEST(TileGroup, ChainedReductionsAreOrderedInPhases) {
  TileDomain d;
  ASSERT_EQ(whole_graph_problem(R"(graph chain(x: f32[4, 16, 24]) -> (f32[4, 16, 24], f32[4, 24]) {
  c = sub(x, reduce_mean(x, axes=[2], keepdims=true))
  cm = reduce_sum(c, axes=[1])
  y = mul(c, broadcast(reshape(cm, shape=[4, 1, 24]), shape=[4, 16, 24]))
  return y, cm
})",
                                &d),
            "");
  ASSERT_EQ(d.phases.size(), 2u);
  EXPECT_EQ(d.phases[0].size(), 1u);
  EXPECT_EQ(d.phases[1].size(), 1u);
}

// Row and column sums of one matrix: the tile is the whole matrix, one block.
TEST(TileGroup, WholeMatrixTile) {
  TileDomain d;
  ASSERT_EQ(whole_graph_problem(R"(graph sums(x: f32[64, 100]) -> (f32[64], f32[100]) {
  r = reduce_sum(x, axes=[1])
  c = reduce_sum(x, axes=[0])
  return r, c
})",
                                &d),
            "");
  EXPECT_EQ(d.tile, (std::vector<size_t>{0, 1}));
  EXPECT_TRUE(d.outer_shape().empty());
}

// Reading a reduction at another position of the tile is what a tile group
// allows and a stitched group does not: the row sum read transposed.
TEST(TileGroup, ResultsMayBeReadAnywhereInTheTile) {
  EXPECT_EQ(whole_graph_problem(R"(graph moved(x: f32[8, 8]) -> (f32[8, 8], f32[]) {
  m = reduce_sum(x, axes=[1], keepdims=true)
  y = add(x, transpose(m, perm=[1, 0]))
  s = reduce_sum(y)
  return y, s
})"),
            "");
}

TEST(TileGroup, RefusalsNameTheReason) {
  EXPECT_EQ(whole_graph_problem(R"(graph softmax(x: f32[8, 32]) -> (f32[8, 32]) {
  e = exp(sub(x, reduce_max(x, axes=[1], keepdims=true)))
  y = div(e, reduce_sum(e, axes=[1], keepdims=true))
  return y
})"),
            "every reduction reduces the same axes (a stitched group)");
  EXPECT_EQ(whole_graph_problem(R"(graph big(x: f32[128, 128]) -> (f32[128], f32[128]) {
  r = reduce_sum(x, axes=[1])
  c = reduce_sum(x, axes=[0])
  return r, c
})"),
            "the tile [128, 128] and its results take 66560 bytes, over the 49152 a block holds");
  EXPECT_EQ(whole_graph_problem(R"(graph gap(x: f32[32, 4, 48]) -> (f32[4, 48], f32[32, 4]) {
  a = reduce_sum(x, axes=[0])
  b = reduce_sum(x, axes=[2])
  return a, b
})"),
            "the reduced axes are not the innermost dims of [32, 4, 48]");
  EXPECT_EQ(whole_graph_problem(R"(graph symbolic_tile(x: f32[B, 48]) -> (f32[48], f32[B]) {
  a = reduce_sum(x, axes=[0])
  b = reduce_sum(x, axes=[1])
  return a, b
})"),
            "tile dim 0 of [B, 48] is symbolic");
  EXPECT_EQ(whole_graph_problem(R"(graph arg(x: f32[8, 16]) -> (i64[8], f32[16]) {
  a = argmax(x, axes=[1])
  b = reduce_sum(x, axes=[0])
  return a, b
})"),
            "argmax cannot be in a tile group");
  EXPECT_EQ(whole_graph_problem(R"(graph shapes(x: f32[8, 16], z: f32[16, 8]) -> (f32[8], f32[8]) {
  a = reduce_sum(x, axes=[1])
  b = reduce_sum(z, axes=[0])
  return a, b
})"),
            "reductions of different input shapes");
  EXPECT_EQ(whole_graph_problem(R"(graph plain(x: f32[8, 16]) -> (f32[8, 16]) {
  y = exp(x)
  return y
})"),
            "no reduction");
  // Swapping the outer dim with a tile dim reads another block's row means.
  EXPECT_EQ(whole_graph_problem(R"(graph swapped(x: f32[8, 8, 16]) -> (f32[8, 8, 16]) {
  rm = reduce_sum(x, axes=[2], keepdims=true)
  cm = reduce_sum(x, axes=[1], keepdims=true)
  y = sub(sub(x, broadcast(transpose(rm, perm=[1, 0, 2]), shape=[8, 8, 16])), broadcast(cm, shape=[8, 8, 16]))
  return y
})"),
            "rm is read at another block's outer index");
  EXPECT_EQ(whole_graph_problem(R"(graph flat(x: f32[B, 4, 6]) -> (f32[B, 4], f32[B, 6], f32[B, 24]) {
  a = reduce_sum(x, axes=[2])
  b = reduce_sum(x, axes=[1])
  z = reshape(exp(x), shape=[B, 24])
  return a, b, z
})"),
            "root z is neither of the tile's shape nor of a reduction's result shape");
  EXPECT_EQ(whole_graph_problem(R"(graph matmul(x: f32[8, 16], w: f32[16, 16]) -> (f32[8], f32[16]) {
  d = dot(x, w)
  a = reduce_sum(d, axes=[1])
  b = reduce_sum(d, axes=[0])
  return a, b
})"),
            "a dot cannot be in a tile group");
}

// A slice may move tile positions of a reduction's result (here the column
// means broadcast over twice the rows, then the second half taken).
TEST(TileGroup, SlicesMayMoveTilePositions) {
  EXPECT_EQ(whole_graph_problem(R"(graph shift(x: f32[B, 8, 9]) -> (f32[B, 8, 9]) {
  rm = reduce_sum(x, axes=[2], keepdims=true)
  cm = reduce_sum(x, axes=[1], keepdims=true)
  s = slice(broadcast(cm, shape=[B, 16, 9]), start=[0, 8, 0])
  y = add(sub(x, s), broadcast(rm, shape=[B, 8, 9]))
  return y
})"),
            "");
}

// The stitch planner (docs/fusion.md, The `stitch` planner) takes a tile group
// where no stitched group fits: double centering, three kernels under xla,
// is one.
TEST(TileGroupPlanner, DoubleCenteringIsOneKernel) {
  const Graph g = canonical_graph(kDoubleCentering);
  EXPECT_EQ(plan(g, PlannerKind::Xla).groups.size(), 3u);
  const FusionPlan p = plan(g, PlannerKind::Stitch);
  testing_fusion::check_plan_invariants(g, p);
  ASSERT_EQ(p.groups.size(), 1u) << print_plan(g, p);
  EXPECT_EQ(p.groups[0].kind, GroupKind::Tile);
  EXPECT_TRUE(p.refusals.empty()) << print_plan(g, p);
  EXPECT_EQ(tile_group_problem(g, p.groups[0].nodes, p.groups[0].roots), "");
}

// Sibling reductions of one input over different axes of a tile: one kernel
// with two reduction roots.
TEST(TileGroupPlanner, SiblingReductionsMerge) {
  const Graph g = canonical_graph(R"(graph sums(x: f32[B, 32, 48]) -> (f32[B, 32], f32[B, 48]) {
  r = reduce_sum(x, axes=[2])
  c = reduce_max(x, axes=[1])
  return r, c
})");
  EXPECT_EQ(plan(g, PlannerKind::Xla).groups.size(), 2u);
  const FusionPlan p = plan(g, PlannerKind::Stitch);
  testing_fusion::check_plan_invariants(g, p);
  ASSERT_EQ(p.groups.size(), 1u) << print_plan(g, p);
  EXPECT_EQ(p.groups[0].kind, GroupKind::Tile);
}

// A tile that is the whole tensor would be one block: the planner leaves
// such groups apart (the check itself accepts them, WholeMatrixTile).
TEST(TileGroupPlanner, OneBlockTilesStayApart) {
  const Graph g = canonical_graph(R"(graph sums(x: f32[64, 100]) -> (f32[64, 100]) {
  r = reduce_sum(x, axes=[1], keepdims=true)
  c = reduce_sum(x, axes=[0], keepdims=true)
  y = sub(broadcast(r, shape=[64, 100]), broadcast(c, shape=[64, 100]))
  return y
})");
  const FusionPlan p = plan(g, PlannerKind::Stitch);
  testing_fusion::check_plan_invariants(g, p);
  EXPECT_EQ(p.groups.size(), 2u) << print_plan(g, p);
}

}  // namespace
}  // namespace stitch
