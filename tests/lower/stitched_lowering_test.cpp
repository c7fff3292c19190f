// Stitched groups (docs/lowering.md, Stitched groups): the corpus graphs that
// xla splits at every reduction become one kernel under the stitch planner,
// and so do hand-written ones that force each branch of the lowering: rows
// longer than the block and shorter than a warp, several outer dims, two
// reduced axes, a per-row root beside the row root, a producer kernel
// absorbed (bias + gelu + residual + layernorm), f16, a symbolic batch,
// and the column variant (static and symbolic). All kernels are compiled in
// one translation unit and compared with the interpreter at the tolerances of
// docs/lowering.md (Tests and tolerances): 32 eps for transcendental ops plus
// 4 n eps for reductions of length n.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "fusion/planner.h"
#include "fusion/stitched_group.h"
#include "ir/canonicalize.h"
#include "kir/printer.h"
#include "lower/lower_plan.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"
#include "tensor_compare.h"
#include "lower_scheduled.h"

namespace stitch::lower {
namespace {

namespace fs = std::filesystem;
using runtime::cpu::CpuExecutable;
using runtime::cpu::KernelCache;

struct Case {
  std::string id;
  Graph source;
  bool transcendental = true;
  int64_t reduction_length = 0;       // the longest reduction at the largest batch below
  std::vector<int64_t> batches{0};    // values of B to run (0: the graph has no B)
  size_t xla_kernels = 0;             // 0: not pinned
};

Graph workload(const std::string& file, const std::string& name) {
  Module m = parse_file(std::string(STITCH_SOURCE_DIR) + "/bench/workloads/" + file);
  const Graph* g = m.find(name);
  if (!g) throw std::runtime_error("no graph " + name + " in " + file);
  return *g;
}

Graph from_text(const std::string& text) { return parse_module(text).graphs.front(); }

std::vector<Case> make_cases() {
  std::vector<Case> cases = {
      {"softmax", workload("softmax.stitch", "softmax_small"), true, 100, {0}, 4},
      {"softmax_explicit", workload("softmax_explicit.stitch", "softmax_explicit_small"), true, 100, {0}, 4},
      {"log_softmax", workload("log_softmax.stitch", "log_softmax_small"), true, 100, {0}, 4},
      {"layernorm", workload("layernorm.stitch", "layernorm_small"), true, 200, {0}, 4},
      {"rmsnorm", workload("rmsnorm.stitch", "rmsnorm_small"), true, 100, {0}, 3},
      {"residual_layernorm", workload("residual_layernorm.stitch", "residual_layernorm_small"), true, 200, {0}, 4},
      {"column_reduce_sub", workload("column_reduce_sub.stitch", "column_reduce_sub_small"), false, 123, {0}, 2},
      {"layernorm_dyn", workload("layernorm.stitch", "layernorm_dyn"), true, 2048, {1, 5, 300}, 4},
  };
  cases.push_back({"long_rows", from_text(R"(graph long_rows(x: f32[3, 3000]) -> (f32[3, 3000]) {
  m = reduce_max(x, axes=[1], keepdims=true)
  e = exp(sub(x, m))
  y = div(e, reduce_sum(e, axes=[1], keepdims=true))
  return y
})"), true, 3000});
  cases.push_back({"short_rows", from_text(R"(graph short_rows(x: f32[50, 5]) -> (f32[50, 5]) {
  c = sub(x, reduce_mean(x, axes=[1], keepdims=true))
  y = mul(c, rsqrt(add(reduce_mean(mul(c, c), axes=[1], keepdims=true), 0.00001)))
  return y
})"), true, 10});
  // The mean is a graph output too: a per-row root, stored once per row.
  cases.push_back({"row_root", from_text(R"(graph row_root(x: f32[6, 2, 40]) -> (f32[6, 2, 40], f32[6, 2]) {
  m = reduce_mean(x, axes=[2])
  c = sub(x, reshape(m, shape=[6, 2, 1]))
  y = div(c, add(reduce_sum(mul(c, c), axes=[2], keepdims=true), 1.0))
  return y, m
})"), true, 80});
  cases.push_back({"two_axes", from_text(R"(graph two_axes(x: f32[4, 6, 10]) -> (f32[4, 6, 10]) {
  y = sub(x, reduce_max(x, axes=[1, 2], keepdims=true))
  return y
})"), false, 60});
  // xla writes erf (an expensive op read by three kernels); stitch recomputes
  // it in each phase of one kernel.
  cases.push_back({"bias_gelu_residual_layernorm", from_text(R"(graph bglr(x: f32[6, 300], b: f32[300], res: f32[6, 300], gamma: f32[300], beta: f32[300]) -> (f32[6, 300]) {
  h = add(gelu(add(x, b)), res)
  y = layer_norm(h, gamma, beta, axes=[-1], eps=1e-5)
  return y
})"), true, 600});
  cases.push_back({"half_softmax", from_text(R"(graph half_softmax(x: f16[7, 300]) -> (f16[7, 300]) {
  e = exp(sub(x, reduce_max(x, axes=[1], keepdims=true)))
  y = div(e, reduce_sum(e, axes=[1], keepdims=true))
  return y
})"), true, 300});
  cases.push_back({"symbolic_softmax", from_text(R"(graph symbolic_softmax(x: f32[B, 70]) -> (f32[B, 70]) {
  e = exp(sub(x, reduce_max(x, axes=[1], keepdims=true)))
  y = div(e, reduce_sum(e, axes=[1], keepdims=true))
  return y
})"), true, 70, {1, 3, 200}});
  cases.push_back({"column_symbolic", from_text(R"(graph column_symbolic(x: f32[20, B]) -> (f32[20, B], f32[B]) {
  m = reduce_max(x, axes=[0])
  y = exp(sub(x, m))
  return y, m
})"), true, 20, {1, 255, 300}});
  // Per-row (per-column) values read from an input, no total: evaluated once per
  // row before the first phase (docs/lowering.md, Stitched groups).
  cases.push_back({"row_value_from_input", from_text(R"(graph row_value_from_input(x: f32[6, 300], b: f32[6, 1]) -> (f32[6, 300]) {
  s = exp(b)
  y = sub(mul(x, s), reduce_max(x, axes=[1], keepdims=true))
  return y
})"), true, 300});
  cases.push_back({"column_value_from_input", from_text(R"(graph column_value_from_input(x: f32[40, 9], b: f32[1, 9]) -> (f32[40, 9]) {
  s = exp(b)
  y = sub(mul(x, s), reduce_max(x, axes=[0], keepdims=true))
  return y
})"), false, 40});
  // A bias gradient: the product is stored in the column sum's first pass, at the
  // element of the same linear index (a root of another shape than the domain's),
  // in blocks of whole 1000-column rows on the CPU (more than CUDA's 1024 threads
  // would allow past 1024: a cpu_only kernel).
  cases.push_back({"column_early_root", from_text(R"(graph column_early_root(dy: f32[4, 10, 1000], x: f32[4, 10, 1000]) -> (f32[4, 10, 1000], f32[1000]) {
  k = mul(dy, erf(x))
  s = reduce_sum(reshape(k, shape=[40, 1000]), axes=[0])
  return k, s
})"), true, 40});
  return cases;
}

class StitchedLowering : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("stitch_stitched_lowering_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    cache_ = std::make_unique<KernelCache>(dir_);
    cases_ = std::make_unique<std::vector<Case>>(make_cases());
    std::vector<Graph> graphs;
    for (const Case& c : *cases_) graphs.push_back(canonicalize(c.source));
    exes_ = std::make_unique<std::vector<CpuExecutable>>(
        pipeline::compile_cpu_batch(graphs, PlannerKind::Stitch, *cache_));
  }
  static void TearDownTestSuite() {
    exes_.reset();
    cases_.reset();
    cache_.reset();
    fs::remove_all(dir_);
  }
  static fs::path dir_;
  static std::unique_ptr<KernelCache> cache_;
  static std::unique_ptr<std::vector<Case>> cases_;
  static std::unique_ptr<std::vector<CpuExecutable>> exes_;
};

fs::path StitchedLowering::dir_;
std::unique_ptr<KernelCache> StitchedLowering::cache_;
std::unique_ptr<std::vector<Case>> StitchedLowering::cases_;
std::unique_ptr<std::vector<CpuExecutable>> StitchedLowering::exes_;

TEST_F(StitchedLowering, EveryGraphIsOneStitchedKernel) {
  for (size_t i = 0; i < cases_->size(); ++i) {
    const Case& c = (*cases_)[i];
    SCOPED_TRACE(c.id);
    const CpuExecutable& exe = (*exes_)[i];
    EXPECT_EQ(exe.kernel_count(), 1);
    ASSERT_EQ(exe.plan().groups.size(), 1u);
    EXPECT_EQ(exe.plan().groups[0].kind, GroupKind::Stitched);
    const Graph g = canonicalize(c.source);
    const size_t xla = plan(g, PlannerKind::Xla).groups.size();
    EXPECT_GT(xla, 1u);
    if (c.xla_kernels) {
      EXPECT_EQ(xla, c.xla_kernels);
    }
  }
}

TEST_F(StitchedLowering, MatchesInterpreter) {
  for (size_t i = 0; i < cases_->size(); ++i) {
    const Case& c = (*cases_)[i];
    for (int64_t batch : c.batches) {
      SCOPED_TRACE(c.id + " B = " + std::to_string(batch));
      std::vector<Tensor> inputs;
      uint64_t seed = 29;
      for (ValueId p : c.source.params()) {
        Tensor t(c.source.type(p).dtype, concrete_shape(c.source.type(p).shape, {{"B", batch}}));
        fill_random(t, seed++);
        inputs.push_back(std::move(t));
      }
      const std::vector<Tensor> want = interpret(c.source, inputs);
      const std::vector<Tensor> got = (*exes_)[i].run(inputs);
      ASSERT_EQ(got.size(), want.size());
      for (size_t k = 0; k < got.size(); ++k) {
        EXPECT_TRUE(stitch::testing::matches_interpreter(got[k], want[k], c.transcendental, c.reduction_length))
            << "output " << k;
      }
    }
  }
}

// The block-per-row schedule of a stitched softmax: one phase per reduction,
// each a strided loop ending in a block reduction; the totals are read as
// block values by the next phase and by the last one, which stores the row.
// The exp computed for the sum is kept in the shared row_cache0 and read back
// by the store phase instead of being recomputed; it takes the bytes of the
// max's scratch, dead after its block reduction (the shared-memory plan's arena).
// Each step of the exp phase (the first after the first with a heavy op)
// asks for its share of the next block's row.
TEST(StitchedLoweringShape, SoftmaxIsTwoReductionPhasesAndAStorePhase) {
  const Graph g = canonicalize(workload("softmax.stitch", "softmax_small"));
  schedule::RowScheduleTarget rows = schedule::RowScheduleTarget::cpu();
  rows.forced = schedule::RowScheduleKind::BlockPerRow;
  std::vector<LoweredGroup> lowered = stitch::testing::lower_with_default_schedules(g, plan(g, PlannerKind::Stitch), "k", rows);
  ASSERT_EQ(lowered.size(), 1u);
  ASSERT_TRUE(lowered[0].kernel) << lowered[0].not_lowered_reason;
  EXPECT_EQ(kir::print_kernel(*lowered[0].kernel), R"(kernel k_g0(in_x: global f32[37, 100] read, out_y: global f32[37, 100] write) launch(grid=37, block=128) {
  shared arena: 416 bytes
  shared scratch0: f32[4] at 0
  shared scratch1: f32[4] at 400
  shared row_cache0: f32[100] at 0
  for blk in grid(37) {
    for thr in block(128) {
      let o0: i64 = blk
      let acc0: f32 = -inf:f32
      for step0 in serial(1) {
        let r0: i64 = add(mul(step0, 128), thr)
        if lt(r0, 100) {
          let j1: i64 = r0
          acc0 = max(acc0, in_x[o0, j1])
        }
      }
      total0 = block.reduce_max(acc0, scratch=scratch0)
      let red0: f32 = total0
      let acc1: f32 = -0.0:f32
      for step1 in serial(1) {
        let r2: i64 = add(mul(step1, 128), thr)
        if lt(r2, 100) {
          let j3: i64 = r2
          let e4: f32 = sub(in_x[o0, j3], red0)
          let e5: f32 = exp(e4)
          acc1 = add(acc1, e5)
          row_cache0[r2] = e5
        }
        prefetch in_x[add(mul(add(blk, 1), 100), mul(step1, 100)) +: 100]
      }
      total1 = block.reduce_sum(acc1, scratch=scratch1)
      let red1: f32 = total1
      for step_out in serial(1) {
        let r6: i64 = add(mul(step_out, 128), thr)
        if lt(r6, 100) {
          let j7: i64 = r6
          let c8: f32 = row_cache0[r6]
          let e9: f32 = div(c8, red1)
          out_y[o0, j7] = e9
        }
      }
    }
  }
}
)");
}

// Prefetch (docs/lowering.md): the row read in place is prefetched (in the
// store phase: no phase after the first computes a heavy op), the broadcast
// gamma and beta of a LayerNorm are not; the CUDA target, and
// STITCH_PREFETCH=0 (RowScheduleTarget::prefetch), get none.
// A per-row value that reads no total (exp of a [6, 1] input) is computed once
// per row, before the first phase, not at every element of the row's phases.
TEST(StitchedLoweringShape, PerRowValuesOfInputsAreHoistedAboveThePhases) {
  const Graph g = canonicalize(from_text(R"(graph g(x: f32[6, 300], b: f32[6, 1]) -> (f32[6, 300]) {
  s = exp(b)
  y = sub(mul(x, s), reduce_max(x, axes=[1], keepdims=true))
  return y
})"));
  std::vector<LoweredGroup> lowered = stitch::testing::lower_with_default_schedules(g, plan(g, PlannerKind::Stitch), "k", schedule::RowScheduleTarget::cpu());
  ASSERT_EQ(lowered.size(), 1u);
  ASSERT_TRUE(lowered[0].kernel) << lowered[0].not_lowered_reason;
  const std::string text = kir::print_kernel(*lowered[0].kernel);
  const size_t exp_at = text.find("exp(");
  ASSERT_NE(exp_at, std::string::npos) << text;
  EXPECT_EQ(text.find("exp(", exp_at + 1), std::string::npos) << text;
  EXPECT_LT(exp_at, text.find("for step0")) << text;
}

TEST(StitchedLoweringShape, StorePhasePrefetchesTheNextRowsReadInPlace) {
  const Graph g = canonicalize(workload("layernorm.stitch", "layernorm_small"));
  auto prefetches = [&](const schedule::RowScheduleTarget& target) {
    std::vector<LoweredGroup> lowered = stitch::testing::lower_with_default_schedules(g, plan(g, PlannerKind::Stitch), "k", target);
    std::vector<std::string> lines;
    for (const LoweredGroup& l : lowered) {
      const std::string text = kir::print_kernel(*l.kernel);
      for (size_t at = text.find("prefetch "); at != std::string::npos; at = text.find("prefetch ", at + 1)) {
        lines.push_back(text.substr(at, text.find('[', at) - at));
      }
    }
    return lines;
  };
  // Block per row: every block owns a real row. (Under a warp schedule 37
  // rows leave spare row owners, whose store phase is under a per-warp
  // condition: no prefetch there.)
  schedule::RowScheduleTarget cpu = schedule::RowScheduleTarget::cpu();
  cpu.forced = schedule::RowScheduleKind::BlockPerRow;
  EXPECT_EQ(prefetches(cpu), std::vector<std::string>{"prefetch in_x"});
  schedule::RowScheduleTarget gpu = schedule::RowScheduleTarget::gpu();
  gpu.forced = schedule::RowScheduleKind::BlockPerRow;
  EXPECT_TRUE(prefetches(gpu).empty());
  schedule::RowScheduleTarget off = cpu;
  off.prefetch = false;
  EXPECT_TRUE(prefetches(off).empty());
}

}  // namespace
}  // namespace stitch::lower
