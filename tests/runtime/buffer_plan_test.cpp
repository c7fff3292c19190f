// The buffer plan both executables share (docs/executable.md, Buffer
// planning), on hand-written launch lists: which values are intermediates,
// how long each lives, and which pooled buffer best fit gives it.
#include "runtime/common/buffer_plan.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "stitch/error.h"

namespace stitch::runtime {
namespace {

// Plans `steps` with every value of `bytes` an intermediate unless external.
BufferPlan plan(const std::vector<StepValues>& steps, const std::set<int>& external,
                const std::map<int, int64_t>& bytes, const std::vector<int64_t>& pool = {}) {
  return plan_buffers(plan_lifetimes(steps, external), bytes, pool);
}

int buffer_of(const BufferPlan& p, int value) {
  const PlannedValue* v = p.find(value);
  EXPECT_NE(v, nullptr) << "v" << value << " is not planned";
  return v ? v->buffer : -1;
}

// Two intermediates live at one time never share a buffer; a value is live
// from the step writing it through the last step reading it.
void expect_live_values_apart(const BufferPlan& p) {
  for (const PlannedValue& a : p.values) {
    for (const PlannedValue& b : p.values) {
      if (a.lifetime.value >= b.lifetime.value) continue;
      const bool overlap = a.lifetime.first_step <= b.lifetime.last_step &&
                           b.lifetime.first_step <= a.lifetime.last_step;
      if (overlap) {
        EXPECT_NE(a.buffer, b.buffer) << "v" << a.lifetime.value << " and v" << b.lifetime.value << "\n"
                                      << print_buffer_plan(p);
      }
    }
  }
}

void expect_buffers_fit(const BufferPlan& p) {
  for (const PlannedValue& v : p.values) {
    ASSERT_GE(v.buffer, 0);
    ASSERT_LT(v.buffer, static_cast<int>(p.pool_bytes.size()));
    EXPECT_GE(p.pool_bytes[v.buffer], v.bytes) << "v" << v.lifetime.value;
  }
}

TEST(BufferPlan, AChainAlternatesBetweenTwoBuffers) {
  // p0 -> v1 -> v2 -> v3 -> v4 -> v5 (graph output)
  const std::vector<StepValues> steps = {{{0}, {1}}, {{1}, {2}}, {{2}, {3}}, {{3}, {4}}, {{4}, {5}}};
  const BufferPlan p = plan(steps, {0, 5}, {{1, 64}, {2, 64}, {3, 64}, {4, 64}});
  EXPECT_EQ(buffer_of(p, 1), 0);
  EXPECT_EQ(buffer_of(p, 2), 1);
  EXPECT_EQ(buffer_of(p, 3), 0);
  EXPECT_EQ(buffer_of(p, 4), 1);
  EXPECT_EQ(p.pool_bytes, (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(p.intermediate_count(), 4);
  EXPECT_EQ(p.buffers_used, 2);
  EXPECT_EQ(p.bytes_used, 128);
  expect_live_values_apart(p);
}

TEST(BufferPlan, ADiamondHoldsBothBranchesUntilTheJoin) {
  // v1 feeds v2 and v3, which step 3 joins into the output v4.
  const std::vector<StepValues> steps = {{{0}, {1}}, {{1}, {2}}, {{1}, {3}}, {{2, 3}, {4}}};
  const Lifetimes lifetimes = plan_lifetimes(steps, {0, 4});
  ASSERT_EQ(lifetimes.values.size(), 3u);
  EXPECT_EQ(lifetimes.find(1)->last_step, 2);
  EXPECT_EQ(lifetimes.find(2)->last_step, 3);
  EXPECT_EQ(lifetimes.find(3)->first_step, 2);
  EXPECT_EQ(lifetimes.released_after, (std::vector<std::vector<int>>{{}, {}, {1}, {2, 3}}));
  const BufferPlan p = plan_buffers(lifetimes, {{1, 32}, {2, 32}, {3, 32}}, {});
  EXPECT_EQ(buffer_of(p, 1), 0);
  EXPECT_EQ(buffer_of(p, 2), 1);
  EXPECT_EQ(buffer_of(p, 3), 2);
  EXPECT_EQ(p.buffers_used, 3);
  expect_live_values_apart(p);
}

TEST(BufferPlan, AValueReadByALaterStepKeepsItsBuffer) {
  // v1 is read again by step 3: steps 1 and 2 may not take its buffer.
  const std::vector<StepValues> steps = {{{0}, {1}}, {{1}, {2}}, {{2}, {3}}, {{1, 3}, {4}}, {{4}, {5}}};
  const BufferPlan p = plan(steps, {0, 5}, {{1, 16}, {2, 16}, {3, 16}, {4, 16}});
  EXPECT_EQ(p.find(1)->lifetime.last_step, 3);
  EXPECT_EQ(buffer_of(p, 1), 0);
  EXPECT_EQ(buffer_of(p, 2), 1);
  EXPECT_EQ(buffer_of(p, 3), 2);  // v2's buffer is still read by step 2
  EXPECT_EQ(buffer_of(p, 4), 1);  // free again after step 2: v2's
  for (int v : {2, 3, 4}) EXPECT_NE(buffer_of(p, v), buffer_of(p, 1)) << "v" << v;
  expect_live_values_apart(p);
}

TEST(BufferPlan, BestFitTakesTheSmallestFreeBufferThatHolds) {
  // Four values all live at once, planned into a pool of 400, 100, 200, 100.
  const std::vector<StepValues> steps = {{{0}, {1, 2, 3, 4}}, {{1, 2, 3, 4}, {5}}};
  const BufferPlan p = plan(steps, {0, 5}, {{1, 150}, {2, 50}, {3, 500}, {4, 100}}, {400, 100, 200, 100});
  EXPECT_EQ(buffer_of(p, 1), 2);  // 200, not 400
  EXPECT_EQ(buffer_of(p, 2), 1);  // the first of the two 100s
  EXPECT_EQ(buffer_of(p, 3), 4);  // nothing holds 500: a new buffer of its size
  EXPECT_EQ(buffer_of(p, 4), 3);  // the other 100, though 400 is free too
  EXPECT_EQ(p.pool_bytes, (std::vector<int64_t>{400, 100, 200, 100, 500}));
  EXPECT_EQ(p.buffers_used, 4);
  EXPECT_EQ(p.bytes_used, 200 + 100 + 500 + 100);
  expect_buffers_fit(p);
}

TEST(BufferPlan, OfEqualFreeBuffersTheFirstFreedIsTaken) {
  // Step 2 frees v2's and v1's buffers (in value order: v1 first); v4 takes v1's.
  const std::vector<StepValues> steps = {{{0}, {2}}, {{0}, {1}}, {{1, 2}, {3}}, {{3}, {4}}, {{4}, {5}}};
  const BufferPlan p = plan(steps, {0, 5}, {{1, 8}, {2, 8}, {3, 8}, {4, 8}});
  EXPECT_EQ(buffer_of(p, 2), 0);
  EXPECT_EQ(buffer_of(p, 1), 1);
  EXPECT_EQ(buffer_of(p, 3), 2);
  EXPECT_EQ(buffer_of(p, 4), 1);
}

TEST(BufferPlan, ASecondPlanReusesThePoolOfTheFirst) {
  const std::vector<StepValues> steps = {{{0}, {1}}, {{1}, {2}}, {{1, 2}, {3}}, {{3}, {4}}};
  const std::map<int, int64_t> bytes = {{1, 1000}, {2, 300}, {3, 600}};
  const BufferPlan first = plan(steps, {0, 4}, bytes);
  EXPECT_EQ(first.pool_bytes, (std::vector<int64_t>{1000, 300, 600}));
  const BufferPlan again = plan(steps, {0, 4}, bytes, first.pool_bytes);
  EXPECT_EQ(again.pool_bytes, first.pool_bytes);  // nothing appended
  EXPECT_EQ(print_buffer_plan(again), print_buffer_plan(first));

  // Smaller values fit the kept buffers; the peak counts their full sizes.
  const BufferPlan smaller = plan(steps, {0, 4}, {{1, 10}, {2, 10}, {3, 10}}, first.pool_bytes);
  EXPECT_EQ(smaller.pool_bytes, first.pool_bytes);
  EXPECT_EQ(buffer_of(smaller, 1), 1);  // 300, the smallest
  EXPECT_EQ(buffer_of(smaller, 2), 2);
  EXPECT_EQ(buffer_of(smaller, 3), 0);
  EXPECT_EQ(smaller.bytes_used, 1900);

  // A larger value appends a buffer; the given ones keep their sizes.
  const BufferPlan larger = plan(steps, {0, 4}, {{1, 2000}, {2, 300}, {3, 600}}, first.pool_bytes);
  EXPECT_EQ(larger.pool_bytes, (std::vector<int64_t>{1000, 300, 600, 2000}));
  EXPECT_EQ(buffer_of(larger, 1), 3);
  EXPECT_EQ(buffer_of(larger, 2), 1);
  EXPECT_EQ(buffer_of(larger, 3), 2);
  EXPECT_EQ(larger.buffers_used, 3);
  EXPECT_EQ(larger.bytes_used, 2900);
}

TEST(BufferPlan, NoStepReadsAndWritesOneBuffer) {
  // v1 is last read by step 1, which writes v2 of the same size: v2 may not
  // take v1's buffer, though it is the only one and is free right after.
  const std::vector<StepValues> steps = {{{0}, {1}}, {{1}, {2}}, {{2}, {3}}};
  const BufferPlan p = plan(steps, {0, 3}, {{1, 64}, {2, 64}}, {64});
  EXPECT_EQ(buffer_of(p, 1), 0);
  EXPECT_EQ(buffer_of(p, 2), 1);
  for (const StepValues& step : steps) {
    std::set<int> read;
    for (int v : step.reads) {
      if (p.find(v)) read.insert(buffer_of(p, v));
    }
    for (int v : step.writes) {
      if (p.find(v)) {
        EXPECT_FALSE(read.count(buffer_of(p, v))) << "v" << v;
      }
    }
  }
}

TEST(BufferPlan, ParametersAndGraphOutputsAreNeverPlanned) {
  // p0 and p1 are parameters; v2 and v4 graph outputs, v4 also read by step 2.
  const std::vector<StepValues> steps = {{{0, 1}, {2, 3}}, {{3}, {4}}, {{4, 0}, {5}}, {{5}, {6}}};
  const Lifetimes lifetimes = plan_lifetimes(steps, {0, 1, 2, 4, 6});
  ASSERT_EQ(lifetimes.values.size(), 2u);
  EXPECT_EQ(lifetimes.values[0].value, 3);
  EXPECT_EQ(lifetimes.values[1].value, 5);
  EXPECT_EQ(lifetimes.written_at, (std::vector<std::vector<int>>{{3}, {}, {5}, {}}));
  for (int v : {0, 1, 2, 4, 6}) EXPECT_EQ(lifetimes.find(v), nullptr) << "v" << v;
  const BufferPlan p = plan_buffers(lifetimes, {{3, 12}, {5, 12}}, {});
  EXPECT_EQ(p.intermediate_count(), 2);
  EXPECT_EQ(p.find(2), nullptr);
  EXPECT_EQ(p.find(0), nullptr);
}

TEST(BufferPlan, AnIntermediateNobodyReadsIsFreeAfterItsStep) {
  // Step 0 writes v1 (read later) and v2 (read by no one).
  const std::vector<StepValues> steps = {{{0}, {1, 2}}, {{1}, {3}}, {{3}, {4}}};
  const BufferPlan p = plan(steps, {0, 4}, {{1, 40}, {2, 40}, {3, 40}});
  const PlannedValue* unread = p.find(2);
  ASSERT_NE(unread, nullptr);
  EXPECT_EQ(unread->lifetime.first_step, 0);
  EXPECT_EQ(unread->lifetime.last_step, 0);
  EXPECT_EQ(buffer_of(p, 3), buffer_of(p, 2));
  EXPECT_EQ(p.buffers_used, 2);
}

TEST(BufferPlan, CountsAndPeak) {
  // A buffer of the pool no value takes is not counted; a taken one counts
  // its full size, once however many values it holds.
  const std::vector<StepValues> steps = {{{0}, {1}}, {{1}, {2}}, {{2}, {3}}, {{3}, {4}}, {{4}, {5}}};
  const BufferPlan p = plan(steps, {0, 5}, {{1, 100}, {2, 30}, {3, 90}, {4, 20}}, {10, 120});
  EXPECT_EQ(buffer_of(p, 1), 1);  // 120
  EXPECT_EQ(buffer_of(p, 2), 2);  // 10 is too small: new, 30
  EXPECT_EQ(buffer_of(p, 3), 1);
  EXPECT_EQ(buffer_of(p, 4), 2);  // 30 beats 120; 10 is still too small
  EXPECT_EQ(p.intermediate_count(), 4);
  EXPECT_EQ(p.buffers_used, 2);
  EXPECT_EQ(p.bytes_used, 150);
  EXPECT_EQ(p.pool_bytes, (std::vector<int64_t>{10, 120, 30}));

  const BufferPlan empty = plan({{{0}, {1}}}, {0, 1}, {});
  EXPECT_EQ(empty.intermediate_count(), 0);
  EXPECT_EQ(empty.buffers_used, 0);
  EXPECT_EQ(empty.bytes_used, 0);
}

TEST(BufferPlan, PrintsOneLinePerIntermediateThenTheTotals) {
  const std::vector<StepValues> steps = {{{0}, {1}}, {{1}, {2}}, {{2}, {3}}, {{3}, {4}}};
  const BufferPlan p = plan(steps, {0, 4}, {{1, 64}, {2, 32}, {3, 64}}, {16});
  EXPECT_EQ(print_buffer_plan(p),
            "v1: 64 bytes in buffer 1, steps [0, 1]\n"
            "v2: 32 bytes in buffer 2, steps [1, 2]\n"
            "v3: 64 bytes in buffer 1, steps [2, 3]\n"
            "3 intermediates in 2 of 3 buffers, 96 bytes used\n");
}

TEST(BufferPlan, ABrokenLaunchListIsAnInternalError) {
  EXPECT_THROW(plan_lifetimes({{{0}, {1}}, {{0}, {1}}}, {0}), InternalError);  // written twice
  EXPECT_THROW(plan_lifetimes({{{1}, {2}}, {{0}, {1}}}, {0}), InternalError);  // read before written
  EXPECT_THROW(plan_buffers(plan_lifetimes({{{0}, {1}}}, {0}), {}, {}), InternalError);  // no size
}

// A result written in place of a value its step reads last (a conv call's
// side input) takes that value's buffer, which stays taken; a value read again
// later, one too small, and a parameter are not written over.
TEST(BufferPlan, AResultTakesTheBufferOfAValueItsStepReadsLast) {
  // v1 and v2 from p0; step 2 reads both and writes v3 in v2's place; step 3
  // reads v3 (and v1 again) into v4; v5 in place of v1 at step 4, but v1 is
  // read at step 5 too; v6 in place of p0, a parameter.
  const std::vector<StepValues> steps = {{{0}, {1}},    {{0}, {2}},    {{1, 2}, {3}}, {{1, 3}, {4}},
                                         {{1, 4}, {5}}, {{1, 5}, {6}}, {{0, 6}, {7}}};
  const std::map<int, int64_t> bytes = {{1, 64}, {2, 64}, {3, 64}, {4, 64}, {5, 64}, {6, 64}};
  const Lifetimes lifetimes = plan_lifetimes(steps, {0, 7});
  const BufferPlan p = plan_buffers(lifetimes, bytes, {}, {{3, 2}, {5, 1}, {6, 0}});
  EXPECT_EQ(buffer_of(p, 3), buffer_of(p, 2));
  EXPECT_NE(buffer_of(p, 5), buffer_of(p, 1));
  EXPECT_NE(buffer_of(p, 4), buffer_of(p, 3));
  expect_buffers_fit(p);
  // Apart from the in-place pair, live values never share a buffer.
  for (const PlannedValue& a : p.values) {
    for (const PlannedValue& b : p.values) {
      if (a.lifetime.value >= b.lifetime.value || (a.lifetime.value == 2 && b.lifetime.value == 3)) continue;
      if (a.lifetime.first_step <= b.lifetime.last_step && b.lifetime.first_step <= a.lifetime.last_step) {
        EXPECT_NE(a.buffer, b.buffer) << "v" << a.lifetime.value << " and v" << b.lifetime.value << "\n"
                                      << print_buffer_plan(p);
      }
    }
  }
  // A read value whose buffer is smaller than the result's is left alone.
  std::map<int, int64_t> larger = bytes;
  larger[3] = 128;
  const BufferPlan q = plan_buffers(lifetimes, larger, {}, {{3, 2}});
  EXPECT_NE(buffer_of(q, 3), buffer_of(q, 2));
  expect_buffers_fit(q);
  expect_live_values_apart(q);
}

}  // namespace
}  // namespace stitch::runtime
