// The GPU model's analytical form (docs/gpu-model.md, The analytical form):
// where a row's later passes come from, the copy roof for a one-pass row
// reduction, and the row schedule it chooses through RowScheduleTarget::model.
#include <gtest/gtest.h>

#include <algorithm>

#include "gpu_model/analytic.h"
#include "schedule/select.h"
#include "stitch/error.h"

namespace stitch::gpu_model {
namespace {

using schedule::GroupDescription;
using schedule::GroupPattern;
using schedule::KernelCandidate;
using schedule::RowScheduleKind;

// A stitched softmax: rows x cols floats, read three times (max, sum, output), written once.
GroupDescription softmax(int64_t rows, int64_t cols) {
  GroupDescription d;
  d.pattern = GroupPattern::RowReduction;
  d.rows = rows;
  d.cols = cols;
  d.inputs = 1;
  d.outputs = 1;
  d.alu_per_element = 3;
  d.sfu_per_element = 1;
  d.bytes = 2 * rows * cols * 4;
  d.passes = 3;
  return d;
}

const KernelCandidate& candidate(const std::vector<KernelCandidate>& all, const std::string& strategy,
                                 int64_t threads) {
  auto it = std::find_if(all.begin(), all.end(), [&](const KernelCandidate& k) {
    return k.strategy == strategy && k.threads_per_block == threads;
  });
  EXPECT_NE(it, all.end()) << strategy << " " << threads;
  return *it;
}

// The H200 model's prediction for `d` under the candidate of `strategy` with `threads`.
AnalyticPrediction predict(const GroupDescription& d, const std::string& strategy, int64_t threads) {
  const GpuTarget t = *target_named("h200");
  return analytic_prediction(t, fitted_constants(t), d,
                             candidate(schedule::enumerate_candidates(d, t.device), strategy, threads));
}

TEST(GpuModelAnalytic, ARowThatFitsSharedMemoryIsReadFromDramOnce) {
  const GroupDescription d = softmax(16384, 4096);
  const AnalyticPrediction block = predict(d, "block-per-row", 256);
  EXPECT_EQ(block.rereads, RereadSource::SharedCache);
  EXPECT_DOUBLE_EQ(block.prediction.dram_read_bytes, static_cast<double>(d.bytes));
  // Warp-per-row: 8 rows of 16 KiB a block, the resident blocks' rows far
  // beyond the L2 between two passes: every pass reads DRAM.
  const AnalyticPrediction warp = predict(d, "warp-per-row", 256);
  EXPECT_EQ(warp.rereads, RereadSource::Dram);
  EXPECT_GT(warp.prediction.seconds, 1.5 * block.prediction.seconds);
}

TEST(GpuModelAnalytic, ShortRowsReadAgainHitTheL2) {
  const GroupDescription d = softmax(131072, 512);
  const AnalyticPrediction warp = predict(d, "warp-per-row", 256);
  EXPECT_EQ(warp.rereads, RereadSource::L2);
  EXPECT_DOUBLE_EQ(warp.prediction.dram_read_bytes, static_cast<double>(d.bytes));
}

TEST(GpuModelAnalytic, AWarpWalkingALongRowAloneWaitsOnLatency) {
  // 65536 rows of 1024 floats, one pass: warp-per-row makes each warp wait 32
  // loads in turn (one a loop step), as the simulated counters do for NVRTC's loop.
  const GpuTarget t = *target_named("h200");
  GroupDescription d;
  d.pattern = GroupPattern::RowReduction;
  d.rows = 65536;
  d.cols = 1024;
  d.alu_per_element = 1;
  const double copy = copy_seconds(t, fitted_constants(t), static_cast<double>(d.bytes_moved()));
  const Prediction warp = predict(d, "warp-per-row", 256).prediction;
  EXPECT_EQ(warp.bound, "latency");
  EXPECT_DOUBLE_EQ(warp.batches_per_warp, 32);
  EXPECT_GT(warp.seconds, copy);
}

TEST(GpuModelAnalytic, TheModelChoosesTheRowScheduleAndSaysWhatTheEvaluatorChose) {
  schedule::RowScheduleTarget rows = with_row_model(schedule::RowScheduleTarget::gpu());
  ASSERT_TRUE(rows.model);
  EXPECT_EQ(rows.model_name, "h100");  // the sm_90 table entry has the H100's DRAM
  const schedule::RowScheduleChoice choice = schedule::choose_row_schedule(softmax(16384, 4096), 4096, rows);
  EXPECT_EQ(choice.schedule.kind, RowScheduleKind::BlockPerRow);
  EXPECT_GT(choice.model_seconds, 0);
  EXPECT_NE(choice.reason.find("the h100 model's fastest"), std::string::npos) << choice.reason;
  ASSERT_TRUE(choice.evaluator_choice.has_value());
  // Without the model, the latency evaluator's ranking decides, as before.
  const schedule::RowScheduleChoice plain =
      schedule::choose_row_schedule(softmax(16384, 4096), 4096, schedule::RowScheduleTarget::gpu());
  EXPECT_EQ(plain.schedule, *choice.evaluator_choice);
  EXPECT_EQ(plain.model_seconds, 0);
}

TEST(GpuModelAnalytic, ANamedTargetIsModelledWhateverTheDevice) {
  // cuda-sim reports an H100; `--profile h200` chooses as for the H200.
  const schedule::RowScheduleTarget rows = with_row_model(schedule::RowScheduleTarget::gpu(), "h200");
  EXPECT_EQ(rows.model_name, "h200");
  const GroupDescription d = softmax(16384, 4096);
  const KernelCandidate& k = candidate(schedule::enumerate_candidates(d, schedule::sm90_target()), "block-per-row", 256);
  EXPECT_LT(rows.model(d, k), with_row_model(schedule::RowScheduleTarget::gpu()).model(d, k));  // faster DRAM
  EXPECT_THROW(with_row_model(schedule::RowScheduleTarget::gpu(), "a100"), UserError);
}

TEST(GpuModelAnalytic, OnlyHopperHasAModel) {
  EXPECT_FALSE(with_row_model(schedule::RowScheduleTarget::gpu("sm_80")).model);
  EXPECT_FALSE(with_row_model(schedule::RowScheduleTarget::cpu()).model);
}

}  // namespace
}  // namespace stitch::gpu_model
