#include "fusion/patterns.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <numeric>

#include <fmt/format.h>

#include "fusion/legality.h"
#include "fusion/node_index.h"

namespace stitch {

double objective(const std::vector<Pattern>& patterns) {
  double total = 0;
  for (const Pattern& p : patterns) total += p.score;
  return total;
}

namespace {

bool better(const Pattern& a, const Pattern& b) {
  if (a.score != b.score) return a.score > b.score;
  return a.members < b.members;
}

// Keeps `list` to the k best, unique.
void keep_best(std::vector<Pattern>& list, size_t k) {
  std::sort(list.begin(), list.end(), better);
  list.erase(std::unique(list.begin(), list.end(), [](const Pattern& a, const Pattern& b) { return a.members == b.members; }),
             list.end());
  if (list.size() > k) list.resize(k);
}

// Adds `p` to `list`, kept as keep_best leaves it (sorted, unique, at most
// k): a pattern of n kernels joins n lists, so a chain's patterns are not
// re-sorted per member.
void insert_best(std::vector<Pattern>& list, const Pattern& p, size_t k) {
  auto at = std::lower_bound(list.begin(), list.end(), p, better);
  if (static_cast<size_t>(at - list.begin()) >= k) return;
  if (at != list.end() && at->members == p.members) return;
  list.insert(at, p);
  if (list.size() > k) list.pop_back();
}

}  // namespace

PatternSpace::PatternSpace(const StitchMerges& merges, const DeltaEvaluator& evaluator, PatternOptions options)
    : merges_(merges), dag_(merges.dag()), convexity_(dag_), evaluator_(evaluator), options_(options) {
  const Graph& g = merges.graph();
  memory_readers_.resize(g.nodes().size());
  memory_readers_known_.assign(g.nodes().size(), 0);
  seconds_.assign(dag_.capacity(), 0);
  heads_.resize(dag_.capacity());
  // Per kernel, the best patterns holding it (whatever their head), and the
  // best stubs: sets that are no kernel yet (no reduction, not a stitched
  // group, or not profitable) but may become one with more kernels.
  std::vector<std::vector<Pattern>> containing(dag_.capacity()), stubs(dag_.capacity());
  const std::vector<int> order = dag_.order();
  for (int gi : order) seconds_[gi] = evaluator_.group_seconds(g, dag_.group(gi));
  const size_t k = static_cast<size_t>(options_.top_k);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int v = *it;
    if (dag_.group(v).kind == GroupKind::Library) continue;
    std::vector<std::pair<Pattern, int>> extensions;  // (pattern, consumer it extends through)
    std::vector<Pattern> new_stubs;
    for (int u : nearest_consumers(v)) {
      std::vector<std::vector<int>> through{{u}};
      for (const Pattern& p : containing[u]) through.push_back(p.members);
      for (const Pattern& p : stubs[u]) through.push_back(p.members);
      for (size_t i = 0; i < through.size(); ++i) {
        std::vector<int> members = through[i];
        if (std::find(members.begin(), members.end(), v) != members.end()) continue;
        members.push_back(v);
        Refusal why_not;
        bool stub = false;
        // Each extends a convex pattern or stub (or u alone) by v.
        std::optional<Pattern> p = evaluate(members, &why_not, &stub, v);
        if (i == 0 && !p) pair_reasons_[{v, u}] = why_not;
        if (p) extensions.emplace_back(*p, u);
        if (!p && stub) new_stubs.push_back(Pattern{members, 0});
      }
    }
    std::sort(extensions.begin(), extensions.end(), [](const auto& a, const auto& b) { return better(a.first, b.first); });
    std::vector<Pattern> found;
    for (const auto& [p, u] : extensions) found.push_back(p);
    // Pairs of the best extensions through different consumers.
    const size_t m = std::min<size_t>(extensions.size(), options_.combine);
    for (size_t i = 0; i < m; ++i) {
      for (size_t j = i + 1; j < m; ++j) {
        if (extensions[i].second == extensions[j].second) continue;
        std::vector<int> members = extensions[i].first.members;
        bool disjoint = true;
        for (int x : extensions[j].first.members) {
          if (x == v) continue;
          if (std::find(members.begin(), members.end(), x) != members.end()) disjoint = false;
          members.push_back(x);
        }
        if (!disjoint) continue;
        if (std::optional<Pattern> p = evaluate(members)) found.push_back(*p);
      }
    }
    keep_best(found, k);
    for (const Pattern& p : found) {
      heads_[p.members[0]].push_back(p);
      for (int member : p.members) insert_best(containing[member], p, k);
    }
    // Stubs: the largest first.
    std::sort(new_stubs.begin(), new_stubs.end(),
              [](const Pattern& a, const Pattern& b) { return a.members.size() > b.members.size(); });
    if (new_stubs.size() > k) new_stubs.resize(k);
    for (Pattern& p : new_stubs) {
      std::sort(p.members.begin(), p.members.end(), [&](int a, int b) { return dag_.position(a) < dag_.position(b); });
      for (int member : p.members) {
        if (stubs[member].size() < k) stubs[member].push_back(p);
      }
    }
  }
  for (std::vector<Pattern>& list : heads_) keep_best(list, k);
}

std::vector<int> PatternSpace::nearest_consumers(int v) const {
  std::vector<int> out;
  for (int u : dag_.successors(v))
    if (dag_.group(u).kind != GroupKind::Library) out.push_back(u);
  std::sort(out.begin(), out.end(), [&](int a, int b) { return dag_.position(a) < dag_.position(b); });
  if (out.size() > static_cast<size_t>(options_.consumers)) out.resize(options_.consumers);
  return out;
}

std::vector<Pattern> PatternSpace::all() const {
  std::vector<Pattern> out;
  for (int gi : dag_.order())
    for (const Pattern& p : heads_[gi]) out.push_back(p);
  return out;
}

PatternSpace::Memo& PatternSpace::memo_of(const std::vector<int>& members, bool* inserted) const {
  uint64_t hash = 14695981039346656037ull;  // FNV-1a over the ids
  for (int id : members) hash = (hash ^ static_cast<uint32_t>(id)) * 1099511628211ull;
  auto same = [&](const MemoEntry& e) {
    return e.hash == hash && e.size == members.size() &&
           std::equal(members.begin(), members.end(), memo_ids_.begin() + e.offset);
  };
  if (memo_slots_.size() < 2 * (memo_entries_.size() + 1)) {
    // Grow to keep the table at most half full, and place every entry again.
    std::vector<int32_t> slots(std::max<size_t>(1024, 2 * memo_slots_.size()), -1);
    const size_t mask = slots.size() - 1;
    for (size_t e = 0; e < memo_entries_.size(); ++e) {
      size_t i = memo_entries_[e].hash & mask;
      while (slots[i] >= 0) i = (i + 1) & mask;
      slots[i] = static_cast<int32_t>(e);
    }
    memo_slots_ = std::move(slots);
  }
  const size_t mask = memo_slots_.size() - 1;
  size_t i = hash & mask;
  for (; memo_slots_[i] >= 0; i = (i + 1) & mask) {
    MemoEntry& e = memo_entries_[static_cast<size_t>(memo_slots_[i])];
    if (same(e)) {
      *inserted = false;
      return e.memo;
    }
  }
  memo_slots_[i] = static_cast<int32_t>(memo_entries_.size());
  MemoEntry& e = memo_entries_.emplace_back();
  e.hash = hash;
  e.offset = static_cast<uint32_t>(memo_ids_.size());
  e.size = static_cast<uint32_t>(members.size());
  memo_ids_.insert(memo_ids_.end(), members.begin(), members.end());
  *inserted = true;
  return e.memo;
}

const std::vector<int>& PatternSpace::memory_readers(int node) const {
  std::vector<int>& readers = memory_readers_[static_cast<size_t>(node)];
  if (!memory_readers_known_[static_cast<size_t>(node)]) {
    memory_readers_known_[static_cast<size_t>(node)] = 1;
    if (dag_.is_output(node)) readers.push_back(-1);
    for (int c : dag_.consumers(node)) {
      for (int gj : dag_.groups_of(c))
        if (!dag_.group(gj).contains(node)) readers.push_back(gj);
    }
    std::sort(readers.begin(), readers.end());
    readers.erase(std::unique(readers.begin(), readers.end()), readers.end());
  }
  return readers;
}

bool PatternSpace::read_outside(int node, const std::vector<int>& members) const {
  for (int gj : memory_readers(node))
    if (gj < 0 || !std::binary_search(members.begin(), members.end(), gj)) return true;
  return false;
}

std::optional<Pattern> PatternSpace::evaluate(std::vector<int> members, Refusal* why_not, bool* stub, int added) const {
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  bool inserted = false;
  Memo& memo = memo_of(members, &inserted);
  if (inserted) {
    const Graph& g = merges_.graph();
    auto refuse = [&](Refusal reason, bool may_grow = false) {
      memo.legal = false;
      memo.stub = may_grow;
      // Only a pair's reason is ever shown (pair_reasons); a larger set
      // keeps the cause alone, which saves its memo the text.
      if (members.size() > 2) reason.reason.clear();
      memo.why_not = std::move(reason);
    };
    const bool reduction = std::any_of(members.begin(), members.end(), [&](int gi) { return merges_.has_reduction(gi); });
    bool cycle = false;
    if (added >= 0) {
      std::vector<int> convex;
      convex.reserve(members.size());
      for (int gi : members)
        if (gi != added) convex.push_back(gi);
      cycle = !convexity_.joins_without_cycle(convex, added);
    } else {
      cycle = !convexity_.convex(members);
    }
    if (cycle) {
      // Only a pair's refusal keeps its text (refuse): it names a group on the path.
      std::string text;
      if (members.size() == 2) {
        const int between = convexity_.one_between(members);
        text = fmt::format("merging would create a cycle: a path leaves the kernel through {} and comes back",
                           g.value_name(g.nodes()[dag_.group(between).roots.front()].output));
      }
      refuse({RefusalCause::Illegal, std::move(text)});
    } else {
      FusionGroup merged;
      merged.kind = GroupKind::Stitched;
      // Kernels may share nodes (xla recomputes cheap producers in each).
      std::vector<const std::vector<int>*> lists;
      lists.reserve(members.size());
      for (int gi : members) {
        const FusionGroup& grp = dag_.group(gi);
        lists.push_back(&grp.nodes);
        for (int r : grp.roots)
          if (read_outside(r, members)) merged.roots.push_back(r);
      }
      merged.nodes = sorted_union(lists);
      std::sort(merged.roots.begin(), merged.roots.end());
      std::optional<std::string> limit =
          dag_.limits_refusal(members, merged.nodes, static_cast<int>(merged.roots.size()));
      std::optional<Refusal> reason;
      if (!limit && !reduction) reason = Refusal{RefusalCause::Illegal, "neither kernel holds a reduction"};
      if (!limit && !reason) reason = merges_.kernel_refusal(merged.nodes, merged.roots);
      if (limit) {
        refuse({RefusalCause::Budget, *limit});
      } else if (reason) {
        refuse(*reason, true);
      } else {
        double separate = 0;
        for (int gi : members) separate += seconds_[gi];
        memo.score = separate - evaluator_.group_seconds(g, merged);
        memo.legal = memo.score > 0;
        memo.stub = !memo.legal;
        if (!memo.legal) {
          memo.why_not.cause = RefusalCause::Unprofitable;
          if (members.size() == 2) {
            memo.why_not.reason = fmt::format("not profitable: one kernel would take {:.3g} us, the 2 apart {:.3g} us",
                                              (separate - memo.score) * 1e6, separate * 1e6);
          }
        }
      }
    }
  }
  if (!memo.legal) {
    if (why_not) *why_not = memo.why_not;
    if (stub) *stub = memo.stub;
    return std::nullopt;
  }
  std::sort(members.begin(), members.end(), [&](int a, int b) { return dag_.position(a) < dag_.position(b); });
  return Pattern{std::move(members), memo.score};
}

}  // namespace stitch

namespace stitch {

std::vector<Pattern> apply_patterns(StitchMerges& merges, const PatternSpace& space, std::vector<Pattern> patterns) {
  GroupDag& dag = merges.dag();
  // Reasons first, while the ids still name xla's kernels: every edge between
  // a kernel and its consumer kernel that a merge below does not take in.
  for (int v : dag.order()) {
    for (int u : dag.successors(v)) {
      if (dag.group(v).kind == GroupKind::Library || dag.group(u).kind == GroupKind::Library) continue;
      auto it = space.pair_reasons().find({v, u});
      const Refusal reason = it != space.pair_reasons().end()
                                 ? it->second
                                 : Refusal{RefusalCause::Unprofitable, "the search put one of the two in another kernel"};
      for (auto [p, c] : merges.edges(v, u)) merges.explain(p, c, {reason.cause, "stitch: " + reason.reason});
    }
  }
  std::sort(patterns.begin(), patterns.end(),
            [&](const Pattern& a, const Pattern& b) { return dag.position(a.members[0]) < dag.position(b.members[0]); });
  std::vector<Pattern> left;
  for (const Pattern& p : patterns) {
    // A member whose every reader an earlier merge took in, computing its
    // values itself, was retired (GroupDag): the others, less that sink, are
    // still convex.
    std::vector<int> members = p.members;
    std::erase_if(members, [&](int gi) { return !dag.alive(gi); });
    if (members.size() < 2) continue;
    if (merges.budget_spent() || !dag.between(members).empty()) {
      left.push_back(p);
      continue;
    }
    if (merges.budget_left(static_cast<int>(members.size()) - 1)) {
      merges.merge_all(members);
      continue;
    }
    for (size_t i = 1; i < members.size(); ++i) {
      if (merges.budget_spent()) break;
      if (dag.alive(members[i])) merges.merge(members[0], members[i]);
    }
  }
  return left;
}

FusionPlan finish_search(StitchMerges& merges, const PatternSpace& space, const std::vector<Pattern>& chosen,
                         const DeltaEvaluator& evaluator, double before, const std::string& planner,
                         PlanSearchReport* report) {
  // Named while the ids are still xla's kernels.
  const Graph& g = merges.graph();
  std::vector<ChosenPattern> described;
  for (const Pattern& p : chosen) {
    ChosenPattern d;
    d.score_seconds = p.score;
    for (int gi : p.members) d.kernels.push_back(g.value_name(g.nodes()[merges.dag().group(gi).roots.front()].output));
    described.push_back(std::move(d));
  }
  const std::vector<Pattern> left = apply_patterns(merges, space, chosen);
  for (size_t i = 0; i < chosen.size(); ++i) {
    described[i].merged = std::none_of(left.begin(), left.end(),
                                       [&](const Pattern& l) { return l.members == chosen[i].members; });
  }
  report->chosen = std::move(described);
  report->patterns = static_cast<int>(chosen.size() - left.size());
  merges.stitch_greedily(&evaluator);
  report->objective = before - merges.plan_seconds(evaluator);
  merges.merge_tile_siblings();
  merges.absorb_loops();
  merges.fuse_loop_producers(&evaluator);
  merges.pack_small_loops();
  return merges.finish(planner);
}

}  // namespace stitch
