#include "fusion/index_tags.h"

#include <algorithm>
#include <cstdint>

#include "stitch/error.h"

#include <set>

namespace stitch {

bool is_static_one(const Dim& d) { return d.is_static() && d.extent() == 1; }

std::vector<size_t> reduced_axes(const Graph& g, const Node& n) {
  const size_t rank = g.type(n.inputs[0]).shape.size();
  std::set<size_t> axes;
  if (const AttrValue* a = n.attrs.find("axes")) {
    for (int64_t x : a->as_ints()) axes.insert(static_cast<size_t>(x < 0 ? x + static_cast<int64_t>(rank) : x));
  } else {
    for (size_t d = 0; d < rank; ++d) axes.insert(d);
  }
  return {axes.begin(), axes.end()};
}

std::vector<int> reduction_dependents(const Graph& g, const std::vector<int>& nodes) {
  STITCH_ASSERT(std::is_sorted(nodes.begin(), nodes.end()), "reduction_dependents: nodes ascending");
  std::vector<int> depends;  // ascending, as `nodes`; a subset of them
  for (int n : nodes) {      // ascending: producers first
    const Node& node = g.nodes()[static_cast<size_t>(n)];
    bool dep = is_reduction(node.op);
    for (ValueId v : node.inputs) {
      const int p = g.value(v).producer;
      dep = dep || (p >= 0 && std::binary_search(depends.begin(), depends.end(), p));
    }
    if (dep) depends.push_back(n);
  }
  return depends;
}

ReductionReadWalk::ReductionReadWalk(const Graph& g, const std::vector<int>& nodes)
    : g_(g),
      depends_(reduction_dependents(g, nodes)),
      depends_index_(depends_, g.nodes().size()),
      visited_values_(static_cast<size_t>(g.num_values())) {}

const Node* ReductionReadWalk::next(ValueId v, const IndexTags& tags) {
  const int p = g_.value(v).producer;
  if (!depends_index_.contains(p)) return nullptr;
  bool packable = tags.size() <= 8;
  uint64_t key = 0;
  for (int t : tags) {
    packable = packable && t >= -1 && t <= 254;
    key = (key << 8) | static_cast<uint64_t>(static_cast<uint8_t>(t + 1));
  }
  if (!packable) {
    if (!visited_.insert({v.index, tags}).second) return nullptr;
  } else if (const int slot = visited_values_.find(v.index); slot < 0) {
    visited_values_.insert(v.index);
    first_packed_.push_back(key);
  } else if (first_packed_[static_cast<size_t>(slot)] == key || !more_packed_.insert({v.index, key}).second) {
    return nullptr;
  }
  return &g_.nodes()[static_cast<size_t>(p)];
}

std::optional<std::vector<IndexTags>> operand_index_tags(const Graph& g, const Node& node, const IndexTags& tags,
                                                         std::string* problem) {
  const Shape& out = g.type(node.output).shape;
  switch (node.op) {
    case OpKind::Broadcast: {
      const Shape& in = g.type(node.inputs[0]).shape;
      const size_t lead = out.size() - in.size();
      IndexTags j;
      for (size_t k = 0; k < in.size(); ++k) j.push_back(is_static_one(in[k]) ? kTagZero : tags[lead + k]);
      return std::vector<IndexTags>{j};
    }
    case OpKind::Transpose: {
      const size_t rank = out.size();
      AttrValue::Ints perm;
      if (const AttrValue* a = node.attrs.find("perm")) perm = a->as_ints();
      for (size_t k = perm.size(); k < rank; ++k) perm.push_back(static_cast<int64_t>(rank - 1 - k));
      IndexTags j(rank);
      for (size_t k = 0; k < rank; ++k) j[static_cast<size_t>(perm[k])] = tags[k];
      return std::vector<IndexTags>{j};
    }
    case OpKind::Reshape: {
      // Only reshapes that insert or drop static 1s keep each dim's index.
      const Shape& in = g.type(node.inputs[0]).shape;
      IndexTags kept;
      Shape out_kept, in_kept;
      for (size_t k = 0; k < out.size(); ++k) {
        if (!is_static_one(out[k])) kept.push_back(tags[k]), out_kept.push_back(out[k]);
      }
      for (const Dim& d : in)
        if (!is_static_one(d)) in_kept.push_back(d);
      if (in_kept != out_kept) return std::nullopt;
      IndexTags j;
      size_t next = 0;
      for (const Dim& d : in) j.push_back(is_static_one(d) ? kTagZero : kept[next++]);
      return std::vector<IndexTags>{j};
    }
    default:
      if (!is_elementwise(node.op)) return std::nullopt;
      for (ValueId in : node.inputs) {
        if (g.type(in).shape != out) {
          *problem = "mixes shapes";
          return std::nullopt;
        }
      }
      return std::vector<IndexTags>(node.inputs.size(), tags);
  }
}

}  // namespace stitch
