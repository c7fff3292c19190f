// Fusion planners (DESIGN.md, Fusion planners): each turns a canonical graph
// into a FusionPlan. Legality lives in legality.h, shared by all of them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fusion/delta_evaluator.h"
#include "fusion/fusion_plan.h"

namespace stitch {

enum class PlannerKind : uint8_t { None, Xla, Stitch, Ilp, Greedy };
// Every planner, in the order `stitch check` and the tests run them.
inline constexpr PlannerKind kEveryPlanner[] = {PlannerKind::None, PlannerKind::Xla, PlannerKind::Greedy,
                                                PlannerKind::Stitch, PlannerKind::Ilp};

std::string_view planner_name(PlannerKind k);
std::optional<PlannerKind> parse_planner_kind(std::string_view name);

struct PlanOptions {
  // At most this many fusions (a producer absorbed into a consumer's group, or
  // two sibling groups merged) are applied, in the planner's order; the rest
  // are refused with the reason "STITCH_MAX_FUSIONS ...", for bisecting a
  // wrong result. -1: take the cap from $STITCH_MAX_FUSIONS, no cap if unset.
  int max_fusions = -1;
  // What one block of a stitched kernel keeps between its phases when its
  // reductions are the innermost axes (a row or a few): past this the stitch
  // planner leaves the row to xla's kernels (docs/fusion.md, What a block
  // re-reads). The CPU's, the default: a core's L2 share; the GPU's
  // (for_gpu): the 48 KiB of static shared memory a row cache can take.
  int64_t row_hold_bytes = kCpuRowHoldBytes;
  // What the searching planners (stitch, ilp) score patterns with: the CPU's
  // measured model, or (for_gpu) the GPU's from published figures.
  TargetModel target = cpu_target_model();
  // stitch, ilp and greedy make a kernel that reads a dot's result by elements
  // or rows that dot's epilogue (dot_epilogues.h), run inside the dot's call.
  // The CPU executable runs them; the CUDA one does not yet (for_gpu: false).
  // Off under a fusion cap (max_fusions), which counts the planner's merges only.
  bool dot_epilogues = true;
  // The pipeline's `attention` stage (ir/attention_pattern.h) recognises
  // scaled-dot-product attention as one op on the CPU; off: the graph keeps
  // its dots and softmax (an attention op written in the graph still runs as one call).
  bool attention = true;
  // The pipeline's `conv` stage (ir/conv_expand.h) keeps f32 convolutions
  // that are not depthwise as one library call each on the CPU (oneDNN);
  // off: every conv becomes its composite (im2col into a dot).
  bool conv_calls = true;
  // With conv_calls: the convolutions channels-last, their layout transposes
  // moved until they cancel (ir/channels_last.h); off: [N, C, spatial...].
  bool channels_last = true;
  // The pipeline's `widen-floats` stage (ir/widen_floats.h): f16 and bf16
  // values the graph computes stay in f32 from op to op (CompileOptions::f32_intermediates).
  bool f32_intermediates = false;
  // The ilp planner's limit on each CBC solve; where CBC has not proven its
  // packing optimal by then (or the cycle cuts need more than 100 rounds),
  // the plan takes the DP + beam search's patterns over the same space if
  // they score higher (PlanSearchReport::beam_fallback).
  double ilp_time_limit_seconds = 60;

  static constexpr int64_t kCpuRowHoldBytes = 512 * 1024;
  static constexpr int64_t kGpuRowHoldBytes = 48 * 1024;
  // The GPU's options, scored with `arch`'s model (gpu_target_model).
  static PlanOptions for_gpu(const std::string& arch = "sm_90") {
    PlanOptions o;
    o.row_hold_bytes = kGpuRowHoldBytes;
    o.target = gpu_target_model(arch);
    o.dot_epilogues = false;
    return o;
  }
};

// The cap `options` asks for: max_fusions, or $STITCH_MAX_FUSIONS when that
// is -1 (UserError unless a non-negative integer), or -1 for none.
int resolve_max_fusions(const PlanOptions& options);
// Whether `options` asks for dot epilogues: dot_epilogues, unless
// $STITCH_DOT_EPILOGUES is 0 (UserError "NAME=VALUE: not 0 or 1" unless 0, 1
// or unset).
bool resolve_dot_epilogues(const PlanOptions& options);
// Whether `options` asks for the attention pattern: attention, unless
// $STITCH_ATTENTION is 0 (the same rules).
bool resolve_attention(const PlanOptions& options);
// Whether `options` asks for convolution calls: conv_calls, unless
// $STITCH_CONV_CALLS is 0 (the same rules).
bool resolve_conv_calls(const PlanOptions& options);
// Whether `options` asks for channels-last convolutions: channels_last,
// unless $STITCH_CHANNELS_LAST is 0 (the same rules).
bool resolve_channels_last(const PlanOptions& options);

// What a searching planner (stitch, ilp) found. The objective is the seconds
// its stitching saves by the delta evaluator's estimate: xla's kernels (with
// small dots fused) less the kernels after stitching, before loop kernels
// are absorbed and packed.
// A pattern a search chose: xla's kernels it joins (each by its first root's
// value name), the delta evaluator's score, and whether it was merged (a
// pattern that would close a cycle through another is left apart).
struct ChosenPattern {
  std::vector<std::string> kernels;
  double score_seconds = 0;
  bool merged = true;
};

struct PlanSearchReport {
  double objective = 0;
  int patterns = 0;     // patterns merged
  int evaluations = 0;  // candidate patterns scored
  std::vector<ChosenPattern> chosen;  // in the DAG's order of their heads
  bool optimal = true;  // ilp: CBC proved the packing optimal
  int cycle_cuts = 0;   // ilp: constraints added to break cycles between patterns
  double solve_seconds = 0;
  // ilp: the exact choice was not proven (CBC's time limit, or cycle cuts
  // that did not converge in 100 rounds) and the beam search's patterns,
  // which scored higher, were merged instead.
  bool beam_fallback = false;
};

FusionPlan plan(const Graph& g, PlannerKind kind, const PlanOptions& options = {},
                PlanSearchReport* report = nullptr);

// Operator-at-a-time: one kernel per op.
FusionPlan plan_none(const Graph& g);
// The XLA rules (docs/fusion.md): thread composition only. max_fusions as
// resolved (-1: no cap).
FusionPlan plan_xla(const Graph& g, int max_fusions = -1, int* fusions_applied = nullptr);
// FusionStitching's block composition across reductions (docs/fusion.md, The
// `stitch` planner): xla's plan, then the patterns of kernels that may be one
// stitched kernel, chosen by approximate DP + beam search on their scores.
FusionPlan plan_stitch(const Graph& g, int max_fusions = -1, int64_t row_hold_bytes = PlanOptions::kCpuRowHoldBytes,
                       PlanSearchReport* report = nullptr, const TargetModel& target = cpu_target_model());
// The same patterns, chosen exactly: a set packing solved by CBC, cycles
// between patterns cut and solved again (FusionStitching 2019 §4.1).
FusionPlan plan_ilp(const Graph& g, int max_fusions = -1, int64_t row_hold_bytes = PlanOptions::kCpuRowHoldBytes,
                    PlanSearchReport* report = nullptr, const TargetModel& target = cpu_target_model(),
                    double time_limit_seconds = 60);
// The first, greedy form: xla's plan, then each kernel holding a reduction
// absorbs every neighbour it may be stitched with.
FusionPlan plan_greedy(const Graph& g, int max_fusions = -1, int64_t row_hold_bytes = PlanOptions::kCpuRowHoldBytes);

}  // namespace stitch
