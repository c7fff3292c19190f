// The fusion report's content (docs/report.md): what collect_report gathers
// from the pipeline, how add_run matches timed launches to kernels, and what
// the page and the drawing hold.
#include "report/report.h"

#include <gtest/gtest.h>

#include "ir/canonicalize.h"
#include "report/graph_drawing.h"
#include "report/html_report.h"
#include "stitch/text.h"

namespace stitch::report {
namespace {

Graph canonical(const std::string& text) { return canonicalize(parse_module(text).graphs.front()); }

const char* kSoftmax = R"(graph softmax_small(x: f32[37, 100]) -> (f32[37, 100]) {
  y = softmax(x, axis=-1)
  return y
}
)";

// A dot whose result is read by an elementwise kernel, and a reduction the
// xla planner keeps apart from what reads it.
const char* kDotThenNorm = R"(graph block(a: f32[64, 32], b: f32[32, 48]) -> (f32[64, 48]) {
  d = dot(a, b)
  e = exp(d)
  s = reduce_sum(e, axes=[1], keepdims=true)
  y = div(e, s)
  return y
}
)";

TEST(Report, SoftmaxUnderXlaHasEveryGroupWithItsScheduleSourceAndReasons) {
  const Report r = collect_report(canonical(kSoftmax), PlannerKind::Xla, "cpu");
  EXPECT_EQ(r.graph_name, "softmax_small");
  EXPECT_EQ(r.planner, "xla");
  ASSERT_EQ(r.kernels.size(), 4u);
  for (size_t i = 0; i < r.kernels.size(); ++i) {
    const KernelEntry& k = r.kernels[i];
    EXPECT_EQ(k.group, static_cast<int>(i));
    EXPECT_EQ(k.name, "k_softmax_small_g" + std::to_string(i));
    EXPECT_FALSE(k.schedule.empty()) << k.name;
    EXPECT_NE(k.source.find(k.name), std::string::npos) << k.source;
    EXPECT_GT(k.bytes_read, 0);
    EXPECT_GT(k.predicted_s, 0);
    EXPECT_FALSE(k.ops.empty());
  }
  EXPECT_EQ(r.kernels[0].kind, "reduction");
  EXPECT_EQ(r.kernels[1].kind, "loop");
  ASSERT_FALSE(r.refusals.empty());
  for (const RefusalEntry& f : r.refusals) {
    EXPECT_FALSE(f.reason.empty());
    EXPECT_GE(f.producer_group, 0);
    EXPECT_GE(f.consumer_group, 0) << f.consumer << " is computed in some group";
  }
  EXPECT_NE(r.predicted_by.find("delta evaluator"), std::string::npos);
}

TEST(Report, TheStitchPlannerKeepsSoftmaxInOneStitchedKernelWithItsSharedMemoryPlan) {
  const Report r = collect_report(canonical(kSoftmax), PlannerKind::Stitch, "cpu");
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_EQ(r.kernels[0].kind, "stitched");
  EXPECT_TRUE(r.refusals.empty());
  EXPECT_FALSE(r.search.empty());
}

TEST(Report, ALibraryCallIsNamedAsTheLaunchListNamesIt) {
  const Report r = collect_report(canonical(kDotThenNorm), PlannerKind::Xla, "cpu");
  ASSERT_FALSE(r.kernels.empty());
  EXPECT_EQ(r.kernels[0].kind, "library");
  EXPECT_EQ(r.kernels[0].name, "dot d");
  EXPECT_TRUE(r.kernels[0].source.empty());
}

TEST(Report, AddRunCreditsEachStepToItsKernelAndADotsEpilogueItsShare) {
  Report r;
  r.kernels.resize(3);
  r.kernels[0].name = "dot d";
  r.kernels[1].name = "k_g1";
  r.kernels[1].epilogue_of = "d";
  r.kernels[2].name = "k_g2";
  for (KernelEntry& k : r.kernels) k.bytes_read = 1000000;
  add_run(r, {{"dot d + k_g1", 3e-3, 1e-3}, {"k_g2", 1e-3, 0}, {"unknown", 2e-3, 0}}, "test", 6e-3, 1.0);
  ASSERT_EQ(r.timeline.size(), 3u);
  EXPECT_EQ(r.timeline[0].entry, 0);
  EXPECT_EQ(r.timeline[1].entry, 2);
  EXPECT_EQ(r.timeline[2].entry, -1);
  EXPECT_DOUBLE_EQ(*r.kernels[0].measured_s, 2e-3);
  EXPECT_DOUBLE_EQ(*r.kernels[1].measured_s, 1e-3);
  EXPECT_DOUBLE_EQ(*r.kernels[2].measured_s, 1e-3);
  // 1 MB in 1 ms is 1 GB/s: the copy's rate.
  EXPECT_NEAR(*r.kernels[2].of_copy, 1.0, 1e-12);
  EXPECT_EQ(*r.measured_total_s, 6e-3);
}

TEST(Report, TheDrawingHasAClusterPerGroupLinkingToItsSection) {
  const Graph g = canonical(kSoftmax);
  const Report r = collect_report(g, PlannerKind::Xla, "cpu", {}, std::nullopt, "p1-");
  for (int i = 0; i < 4; ++i) {
    EXPECT_NE(r.dot.find("subgraph cluster_" + std::to_string(i) + " "), std::string::npos) << r.dot;
    EXPECT_NE(r.dot.find("\"#p1-group-" + std::to_string(i) + "\""), std::string::npos) << r.dot;
  }
  EXPECT_NE(r.dot.find("style=dashed"), std::string::npos) << "an edge between kernels";
  EXPECT_NE(r.dot.find("not fused: "), std::string::npos) << r.dot;
}

TEST(Report, GraphvizDrawsTheSvgAndABadSourceIsAnError) {
  const Drawing ok = draw_svg("digraph g { a -> b; }\n");
  ASSERT_TRUE(ok.error.empty()) << ok.error;
  EXPECT_EQ(ok.svg.rfind("<svg", 0), 0u) << ok.svg;
  const Drawing bad = draw_svg("digraph g { a -> ; }\n");
  EXPECT_TRUE(bad.svg.empty());
  EXPECT_NE(bad.error.find("failed"), std::string::npos) << bad.error;
}

TEST(Report, ThePageEscapesNamesAndHoldsEverySection) {
  EXPECT_EQ(html_escape("a<b & \"c\" 'd'>"), "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
  const Report r = collect_report(canonical(kSoftmax), PlannerKind::Xla, "cpu");
  const std::string page = html_report(r);
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* part : {"<h2>Kernels</h2>", "<h2>Timeline</h2>", "<h2>Plan</h2>", "<h2>Groups</h2>",
                           "<h2>Not fused</h2>", "id=\"group-3\"", "Generated source of <code>k_softmax_small_g0</code>",
                           "<svg"}) {
    EXPECT_NE(page.find(part), std::string::npos) << part;
  }
  // Offline: nothing is fetched from the network.
  EXPECT_EQ(page.find("http://www.w3.org/1999/xlink\" href=\"http"), std::string::npos);
  EXPECT_EQ(page.find("<script src"), std::string::npos);
  EXPECT_EQ(page.find("<link "), std::string::npos);
}

#ifdef STITCH_HAVE_CUDA
TEST(Report, TheCudaBackEndsReportHasCudaSourceAndTheGpuLatencyModel) {
  const Report r = collect_report(canonical(kSoftmax), PlannerKind::Stitch, "cuda");
  ASSERT_FALSE(r.kernels.empty());
  EXPECT_NE(r.kernels[0].source.find("__global__"), std::string::npos) << r.kernels[0].source;
  EXPECT_NE(r.predicted_by.find("sm_90"), std::string::npos) << r.predicted_by;
  // The stitched row group's time is the GPU model's, for the schedule it takes.
  EXPECT_TRUE(r.kernels[0].predicted_by_model);
  EXPECT_FALSE(r.model_name.empty());
  EXPECT_GT(r.kernels[0].predicted_s, 0);
  // The CPU's report has no GPU model.
  const Report cpu = collect_report(canonical(kSoftmax), PlannerKind::Stitch, "cpu");
  EXPECT_FALSE(cpu.kernels[0].predicted_by_model);
}
#endif

TEST(Report, AnUnknownBackEndIsAUserError) {
  EXPECT_THROW(collect_report(canonical(kSoftmax), PlannerKind::Xla, "tpu"), UserError);
}

}  // namespace
}  // namespace stitch::report
