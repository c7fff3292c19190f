#include "schedule/held_rows.h"

#include <algorithm>
#include <map>
#include <set>

#include "fusion/stitched_group.h"
#include "schedule/group_shared_memory.h"

namespace stitch::schedule {

int64_t row_lanes(const RowSchedule& row, int64_t len) {
  return row.kind == RowScheduleKind::BlockPerRow  ? block_per_row_threads(len, row.threads)
         : row.kind == RowScheduleKind::WarpPerRow ? kRowScheduleWarpSize
                                                   : row.lanes;
}

int64_t row_steps(const RowSchedule& row, int64_t len) {
  const int64_t lanes = row_lanes(row, len);
  return (len + lanes - 1) / lanes;
}

int64_t held_values_limit(int64_t threads) {
  constexpr int64_t kRegistersPerSm = 64 * 1024, kOwnRegisters = 32;
  return std::min(kHeldValuesPerThread, kRegistersPerSm / std::max<int64_t>(threads, 1) - kOwnRegisters);
}

bool held_rows_fit(const RowSchedule& row, int64_t len, int64_t values) {
  const int64_t threads = row.kind == RowScheduleKind::BlockPerRow ? block_per_row_threads(len, row.threads) : row.threads;
  return len > 0 && values > 0 && row_steps(row, len) * values <= held_values_limit(threads);
}

namespace {

// The values of the row's shape that a later phase reads again, computable
// before any total (the group's inputs, or what the first phase computes of
// them: a residual LayerNorm's x + bias + residual, not x and residual), and
// the values of `cacheable`; nothing when the group has no static row
// reducing its innermost axes. `len` is the row's length.
std::set<int> held_values(const Graph& g, const FusionGroup& group, const std::vector<int>& cacheable, int64_t* len,
                          int64_t* innermost = nullptr) {
  StitchedDomain domain;
  if (group.kind != GroupKind::Stitched || !stitched_group_problem(g, group.nodes, group.roots, &domain).empty() ||
      !domain.innermost() || domain.axes.empty()) {
    return {};
  }
  *len = 1;
  for (size_t a : domain.axes) {
    if (!domain.shape[a].is_static()) return {};
    *len *= domain.shape[a].extent();
  }
  if (innermost) *innermost = domain.shape.back().extent();
  // The phase a node is computed in at the earliest: a reduction of phase p
  // reads its input in phase p; another node once every total it reads is
  // known (0: none). Graph order is topological.
  std::map<int, int> read_in;
  for (size_t p = 0; p < domain.phases.size(); ++p) {
    for (int n : domain.phases[p]) read_in[n] = static_cast<int>(p);
  }
  std::map<int, int> ready;  // value index -> the first phase after the totals it reads
  // Values that read an input of the row's shape; the others (LayerNorm's
  // broadcast gamma) are the same for every row and cheap to read again.
  std::set<int> per_row;
  std::set<int> values;
  for (int n : group.nodes) {
    const Node& node = g.nodes()[static_cast<size_t>(n)];
    int at = 0;
    for (ValueId v : node.inputs) at = std::max(at, ready.count(v.index) ? ready.at(v.index) : 0);
    if (!is_reduction(node.op)) read_in[n] = at;
    ready[node.output.index] = is_reduction(node.op) ? read_in.at(n) + 1 : at;
    for (ValueId v : node.inputs) {
      const int producer = g.value(v).producer;
      const bool outside = producer < 0 || !group.contains(producer);
      const bool row_shaped = g.type(v).shape == domain.shape;
      if ((outside && row_shaped) || per_row.count(v.index)) per_row.insert(node.output.index);
      // Read again in a later phase, with no total in it: an input, or a per-row value of the first phase.
      const bool first_phase = outside || (per_row.count(v.index) && ready.at(v.index) == 0);
      if (row_shaped && first_phase && read_in.at(n) >= 1) values.insert(v.index);
    }
  }
  for (int r : group.roots) {
    const ValueId out = g.nodes()[static_cast<size_t>(r)].output;
    if (g.type(out).shape == domain.shape && ready.at(out.index) == 0 && per_row.count(out.index)) values.insert(out.index);
  }
  if (values.empty()) return {};
  for (int n : cacheable) values.insert(g.nodes()[static_cast<size_t>(n)].output.index);
  return values;
}

}  // namespace

std::vector<int> cacheable_rows(const Graph& g, const FusionGroup& group) {
  // Every cacheable value fits a budget this large.
  const std::optional<GroupSharedMemory> m = plan_stitched_shared_memory(g, group, RowSchedule{}, int64_t{1} << 40);
  return m ? m->cached : std::vector<int>{};
}

int64_t held_values_per_position(const Graph& g, const FusionGroup& group) {
  int64_t len = 0;
  return static_cast<int64_t>(held_values(g, group, cacheable_rows(g, group), &len).size());
}

std::optional<HeldRows> plan_held_rows(const Graph& g, const FusionGroup& group, const RowSchedule& row,
                                       const std::vector<int>& cacheable) {
  int64_t len = 0, innermost = 0;
  const std::set<int> values = held_values(g, group, cacheable, &len, &innermost);
  if (values.empty()) return std::nullopt;
  // The narrowest element along the row: of the held inputs and of the roots of the row's shape.
  const Shape& row_shape = g.type(ValueId{*values.begin()}).shape;
  int64_t narrowest = 8;
  for (int v : values) narrowest = std::min<int64_t>(narrowest, dtype_size(g.type(ValueId{v}).dtype));
  for (int r : group.roots) {
    const ValueId out = g.nodes()[static_cast<size_t>(r)].output;
    if (g.type(out).shape == row_shape) narrowest = std::min<int64_t>(narrowest, dtype_size(g.type(out).dtype));
  }
  const int64_t count = static_cast<int64_t>(values.size());
  // The widest vectors that split the row evenly: every thread's steps a
  // multiple of the width, none past the row's end, none across its innermost
  // axis. A block per row takes fewer threads, each holding whole vectors.
  for (int64_t v = kHeldVectorBytes / std::max<int64_t>(narrowest, 1); v >= 1; v /= 2) {
    RowSchedule r = row;
    if (v > 1 && row.kind == RowScheduleKind::BlockPerRow) {
      int64_t lanes = std::min(row_lanes(row, len), len / v) / kRowScheduleWarpSize * kRowScheduleWarpSize;
      while (lanes >= kRowScheduleWarpSize && len % (lanes * v) != 0) lanes -= kRowScheduleWarpSize;
      if (lanes < kRowScheduleWarpSize) continue;
      r.threads = lanes;
    }
    const int64_t lanes = row_lanes(r, len), steps = row_steps(r, len);
    if (v > 1 && (steps % v != 0 || lanes * steps != len || innermost % v != 0)) continue;
    if (!held_rows_fit(r, len, count)) continue;
    return HeldRows{std::vector<int>(values.begin(), values.end()), steps, v, r.threads};
  }
  return std::nullopt;
}

}  // namespace stitch::schedule
