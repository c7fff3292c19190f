// The stitched-group check (docs/fusion.md, Stitched groups). The subtle part
// is row consistency: a stitched kernel computes one row (or column) at a
// time and keeps each reduction's total as one value, so every read of a total
// must be at the row being computed. That is checked by walking backwards from
// each root and each reduction's input with a symbolic index: per dim, which
// position of the domain's index it equals, or a literal 0.
#include "fusion/stitched_group.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "fusion/index_tags.h"
#include "fusion/node_index.h"

namespace stitch {
namespace {

// A symbolic index component: a position of the domain's index, or a literal
// 0 (a static 1 read by a broadcast): index_tags.h.
constexpr int kZero = kTagZero;
using Tags = IndexTags;

bool is_stitchable_reduction(OpKind op) { return is_reduction(op) && op != OpKind::ArgMax && op != OpKind::ArgMin; }

class RowConsistency {
 public:
  RowConsistency(const Graph& g, const std::vector<int>& nodes, const StitchedDomain& domain)
      : g_(g), domain_(domain), walk_(g, nodes) {}

  // "" when evaluating `v` at `tags` reads every reduction total at the row.
  std::string check(ValueId v, const Tags& tags) {
    const Node* next = walk_.next(v, tags);
    if (!next) return "";
    const Node& node = *next;
    const Shape& out = g_.type(v).shape;
    if (is_reduction(node.op)) {
      std::optional<Tags> want = stitched_root_index(domain_, out);
      for (size_t k = 0; want && k < out.size(); ++k) {
        if (!is_static_one(out[k]) && (*want)[k] != tags[k]) want.reset();
      }
      if (!want) return fmt::format("{} is read at another row than the one it reduces", g_.value_name(v));
      return "";
    }
    // An elementwise op of operands of its own shape reads them at its tags:
    // no copies of the tags (the common case, and the planners' hot path).
    if (is_elementwise(node.op) && std::all_of(node.inputs.begin(), node.inputs.end(),
                                                [&](ValueId in) { return g_.type(in).shape == out; })) {
      for (ValueId in : node.inputs) {
        if (std::string why = check(in, tags); !why.empty()) return why;
      }
      return "";
    }
    std::string problem;
    if (std::optional<std::vector<Tags>> operands = operand_index_tags(g_, node, tags, &problem)) {
      for (size_t i = 0; i < operands->size(); ++i) {
        if (std::string why = check(node.inputs[i], (*operands)[i]); !why.empty()) return why;
      }
      return "";
    }
    if (!problem.empty()) return fmt::format("{} {}", g_.value_name(v), problem);
    return fmt::format("{} ({}) reads a reduction's result at a moved index", g_.value_name(v), op_name(node.op));
  }

 private:
  const Graph& g_;
  const StitchedDomain& domain_;
  ReductionReadWalk walk_;
};

}  // namespace

bool StitchedDomain::innermost() const {
  for (size_t k = 0; k < axes.size(); ++k) {
    if (axes[k] != shape.size() - axes.size() + k) return false;
  }
  return true;
}

Shape StitchedDomain::outer_shape() const {
  Shape out;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!std::binary_search(axes.begin(), axes.end(), d)) out.push_back(shape[d]);
  }
  return out;
}

std::optional<std::vector<int>> stitched_root_index(const StitchedDomain& domain, const Shape& shape) {
  std::vector<int> index;
  if (shape == domain.shape) {
    for (size_t d = 0; d < shape.size(); ++d) index.push_back(static_cast<int>(d));
    return index;
  }
  std::vector<int> outer;  // non-1 outer positions, in order
  for (size_t d = 0; d < domain.shape.size(); ++d) {
    if (!std::binary_search(domain.axes.begin(), domain.axes.end(), d) && !is_static_one(domain.shape[d])) {
      outer.push_back(static_cast<int>(d));
    }
  }
  size_t next = 0;
  for (const Dim& dim : shape) {
    if (is_static_one(dim)) {
      index.push_back(kZero);
    } else if (next < outer.size() && domain.shape[static_cast<size_t>(outer[next])] == dim) {
      index.push_back(outer[next++]);
    } else {
      return std::nullopt;
    }
  }
  if (next != outer.size()) return std::nullopt;
  return index;
}

namespace {

bool early_root(const Graph& g, const NodeIndex& in_group, const StitchedDomain& domain, int root) {
  if (domain.innermost() || is_reduction(g.nodes()[root].op)) return false;
  const Shape& shape = g.type(g.nodes()[root].output).shape;
  if (shape != domain.shape &&
      (!is_static(shape) || !is_static(domain.shape) ||
       element_count(concrete_shape(shape, {})) != element_count(concrete_shape(domain.shape, {})))) {
    return false;
  }
  std::vector<int> stack{root};
  std::vector<bool> seen(g.nodes().size(), false);
  while (!stack.empty()) {
    const int n = stack.back();
    stack.pop_back();
    if (seen[static_cast<size_t>(n)]) continue;
    seen[static_cast<size_t>(n)] = true;
    if (is_reduction(g.nodes()[n].op)) return false;
    for (ValueId v : g.nodes()[n].inputs) {
      const int p = g.value(v).producer;
      if (in_group.contains(p)) stack.push_back(p);
    }
  }
  return true;
}

}  // namespace

bool stitched_early_root(const Graph& g, const std::vector<int>& nodes, const StitchedDomain& domain, int root) {
  const NodeIndex in_group(nodes, g.nodes().size());
  return early_root(g, in_group, domain, root);
}

bool is_stitched_group(const Graph& g, const std::vector<int>& nodes, const std::vector<int>& roots) {
  const NodeIndex in_group(nodes, g.nodes().size());
  bool has_reduction = false;
  for (int n : nodes) {
    const Node& node = g.nodes()[n];
    has_reduction = has_reduction || is_reduction(node.op);
    for (ValueId v : node.inputs) {
      int p = g.value(v).producer;
      if (in_group.contains(p) && is_reduction(g.nodes()[p].op)) return true;
    }
  }
  if (!has_reduction) return false;
  return std::any_of(roots.begin(), roots.end(), [&](int r) { return !is_reduction(g.nodes()[r].op); });
}

std::string stitched_group_problem(const Graph& g, const std::vector<int>& nodes, const std::vector<int>& roots,
                                   StitchedDomain* domain_out) {
  StitchedDomain domain;
  // Per node (by its place in `nodes`), its dependence level (reductions
  // count 1) once visited; kUnvisited before.
  const NodeIndex place(nodes, g.nodes().size());
  constexpr size_t kUnvisited = static_cast<size_t>(-1);
  std::vector<size_t> level(nodes.size(), kUnvisited);
  auto slot = [&](int n) -> size_t* {
    const int i = place.find(n);
    return i >= 0 ? &level[static_cast<size_t>(i)] : nullptr;
  };
  for (int n : nodes) {
    const Node& node = g.nodes()[n];
    const OpCategory c = op_info(node.op).category;
    if (c == OpCategory::Dot) return "a dot cannot be stitched";
    size_t lvl = 0;
    for (ValueId v : node.inputs) {
      const size_t* l = slot(g.value(v).producer);
      if (l && *l != kUnvisited) lvl = std::max(lvl, *l);
    }
    if (c == OpCategory::Reduction) {
      if (!is_stitchable_reduction(node.op)) return fmt::format("{} cannot be stitched", op_name(node.op));
      const Shape& in = g.type(node.inputs[0]).shape;
      std::vector<size_t> axes = reduced_axes(g, node);
      if (domain.phases.empty()) {
        domain.shape = in;
        domain.axes = axes;
      } else if (in != domain.shape || axes != domain.axes) {
        return "reductions of different shapes or axes";
      }
      ++lvl;
      if (domain.phases.size() < lvl) domain.phases.resize(lvl);
      domain.phases[lvl - 1].push_back(n);
    }
    *slot(n) = lvl;
  }
  if (domain.phases.empty()) return "no reduction";
  for (auto& phase : domain.phases) std::sort(phase.begin(), phase.end());
  RowConsistency rows(g, nodes, domain);
  Tags identity;
  for (size_t d = 0; d < domain.shape.size(); ++d) identity.push_back(static_cast<int>(d));
  for (const auto& phase : domain.phases) {
    for (int r : phase) {
      if (std::string why = rows.check(g.nodes()[r].inputs[0], identity); !why.empty()) return why;
    }
  }
  for (int r : roots) {
    ValueId v = g.nodes()[r].output;
    std::optional<Tags> index = stitched_root_index(domain, g.type(v).shape);
    if (!index && early_root(g, place, domain, r)) continue;  // reads no total: no row to check
    if (!index) return fmt::format("root {} is neither of the rows' shape nor of their results' shape", g.value_name(v));
    if (std::string why = rows.check(v, *index); !why.empty()) return why;
  }
  // Sibling reductions alone (no reduction reads another, every root a
  // reduction) are not a stitched kernel: finalize_plan makes them a reduction
  // kernel, whose lowering gives every root one result shape, so keepdims
  // must agree (soak seed 100578: reduce_mean and reduce_max of one row, one
  // with keepdims, planned into a kernel no back end could lower).
  if (!is_stitched_group(g, nodes, roots)) {
    const Shape& first = g.type(g.nodes()[roots.front()].output).shape;
    for (int r : roots) {
      ValueId v = g.nodes()[r].output;
      if (g.type(v).shape != first) {
        return fmt::format("sibling reductions of different result shapes ({} and {})", g.type(v).str(),
                           g.type(g.nodes()[roots.front()].output).str());
      }
    }
  }
  if (domain_out) *domain_out = std::move(domain);
  return "";
}

namespace {

// A value a block holds per reduced element: neither a scalar nor a per-row
// value (a total, a column domain's gamma), which a block holds as one.
bool is_row_data(const StitchedDomain& domain, const Shape& shape) {
  if (shape == domain.shape) return true;
  return !std::all_of(shape.begin(), shape.end(), is_static_one) && !stitched_root_index(domain, shape);
}

// The walks of stitched_reread over the phases' cones, down to the group's
// inputs and past totals (a block holds those as scalars). Sets are pooled
// (node_index.h) and row-data answers cached per value: the planners ask
// this of every candidate group, and a chain of k reductions has k phases
// whose cones nest (planner fuzzer: 47 RMS norms in one group).
class ReadWalker {
 public:
  ReadWalker(const Graph& g, const NodeIndex& in_group, const StitchedDomain& domain)
      : g_(g), in_group_(in_group), domain_(domain), row_known_(ids()), walked_(ids()), reloaded_(ids()) {}

  // The values of one phase's cone where it first meets earlier work: row
  // data that is an earlier phase's head or a load an earlier phase made.
  std::vector<int> frontier(const std::vector<ValueId>& heads, const IdSet& earlier_heads) {
    std::vector<int> out;
    IdSet seen(ids());
    std::vector<ValueId> stack = heads;
    while (!stack.empty()) {
      ValueId v = stack.back();
      stack.pop_back();
      if (!seen.insert(v.index)) continue;
      if (row_data(v) && (earlier_heads.contains(v.index) || (is_load(v) && walked_.contains(v.index)))) {
        out.push_back(v.index);
        continue;
      }
      push_inputs(v, stack);
    }
    return out;
  }

  // Walks one phase's cone, noting its row-data loads; a load that an
  // earlier phase made too is a reload. Where the walk meets a value an
  // earlier phase walked, its whole cone was walked then (by induction), so
  // every row-data load under it is a reload, marked once: linear in the
  // group however many phases it has.
  void load(const std::vector<ValueId>& heads) {
    const size_t first_new = walked_.size();
    std::vector<ValueId> stack = heads;
    while (!stack.empty()) {
      ValueId v = stack.back();
      stack.pop_back();
      const int place = walked_.find(v.index);
      if (place >= 0 && static_cast<size_t>(place) < first_new) {
        mark_reloaded(v);
        continue;
      }
      if (!walked_.insert(v.index)) continue;
      push_inputs(v, stack);
    }
  }

  int64_t reload_bytes() const { return reload_bytes_; }

 private:
  size_t ids() const { return static_cast<size_t>(g_.num_values()); }
  bool is_load(ValueId v) const { return !in_group_.contains(g_.value(v).producer); }

  bool row_data(ValueId v) {
    const int i = row_known_.find(v.index);
    if (i >= 0) return row_answers_[static_cast<size_t>(i)];
    row_known_.insert(v.index);
    row_answers_.push_back(is_row_data(domain_, g_.type(v).shape));
    return row_answers_.back();
  }

  // The inputs of `v`'s producer, where it is in the group and not a reduction.
  void push_inputs(ValueId v, std::vector<ValueId>& stack) const {
    const int p = g_.value(v).producer;
    if (!in_group_.contains(p) || is_reduction(g_.nodes()[p].op)) return;
    for (ValueId in : g_.nodes()[p].inputs) stack.push_back(in);
  }

  void mark_reloaded(ValueId from) {
    std::vector<ValueId> stack{from};
    while (!stack.empty()) {
      ValueId v = stack.back();
      stack.pop_back();
      if (!reloaded_.insert(v.index)) continue;
      if (is_load(v) && row_data(v)) reload_bytes_ += dtype_size(g_.type(v).dtype);
      push_inputs(v, stack);
    }
  }

  const Graph& g_;
  const NodeIndex& in_group_;
  const StitchedDomain& domain_;
  IdSet row_known_;
  std::vector<bool> row_answers_;
  IdSet walked_;    // values some phase's cone reached, in the order reached
  IdSet reloaded_;  // values whose cone's loads are counted as reloads
  int64_t reload_bytes_ = 0;
};

}  // namespace

int64_t StitchedReread::block_bytes() const {
  if (bytes_per_element == 0) return 0;
  if (reduced_extent < 0) return -1;
  return bytes_per_element * reduced_extent * block_width;
}

StitchedReread stitched_reread(const Graph& g, const std::vector<int>& nodes, const std::vector<int>& roots,
                               const StitchedDomain& domain, int64_t fits_bytes) {
  const NodeIndex in_group(nodes, g.nodes().size());
  StitchedReread out;
  out.reduced_extent = 1;
  for (size_t a : domain.axes) {
    const Dim& d = domain.shape[a];
    out.reduced_extent = d.is_static() && out.reduced_extent >= 0 ? out.reduced_extent * d.extent() : -1;
  }
  if (!domain.innermost()) {
    out.block_width = kStitchedColumnBlockThreads;
    int64_t columns = 1;
    for (const Dim& d : domain.outer_shape()) columns = d.is_static() && columns >= 0 ? columns * d.extent() : -1;
    if (columns >= 0) out.block_width = std::min(columns, kStitchedColumnBlockThreads);
  }
  if (fits_bytes >= 0 && out.reduced_extent >= 0) {
    // Whatever a later phase re-reads is among the group's row-data inputs:
    // when all of them fit, so does the re-read, and the phases need no walk.
    IdSet inputs(static_cast<size_t>(g.num_values()));
    int64_t bound = 0;
    for (int n : nodes) {
      for (ValueId v : g.nodes()[n].inputs) {
        const int p = g.value(v).producer;
        if (!in_group.contains(p) && is_row_data(domain, g.type(v).shape) && inputs.insert(v.index)) {
          bound += dtype_size(g.type(v).dtype);
        }
      }
    }
    if (bound * out.reduced_extent * out.block_width <= fits_bytes) {
      out.bytes_per_element = bound;
      return out;
    }
  }
  // What each phase evaluates: its reductions' inputs; the store phase, the roots.
  std::vector<std::vector<ValueId>> heads;
  for (const auto& phase : domain.phases) {
    heads.emplace_back();
    for (int r : phase) heads.back().push_back(g.nodes()[r].inputs[0]);
  }
  heads.emplace_back();
  for (int r : roots) {
    if (is_reduction(g.nodes()[r].op)) continue;
    // An early root is stored in the first phase's pass (stitched_early_root).
    (early_root(g, in_group, domain, r) ? heads.front() : heads.back()).push_back(g.nodes()[r].output);
  }
  ReadWalker walker(g, in_group, domain);
  int64_t frontier_bytes = 0;  // where later cones first meet earlier work
  IdSet frontier(static_cast<size_t>(g.num_values()));
  IdSet earlier_heads(static_cast<size_t>(g.num_values()));  // reduction inputs of earlier phases
  for (const std::vector<ValueId>& phase_heads : heads) {
    for (int v : walker.frontier(phase_heads, earlier_heads)) {
      if (frontier.insert(v)) frontier_bytes += dtype_size(g.type(ValueId{v}).dtype);
    }
    walker.load(phase_heads);
    for (ValueId h : phase_heads) earlier_heads.insert(h.index);
  }
  out.bytes_per_element = std::min(walker.reload_bytes(), frontier_bytes);
  return out;
}

}  // namespace stitch
