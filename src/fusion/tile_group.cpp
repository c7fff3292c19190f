// The tile-group check (docs/fusion.md, Tile groups). A tile kernel gives each
// block one outer index and keeps every reduction's results for the whole
// tile in shared memory, so a reader may take any position inside the tile
// but must stay in its own block: every read of a reduction's result has to
// be at the block's outer index. That is checked by walking backwards from
// each root and each reduction's input with a symbolic index: per dim, which
// position of the domain's index it equals, a literal 0, or some position
// inside the tile (after a slice).
#include "fusion/tile_group.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>

#include "fusion/index_tags.h"

namespace stitch {
namespace {

// A symbolic index component: a position of the domain's index, a literal 0
// (a static 1 read by a broadcast), or an unknown position (kInTile) that
// must not reach an outer dim of a reduction's result.
constexpr int kZero = kTagZero;
constexpr int kInTile = -2;
using Tags = IndexTags;

bool keeps_dims(const Node& n) {
  const AttrValue* k = n.attrs.find("keepdims");
  return k && k->as_bool();
}

// The reads of reductions' results, checked for the block's outer index.
class OuterIndexReads {
 public:
  OuterIndexReads(const Graph& g, const std::vector<int>& nodes, const TileDomain& domain)
      : g_(g), domain_(domain), walk_(g, nodes) {}

  // "" when evaluating `v` at `tags` reads every reduction result at the
  // block's own outer index.
  std::string check(ValueId v, const Tags& tags) {
    const Node* next = walk_.next(v, tags);
    if (!next) return "";
    const Node& node = *next;
    if (is_reduction(node.op)) {
      const std::vector<int> at = *tile_value_index(g_, domain_, v);
      for (size_t k = 0; k < at.size(); ++k) {
        const bool outer = at[k] >= 0 && !domain_.in_tile(static_cast<size_t>(at[k]));
        if (outer && !is_static_one(domain_.shape[static_cast<size_t>(at[k])]) && tags[k] != at[k]) {
          return fmt::format("{} is read at another block's outer index", g_.value_name(v));
        }
      }
      return "";
    }
    auto operand = [&](size_t i, const Tags& t) { return check(node.inputs[i], t); };
    switch (node.op) {
      case OpKind::Slice: {
        // A slice may move positions inside the tile, never an outer one.
        const AttrValue::Ints& start = node.attrs.get("start").as_ints();
        const AttrValue::Ints& step = node.attrs.get("step").as_ints();
        Tags j;
        for (size_t k = 0; k < tags.size(); ++k) {
          const bool moved = start[k] != 0 || step[k] != 1;
          const bool outer = tags[k] >= 0 && !domain_.in_tile(static_cast<size_t>(tags[k]));
          if (moved && outer) return fmt::format("{} slices a block's outer index", g_.value_name(v));
          j.push_back(moved ? kInTile : tags[k]);
        }
        return operand(0, j);
      }
      default: {
        std::string problem;
        if (std::optional<std::vector<Tags>> operands = operand_index_tags(g_, node, tags, &problem)) {
          for (size_t i = 0; i < operands->size(); ++i) {
            if (std::string why = operand(i, (*operands)[i]); !why.empty()) return why;
          }
          return "";
        }
        if (!problem.empty()) return fmt::format("{} {}", g_.value_name(v), problem);
        break;
      }
    }
    return fmt::format("{} ({}) reads a reduction's result at a moved index", g_.value_name(v), op_name(node.op));
  }

 private:
  const Graph& g_;
  const TileDomain& domain_;
  ReductionReadWalk walk_;
};

// Why the tile of `domain` does not fit in one block, or "".
std::string tile_size_problem(const Graph& g, const TileDomain& domain) {
  int64_t elements = 1;
  for (size_t d : domain.tile) {
    if (!domain.shape[d].is_static()) {
      return fmt::format("tile dim {} of {} is symbolic", d, shape_str(domain.shape));
    }
    elements *= domain.shape[d].extent();
  }
  int64_t element_bytes = 0;
  int64_t result_bytes = 0;
  for (const auto& phase : domain.phases) {
    for (int r : phase) {
      const Node& node = g.nodes()[r];
      element_bytes = std::max<int64_t>(element_bytes, dtype_size(g.type(node.inputs[0]).dtype));
      int64_t results = 1;
      const std::vector<size_t> axes = reduced_axes(g, node);
      for (size_t d : domain.tile) {
        if (!std::binary_search(axes.begin(), axes.end(), d)) results *= domain.shape[d].extent();
      }
      result_bytes += results * dtype_size(g.type(node.output).dtype);
    }
  }
  const int64_t bytes = elements * element_bytes + result_bytes;
  if (bytes > kTileBytes) {
    return fmt::format("the tile {} and its results take {} bytes, over the {} a block holds",
                       shape_str(domain.tile_shape()), bytes, kTileBytes);
  }
  return "";
}

}  // namespace

Shape TileDomain::outer_shape() const { return Shape(shape.begin(), shape.end() - static_cast<ptrdiff_t>(tile.size())); }

Shape TileDomain::tile_shape() const { return Shape(shape.end() - static_cast<ptrdiff_t>(tile.size()), shape.end()); }

std::optional<std::vector<int>> tile_value_index(const Graph& g, const TileDomain& domain, ValueId v) {
  std::vector<int> index;
  const int p = g.value(v).producer;
  const Shape& shape = g.type(v).shape;
  if (p >= 0 && is_reduction(g.nodes()[p].op) && g.type(g.nodes()[p].inputs[0]).shape == domain.shape) {
    const Node& node = g.nodes()[p];
    const std::vector<size_t> axes = reduced_axes(g, node);
    for (size_t d = 0; d < domain.shape.size(); ++d) {
      if (!std::binary_search(axes.begin(), axes.end(), d)) {
        index.push_back(static_cast<int>(d));
      } else if (keeps_dims(node)) {
        index.push_back(kZero);
      }
    }
    return index;
  }
  // Dims in order: kept, replaced by a static 1, or (tile dims and static 1s
  // only) dropped. The first match is taken; any consistent choice is sound,
  // since the readers are checked with the index this choice gives.
  size_t k = 0;
  for (size_t d = 0; d < domain.shape.size(); ++d) {
    const bool droppable = domain.in_tile(d) || is_static_one(domain.shape[d]);
    if (k < shape.size() && shape[k] == domain.shape[d]) {
      index.push_back(static_cast<int>(d));
      ++k;
    } else if (k < shape.size() && is_static_one(shape[k]) && droppable) {
      index.push_back(kZero);
      ++k;
    } else if (!droppable) {
      return std::nullopt;
    }
  }
  if (k != shape.size()) return std::nullopt;
  return index;
}

std::string tile_group_problem(const Graph& g, const std::vector<int>& nodes, const std::vector<int>& roots,
                               TileDomain* out) {
  std::vector<int> sorted = nodes;
  std::sort(sorted.begin(), sorted.end());
  TileDomain domain;
  bool have_shape = false;
  std::set<std::vector<size_t>> axis_sets;
  std::set<size_t> covered;
  std::map<int, size_t> level;  // node -> dependence level (reductions count 1)
  for (int n : sorted) {
    const Node& node = g.nodes()[n];
    const OpCategory c = op_info(node.op).category;
    if (c == OpCategory::Dot) return "a dot cannot be in a tile group";
    size_t lvl = 0;
    for (ValueId v : node.inputs) {
      auto it = level.find(g.value(v).producer);
      if (it != level.end()) lvl = std::max(lvl, it->second);
    }
    if (c == OpCategory::Reduction) {
      if (node.op == OpKind::ArgMax || node.op == OpKind::ArgMin) {
        return fmt::format("{} cannot be in a tile group", op_name(node.op));
      }
      const Shape& in = g.type(node.inputs[0]).shape;
      if (!have_shape) {
        domain.shape = in;
        have_shape = true;
      } else if (in != domain.shape) {
        return "reductions of different input shapes";
      }
      std::vector<size_t> axes = reduced_axes(g, node);
      covered.insert(axes.begin(), axes.end());
      axis_sets.insert(std::move(axes));
      ++lvl;
      if (domain.phases.size() < lvl) domain.phases.resize(lvl);
      domain.phases[lvl - 1].push_back(n);
    }
    level[n] = lvl;
  }
  if (domain.phases.empty()) return "no reduction";
  if (axis_sets.size() < 2) return "every reduction reduces the same axes (a stitched group)";
  const size_t rank = domain.shape.size();
  if (*covered.begin() + covered.size() != rank) {
    return fmt::format("the reduced axes are not the innermost dims of {}", shape_str(domain.shape));
  }
  domain.tile.assign(covered.begin(), covered.end());
  if (std::string why = tile_size_problem(g, domain); !why.empty()) return why;
  OuterIndexReads reads(g, sorted, domain);
  Tags identity;
  for (size_t d = 0; d < rank; ++d) identity.push_back(static_cast<int>(d));
  for (const auto& phase : domain.phases) {
    for (int r : phase) {
      if (std::string why = reads.check(g.nodes()[r].inputs[0], identity); !why.empty()) return why;
    }
  }
  for (int r : roots) {
    const ValueId v = g.nodes()[r].output;
    std::optional<Tags> index = tile_value_index(g, domain, v);
    if (!index) {
      return fmt::format("root {} is neither of the tile's shape nor of a reduction's result shape", g.value_name(v));
    }
    if (std::string why = reads.check(v, *index); !why.empty()) return why;
  }
  if (out) *out = std::move(domain);
  return "";
}

}  // namespace stitch
