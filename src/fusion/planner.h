// Fusion planners (DESIGN.md, Fusion planners): each turns a canonical graph
// into a FusionPlan. Legality lives in legality.h, shared by all of them.
#pragma once

#include <optional>
#include <string_view>

#include "fusion/fusion_plan.h"

namespace stitch {

enum class PlannerKind : uint8_t { None, Xla, Stitch, Ilp };

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

  static constexpr int64_t kCpuRowHoldBytes = 512 * 1024;
  static constexpr int64_t kGpuRowHoldBytes = 48 * 1024;
  static PlanOptions for_gpu() {
    PlanOptions o;
    o.row_hold_bytes = kGpuRowHoldBytes;
    return o;
  }
};

// The cap `options` asks for: max_fusions, or $STITCH_MAX_FUSIONS when that
// is -1 (UserError unless a non-negative integer), or -1 for none.
int resolve_max_fusions(const PlanOptions& options);

// Throws UserError for a planner that is not implemented yet (ilp).
FusionPlan plan(const Graph& g, PlannerKind kind, const PlanOptions& options = {});

// Operator-at-a-time: one kernel per op.
FusionPlan plan_none(const Graph& g);
// The XLA rules (docs/fusion.md): thread composition only. max_fusions as
// resolved (-1: no cap).
FusionPlan plan_xla(const Graph& g, int max_fusions = -1, int* fusions_applied = nullptr);
// FusionStitching's block composition across reductions (docs/fusion.md, The
// `stitch` planner): xla's plan, then each kernel holding a reduction absorbs
// the kernels reading its results while the result is a stitched group.
FusionPlan plan_stitch(const Graph& g, int max_fusions = -1,
                       int64_t row_hold_bytes = PlanOptions::kCpuRowHoldBytes);

}  // namespace stitch
