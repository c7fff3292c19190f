// Convolution on the CPU executable (docs/executable.md, Convolutions): an
// f32 conv runs as one oneDNN call (runtime/cpu/conv_call.h), channels-last
// (ir/channels_last.h); channels-first a depthwise one, and any other dtype,
// becomes its composite in the pipeline's conv stage (ir/conv_expand.h);
// both match the interpreter
// under every planner: 1-D, 2-D and 3-D, groups, strides, dilations,
// asymmetric pads, a bias or none, a symbolic batch, empty batches and no
// input channels. The interpreter's own conv is checked against the
// composite's primitives, two independent spellings of one definition.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "interpreter_differential.h"
#include "ir/canonicalize.h"
#include "ir/conv_expand.h"
#include "random_graph.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"
#include "tensor_compare.h"

namespace stitch::runtime::cpu {
namespace {

struct ConvCase {
  std::string text;
  int64_t reduction;  // the products each result sums, and the bias, for the tolerance
  bool library;       // whether the CPU runs a conv op (f32, not depthwise)
  SymbolBindings symbols;
};

// The first graph of `text`, canonical.
Graph canonical(const std::string& text) { return canonicalize(parse_module(text, "conv.stitch").graphs.front()); }

bool has_conv(const Graph& g) {
  return std::any_of(g.nodes().begin(), g.nodes().end(), [](const Node& n) { return n.op == OpKind::Conv; });
}

std::vector<ConvCase> conv_cases() {
  return {
      {R"(graph grouped(x: f32[2, 6, 11, 9], w: f32[8, 3, 3, 2], b: f32[8]) {
  y = conv(x, w, b, strides=[2, 1], pads=[1, 0, 2, 1], groups=2)
  r = relu(y)
  return r
})",
       3 * 3 * 2 + 1, true, {}},
      {R"(graph dilated_1d(x: f32[3, 5, 40], w: f32[7, 5, 4]) {
  y = conv(x, w, dilations=[3], pads=[4, 1], strides=[2])
  return y
})",
       5 * 4, true, {}},
      {R"(graph volume(x: f32[1, 3, 6, 7, 5], w: f32[4, 3, 2, 3, 2], b: f32[4]) {
  y = conv(x, w, b, pads=[1, 0, 1, 0, 1, 0], strides=[1, 2, 1])
  return y
})",
       3 * 2 * 3 * 2 + 1, true, {}},
      {R"(graph symbolic(x: f32[B, 4, 9, 9], w: f32[6, 4, 1, 1], b: f32[6]) {
  y = conv(x, w, b)
  s = add(y, 1.0)
  return s
})",
       4 + 1, true, {{"B", 3}}},
      // Empty: no batch; no input channel (the bias alone).
      {R"(graph empty(x: f32[0, 4, 5, 5], w: f32[3, 4, 3, 3], z: f32[2, 0, 5, 5], wz: f32[3, 0, 3, 3], b: f32[3]) {
  y = conv(x, w, pads=[1, 1, 1, 1])
  c = conv(z, wz, b)
  return y, c
})",
       4 * 9 + 1, true, {}},
      // Written with an epilogue: a side input and a clamp (ReLU6).
      {R"(graph epilogue(x: f32[2, 4, 6, 6], w: f32[5, 4, 3, 3], b: f32[5], s: f32[2, 5, 6, 6]) {
  y = conv(x, w, b, s, pads=[1, 1, 1, 1], side_input=true, activation_min=0.0, activation_max=6.0)
  z = conv(x, w, s, pads=[1, 1, 1, 1], side_input=true, activation_max=0.5)
  return y, z
})",
       4 * 9 + 2, true, {}},
      // Written channels-last: [N, spatial..., C].
      {R"(graph written_nhwc(x: f32[2, 7, 6, 5], w: f32[4, 5, 3, 2], b: f32[4]) {
  y = conv(x, w, b, pads=[1, 0, 1, 1], channels_last=true)
  return y
})",
       5 * 3 * 2 + 1, true, {}},
      // Depthwise: a call channels-last (the default), the composite channels-first.
      {R"(graph depthwise(x: f32[2, 8, 10, 10], w: f32[8, 1, 3, 3], b: f32[8]) {
  y = conv(x, w, b, pads=[1, 1, 1, 1], groups=8, strides=[2, 2])
  return y
})",
       9 + 1, true, {}},
      // The composite: f64.
      {R"(graph wide(x: f64[2, 3, 8, 8], w: f64[5, 3, 3, 3]) {
  y = conv(x, w, pads=[1, 1, 1, 1])
  return y
})",
       27, false, {}},
  };
}

TEST(ConvCall, MatchesTheInterpreterUnderEveryPlanner) {
  testing::ScratchDirectory dir("stitch-conv-test");
  KernelCache cache(dir.path());
  for (const ConvCase& c : conv_cases()) {
    const Graph g = canonical(c.text);
    const std::vector<Tensor> inputs = testing::random_inputs(g, 5, c.symbols);
    const std::vector<Tensor> want = interpret(g, inputs);
    for (PlannerKind planner : kEveryPlanner) {
      SCOPED_TRACE(g.name() + " under " + std::string(planner_name(planner)));
      CpuExecutable exe = pipeline::compile_cpu(g, planner, cache);
      ASSERT_EQ(exe.fallback(), "");
      EXPECT_EQ(has_conv(exe.graph()), c.library);
      EXPECT_TRUE(testing::outputs_match_interpreter(exe.run(inputs), want, true, c.reduction));
    }
  }
}

TEST(ConvCall, TheInterpreterAgreesWithTheComposite) {
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(c.text.substr(0, c.text.find('(')));
    const Graph g = canonical(c.text);
    const Graph expanded = expand_convs(g, [](const Graph&, const Node&) { return false; });
    EXPECT_FALSE(has_conv(expanded));
    const std::vector<Tensor> inputs = testing::random_inputs(g, 9, c.symbols);
    EXPECT_TRUE(testing::outputs_match_interpreter(interpret(expanded, inputs), interpret(g, inputs), true, c.reduction));
  }
}

int count_ops(const Graph& g, OpKind op) {
  return static_cast<int>(std::count_if(g.nodes().begin(), g.nodes().end(), [op](const Node& n) { return n.op == op; }));
}

// A ResNet-like stem and block: between the convs, the batch norm's
// per-channel broadcasts, the relus, the max pool's pad and slices and the
// residual add run channels-last, so the only transposes left are the
// input's and, after the global average pool, none at all.
TEST(ConvCall, ChannelsLastTransposesCancelBetweenConvs) {
  testing::ScratchDirectory dir("stitch-conv-nhwc-test");
  KernelCache cache(dir.path());
  const Graph g = canonical(R"(graph block(x: f32[2, 3, 16, 16], w0: f32[8, 3, 3, 3], s: f32[8], t: f32[8], w1: f32[8, 8, 3, 3], w2: f32[8, 8, 3, 3]) {
  c0 = conv(x, w0, strides=[2, 2], pads=[1, 1, 1, 1])
  bn = add(mul(c0, reshape(s, shape=[1, 8, 1, 1])), reshape(t, shape=[1, 8, 1, 1]))
  h = max_pool(relu(bn), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
  c1 = relu(conv(h, w1, pads=[1, 1, 1, 1]))
  c2 = conv(c1, w2, pads=[1, 1, 1, 1])
  out = relu(add(c2, h))
  pooled = reduce_mean(out, axes=[2, 3])
  return pooled
})");
  const std::vector<Tensor> inputs = testing::random_inputs(g, 4, {});
  const std::vector<Tensor> want = interpret(g, inputs);
  for (PlannerKind planner : kEveryPlanner) {
    SCOPED_TRACE(planner_name(planner));
    CpuExecutable exe = pipeline::compile_cpu(g, planner, cache);
    ASSERT_EQ(count_ops(exe.graph(), OpKind::Conv), 3);
    for (const Node& n : exe.graph().nodes()) {
      if (n.op == OpKind::Conv) {
        EXPECT_TRUE(n.attrs.get("channels_last").as_bool());
      }
    }
    EXPECT_EQ(count_ops(exe.graph(), OpKind::Transpose), 1) << print_graph(exe.graph());
    // c1's relu, and out's add and relu, are the convs' epilogues; the batch
    // norm's add and relu are not (c0's only reader is the mul).
    EXPECT_EQ(count_ops(exe.graph(), OpKind::Relu), 1);
    EXPECT_EQ(count_ops(exe.graph(), OpKind::Add), 1);
    EXPECT_TRUE(testing::outputs_match_interpreter(exe.run(inputs), want, true, 8 * 9 * 3 + 64));
  }
  pipeline::CpuCompileOptions off;
  off.plan.channels_last = false;
  CpuExecutable first = pipeline::compile_cpu(g, PlannerKind::Stitch, cache, off);
  EXPECT_EQ(count_ops(first.graph(), OpKind::Transpose), 0);
  EXPECT_TRUE(testing::outputs_match_interpreter(first.run(inputs), want, true, 8 * 9 * 3 + 64));
}

// A feature-pyramid step: a nearest 2x upsample added to a lateral conv,
// a conv, logits resized bilinearly. The resizes' gathers run channels-last
// too, so the transposes left are the input's and the output's.
TEST(ConvCall, ChannelsLastTransposesSinkThroughResizes) {
  testing::ScratchDirectory dir("stitch-conv-resize-test");
  KernelCache cache(dir.path());
  const Graph g = canonical(R"(graph fpn(x: f32[2, 3, 12, 12], w0: f32[8, 3, 3, 3], w1: f32[8, 8, 3, 3], wl: f32[8, 8, 1, 1], wh: f32[5, 8, 1, 1]) {
  c0 = relu(conv(x, w0, strides=[2, 2], pads=[1, 1, 1, 1]))
  c1 = relu(conv(c0, w1, strides=[2, 2], pads=[1, 1, 1, 1]))
  up = resize(c1, axes=[2, 3], sizes=[6, 6], coordinate_transformation_mode="asymmetric", nearest_mode="floor")
  p = add(up, conv(c0, wl))
  logits = conv(p, wh)
  y = resize(logits, axes=[2, 3], sizes=[12, 12], mode="linear")
  return y
})");
  const std::vector<Tensor> inputs = testing::random_inputs(g, 5, {});
  const std::vector<Tensor> want = interpret(g, inputs);
  for (PlannerKind planner : {PlannerKind::Xla, PlannerKind::Stitch}) {
    SCOPED_TRACE(planner_name(planner));
    CpuExecutable exe = pipeline::compile_cpu(g, planner, cache);
    EXPECT_EQ(count_ops(exe.graph(), OpKind::Transpose), 2) << print_graph(exe.graph());
    EXPECT_TRUE(testing::outputs_match_interpreter(exe.run(inputs), want, true, 8 * 9 * 3 + 64));
  }
}

// Weights named constant are packed into oneDNN's layout on the first run
// and reused: later runs with new data and the same weights array match the
// interpreter, and another weights array (at another address) is packed anew.
TEST(ConvCall, ConstantWeightsArePackedOnce) {
  testing::ScratchDirectory dir("stitch-conv-constant-test");
  KernelCache cache(dir.path());
  const Graph g = canonical(R"(graph c(x: f32[2, 8, 9, 9], w: f32[16, 8, 3, 3], b: f32[16]) {
  y = relu(conv(x, w, b, pads=[1, 1, 1, 1]))
  return y
})");
  CpuExecutable exe = pipeline::compile_cpu(g, PlannerKind::Stitch, cache);
  EXPECT_THROW(exe.set_constant_params({"x", "weights"}), UserError);
  exe.set_constant_params({"w", "b"});
  std::vector<Tensor> inputs = testing::random_inputs(g, 6, {});
  const std::vector<Tensor> other = testing::random_inputs(g, 7, {});
  // 1 where oneDNN's implementation wants its own weights layout (its
  // channels-last kernels, with AVX2 or AVX-512), 0 where it reads them as they are.
  size_t packs = 0;
  for (int run = 0; run < 3; ++run) {
    if (run > 0) inputs[0] = other[0];  // new data, the same weights tensor
    EXPECT_TRUE(testing::outputs_match_interpreter(exe.run(inputs), interpret(g, inputs), true, 8 * 9 + 1));
    if (run == 0) packs = exe.packed_weights_count();
    EXPECT_EQ(exe.packed_weights_count(), packs);
  }
  EXPECT_LE(packs, 1u);
  EXPECT_TRUE(testing::outputs_match_interpreter(exe.run(other), interpret(g, other), true, 8 * 9 + 1));
  EXPECT_EQ(exe.packed_weights_count(), 2 * packs);
}

TEST(ConvCall, ChannelsFirstDepthwiseIsItsComposite) {
  testing::ScratchDirectory dir("stitch-conv-dw-test");
  KernelCache cache(dir.path());
  const ConvCase c = conv_cases()[7];
  ASSERT_EQ(c.text.substr(0, 15), "graph depthwise");
  const Graph g = canonical(c.text);
  const std::vector<Tensor> inputs = testing::random_inputs(g, 2, {});
  pipeline::CpuCompileOptions first;
  first.plan.channels_last = false;
  CpuExecutable composite = pipeline::compile_cpu(g, PlannerKind::Stitch, cache, first);
  EXPECT_FALSE(has_conv(composite.graph()));
  EXPECT_TRUE(testing::outputs_match_interpreter(composite.run(inputs), interpret(g, inputs), true, c.reduction));
}

// A ReLU6 (clamp by constants) and a residual add of two convs' results:
// the earlier conv takes the add, the later one stays whole.
TEST(ConvCall, EpiloguesFuseOnceEach) {
  testing::ScratchDirectory dir("stitch-conv-epilogue-test");
  KernelCache cache(dir.path());
  const Graph g = canonical(R"(graph blocks(x: f32[2, 6, 9, 9], a: f32[6, 6, 3, 3], b: f32[6, 6, 1, 1]) {
  r6 = clamp(conv(x, a, pads=[1, 1, 1, 1]), 0.0, 6.0)
  sum = relu(add(conv(r6, a, pads=[1, 1, 1, 1]), conv(x, b)))
  return sum
})");
  const std::vector<Tensor> inputs = testing::random_inputs(g, 6, {});
  const std::vector<Tensor> want = interpret(g, inputs);
  for (PlannerKind planner : kEveryPlanner) {
    SCOPED_TRACE(planner_name(planner));
    CpuExecutable exe = pipeline::compile_cpu(g, planner, cache);
    EXPECT_EQ(count_ops(exe.graph(), OpKind::Conv), 3);
    EXPECT_EQ(count_ops(exe.graph(), OpKind::Clamp) + count_ops(exe.graph(), OpKind::Relu) +
                  count_ops(exe.graph(), OpKind::Add),
              0)
        << print_graph(exe.graph());
    EXPECT_TRUE(testing::outputs_match_interpreter(exe.run(inputs), want, true, 6 * 9 * 2 + 6));
  }
}

// A side input last read by its conv is the result's buffer too: the call
// adds it in place (a sum post-op), so the run needs one buffer fewer. Read
// again later (or as the conv's data), it is kept and added from its own
// buffer. Both match the interpreter.
TEST(ConvCall, ASideInputLastReadByItsConvIsAddedInPlace) {
  testing::ScratchDirectory dir("stitch-conv-in-place-test");
  KernelCache cache(dir.path());
  const char* const last = R"(graph last(x: f32[2, 8, 9, 9], w: f32[8, 8, 3, 3], b: f32[8]) {
  a = conv(x, w, pads=[1, 1, 1, 1])
  s = sqrt(abs(a))
  y = relu(add(conv(x, w, b, pads=[1, 1, 1, 1]), s))
  z = mul(y, a)
  return z
})";
  const char* const again = R"(graph again(x: f32[2, 8, 9, 9], w: f32[8, 8, 3, 3], b: f32[8]) {
  a = conv(x, w, pads=[1, 1, 1, 1])
  s = sqrt(abs(a))
  y = relu(add(conv(x, w, b, pads=[1, 1, 1, 1]), s))
  z = mul(mul(y, a), s)
  return z
})";
  const char* const data = R"(graph data(x: f32[2, 8, 9, 9], w: f32[8, 8, 3, 3], v: f32[8, 8, 1, 1]) {
  s = neg(conv(x, w, pads=[1, 1, 1, 1]))
  y = add(conv(s, v), s)
  return y
})";
  std::vector<int> buffers;
  for (const char* text : {last, again, data}) {
    const Graph g = canonical(text);
    SCOPED_TRACE(g.name());
    const std::vector<Tensor> inputs = testing::random_inputs(g, 8, {});
    CpuExecutable exe = pipeline::compile_cpu(g, PlannerKind::Stitch, cache);
    ASSERT_EQ(count_ops(exe.graph(), OpKind::Add), 0) << print_graph(exe.graph());
    EXPECT_TRUE(testing::outputs_match_interpreter(exe.run(inputs), interpret(g, inputs), true, 2 * (8 * 9 + 8)));
    buffers.push_back(exe.intermediate_buffer_count());
  }
  // last: the second conv's result takes s's buffer (a, still live, keeps
  // the first conv's); again: s is kept beside it in a buffer of its own.
  EXPECT_LT(buffers[0], buffers[1]);
}

TEST(ConvCall, SwitchedOffEveryConvIsItsComposite) {
  testing::ScratchDirectory dir("stitch-conv-off-test");
  KernelCache cache(dir.path());
  const ConvCase c = conv_cases()[0];
  const Graph g = canonical(c.text);
  const std::vector<Tensor> inputs = testing::random_inputs(g, 3, {});
  pipeline::CpuCompileOptions off;
  off.plan.conv_calls = false;
  CpuExecutable composite = pipeline::compile_cpu(g, PlannerKind::Stitch, cache, off);
  CpuExecutable call = pipeline::compile_cpu(g, PlannerKind::Stitch, cache);
  EXPECT_FALSE(has_conv(composite.graph()));
  EXPECT_TRUE(has_conv(call.graph()));
  EXPECT_TRUE(testing::outputs_match_interpreter(call.run(inputs), composite.run(inputs), true, c.reduction));
}

}  // namespace
}  // namespace stitch::runtime::cpu
