// The reference interpreter's driver: binds the inputs, evaluates the live
// nodes in order through the one dispatch over OpKind, and frees each value
// after its last use so workloads of tens of millions of elements fit.
#include "stitch/interpreter.h"

#include <fmt/format.h>

#include <optional>

#include "interp/op_evaluators.h"

namespace stitch {

namespace {

using interp::OpCall;
using interp::WideBuffer;

// Every OpKind is listed, with no default, so a new op is a compile warning here.
WideBuffer evaluate(const OpCall& call) {
  switch (call.op()) {
    case OpKind::Neg:
    case OpKind::Abs:
    case OpKind::Exp:
    case OpKind::Exp2:
    case OpKind::Log:
    case OpKind::Log2:
    case OpKind::Log1p:
    case OpKind::Expm1:
    case OpKind::Sqrt:
    case OpKind::Rsqrt:
    case OpKind::Reciprocal:
    case OpKind::Sin:
    case OpKind::Cos:
    case OpKind::Tan:
    case OpKind::Tanh:
    case OpKind::Sigmoid:
    case OpKind::Erf:
    case OpKind::Relu:
    case OpKind::Floor:
    case OpKind::Ceil:
    case OpKind::Round:
    case OpKind::Sign:
    case OpKind::Not:
    case OpKind::IsNan:
    case OpKind::IsInf: return interp::evaluate_unary(call);
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Div:
    case OpKind::Rem:
    case OpKind::Pow:
    case OpKind::Max:
    case OpKind::Min:
    case OpKind::Atan2:
    case OpKind::And:
    case OpKind::Or:
    case OpKind::Xor:
    case OpKind::Eq:
    case OpKind::Ne:
    case OpKind::Lt:
    case OpKind::Le:
    case OpKind::Gt:
    case OpKind::Ge: return interp::evaluate_binary(call);
    case OpKind::Select:
    case OpKind::Clamp: return interp::evaluate_select_clamp(call);
    case OpKind::Cast: return interp::evaluate_cast(call);
    case OpKind::Broadcast:
    case OpKind::Reshape:
    case OpKind::Transpose:
    case OpKind::Slice:
    case OpKind::Concat:
    case OpKind::Pad: return interp::evaluate_layout(call);
    case OpKind::Gather: return interp::evaluate_gather(call);
    case OpKind::Iota:
    case OpKind::Constant: return interp::evaluate_source(call);
    case OpKind::ReduceSum:
    case OpKind::ReduceProd:
    case OpKind::ReduceMax:
    case OpKind::ReduceMin:
    case OpKind::ReduceMean:
    case OpKind::ReduceAny:
    case OpKind::ReduceAll:
    case OpKind::ArgMax:
    case OpKind::ArgMin: return interp::evaluate_reduction(call);
    case OpKind::Dot: return interp::evaluate_dot(call);
    case OpKind::Attention: return interp::evaluate_attention(call);
    case OpKind::Conv: return interp::evaluate_conv(call);
  }
  STITCH_ASSERT(false, fmt::format("interpreter: no evaluator for op {}", op_name(call.op())));
}

// Values that reach an output. Other nodes are not evaluated, so they cost
// nothing and raise no data-dependent error, as after dead-code elimination.
std::vector<bool> live_values(const Graph& g) {
  std::vector<bool> live(g.num_values(), false);
  for (const GraphOutput& o : g.outputs()) live[o.value.index] = true;
  for (auto it = g.nodes().rbegin(); it != g.nodes().rend(); ++it) {
    if (!live[it->output.index]) continue;
    for (ValueId in : it->inputs) live[in.index] = true;
  }
  return live;
}

}  // namespace

std::vector<Tensor> interpret(const Graph& g, const std::vector<Tensor>& inputs) {
  return interp::interpret_observed(g, inputs, nullptr);
}

std::vector<Tensor> interp::interpret_observed(const Graph& g, const std::vector<Tensor>& inputs,
                                               const NodeObserver& observe) {
  const SymbolBindings bindings = bind_inputs(g, inputs);
  const std::vector<bool> live = live_values(g);
  const int num_nodes = static_cast<int>(g.nodes().size());

  std::vector<bool> is_output(g.num_values(), false);
  for (const GraphOutput& o : g.outputs()) is_output[o.value.index] = true;
  std::vector<int> last_use(g.num_values(), -1);
  for (int i = 0; i < num_nodes; ++i) {
    if (!live[g.nodes()[i].output.index]) continue;
    for (ValueId in : g.nodes()[i].inputs) last_use[in.index] = i;
  }

  interp::BufferPool pool;
  std::vector<std::optional<WideBuffer>> values(g.num_values());
  for (size_t i = 0; i < g.params().size(); ++i) {
    const ValueId p = g.params()[i];
    if (last_use[p.index] >= 0) values[p.index] = interp::widen(inputs[i], g.value_name(p), &pool);
  }

  for (int i = 0; i < num_nodes; ++i) {
    const Node& node = g.nodes()[i];
    if (!live[node.output.index]) continue;
    const TensorType& type = g.type(node.output);
    std::vector<const WideBuffer*> operands;
    for (ValueId in : node.inputs) {
      STITCH_ASSERT(values[in.index].has_value(), "interpreter: operand freed or never computed");
      operands.push_back(&*values[in.index]);
    }
    try {
      OpCall call{node, std::move(operands), type.dtype, concrete_shape(type.shape, bindings),
                  g.value_name(node.output), &pool};
      values[node.output.index] = evaluate(call);
      if (observe) observe(call, *values[node.output.index]);
    } catch (const UserError& e) {
      throw e.located(node.loc);
    }
    for (ValueId in : node.inputs) {
      if (last_use[in.index] != i || is_output[in.index] || !values[in.index]) continue;
      pool.recycle(std::move(*values[in.index]));
      values[in.index].reset();
    }
  }

  std::vector<Tensor> results;
  for (const GraphOutput& o : g.outputs()) {
    const ValueInfo& info = g.value(o.value);
    if (info.producer >= 0) {
      results.push_back(interp::narrow(*values[o.value.index]));
      continue;
    }
    for (size_t i = 0; i < g.params().size(); ++i) {
      if (g.params()[i] == o.value) results.push_back(inputs[i]);
    }
  }
  return results;
}

}  // namespace stitch
