// The Graph IR: SSA values produced by primitive-op nodes, in topological order.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "stitch/attr.h"
#include "stitch/error.h"
#include "stitch/kernel.h"
#include "stitch/ops.h"
#include "stitch/shape.h"

namespace stitch {

struct ValueId {
  int32_t index = -1;
  bool valid() const { return index >= 0; }
  bool operator==(const ValueId& o) const { return index == o.index; }
  bool operator!=(const ValueId& o) const { return index != o.index; }
  bool operator<(const ValueId& o) const { return index < o.index; }
};

struct ValueInfo {
  std::string name;
  TensorType type;
  int producer = -1;  // index into Graph::nodes(), or -1 for a parameter
};

struct Node {
  OpKind op;
  std::vector<ValueId> inputs;
  Attrs attrs;
  ValueId output;
  SourceLoc loc;  // where the text format defined it, when it did
};

struct GraphOutput {
  std::string name;  // the name the user returned; `run --output-dir` writes <name>.npy
  ValueId value;
};

class Graph {
 public:
  explicit Graph(std::string name = "main") : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }

  const std::vector<ValueId>& params() const { return params_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<GraphOutput>& outputs() const { return outputs_; }
  int num_values() const { return static_cast<int>(values_.size()); }

  const ValueInfo& value(ValueId v) const {
    if (v.index < 0 || v.index >= num_values()) value_out_of_range(v);
    return values_[static_cast<size_t>(v.index)];
  }
  const TensorType& type(ValueId v) const { return value(v).type; }
  const std::string& value_name(ValueId v) const { return value(v).name; }
  const Node* producer(ValueId v) const;  // nullptr for parameters
  ValueId find_value(const std::string& name) const;  // invalid if absent

  // Low-level mutation; GraphBuilder is the checked way in. These only
  // assert internal invariants (unique names, operands defined before use).
  ValueId add_param(const std::string& name, TensorType type);
  ValueId add_node(OpKind op, std::vector<ValueId> inputs, Attrs attrs, TensorType type,
                   const std::string& name, SourceLoc loc = {});
  void add_output(const std::string& name, ValueId v);
  void clear_outputs() { outputs_.clear(); }
  void rename_value(ValueId v, const std::string& name);  // name must be free

  bool has_name(const std::string& name) const;
  // A name not yet used in this graph, derived from `hint`.
  std::string fresh_name(const std::string& hint) const;

  // Structural equality: same params, nodes (op, operand names, attrs, types,
  // names) in the same order, same outputs. Source locations are ignored.
  bool operator==(const Graph& o) const;
  bool operator!=(const Graph& o) const { return !(*this == o); }

 private:
  // An internal error naming the id (the planners' hot paths inline value()).
  [[noreturn]] void value_out_of_range(ValueId v) const;

  std::string name_;
  std::vector<ValueInfo> values_;
  std::vector<ValueId> params_;
  std::vector<Node> nodes_;
  std::vector<GraphOutput> outputs_;
  std::unordered_map<std::string, int32_t> name_index_;  // name -> value index
  // Per hint, the next suffix to try, so generating n names is O(n) overall.
  mutable std::unordered_map<std::string, int> next_suffix_;
};

// A file holds graphs and user kernels (docs/kernel-language.md); the first
// graph is the entry.
struct Module {
  std::vector<Graph> graphs;
  std::vector<UserKernel> kernels;
  const Graph* find(const std::string& name) const;
  const UserKernel* find_kernel(const std::string& name) const;
};

}  // namespace stitch
