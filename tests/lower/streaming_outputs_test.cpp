// Streaming stores (docs/cpu-backend.md, Streaming stores): which outputs the
// CPU lowering marks, the C++ the emitter writes for them, and that kernels
// with streamed outputs compute exactly what the interpreter does under every
// planner, on loop, stitched (warp-split) and reduction kernels, with outputs
// that are streamed, guarded, symbolic or of a type that is never streamed,
// and with a destination that is not aligned to a cache line.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "codegen/cpu/cpp_emitter.h"
#include "fusion/planner.h"
#include "ir/canonicalize.h"
#include "lower/lower_plan.h"
#include "lower/streaming_outputs.h"
#include "runtime/cpu/cpu_compiler.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"
#include "random_graph.h"
#include "tensor_compare.h"
#include "lower_scheduled.h"

namespace stitch::lower {
namespace {

namespace fs = std::filesystem;
using runtime::cpu::CpuExecutable;
using runtime::cpu::KernelCache;
using schedule::RowScheduleTarget;

Graph graph_of(const std::string& text) { return canonicalize(parse_module(text).graphs.front()); }

RowScheduleTarget streaming_from(int64_t min_bytes) {
  RowScheduleTarget rows = RowScheduleTarget::cpu();
  rows.stream_min_bytes = min_bytes;
  return rows;
}

// name -> streaming flag of the kernels' buffers for the graph's outputs.
std::map<std::string, bool> streamed_buffers(const Graph& g, PlannerKind planner, const RowScheduleTarget& rows) {
  std::map<std::string, bool> out;
  for (const LoweredGroup& l : stitch::testing::lower_with_default_schedules(g, plan(g, planner), "k", rows)) {
    if (!l.kernel) continue;
    for (const kir::BufferParam& b : l.kernel->buffers) {
      if (b.access == kir::Access::Write && (b.name == "out_a" || b.name == "out_y")) out[b.name] = b.streaming;
    }
  }
  return out;
}

constexpr const char* kTwoOutputs = R"(graph two(x: f32[1024, 1024]) -> (f32[1024, 1024], f32[1024, 1024]) {
  a = exp(x)
  y = add(a, 1.0)
  return y, a
})";

TEST(StreamingOutputs, OnlyLargeGraphOutputsThatNoOtherKernelReads) {
  const Graph g = graph_of(kTwoOutputs);
  // none: a's kernel writes a graph output that y's kernel reads: not streamed.
  EXPECT_EQ(streamed_buffers(g, PlannerKind::None, streaming_from(0)),
            (std::map<std::string, bool>{{"out_a", false}, {"out_y", true}}));
  // xla does not duplicate exp into y's kernel (a is a graph output), so y's
  // kernel reads a as well.
  EXPECT_EQ(streamed_buffers(g, PlannerKind::Xla, streaming_from(0)),
            (std::map<std::string, bool>{{"out_a", false}, {"out_y", true}}));
  // 4 MiB: the default threshold streams y, a larger one does not.
  EXPECT_EQ(streamed_buffers(g, PlannerKind::Xla, streaming_from(4 << 20)),
            (std::map<std::string, bool>{{"out_a", false}, {"out_y", true}}));
  EXPECT_EQ(streamed_buffers(g, PlannerKind::Xla, streaming_from((4 << 20) + 1)),
            (std::map<std::string, bool>{{"out_a", false}, {"out_y", false}}));
  EXPECT_EQ(streamed_buffers(g, PlannerKind::Xla, streaming_from(-1)),
            (std::map<std::string, bool>{{"out_a", false}, {"out_y", false}}));
  // The GPU target never marks a buffer.
  EXPECT_EQ(streamed_buffers(g, PlannerKind::Xla, RowScheduleTarget::gpu()),
            (std::map<std::string, bool>{{"out_a", false}, {"out_y", false}}));
}

// Unless STITCH_STREAM_MIN_BYTES asks: on an AMD CPU outputs of at least
// the L3 (at least a MiB on any such CPU) stream, elsewhere none does
// (docs/cpu-backend.md, Streaming stores: faster on the EPYC, faster in one
// sitting and slower in another on the Xeon). The small outputs here stay
// plain either way.
TEST(StreamingOutputs, DefaultFollowsTheCpu) {
  if (std::getenv("STITCH_STREAM_MIN_BYTES")) GTEST_SKIP() << "STITCH_STREAM_MIN_BYTES is set";
  __builtin_cpu_init();
  const int64_t min_bytes = RowScheduleTarget::cpu().stream_min_bytes;
  if (__builtin_cpu_is("amd")) {
    EXPECT_GE(min_bytes, int64_t{1} << 20);
  } else {
    EXPECT_LT(min_bytes, 0);
  }
  EXPECT_EQ(streamed_buffers(graph_of(kTwoOutputs), PlannerKind::Xla, RowScheduleTarget::cpu()),
            (std::map<std::string, bool>{{"out_a", false}, {"out_y", false}}));
}

TEST(StreamingOutputs, SymbolicShapesAreNotStreamed) {
  const Graph g = graph_of(R"(graph s(x: f32[B, 256]) -> (f32[B, 256]) {
  y = exp(x)
  return y
})");
  EXPECT_EQ(streamed_buffers(g, PlannerKind::Xla, streaming_from(0)), (std::map<std::string, bool>{{"out_y", false}}));
}

// The emitted C++ of `text`'s kernels under the xla planner, everything streamed.
std::string emitted(const std::string& text) {
  const Graph g = graph_of(text);
  std::vector<kir::Kernel> kernels;
  for (const LoweredGroup& l : stitch::testing::lower_with_default_schedules(g, plan(g, PlannerKind::Xla), "k", streaming_from(0))) {
    if (l.kernel) kernels.push_back(*l.kernel);
  }
  return codegen::cpu::emit_cpp_translation_unit(kernels);
}

constexpr const char* kSwish4096 = R"(graph swish(x: f32[4096]) -> (f32[4096]) {
  y = mul(x, sigmoid(x))
  return y
})";

TEST(StreamingStores, ChunksOfSixteenThreadsThenOneStreamingStoreAndAFence) {
  const std::string source = emitted(kSwish4096);
  EXPECT_NE(source.find("for (int64_t stitch_c = 0; stitch_c < 256; stitch_c += 16) {"), std::string::npos) << source;
  EXPECT_NE(source.find("stitch_stream0[thr - stitch_c] = "), std::string::npos) << source;
  // The root index i0 of a 1-D root is lin itself: the simplifier writes lin.
  EXPECT_NE(source.find("stitch_stream_store16(&out_y[lin], stitch_stream0);"), std::string::npos) << source;
  EXPECT_NE(source.find("stitch_stream_fence();"), std::string::npos) << source;
  EXPECT_NE(source.find("#pragma omp for schedule(static)"), std::string::npos) << source;
}

TEST(StreamingStores, GuardedStoresAreWrittenNormally) {
  // 3001 elements: the last block's threads test lin < 3001, so a chunk may be partial.
  const std::string source = emitted(R"(graph swish(x: f32[3001]) -> (f32[3001]) {
  y = mul(x, sigmoid(x))
  return y
})");
  EXPECT_EQ(source.find("stitch_stream_store16(&"), std::string::npos) << source;
  EXPECT_NE(source.find("out_y[lin] = "), std::string::npos) << source;
}

struct Case {
  std::string graph;
  bool transcendental;
  int64_t reduction_length;
  bool streams;  // whether some kernel of the xla plan streams a store
};

std::vector<Case> cases() {
  return {
      {kSwish4096, true, 0, true},
      {R"(graph swish64(x: f64[2048]) -> (f64[2048]) {
  y = mul(x, sigmoid(x))
  return y
})", true, 0, true},
      {R"(graph softmax(x: f32[64, 256]) -> (f32[64, 256]) {
  y = softmax(x, axis=-1)
  return y
})", true, 256, true},
      {R"(graph layernorm(x: f32[40, 1024], gamma: f32[1024], beta: f32[1024]) -> (f32[40, 1024]) {
  y = layer_norm(x, gamma, beta, axes=[-1], eps=1e-5)
  return y
})", true, 2048, true},
      {R"(graph transposed(x: f32[128, 64]) -> (f32[64, 128]) {
  y = transpose(mul(x, 2.0), perm=[1, 0])
  return y
})", false, 0, true},
      {R"(graph odd(x: f32[37, 100]) -> (f32[37, 100]) {
  y = gelu(x, approximate="tanh")
  return y
})", true, 0, false},
      {R"(graph half(x: f16[4096]) -> (f16[4096]) {
  y = mul(x, x)
  return y
})", false, 0, false},
      {R"(graph sums(x: f32[64, 256]) -> (f32[64], f32[64, 256]) {
  s = reduce_sum(x, axes=[1])
  y = div(x, broadcast(reshape(s, shape=[64, 1]), shape=[64, 256]))
  return s, y
})", false, 256, true},
  };
}

TEST(StreamingStores, KernelsWithStreamedOutputsMatchTheInterpreter) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("stitch_streaming_test_{}", ::getpid());
  fs::remove_all(dir);
  {
    KernelCache cache(dir);
    const std::vector<Case> all = cases();
    std::vector<Graph> graphs;
    for (const Case& c : all) graphs.push_back(graph_of(c.graph));
    for (PlannerKind planner : {PlannerKind::None, PlannerKind::Xla, PlannerKind::Stitch}) {
      std::vector<CpuExecutable> exes = pipeline::compile_cpu_batch(graphs, planner, cache, {}, streaming_from(0));
      for (size_t i = 0; i < graphs.size(); ++i) {
        const Case& c = all[i];
        SCOPED_TRACE(graphs[i].name() + " / " + std::string(planner_name(planner)));
        if (planner == PlannerKind::Xla) {
          EXPECT_EQ(emitted(c.graph).find("stitch_stream_store16(&") != std::string::npos, c.streams);
        }
        const std::vector<Tensor> inputs = stitch::testing::random_inputs(graphs[i], 7, {}, true);
        EXPECT_TRUE(stitch::testing::outputs_match_interpreter(exes[i].run(inputs), interpret(graphs[i], inputs),
                                                               c.transcendental, c.reduction_length));
      }
    }
  }
  fs::remove_all(dir);
}

// A destination off the 64-byte line (a caller's buffer at an odd offset)
// is written with ordinary stores: the same values either way.
TEST(StreamingStores, UnalignedDestinationsGetTheSameValues) {
  const Graph g = graph_of(kSwish4096);
  std::vector<LoweredGroup> lowered = stitch::testing::lower_with_default_schedules(g, plan(g, PlannerKind::Xla), "k", streaming_from(0));
  ASSERT_EQ(lowered.size(), 1u);
  ASSERT_TRUE(lowered[0].kernel);
  const std::string name = lowered[0].kernel->name;
  runtime::cpu::CpuModule module =
      runtime::cpu::compile_and_load(codegen::cpu::emit_cpp_translation_unit({*lowered[0].kernel}));
  runtime::cpu::KernelFunction fn = module.function(name);
  Tensor x(DType::f32, {4096});
  fill_random(x, 3);
  const Tensor want = interpret(g, {x}).at(0);
  for (int64_t shift : {0, 1, 5, 16}) {
    SCOPED_TRACE(fmt::format("output shifted by {} floats", shift));
    std::vector<float> storage(4096 + 64, -1.0f);
    float* out = storage.data() + shift;
    void* buffers[2] = {x.data<float>(), out};
    fn(buffers, nullptr);
    Tensor got(DType::f32, {4096});
    std::memcpy(got.data<float>(), out, 4096 * sizeof(float));
    EXPECT_TRUE(stitch::testing::matches_interpreter(got, want, true, 0));
    EXPECT_EQ(storage[static_cast<size_t>(shift) + 4096], -1.0f) << "wrote past the end";
  }
}

}  // namespace
}  // namespace stitch::lower
