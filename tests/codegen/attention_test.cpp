// Scaled-dot-product attention on the CPU executable (docs/attention.md):
// the attention op, written or recognised by the pipeline's attention stage,
// runs as one library call (runtime/cpu/attention_call.h) and matches the
// interpreter of the unfused graph under every planner: batch and head dims
// or none, Tq != Tk, odd sizes and several key blocks, f32, f64, f16 and
// bf16, with and without a bias or a causal mask, a symbolic batch, and with
// the stage switched off.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "interpreter_differential.h"
#include "ir/canonicalize.h"
#include "random_graph.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"
#include "tensor_compare.h"

namespace stitch::runtime::cpu {
namespace {

struct AttentionCase {
  std::string text;
  int64_t reduction;  // D + 2 Tk: the two products and the softmax's sum, for the tolerance
  SymbolBindings symbols;
};

bool has_attention(const Graph& g) {
  return std::any_of(g.nodes().begin(), g.nodes().end(), [](const Node& n) { return n.op == OpKind::Attention; });
}

std::vector<AttentionCase> cases() {
  return {
      // Written ops: a padding bias; causal with Tq < Tk (the last queries see every key).
      {R"(graph written(q: f32[2, 3, 37, 24], k: f32[2, 3, 53, 24], v: f32[2, 3, 53, 40], pad: f32[2, 1, 1, 53]) {
  a = attention(q, k, v)
  b = attention(q, k, v, pad, scale=0.3, causal=true)
  return a, b
})",
       24 + 2 * 53, {}},
      // Causal with Tq > Tk: the first rows see no key and are NaN, as the composite's.
      {R"(graph empty_rows(q: f32[3, 9, 8], k: f32[3, 5, 8], v: f32[3, 5, 8]) {
  a = attention(q, k, v, causal=true)
  return a
})",
       8 + 2 * 5, {}},
      // BERT's form: several key blocks (300 > 256) and query blocks.
      {R"(graph bert_like(q: f32[2, 2, 300, 16], k: f32[2, 2, 300, 16], v: f32[2, 2, 300, 16], bias: f32[2, 1, 1, 300]) {
  s = mul(dot(q, transpose(k, perm=[0, 1, 3, 2])), 0.25)
  out = dot(softmax(add(s, bias), axis=-1), v)
  return out
})",
       16 + 2 * 300, {}},
      // GPT-2's form: a causal mask from iotas, a division, an odd length.
      {R"(graph gpt_like(q: f32[1, 2, 517, 8], k: f32[1, 2, 517, 8], v: f32[1, 2, 517, 8]) {
  visible = ge(iota(shape=[517, 517], axis=0), iota(shape=[517, 517], axis=1))
  s = div(dot(q, transpose(k, perm=[0, 1, 3, 2])), 2.0)
  out = dot(softmax(select(visible, s, -inf), axis=-1), v)
  return out
})",
       8 + 2 * 517, {}},
      // f64, no batch dims, a boolean mask and a bias together, scale on q.
      {R"(graph masked(q: f64[70, 12], k: f64[45, 12], v: f64[45, 5], m: bool[1, 45], b: f64[70, 45]) {
  s = dot(mul(q, 0.5), transpose(k, perm=[1, 0]))
  out = dot(softmax(add(select(m, s, -inf), b), axis=-1), v)
  return out
})",
       12 + 2 * 45, {}},
      {R"(graph causal_f64(q: f64[2, 33, 7], k: f64[2, 290, 7], v: f64[2, 290, 3]) {
  a = attention(q, k, v, causal=true)
  return a
})",
       7 + 2 * 290, {}},
      // Narrow floats, computed in f32 and rounded once.
      {R"(graph narrow(q: f16[2, 11, 8], k: f16[2, 13, 8], v: f16[2, 13, 8], qb: bf16[2, 11, 8], kb: bf16[2, 13, 8], vb: bf16[2, 13, 8]) {
  h = attention(q, k, v, causal=true)
  b = attention(qb, kb, vb)
  return h, b
})",
       8 + 2 * 13, {}},
      // No features (D = 0: every score is the bias), and no keys (zeros).
      {R"(graph empty(q: f32[2, 5, 0], k: f32[2, 7, 0], v: f32[2, 7, 3], b: f32[5, 7], k0: f32[2, 0, 0], v0: f32[2, 0, 3]) {
  a = attention(q, k, v, b, scale=1.0, causal=true)
  z = attention(q, k0, v0, scale=1.0)
  return a, z
})",
       2 * 7, {}},
      // A symbolic batch, bound at run time.
      {R"(graph symbolic(q: f32[B, 4, 19, 8], k: f32[B, 4, 19, 8], v: f32[B, 4, 19, 8]) {
  s = mul(dot(q, transpose(k, perm=[0, 1, 3, 2])), 0.35)
  out = dot(softmax(s, axis=-1), v)
  return out
})",
       8 + 2 * 19, {{"B", 3}}},
  };
}

TEST(AttentionCall, MatchesTheInterpreterUnderEveryPlanner) {
  testing::ScratchDirectory dir("stitch-attention-test");
  KernelCache cache(dir.path());
  for (const AttentionCase& c : cases()) {
    const Graph g = canonicalize(parse_module(c.text, "attention.stitch").graphs.front());
    const std::vector<Tensor> inputs = testing::random_inputs(g, 7, c.symbols);
    const std::vector<Tensor> want = interpret(g, inputs);
    for (PlannerKind planner : kEveryPlanner) {
      SCOPED_TRACE(g.name() + " under " + std::string(planner_name(planner)));
      CpuExecutable exe = pipeline::compile_cpu(g, planner, cache);
      ASSERT_EQ(exe.fallback(), "");
      EXPECT_TRUE(has_attention(exe.graph()));
      EXPECT_TRUE(testing::outputs_match_interpreter(exe.run(inputs), want, true, c.reduction));
    }
  }
}

TEST(AttentionCall, TheStageSwitchedOffKeepsTheComposite) {
  testing::ScratchDirectory dir("stitch-attention-off-test");
  KernelCache cache(dir.path());
  const AttentionCase c = cases()[2];
  const Graph g = canonicalize(parse_module(c.text, "attention.stitch").graphs.front());
  const std::vector<Tensor> inputs = testing::random_inputs(g, 3, {});
  pipeline::CpuCompileOptions off;
  off.plan.attention = false;
  CpuExecutable unfused = pipeline::compile_cpu(g, PlannerKind::Stitch, cache, off);
  CpuExecutable fused = pipeline::compile_cpu(g, PlannerKind::Stitch, cache);
  EXPECT_FALSE(has_attention(unfused.graph()));
  EXPECT_TRUE(has_attention(fused.graph()));
  EXPECT_GT(unfused.kernel_count(), fused.kernel_count());
  EXPECT_TRUE(testing::outputs_match_interpreter(fused.run(inputs), unfused.run(inputs), true, c.reduction));
}

}  // namespace
}  // namespace stitch::runtime::cpu
