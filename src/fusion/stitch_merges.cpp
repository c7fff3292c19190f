#include "fusion/stitch_merges.h"

#include <algorithm>
#include <cstdint>
#include <unordered_set>

#include <fmt/format.h>

#include "fusion/dot_epilogues.h"
#include "fusion/legality.h"
#include "fusion/planner.h"
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

// Kernels the pack step scans past each small kernel for a partner: packing
// saves a launch, so a partner far away in the order is worth no more than a
// near one, and the scan stays linear in the graph.
constexpr int kPackScan = 64;

int64_t edge_key(int producer, int consumer) { return (int64_t{producer} << 32) | uint32_t(consumer); }

}  // namespace

// Profitability, apart from legality: why stitching `nodes` would make each
// block re-read more than it can hold, or nothing.
// Rows (innermost reductions) are held up to `row_hold_bytes` (PlanOptions):
// on the CPU a block's rows stay in the core's L2 between phases.
std::optional<std::string> reread_refusal(const Graph& g, const std::vector<int>& nodes, const std::vector<int>& roots,
                                          const StitchedDomain& domain, int64_t row_hold_bytes) {
  // A symbolic row is assumed to fit (a model's hidden or sequence dim, a
  // few thousand elements), so its phases need no walk.
  const bool symbolic = std::any_of(domain.axes.begin(), domain.axes.end(),
                                    [&](size_t a) { return !domain.shape[a].is_static(); });
  if (symbolic && domain.innermost()) return std::nullopt;
  const int64_t hold = domain.innermost() ? std::max(row_hold_bytes, kBlockHoldBytes) : kBlockHoldBytes;
  const StitchedReread reread = stitched_reread(g, nodes, roots, domain, hold);
  const int64_t bytes = reread.block_bytes();
  if (bytes < 0) {
    // A symbolic column is a batch dim, unbounded, and xla's split costs
    // little at any size.
    return fmt::format("a block would re-read a column of symbolic length x {} x {} B between phases",
                       reread.block_width, reread.bytes_per_element);
  }
  if (bytes <= hold) return std::nullopt;
  return fmt::format("a block would re-read {} x {} x {} B = {} KiB between phases, over the {} KiB it holds",
                     reread.reduced_extent, reread.block_width, reread.bytes_per_element, bytes / 1024,
                     hold / 1024);
}

StitchMerges::StitchMerges(const Graph& g, FusionPlan xla_plan, int max_fusions, int budget, int64_t row_hold_bytes)
    : row_hold_bytes_(row_hold_bytes),
      g_(g),
      dag_(g, std::move(xla_plan.groups)),
      refusals_(std::move(xla_plan.refusals)),
      max_fusions_(max_fusions),
      budget_(budget) {
  for (int i = 0; i < static_cast<int>(refusals_.size()); ++i) {
    const FusionRefusal& r = refusals_[i];
    if (r.relation == FusionRefusal::Relation::ProducerConsumer) refusal_of_[edge_key(r.producer, r.consumer)] = i;
  }
  for (ValueId v : g.params()) input_consumers_[v.index];
  for (int c = 0; c < static_cast<int>(g.nodes().size()); ++c) {
    for (ValueId v : g.nodes()[c].inputs) {
      auto it = input_consumers_.find(v.index);
      if (g.value(v).producer < 0 && it != input_consumers_.end()) it->second.push_back(c);
    }
  }
}

StitchMerges StitchMerges::from_xla(const Graph& g, int max_fusions, int64_t row_hold_bytes) {
  int applied = 0;
  FusionPlan base = plan_xla(g, max_fusions, &applied);
  StitchMerges merges(g, std::move(base), max_fusions, max_fusions < 0 ? -1 : max_fusions - applied, row_hold_bytes);
  merges.fuse_small_dots();
  merges.check_dag("xla's plan and the small dots");
  return merges;
}

// xla's plan puts every reduction among its kernel's roots (a reduction is
// never recomputed in a consumer), so its kind says whether it holds one,
// and the merges here keep that true.
bool StitchMerges::has_reduction(int gi) const {
  const GroupKind kind = dag_.group(gi).kind;
  return kind == GroupKind::Reduction || kind == GroupKind::Stitched;
}

// Nodes of group b that read a root of group a, as (root, reader) edges.
std::vector<std::pair<int, int>> StitchMerges::edges(int a, int b) const {
  std::vector<std::pair<int, int>> out;
  const FusionGroup& gb = dag_.group(b);
  for (int r : dag_.group(a).roots) {
    if (gb.contains(r)) continue;
    for (int c : dag_.consumers(r))
      if (gb.contains(c)) out.emplace_back(r, c);
  }
  return out;
}

// Groups that are neighbours of a in the DAG, or (siblings) reduction
// kernels reading one of its inputs from memory: every group a merge with
// a might concern, ascending by position in the DAG's order.
std::vector<int> StitchMerges::candidates(int a) const {
  std::vector<int> out;
  // The kNeighbourScan nearest to a in the order: xla's rules can make a
  // kernel read (or be read by) dozens of others (a residual sum recomputed
  // in every later kernel), and a far neighbour is rarely a legal merge (the
  // path between them would leave the kernel).
  auto nearest = [&](std::vector<int> groups) {
    if (groups.size() > static_cast<size_t>(kNeighbourScan)) {
      auto distance = [&](int gj) { return std::abs(dag_.position(gj) - dag_.position(a)); };
      std::nth_element(groups.begin(), groups.begin() + kNeighbourScan, groups.end(),
                       [&](int x, int y) { return distance(x) < distance(y); });
      groups.resize(kNeighbourScan);
    }
    return groups;
  };
  // Siblings: reduction kernels reading one value a reads, the nearest per
  // value (a value every layer of a model reads, an attention mask, would
  // make the steps quadratic otherwise).
  auto add_siblings = [&](std::vector<int> readers) {
    std::erase_if(readers, [&](int gj) { return gj == a || !has_reduction(gj); });
    for (int gj : nearest(std::move(readers))) out.push_back(gj);
  };
  for (int p : nearest(dag_.predecessors(a))) {
    out.push_back(p);
    add_siblings(dag_.successors(p));
  }
  for (int s : nearest(dag_.successors(a))) out.push_back(s);
  std::vector<int> seen;
  for (int n : dag_.group(a).nodes) {
    for (ValueId v : g_.nodes()[n].inputs) {
      auto it = input_consumers_.find(v.index);
      if (it == input_consumers_.end() || std::find(seen.begin(), seen.end(), v.index) != seen.end()) continue;
      seen.push_back(v.index);
      // The readers nearest a in node order (a proxy for the DAG's order
      // that needs no search): kNeighbourScan on each side of a's first node.
      const std::vector<int>& readers = it->second;
      const auto at = std::lower_bound(readers.begin(), readers.end(), dag_.group(a).nodes.front()) - readers.begin();
      const long first = std::max<long>(0, at - kNeighbourScan), last = std::min<long>(readers.size(), at + kNeighbourScan);
      std::vector<int> groups;
      for (long i = first; i < last; ++i)
        for (int gj : dag_.groups_of(readers[i])) groups.push_back(gj);
      add_siblings(std::move(groups));
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  std::erase(out, a);
  std::sort(out.begin(), out.end(), [&](int x, int y) { return dag_.position(x) < dag_.position(y); });
  return out;
}

// Merges b into a when the merged kernel may be stitched; on a refusal,
// the unfused edges between them carry its reason.
bool StitchMerges::try_stitch(int a, int b, const DeltaEvaluator* scored) {
  // b reads a's results (block composition), or a reads b's: a producer
  // kernel recomputed in each phase instead of writing its result.
  std::vector<std::pair<int, int>> reads = edges(a, b);
  for (auto edge : edges(b, a)) reads.push_back(edge);
  if (reads.empty()) {
    // Sibling reduction kernels sharing an input: merged only as a tile group.
    if (!has_reduction(b) || !shares_input(a, b) || merge_refusal(a, b, true)) return false;
  } else if (std::optional<Refusal> refusal = merge_refusal(a, b)) {
    for (auto [p, c] : reads) explain(p, c, {refusal->cause, "stitch: " + refusal->reason});
    return false;
  }
  if (scored) {
    FusionGroup merged{GroupKind::Stitched, dag_.merged_nodes(a, b), dag_.merged_roots(a, b)};
    const double apart = scored->group_seconds(g_, dag_.group(a)) + scored->group_seconds(g_, dag_.group(b));
    const double together = scored->group_seconds(g_, merged);
    if (together >= apart) {
      const Refusal unprofitable{RefusalCause::Unprofitable,
                                 fmt::format("stitch: not profitable: one kernel would take {:.3g} us, the two apart {:.3g} us",
                                             together * 1e6, apart * 1e6)};
      for (auto [p, c] : reads) explain(p, c, unprofitable);
      return false;
    }
  }
  merge(a, b);
  return true;
}

void StitchMerges::stitch_greedily(const DeltaEvaluator* scored) {
  for (int a : dag_.order()) {
    if (!dag_.alive(a) || !has_reduction(a)) continue;
    // Each candidate is tried once while a grows: a refusal stands (a larger
    // kernel only makes a cycle, a limit or a re-read more likely), so the
    // expensive checks run once per neighbour, not once per merge.
    std::unordered_set<int> tried;
    bool grew = true;
    while (grew) {
      grew = false;
      for (int b : candidates(a)) {
        if (!tried.insert(b).second || dag_.group(b).kind == GroupKind::Library) continue;
        if (try_stitch(a, b, scored)) {
          grew = true;
          break;
        }
      }
    }
  }
}

double StitchMerges::plan_seconds(const DeltaEvaluator& evaluator) const {
  double total = 0;
  for (int gi : dag_.order()) total += evaluator.group_seconds(g_, dag_.group(gi));
  return total;
}

// A small dot (kSmallDotTerms) read only by one loop kernel, elementwise,
// joins that kernel (docs/fusion.md, Small dots): the kernel computes each
// element of the dot where it reads it. f32, f64 and integer results only:
// an f16/bf16 result would be rounded twice on the way from the double sum.
void StitchMerges::fuse_small_dots() {
  for (int a : dag_.order()) {
    if (!dag_.alive(a) || dag_.group(a).nodes.size() != 1) continue;
    const int dot = dag_.group(a).nodes.front();
    if (!is_small_dot(dot) || dag_.is_output(dot) || dag_.successors(a).size() != 1) continue;
    const int consumer = dag_.successors(a).front();
    if (dag_.group(consumer).kind != GroupKind::Loop || has_reduction(consumer)) continue;
    const Shape& shape = g_.type(g_.nodes()[dot].output).shape;
    bool elementwise = true;
    for (auto [p, c] : edges(a, consumer)) {
      elementwise = elementwise && is_elementwise(g_.nodes()[c].op) && g_.type(g_.nodes()[c].output).shape == shape;
    }
    if (!elementwise || dag_.merge_refusal(a, consumer)) continue;
    if (budget_spent()) return;
    // The dot's operands may now be computed inside the merged kernel (the
    // consumer held copies of cheap producers): the DAG drops the roots no
    // other kernel reads, and the kernels left without any (GroupDag).
    merge(a, consumer, GroupKind::Loop);
  }
}

bool StitchMerges::is_small_dot(int n) const {
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
// True when a pass absorbed a kernel.
bool StitchMerges::absorb_pass() {
  bool changed = false;
  for (int a : dag_.order()) {
    if (!dag_.alive(a) || dag_.group(a).kind != GroupKind::Loop || dag_.group(a).roots.empty()) continue;
    // A kernel that absorbs a computes every node of a: the candidates are
    // the kernels computing a's rarest node (the first may be a literal
    // that thousands of kernels recompute).
    int rarest = dag_.group(a).nodes.front();
    for (int n : dag_.group(a).nodes)
      if (dag_.groups_of(n).size() < dag_.groups_of(rarest).size()) rarest = n;
    for (int b : dag_.groups_of(rarest)) {
      if (b == a || dag_.group(b).kind != GroupKind::Loop || dag_.group(b).roots.empty()) continue;
      if (!absorbs(dag_.group(b), dag_.group(a)) || dag_.merge_refusal(a, b)) continue;
      if (budget_spent()) return false;
      ++applied_;
      FusionGroup into = dag_.group(b);
      into.roots.insert(into.roots.end(), dag_.group(a).roots.begin(), dag_.group(a).roots.end());
      dag_.merge(b, a, std::move(into));
      changed = true;
      break;
    }
  }
  return changed;
}

bool StitchMerges::absorbs(const FusionGroup& into, const FusionGroup& from) const {
  // The cheap tests first: a kernel recomputed in dozens of others (a
  // residual sum) is tried against each of them.
  if (from.nodes.size() > into.nodes.size()) return false;
  const Shape& shape = g_.type(g_.nodes()[into.roots.front()].output).shape;
  auto same_shape = [&](int r) { return g_.type(g_.nodes()[r].output).shape == shape; };
  if (!std::all_of(into.roots.begin(), into.roots.end(), same_shape) ||
      !std::all_of(from.roots.begin(), from.roots.end(), same_shape))
    return false;
  // Both node lists ascend: one merge walk.
  return std::includes(into.nodes.begin(), into.nodes.end(), from.nodes.begin(), from.nodes.end());
}

// Kernel packing (DESIGN.md, Schedules and compositions): small loop
// kernels with no data between them become one kernel, each root in its own
// part of the grid (docs/lowering.md, Kernel packing), which saves a launch
// where a launch costs as much as the work. Small: every root a static
// kPackElements or fewer elements. Each kernel takes partners from the next
// kPackScan small kernels in the order.
void StitchMerges::pack_small_loops() {
  std::vector<int> loops;
  for (int gi : dag_.order())
    if (dag_.group(gi).kind == GroupKind::Loop && !dag_.group(gi).roots.empty()) loops.push_back(gi);
  // A kernel of only transposes that dots read as B is dropped by the CPU
  // executable (the gemm reads them transposed); packed with other roots it
  // would copy the weights on every run.
  const std::vector<bool> folded = dot_operand_transposes(g_);
  auto folds = [&](int gi) {
    const std::vector<int>& roots = dag_.group(gi).roots;
    return std::all_of(roots.begin(), roots.end(), [&](int r) { return folded[static_cast<size_t>(r)]; });
  };
  for (size_t i = 0; i < loops.size(); ++i) {
    const int a = loops[i];
    if (!dag_.alive(a)) continue;
    int scanned = 0;
    for (size_t j = i + 1; j < loops.size() && scanned < kPackScan; ++j) {
      const int b = loops[j];
      if (!dag_.alive(b)) continue;
      ++scanned;
      if (folds(a) != folds(b)) continue;
      const bool small = packable(dag_.group(a)) && packable(dag_.group(b));
      if (!small && !same_parallelism(dag_.group(a), dag_.group(b))) continue;
      if (!edges(a, b).empty() || !edges(b, a).empty() || dag_.merge_refusal(a, b)) continue;
      if (budget_spent()) return;
      merge(a, b, GroupKind::Loop);
    }
  }
}

bool StitchMerges::same_parallelism(const FusionGroup& a, const FusionGroup& b) const {
  // One shape, or one static element count (a transposed root beside its
  // untransposed siblings: each gets an equal part of the grid).
  auto elements = [&](int r) {
    int64_t n = 1;
    for (const Dim& d : g_.type(g_.nodes()[r].output).shape) {
      if (!d.is_static()) return int64_t{-1};
      n *= d.extent();
    }
    return n;
  };
  const Shape& shape = g_.type(g_.nodes()[a.roots.front()].output).shape;
  const int64_t count = elements(a.roots.front());
  auto same = [&](int r) {
    return g_.type(g_.nodes()[r].output).shape == shape || (count >= 0 && elements(r) == count);
  };
  return std::all_of(a.roots.begin(), a.roots.end(), same) && std::all_of(b.roots.begin(), b.roots.end(), same);
}

bool StitchMerges::packable(const FusionGroup& grp) const {
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

// True when a node of a and a node of b read one value from outside both: a
// value one of them computes is not among its external operands, so the two
// sorted lists (cached by the DAG) meet exactly there.
bool StitchMerges::shares_input(int a, int b) const {
  const std::vector<int>& x = dag_.external_operands(a);
  const std::vector<int>& y = dag_.external_operands(b);
  for (auto i = x.begin(), j = y.begin(); i != x.end() && j != y.end();) {
    if (*i == *j) return true;
    *i < *j ? ++i : ++j;
  }
  return false;
}

// Reductions over different axes of one tile a block holds (tile_group.h;
// docs/fusion.md, Tile groups), taken only when there is more than one
// block: a tile kernel of one block would leave the rest of the machine idle.
bool StitchMerges::is_tile_merge(const std::vector<int>& nodes, const std::vector<int>& roots) const {
  TileDomain domain;
  if (!tile_group_problem(g_, nodes, roots, &domain).empty()) return false;
  const Shape outer = domain.outer_shape();
  return std::any_of(outer.begin(), outer.end(), [](const Dim& d) { return !d.is_static() || d.extent() > 1; });
}

namespace {

// The node cap first: it costs nothing, where the stitched check walks the
// whole merged kernel.
std::optional<Refusal> node_cap_refusal(const std::vector<int>& nodes) {
  const FusionLimits limits;
  if (static_cast<int>(nodes.size()) <= limits.max_nodes_per_group) return std::nullopt;
  return Refusal{RefusalCause::Budget,
                 fmt::format("the kernel would have {} ops, over the limit of {}", nodes.size(), limits.max_nodes_per_group)};
}

// What a block re-reads past what it holds is a budget (a named gate), not a
// question of correctness.
std::optional<Refusal> reread_budget(const Graph& g, const std::vector<int>& nodes, const std::vector<int>& roots,
                                     const StitchedDomain& domain, int64_t row_hold_bytes) {
  if (auto reason = reread_refusal(g, nodes, roots, domain, row_hold_bytes)) return Refusal{RefusalCause::Budget, *reason};
  return std::nullopt;
}

}  // namespace

std::optional<Refusal> StitchMerges::kernel_refusal(const std::vector<int>& nodes, const std::vector<int>& roots,
                                                    bool* tile_out) const {
  if (auto reason = node_cap_refusal(nodes)) return reason;
  StitchedDomain domain;
  const std::string problem = stitched_group_problem(g_, nodes, roots, &domain);
  // A tile holds at most kTileBytes, so it needs no re-read check.
  const bool tile = !problem.empty() && is_tile_merge(nodes, roots);
  if (tile_out) *tile_out = tile;
  if (!problem.empty() && !tile) return Refusal{RefusalCause::Illegal, problem};
  if (!tile) return reread_budget(g_, nodes, roots, domain, row_hold_bytes_);
  return std::nullopt;
}

// `siblings`: a and b read none of each other's results; they merge only as
// a tile group, so every merge a stitched group allows stays as it was.
std::optional<Refusal> StitchMerges::merge_refusal(int a, int b, bool siblings) const {
  const std::vector<int> nodes = dag_.merged_nodes(a, b);
  const std::vector<int> roots = dag_.merged_roots(a, b);
  if (auto reason = node_cap_refusal(nodes)) return reason;
  // The cycle first: it is the cheaper check, and no kernel rule can allow
  // a merge that would make one.
  if (auto reason = dag_.cycle_refusal(a, b)) return Refusal{RefusalCause::Illegal, std::move(*reason)};
  StitchedDomain domain;
  std::string problem = stitched_group_problem(g_, nodes, roots, &domain);
  const bool tile = !problem.empty() && is_tile_merge(nodes, roots);
  if (siblings && !tile) return Refusal{RefusalCause::Illegal, problem.empty() ? "not a tile group" : problem};
  if (!problem.empty() && !tile) return Refusal{RefusalCause::Illegal, problem};
  if (auto reason = dag_.pair_limits_refusal(a, b)) return reason;
  if (!tile) {
    if (auto reason = reread_budget(g_, nodes, roots, domain, row_hold_bytes_)) return reason;
  }
  if (budget_spent()) return Refusal{RefusalCause::Budget, budget_reason()};
  return std::nullopt;
}

std::string StitchMerges::budget_reason() const {
  return fmt::format("STITCH_MAX_FUSIONS={} fusions already applied", max_fusions_);
}

void StitchMerges::merge_tile_siblings() {
  for (int a : dag_.order()) {
    if (!dag_.alive(a) || !has_reduction(a)) continue;
    for (int b : candidates(a)) {
      if (!dag_.alive(a) || !dag_.alive(b) || !has_reduction(b)) continue;
      if (!edges(a, b).empty() || !edges(b, a).empty() || !shares_input(a, b)) continue;
      if (!merge_refusal(a, b, true)) merge(a, b);
    }
  }
}

const Shape* StitchMerges::loop_shape(const FusionGroup& grp) const {
  if (grp.kind != GroupKind::Loop || grp.roots.empty()) return nullptr;
  const Shape& shape = g_.type(g_.nodes()[grp.roots.front()].output).shape;
  for (int r : grp.roots)
    if (g_.type(g_.nodes()[r].output).shape != shape) return nullptr;
  return &shape;
}

bool StitchMerges::reads_in_place(int a, int b, const Shape& shape, const Shape& consumer_shape) const {
  const std::vector<std::pair<int, int>> reads = edges(a, b);
  auto elementwise_at = [&](int n, const Shape& at) {
    return is_elementwise(g_.nodes()[n].op) && g_.type(g_.nodes()[n].output).shape == at;
  };
  return !reads.empty() && std::all_of(reads.begin(), reads.end(), [&](std::pair<int, int> read) {
    if (consumer_shape == shape) return elementwise_at(read.second, shape);
    // A reshape to b's shape, read only by b's elementwise ops at that shape: a
    // reshape keeps the linear index, so b reads the value where a writes it.
    const Node& reader = g_.nodes()[read.second];
    if (reader.op != OpKind::Reshape || g_.type(reader.output).shape != consumer_shape) return false;
    const std::vector<int>& users = dag_.consumers(read.second);
    return std::all_of(users.begin(), users.end(), [&](int u) {
      return dag_.contains(b, u) && elementwise_at(u, consumer_shape);
    });
  });
}

// Producer-consumer multi-output fusion (docs/fusion.md, Loop producers): xla
// recomputes a cheap producer in each consumer kernel but leaves an expensive
// one (a sigmoid read by two gates) in a kernel of its own, which writes its
// result for every consumer to read back. Merged into its first consumer of
// the same shape (or reading it through a reshape to its own shape: a linear
// layer's biased product that the backward saves, and its GELU), the producer
// is computed once per element where that consumer reads it (the lowering
// evaluates a value once per index) and written only for the others. Producers in the DAG's order, consumers by
// position; each merge re-reads the merged kernel's consumers.
void StitchMerges::fuse_loop_producers(const DeltaEvaluator* scored) {
  for (int a : dag_.order()) {
    bool merged = true;
    while (merged && dag_.alive(a)) {
      merged = false;
      const Shape* shape = loop_shape(dag_.group(a));
      if (!shape) break;
      for (int c : dag_.successors(a)) {
        const Shape* consumer_shape = loop_shape(dag_.group(c));
        if (!consumer_shape || !reads_in_place(a, c, *shape, *consumer_shape)) continue;
        if (dag_.merge_refusal(a, c)) continue;
        if (scored) {
          const FusionGroup together{GroupKind::Loop, dag_.merged_nodes(a, c), dag_.merged_roots(a, c)};
          const double apart = scored->group_seconds(g_, dag_.group(a)) + scored->group_seconds(g_, dag_.group(c));
          if (scored->group_seconds(g_, together) >= apart) continue;
        }
        if (budget_spent()) return;
        merge(a, c, GroupKind::Loop);
        merged = true;
        break;
      }
    }
  }
}

void StitchMerges::absorb_loops() {
  while (absorb_pass()) {
  }
}

void StitchMerges::check_dag(std::string_view after) const {
  const std::string problems = dag_.invariant_violations();
  if (!problems.empty()) {
    fail_internal(fmt::format("the fusion groups broke an invariant after {}:\n{}", after, problems), __FILE__, __LINE__);
  }
}

FusionPlan StitchMerges::finish(std::string planner) {
  check_dag(planner + "'s merges");
  FusionPlan plan;
  plan.planner = std::move(planner);
  plan.groups = dag_.take_groups();
  plan.refusals = std::move(refusals_);
  drop_fused_refusals(plan);
  finalize_plan(g_, plan);
  return plan;
}

void StitchMerges::merge(int a, int b, GroupKind kind) {
  ++applied_;
  FusionGroup merged;
  merged.kind = kind;
  merged.nodes = dag_.merged_nodes(a, b);
  merged.roots = dag_.merged_roots(a, b);
  dag_.merge(a, b, std::move(merged));
}

void StitchMerges::merge_all(const std::vector<int>& members) {
  applied_ += static_cast<int>(members.size()) - 1;
  dag_.merge_all(members, GroupKind::Stitched);
}

void StitchMerges::explain(int producer, int consumer, const Refusal& refusal) {
  auto it = refusal_of_.find(edge_key(producer, consumer));
  if (it == refusal_of_.end()) return;
  refusals_[it->second].reason = refusal.reason;
  refusals_[it->second].cause = refusal.cause;
}

}  // namespace stitch
