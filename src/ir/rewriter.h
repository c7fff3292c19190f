// Rebuilding a graph pass by pass: the machinery every Graph -> Graph pass
// shares (canonicalisation, target rewrites such as split_reductions.h).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/type_inference.h"
#include "stitch/graph.h"

namespace stitch {

// Rebuilds a graph node by node. A pass decides per node whether to re-emit
// it (possibly changed), or to alias its value to one already in the new graph.
class Rewriter {
 public:
  explicit Rewriter(const Graph& src) : src_(src), dst_(src.name()), map_(src.num_values()) {
    for (ValueId p : src.params()) map_[p.index] = dst_.add_param(src.value_name(p), src.type(p));
  }

  ValueId mapped(ValueId old) const { return map_[old.index]; }
  const Graph& dst() const { return dst_; }

  // Emits `op` into the new graph; the type is re-inferred so a pass cannot
  // produce an ill-typed node.
  ValueId emit(OpKind op, std::vector<ValueId> inputs, Attrs attrs, const std::string& name_hint,
               const SourceLoc& loc) {
    std::vector<TensorType> types;
    for (ValueId v : inputs) types.push_back(dst_.type(v));
    TensorType t = infer_type(op, types, attrs);
    return dst_.add_node(op, std::move(inputs), std::move(attrs), t, dst_.fresh_name(name_hint), loc);
  }
  ValueId copy(const Node& n, std::vector<ValueId> inputs) {
    return emit(n.op, std::move(inputs), n.attrs, src_.value_name(n.output), n.loc);
  }
  std::vector<ValueId> mapped_inputs(const Node& n) const {
    std::vector<ValueId> out;
    for (ValueId v : n.inputs) out.push_back(mapped(v));
    return out;
  }
  void bind(const Node& n, ValueId v) { map_[n.output.index] = v; }

  // Output names stay the user's; where the value behind an output was merged
  // into another node, that node takes the output's name if it is free.
  Graph finish() {
    std::map<int, std::string> first_name;
    for (const GraphOutput& o : src_.outputs()) {
      ValueId v = mapped(o.value);
      dst_.add_output(o.name, v);
      bool is_param = dst_.value(v).producer < 0;
      if (!is_param && dst_.value_name(v) != o.name && !dst_.has_name(o.name) && !first_name.count(v.index)) {
        dst_.rename_value(v, o.name);
      }
      first_name.emplace(v.index, o.name);
    }
    return std::move(dst_);
  }

 private:
  const Graph& src_;
  Graph dst_;
  std::vector<ValueId> map_;
};

}  // namespace stitch
