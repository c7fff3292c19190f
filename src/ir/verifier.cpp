#include "ir/verifier.h"

#include <fmt/format.h>

#include <cstdint>
#include <unordered_set>

#include "ir/type_inference.h"

namespace stitch {

namespace {

bool is_identity(const Graph& g, const Node& n) {
  const TensorType& in = g.type(n.inputs.empty() ? n.output : n.inputs[0]);
  const TensorType& out = g.type(n.output);
  switch (n.op) {
    case OpKind::Reshape:
    case OpKind::Broadcast:
    case OpKind::Slice:
      return in == out;
    case OpKind::Cast:
      return in.dtype == out.dtype;
    case OpKind::Transpose: {
      const auto& perm = n.attrs.get("perm").as_ints();
      for (size_t i = 0; i < perm.size(); ++i) {
        if (perm[i] != static_cast<int64_t>(i)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

}  // namespace

std::vector<std::string> verify(const Graph& g, VerifyOptions opts) {
  std::vector<std::string> problems;
  auto problem = [&](std::string msg) { problems.push_back(std::move(msg)); };

  std::unordered_set<std::string> names;
  for (int i = 0; i < g.num_values(); ++i) {
    const ValueInfo& v = g.value(ValueId{i});
    if (v.name.empty()) problem(fmt::format("value %{} has no name", i));
    if (!names.insert(v.name).second) problem(fmt::format("name '{}' is defined twice", v.name));
    if (v.producer >= static_cast<int>(g.nodes().size())) problem(fmt::format("value '{}' has a bad producer", v.name));
    if (v.producer >= 0 && g.nodes()[v.producer].output.index != i) {
      problem(fmt::format("value '{}' and its producer disagree", v.name));
    }
  }
  for (ValueId p : g.params()) {
    if (g.value(p).producer != -1) problem(fmt::format("parameter '{}' has a producer", g.value_name(p)));
  }

  std::vector<bool> defined(g.num_values(), false);
  for (ValueId p : g.params()) defined[p.index] = true;
  for (const Node& n : g.nodes()) {
    std::string where = fmt::format("{} '{}'", op_name(n.op), g.value_name(n.output));
    std::vector<TensorType> types;
    bool inputs_ok = true;
    for (ValueId in : n.inputs) {
      if (in.index < 0 || in.index >= g.num_values() || !defined[in.index]) {
        problem(fmt::format("{}: operand used before its definition", where));
        inputs_ok = false;
        continue;
      }
      types.push_back(g.type(in));
    }
    defined[n.output.index] = true;
    if (!inputs_ok) continue;
    Attrs attrs = n.attrs;
    try {
      TensorType t = infer_type(n.op, types, attrs);
      if (t != g.type(n.output)) {
        problem(fmt::format("{}: stored type {} but the op gives {}", where, g.type(n.output).str(), t.str()));
      }
      if (attrs != n.attrs) problem(fmt::format("{}: attributes are not in normal form", where));
    } catch (const UserError& e) {
      problem(fmt::format("{}: {}", where, e.what()));
    }
    if (!opts.canonical) continue;
    if (is_elementwise(n.op)) {
      for (ValueId in : n.inputs) {
        if (g.type(in).shape != g.type(n.output).shape) {
          problem(fmt::format("{}: operand '{}' has shape {}; canonical form broadcasts explicitly", where,
                              g.value_name(in), shape_str(g.type(in).shape)));
        }
      }
    }
    if (is_identity(g, n)) problem(fmt::format("{}: identity op left in canonical form", where));
  }
  if (g.outputs().empty()) problem("the graph returns nothing");
  for (const GraphOutput& o : g.outputs()) {
    if (o.value.index < 0 || o.value.index >= g.num_values()) problem(fmt::format("output '{}' is not a value", o.name));
  }
  if (opts.canonical) {
    std::vector<bool> live(g.num_values(), false);
    for (const GraphOutput& o : g.outputs()) live[o.value.index] = true;
    for (auto it = g.nodes().rbegin(); it != g.nodes().rend(); ++it) {
      if (!live[it->output.index]) {
        problem(fmt::format("{} '{}' is dead", op_name(it->op), g.value_name(it->output)));
        continue;
      }
      for (ValueId in : it->inputs) live[in.index] = true;
    }
  }
  return problems;
}

void verify_or_throw(const Graph& g, VerifyOptions opts) {
  std::vector<std::string> problems = verify(g, opts);
  if (problems.empty()) return;
  std::string msg = fmt::format("graph '{}' fails verification:", g.name());
  for (const std::string& p : problems) msg += "\n  " + p;
  STITCH_ASSERT(false, msg);
}

}  // namespace stitch
