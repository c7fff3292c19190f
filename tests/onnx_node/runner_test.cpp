// The conformance runner's own pieces: the ONNX tolerance, the grouping of
// reasons, the results file, sharding, the back-end interface. The runner
// judges the importer, so its comparison is pinned here by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <random>
#include <string>

#include "case_backend.h"
#include "conformance_report.h"
#include "disputed_reference.h"
#include "ir/canonicalize.h"
#include "node_case.h"
#include "reference_compare.h"
#include "stitch/text.h"

namespace stitch::onnx_node {
namespace {

Tensor f32(std::vector<double> values) {
  Tensor t(DType::f32, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) t.set_f64(static_cast<int64_t>(i), values[i]);
  return t;
}

// The f32 -> bf16 reference of onnx 1.12 truncates; the runner checks that
// and substitutes round-to-nearest-even, computed on the bits.
TEST(DisputedReference, CastToBfloat16IsRecomputedNearestEven) {
  DataSet set;
  // 0.48f is 0x3EF5C28F: truncation 0x3EF5, nearest 0x3EF6. 1.0f is exact.
  // 0x3F808000 is a tie between 0x3F80 and 0x3F81: to even, 0x3F80.
  float tie;
  const uint32_t tie_bits = 0x3F808000u;
  std::memcpy(&tie, &tie_bits, sizeof tie);
  set.inputs.push_back(f32({0.48f, 1.0, tie}));
  Tensor truncated(DType::bf16, {3});
  truncated.data<uint16_t>()[0] = 0x3EF5;
  truncated.data<uint16_t>()[1] = 0x3F80;
  truncated.data<uint16_t>()[2] = 0x3F80;
  set.outputs.push_back(truncated);
  std::vector<DataSet> sets = {set};
  ASSERT_TRUE(apply_disputed_reference("test_cast_FLOAT_to_BFLOAT16", sets));
  EXPECT_EQ(sets[0].outputs[0].data<uint16_t>()[0], 0x3EF6);
  EXPECT_EQ(sets[0].outputs[0].data<uint16_t>()[1], 0x3F80);
  EXPECT_EQ(sets[0].outputs[0].data<uint16_t>()[2], 0x3F80);
  // A reference that is not the truncation is not what the dispute is about.
  set.outputs[0].data<uint16_t>()[1] = 0x3F81;
  std::vector<DataSet> other = {set};
  EXPECT_THROW(apply_disputed_reference("test_cast_FLOAT_to_BFLOAT16", other), UserError);
  // Every other case is left alone.
  std::vector<DataSet> untouched = {set};
  EXPECT_FALSE(apply_disputed_reference("test_cast_FLOAT_to_FLOAT16", untouched));
  EXPECT_EQ(untouched[0].outputs[0].data<uint16_t>()[1], 0x3F81);
}

TEST(ReferenceCompare, FloatsWithinRtolPlusAtolMatch) {
  EXPECT_TRUE(compare_with_reference(f32({1000.9, 0}), f32({1000, 0})).ok);   // 0.9 <= 1e-7 + 1e-3 * 1000
  EXPECT_FALSE(compare_with_reference(f32({1001.5, 0}), f32({1000, 0})).ok);  // 1.5 > 1.0000001
  EXPECT_TRUE(compare_with_reference(f32({5e-8}), f32({0})).ok);              // atol alone near zero
  EXPECT_FALSE(compare_with_reference(f32({2e-7}), f32({0})).ok);
}

TEST(ReferenceCompare, NanMatchesNanAndInfinityOnlyItself) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(compare_with_reference(f32({nan, inf, -inf}), f32({nan, inf, -inf})).ok);
  EXPECT_FALSE(compare_with_reference(f32({1}), f32({nan})).ok);
  EXPECT_FALSE(compare_with_reference(f32({3.4e38}), f32({inf})).ok);
}

TEST(ReferenceCompare, IntegersExactDtypeAndShapeChecked) {
  Tensor a(DType::i64, {2}), b(DType::i64, {2});
  a.set_i64(0, 1000);
  b.set_i64(0, 1001);
  EXPECT_FALSE(compare_with_reference(a, b).ok);
  EXPECT_FALSE(compare_with_reference(Tensor(DType::i32, {2}), Tensor(DType::i64, {2})).ok);
  EXPECT_FALSE(compare_with_reference(Tensor(DType::f32, {2, 1}), Tensor(DType::f32, {2})).ok);
  EXPECT_EQ(compare_outputs({f32({1})}, {f32({1}), f32({2})}), "1 outputs, the reference has 2");
}

TEST(ConformanceReport, ReasonsGroupWithoutFileAndNodeNames) {
  EXPECT_EQ(reason_group("/b/cases/node/test_conv/model.onnx: 2 unsupported op(s):\n  op Conv (node n1, opset 13)\n"
                         "  op Pad (node n2, opset 13)\n  op Conv (node n3, opset 13)"),
            "unsupported op(s): Conv, Pad");
  EXPECT_EQ(reason_group("/b/x/model.onnx: input 'x' has element type UINT8, which Stitch does not support"),
            "input '…' has element type UINT8, which Stitch does not support");
  EXPECT_EQ(reason_group("/b/x/model.onnx: node 'n' (Cast): cast to STRING is not supported"),
            "Cast: cast to STRING is not supported");
}

TEST(ConformanceReport, ResultsRoundTripThroughTheFile) {
  const auto file = std::filesystem::temp_directory_path() /
                    ("stitch-onnx-node-results-" + std::to_string(std::random_device{}()) + ".tsv");
  std::vector<CaseResult> written = {
      {"test_a", Outcome::Pass, "", 12, 4, "axes, shape", 2},
      {"test_b", Outcome::Fail, "xla: output 0:\tdiffers\n  element 1: got \\1", -1, -1, ""},
      {"test_c", Outcome::Unsupported, "op Conv", -1, -1, ""},
  };
  write_results(file, written);
  std::vector<CaseResult> read = read_results(file);
  std::filesystem::remove(file);
  ASSERT_EQ(read.size(), written.size());
  for (size_t i = 0; i < read.size(); ++i) {
    EXPECT_EQ(read[i].name, written[i].name);
    EXPECT_EQ(read[i].outcome, written[i].outcome);
    EXPECT_EQ(read[i].reason, written[i].reason);
    EXPECT_EQ(read[i].graph_ops, written[i].graph_ops);
    EXPECT_EQ(read[i].xla_kernels, written[i].xla_kernels);
    EXPECT_EQ(read[i].known_inputs, written[i].known_inputs);
    EXPECT_EQ(read[i].stitch_kernels, written[i].stitch_kernels);
  }
}

TEST(NodeCase, ShardsPartitionTheCases) {
  std::vector<NodeCase> cases;
  for (int i = 0; i < 10; ++i) cases.push_back(NodeCase{"test_" + std::to_string(i), {}});
  size_t total = 0;
  for (int s = 0; s < 3; ++s) total += shard_of(cases, s, 3).size();
  EXPECT_EQ(total, cases.size());
  EXPECT_EQ(shard_of(cases, 1, 3).front().name, "test_1");
  EXPECT_TRUE((NodeCase{"test_softmax_axis_0_expanded", {}}.expanded()));
  EXPECT_FALSE((NodeCase{"test_softmax_axis_0", {}}.expanded()));
}

// The planner loop sees a back end only through CaseBackend: a batch of two
// graphs compiled at once, each run and counted. The CPU back end always
// opens; the CUDA one where there is a GPU (checked the same way), and
// elsewhere says why, which `run --backend cuda` prints before skipping.
TEST(CaseBackend, CompilesABatchRunsAndCountsKernels) {
  const Graph g = canonicalize(
      parse_module("graph double_abs(x: f32[4]) -> (f32[4]) {\n  y = add(abs(x), abs(x))\n  return y\n}\n")
          .graphs.at(0));
  const auto dir = std::filesystem::temp_directory_path() /
                   ("stitch-onnx-node-backend-" + std::to_string(std::random_device{}()));
  for (std::string_view name : kBackendNames) {
    SCOPED_TRACE(std::string(name));
    std::string why;
    std::unique_ptr<CaseBackend> backend = open_backend(name, dir / name, why);
    if (!backend) {
      EXPECT_NE(name, "cpu");
      EXPECT_FALSE(why.empty());
      continue;
    }
    EXPECT_EQ(backend->unsupported_reason(g, PlannerKind::Xla), "");
    std::vector<std::unique_ptr<CompiledCase>> compiled = backend->compile_batch({g, g}, PlannerKind::Xla);
    ASSERT_EQ(compiled.size(), 2u);
    for (const std::unique_ptr<CompiledCase>& c : compiled) {
      const std::vector<Tensor> got = c->run({f32({-1, 2, -3.5, 0})});
      ASSERT_EQ(got.size(), 1u);
      EXPECT_TRUE(compare_with_reference(got[0], f32({2, 4, 7, 0})).ok);
      EXPECT_EQ(c->kernel_count(), 1);  // abs and add fused by xla
    }
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

}  // namespace
}  // namespace stitch::onnx_node
