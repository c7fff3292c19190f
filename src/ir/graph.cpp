#include "stitch/graph.h"

#include <fmt/format.h>

namespace stitch {

void Graph::value_out_of_range(ValueId v) const {
  fail_internal(fmt::format("value id {} out of range", v.index), __FILE__, __LINE__);
}

const Node* Graph::producer(ValueId v) const {
  int p = value(v).producer;
  return p < 0 ? nullptr : &nodes_[p];
}

ValueId Graph::find_value(const std::string& name) const {
  auto it = name_index_.find(name);
  return it == name_index_.end() ? ValueId{} : ValueId{it->second};
}

bool Graph::has_name(const std::string& name) const { return name_index_.count(name) != 0; }

std::string Graph::fresh_name(const std::string& hint) const {
  std::string base = hint.empty() ? "t" : hint;
  if (!has_name(base)) return base;
  int& next = next_suffix_.try_emplace(base, 1).first->second;
  for (;; ++next) {
    std::string candidate = fmt::format("{}_{}", base, next);
    if (!has_name(candidate)) return candidate;
  }
}

ValueId Graph::add_param(const std::string& name, TensorType type) {
  STITCH_ASSERT(!has_name(name), "duplicate value name " + name);
  STITCH_ASSERT(nodes_.empty(), "parameters must precede nodes");
  ValueId id{num_values()};
  values_.push_back({name, std::move(type), -1});
  params_.push_back(id);
  name_index_[name] = id.index;
  return id;
}

ValueId Graph::add_node(OpKind op, std::vector<ValueId> inputs, Attrs attrs, TensorType type,
                        const std::string& name, SourceLoc loc) {
  STITCH_ASSERT(!has_name(name), "duplicate value name " + name);
  for (ValueId in : inputs) {
    STITCH_ASSERT(in.index >= 0 && in.index < num_values(), "operand defined after its use");
  }
  ValueId id{num_values()};
  values_.push_back({name, std::move(type), static_cast<int>(nodes_.size())});
  nodes_.push_back({op, std::move(inputs), std::move(attrs), id, std::move(loc)});
  name_index_[name] = id.index;
  return id;
}

void Graph::add_output(const std::string& name, ValueId v) {
  value(v);
  outputs_.push_back({name, v});
}

void Graph::rename_value(ValueId v, const std::string& name) {
  STITCH_ASSERT(!has_name(name), "rename to a taken name " + name);
  name_index_.erase(values_[v.index].name);
  values_[v.index].name = name;
  name_index_[name] = v.index;
  value(v);
}

bool Graph::operator==(const Graph& o) const {
  if (name_ != o.name_ || params_.size() != o.params_.size() || nodes_.size() != o.nodes_.size() ||
      outputs_.size() != o.outputs_.size()) {
    return false;
  }
  auto same_value = [&](ValueId a, ValueId b) {
    return value(a).name == o.value(b).name && value(a).type == o.value(b).type;
  };
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!same_value(params_[i], o.params_[i])) return false;
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& a = nodes_[i];
    const Node& b = o.nodes_[i];
    if (a.op != b.op || a.attrs != b.attrs || a.inputs.size() != b.inputs.size() ||
        !same_value(a.output, b.output)) {
      return false;
    }
    for (size_t j = 0; j < a.inputs.size(); ++j) {
      if (value(a.inputs[j]).name != o.value(b.inputs[j]).name) return false;
    }
  }
  for (size_t i = 0; i < outputs_.size(); ++i) {
    if (outputs_[i].name != o.outputs_[i].name || !same_value(outputs_[i].value, o.outputs_[i].value)) {
      return false;
    }
  }
  return true;
}

const Graph* Module::find(const std::string& name) const {
  for (const Graph& g : graphs) {
    if (g.name() == name) return &g;
  }
  return nullptr;
}

const UserKernel* Module::find_kernel(const std::string& name) const {
  for (const UserKernel& k : kernels) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

}  // namespace stitch
