// The `stitch` planner, greedy form (docs/fusion.md, The `stitch` planner):
// XLA's plan, then block composition across reductions (FusionStitching 2019
// §4): a kernel holding a reduction absorbs the kernels that read its results,
// and those whose results it reads, whenever the merged kernel is a stitched
// group (stitched_group.h), the shared legality check allows it, and a block
// can hold what its later phases read again (reread_refusal); then a loop
// kernel that another recomputes whole gives its roots to it (absorb_one),
// and small independent loop kernels are packed (pack_one). The DP + beam
// search of DESIGN.md is a later refinement; this form already makes softmax,
// layernorm and their kin one kernel each.
#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "fusion/legality.h"
#include "fusion/planner.h"
#include "fusion/stitched_group.h"
#include "fusion/tile_group.h"

namespace stitch {
namespace {

// FusionStitching (2019 §4) stitches a reduction with its consumers only where
// a block holds the data between phases (shared memory, cache); past that the
// later phases re-read it from DRAM, a column with a large stride:
// column_reduce_sub at 8192 x 2048 stitched ran at 0.66x to 0.81x the speed of
// xla's two kernels (docs/benchmarks.md; docs/fusion.md, What a block re-reads). 48 KiB per block, as the row cache
// of the stitched lowering (docs/lowering.md, Row cache).
constexpr int64_t kBlockHoldBytes = 48 * 1024;

// Kernels this small are packed with independent neighbours: 64 Ki elements
// are one wave of 256-thread blocks on a 132-SM GPU at two blocks per SM, and
// a few microseconds of work on a CPU core, the order of a launch.
constexpr int64_t kPackElements = 64 * 1024;

// A dot whose contraction has at most this many terms (static) is computed
// where its elementwise consumer needs each element: a few multiply-adds per
// element instead of a library call and a round trip of its result through
// memory. Longer contractions re-read each operand row and column per output
// element and belong to cuBLAS/BLAS, which tile them.
constexpr int64_t kSmallDotTerms = 32;

// Profitability, apart from legality: why stitching `nodes` would make each
// block re-read more than it can hold, or nothing.
// Rows (innermost reductions) are held up to `row_hold_bytes` (PlanOptions):
// on the CPU a block's rows stay in the core's L2 between phases.
std::optional<std::string> reread_refusal(const Graph& g, const std::vector<int>& nodes, const std::vector<int>& roots,
                                          const StitchedDomain& domain, int64_t row_hold_bytes) {
  const StitchedReread reread = stitched_reread(g, nodes, roots, domain);
  const int64_t bytes = reread.block_bytes();
  if (bytes < 0) {
    // A symbolic row is assumed to fit (a model's hidden or sequence dim, a
    // few thousand elements); a symbolic column is a batch dim, unbounded,
    // and xla's split costs little at any size.
    if (domain.innermost()) return std::nullopt;
    return fmt::format("a block would re-read a column of symbolic length x {} x {} B between phases",
                       reread.block_width, reread.bytes_per_element);
  }
  const int64_t hold = domain.innermost() ? std::max(row_hold_bytes, kBlockHoldBytes) : kBlockHoldBytes;
  if (bytes <= hold) return std::nullopt;
  return fmt::format("a block would re-read {} x {} x {} B = {} KiB between phases, over the {} KiB it holds",
                     reread.reduced_extent, reread.block_width, reread.bytes_per_element, bytes / 1024,
                     hold / 1024);
}

class StitchPlanner {
 public:
  StitchPlanner(const Graph& g, FusionPlan base, int max_fusions, int budget, int64_t row_hold_bytes)
      : row_hold_bytes_(row_hold_bytes),
        g_(g),
        groups_(std::move(base.groups)),
        refusals_(std::move(base.refusals)),
        max_fusions_(max_fusions),
        budget_(budget) {
    for (const GraphOutput& out : g.outputs()) {
      int p = g.value(out.value).producer;
      if (p >= 0) outputs_.insert(p);
    }
  }

  FusionPlan run() {
    while (fuse_small_dot()) {
    }
    while (merge_one()) {
    }
    while (absorb_one()) {
    }
    while (pack_one()) {
    }
    FusionPlan plan;
    plan.planner = "stitch";
    plan.groups = std::move(groups_);
    plan.refusals = std::move(refusals_);
    finalize_plan(g_, plan);
    return plan;
  }

 private:
  bool has_reduction(const FusionGroup& grp) const {
    return std::any_of(grp.nodes.begin(), grp.nodes.end(), [&](int n) { return is_reduction(g_.nodes()[n].op); });
  }

  // Nodes of group b that read a root of group a, as (root, reader) edges.
  std::vector<std::pair<int, int>> edges(int a, int b) const {
    std::vector<std::pair<int, int>> out;
    for (int c : groups_[b].nodes) {
      for (ValueId v : g_.nodes()[c].inputs) {
        int p = g_.value(v).producer;
        if (p >= 0 && !groups_[b].contains(p) && std::binary_search(groups_[a].roots.begin(), groups_[a].roots.end(), p)) {
          out.emplace_back(p, c);
        }
      }
    }
    return out;
  }

  // The roots of a ∪ b: those still read by another kernel, and graph outputs.
  std::vector<int> merged_roots(int a, int b) const {
    std::vector<int> roots;
    for (int r : groups_[a].roots) roots.push_back(r);
    for (int r : groups_[b].roots) roots.push_back(r);
    std::sort(roots.begin(), roots.end());
    roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
    std::erase_if(roots, [&](int r) {
      if (outputs_.count(r)) return false;
      for (int gi = 0; gi < static_cast<int>(groups_.size()); ++gi) {
        if (gi == a || gi == b || groups_[gi].contains(r)) continue;
        for (int c : groups_[gi].nodes) {
          for (ValueId v : g_.nodes()[c].inputs)
            if (g_.value(v).producer == r) return false;
        }
      }
      return true;
    });
    return roots;
  }

  // Merges the first (reduction kernel, neighbour kernel) pair that may be
  // stitched; false when none is left.
  bool merge_one() {
    for (int a = 0; a < static_cast<int>(groups_.size()); ++a) {
      if (!has_reduction(groups_[a])) continue;
      for (int b = 0; b < static_cast<int>(groups_.size()); ++b) {
        if (b == a || groups_[b].kind == GroupKind::Library) continue;
        // b reads a's results (block composition), or a reads b's: a producer
        // kernel recomputed in each phase instead of writing its result.
        std::vector<std::pair<int, int>> reads = edges(a, b);
        for (auto edge : edges(b, a)) reads.push_back(edge);
        if (reads.empty()) {
          // Sibling reduction kernels sharing an input: merged only as a tile group.
          if (has_reduction(groups_[b]) && shares_input(a, b) && !merge_refusal(a, b, true)) {
            merge(a, b);
            return true;
          }
          continue;
        }
        std::optional<std::string> reason = merge_refusal(a, b);
        if (!reason) {
          merge(a, b);
          return true;
        }
        for (auto [p, c] : reads) explain(p, c, "stitch: " + *reason);
      }
    }
    return false;
  }

  // A small dot (kSmallDotTerms) read only by one loop kernel, elementwise,
  // joins that kernel (docs/fusion.md, Small dots): the kernel computes each
  // element of the dot where it reads it. f32, f64 and integer results only:
  // an f16/bf16 result would be rounded twice on the way from the double sum.
  // False when no such dot is left.
  bool fuse_small_dot() {
    for (int a = 0; a < static_cast<int>(groups_.size()); ++a) {
      if (groups_[a].nodes.size() != 1) continue;
      const int dot = groups_[a].nodes.front();
      if (!is_small_dot(dot) || outputs_.count(dot)) continue;
      int consumer = -1;
      bool one_consumer = true;
      for (int b = 0; b < static_cast<int>(groups_.size()); ++b) {
        if (b == a || edges(a, b).empty()) continue;
        if (consumer >= 0) one_consumer = false;
        consumer = b;
      }
      if (!one_consumer || consumer < 0) continue;
      if (groups_[consumer].kind != GroupKind::Loop || has_reduction(groups_[consumer])) continue;
      const Shape& shape = g_.type(g_.nodes()[dot].output).shape;
      bool elementwise = true;
      for (auto [p, c] : edges(a, consumer)) {
        elementwise = elementwise && is_elementwise(g_.nodes()[c].op) && g_.type(g_.nodes()[c].output).shape == shape;
      }
      if (!elementwise || check_merge_legality(g_, groups_, a, consumer)) continue;
      if (budget_ >= 0 && applied_ >= budget_) return false;
      merge(a, consumer, GroupKind::Loop);
      drop_unread_roots();
      return true;
    }
    return false;
  }

  // The dot's operands may now be computed inside the merged kernel (the
  // consumer held copies of cheap producers): a root no other kernel reads and
  // no output returns is no longer written, and a kernel left without roots
  // has no work.
  void drop_unread_roots() {
    for (FusionGroup& grp : groups_) {
      std::erase_if(grp.roots, [&](int r) {
        if (outputs_.count(r)) return false;
        for (const FusionGroup& other : groups_) {
          if (other.contains(r)) continue;
          for (int c : other.nodes) {
            for (ValueId v : g_.nodes()[c].inputs) {
              if (g_.value(v).producer == r) return false;
            }
          }
        }
        return true;
      });
    }
    std::erase_if(groups_, [](const FusionGroup& grp) { return grp.roots.empty(); });
  }

  bool is_small_dot(int n) const {
    const Node& node = g_.nodes()[n];
    if (node.op != OpKind::Dot) return false;
    const DType dtype = g_.type(node.output).dtype;
    if (dtype == DType::f16 || dtype == DType::bf16 || dtype == DType::boolean) return false;
    const Dim& terms = g_.type(node.inputs[0]).shape.back();
    return terms.is_static() && terms.extent() <= kSmallDotTerms;
  }

  // Multi-output loop kernels (docs/fusion.md, Absorbed roots): a loop
  // kernel whose every node another loop kernel already computes (xla
  // recomputes cheap producers in each consumer, and writes them once more
  // when they are graph outputs), with roots of the same shape, is dropped and
  // its roots written by the other: one pass over the inputs instead of two.
  // False when no such pair is left.
  bool absorb_one() {
    for (int a = 0; a < static_cast<int>(groups_.size()); ++a) {
      if (groups_[a].kind != GroupKind::Loop || groups_[a].roots.empty()) continue;
      for (int b = 0; b < static_cast<int>(groups_.size()); ++b) {
        if (b == a || groups_[b].kind != GroupKind::Loop || groups_[b].roots.empty()) continue;
        if (!absorbs(groups_[b], groups_[a]) || check_merge_legality(g_, groups_, a, b)) continue;
        if (budget_ >= 0 && applied_ >= budget_) return false;
        ++applied_;
        FusionGroup& into = groups_[b];
        into.roots.insert(into.roots.end(), groups_[a].roots.begin(), groups_[a].roots.end());
        std::sort(into.roots.begin(), into.roots.end());
        into.roots.erase(std::unique(into.roots.begin(), into.roots.end()), into.roots.end());
        groups_.erase(groups_.begin() + a);
        return true;
      }
    }
    return false;
  }

  bool absorbs(const FusionGroup& into, const FusionGroup& from) const {
    const Shape& shape = g_.type(g_.nodes()[into.roots.front()].output).shape;
    auto same_shape = [&](int r) { return g_.type(g_.nodes()[r].output).shape == shape; };
    return std::all_of(from.nodes.begin(), from.nodes.end(), [&](int n) { return into.contains(n); }) &&
           std::all_of(into.roots.begin(), into.roots.end(), same_shape) &&
           std::all_of(from.roots.begin(), from.roots.end(), same_shape);
  }

  // Kernel packing (DESIGN.md, Schedules and compositions): two small loop
  // kernels with no data between them become one kernel, each root in its own
  // part of the grid (docs/lowering.md, Kernel packing), which saves a launch
  // where a launch costs as much as the work. Small: every root a static
  // kPackElements or fewer elements. False when no pair is left.
  bool pack_one() {
    for (int a = 0; a < static_cast<int>(groups_.size()); ++a) {
      if (!packable(groups_[a])) continue;
      for (int b = a + 1; b < static_cast<int>(groups_.size()); ++b) {
        if (!packable(groups_[b]) || !edges(a, b).empty() || !edges(b, a).empty()) continue;
        if (check_merge_legality(g_, groups_, a, b)) continue;
        if (budget_ >= 0 && applied_ >= budget_) return false;
        merge(a, b, GroupKind::Loop);
        return true;
      }
    }
    return false;
  }

  bool packable(const FusionGroup& grp) const {
    if (grp.kind != GroupKind::Loop || grp.roots.empty()) return false;
    for (int r : grp.roots) {
      int64_t elements = 1;
      for (const Dim& d : g_.type(g_.nodes()[r].output).shape) {
        if (!d.is_static()) return false;
        elements *= d.extent();
      }
      if (elements > kPackElements) return false;
    }
    return true;
  }

  // True when a node of a and a node of b read one value from outside both.
  bool shares_input(int a, int b) const {
    std::set<int> read;
    for (int n : groups_[a].nodes) {
      for (ValueId v : g_.nodes()[n].inputs)
        if (!groups_[a].contains(g_.value(v).producer)) read.insert(v.index);
    }
    for (int n : groups_[b].nodes) {
      for (ValueId v : g_.nodes()[n].inputs)
        if (!groups_[b].contains(g_.value(v).producer) && read.count(v.index)) return true;
    }
    return false;
  }

  // Reductions over different axes of one tile a block holds (tile_group.h;
  // docs/fusion.md, Tile groups), taken only when there is more than one
  // block: a tile kernel of one block would leave the rest of the machine idle.
  bool is_tile_merge(const std::vector<int>& nodes, const std::vector<int>& roots) const {
    TileDomain domain;
    if (!tile_group_problem(g_, nodes, roots, &domain).empty()) return false;
    const Shape outer = domain.outer_shape();
    return std::any_of(outer.begin(), outer.end(), [](const Dim& d) { return !d.is_static() || d.extent() > 1; });
  }

  // `siblings`: a and b read none of each other's results; they merge only as
  // a tile group, so every merge a stitched group allows stays as it was.
  std::optional<std::string> merge_refusal(int a, int b, bool siblings = false) const {
    std::vector<int> nodes = groups_[a].nodes;
    nodes.insert(nodes.end(), groups_[b].nodes.begin(), groups_[b].nodes.end());
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    const std::vector<int> roots = merged_roots(a, b);
    StitchedDomain domain;
    std::string problem = stitched_group_problem(g_, nodes, roots, &domain);
    // A tile holds at most kTileBytes, so it needs no re-read check.
    const bool tile = !problem.empty() && is_tile_merge(nodes, roots);
    if (siblings && !tile) return problem.empty() ? "not a tile group" : problem;
    if (!problem.empty() && !tile) return problem;
    if (auto reason = check_merge_legality(g_, groups_, a, b)) return reason;
    if (!tile) {
      if (auto reason = reread_refusal(g_, nodes, roots, domain, row_hold_bytes_)) return reason;
    }
    if (budget_ >= 0 && applied_ >= budget_) {
      return fmt::format("STITCH_MAX_FUSIONS={} fusions already applied", max_fusions_);
    }
    return std::nullopt;
  }

  void merge(int a, int b, GroupKind kind = GroupKind::Stitched) {
    ++applied_;
    FusionGroup merged;
    merged.kind = kind;
    merged.nodes = groups_[a].nodes;
    merged.nodes.insert(merged.nodes.end(), groups_[b].nodes.begin(), groups_[b].nodes.end());
    std::sort(merged.nodes.begin(), merged.nodes.end());
    merged.nodes.erase(std::unique(merged.nodes.begin(), merged.nodes.end()), merged.nodes.end());
    merged.roots = merged_roots(a, b);
    groups_[a] = std::move(merged);
    groups_.erase(groups_.begin() + b);
    // Edges now inside one kernel need no reason any more.
    std::erase_if(refusals_, [&](const FusionRefusal& r) {
      if (r.relation == FusionRefusal::Relation::Siblings) {
        return std::any_of(groups_.begin(), groups_.end(),
                           [&](const FusionGroup& grp) { return grp.contains(r.producer) && grp.contains(r.consumer); });
      }
      return std::none_of(groups_.begin(), groups_.end(),
                          [&](const FusionGroup& grp) { return grp.contains(r.consumer) && !grp.contains(r.producer); });
    });
  }

  void explain(int producer, int consumer, const std::string& reason) {
    for (FusionRefusal& r : refusals_) {
      if (r.relation == FusionRefusal::Relation::ProducerConsumer && r.producer == producer && r.consumer == consumer) {
        r.reason = reason;
      }
    }
  }

  const int64_t row_hold_bytes_;
  const Graph& g_;
  std::vector<FusionGroup> groups_;
  std::vector<FusionRefusal> refusals_;
  std::set<int> outputs_;  // nodes whose value is a graph output
  const int max_fusions_;  // the whole plan's cap, for the refusal's text
  const int budget_;       // merges allowed after xla's fusions; -1: no cap
  int applied_ = 0;
};

}  // namespace

FusionPlan plan_stitch(const Graph& g, int max_fusions, int64_t row_hold_bytes) {
  int applied = 0;
  FusionPlan base = plan_xla(g, max_fusions, &applied);
  return StitchPlanner(g, std::move(base), max_fusions, max_fusions < 0 ? -1 : max_fusions - applied, row_hold_bytes)
      .run();
}

}  // namespace stitch
