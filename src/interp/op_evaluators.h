// The interpreter's per-category evaluators. interpreter.cpp dispatches each
// node to one of them; each returns the node's value already rounded to its dtype.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "interp/wide_buffer.h"
#include "stitch/graph.h"

namespace stitch::interp {

// One node to evaluate: its operands' values and its result's concrete type.
struct OpCall {
  const Node& node;
  std::vector<const WideBuffer*> inputs;
  DType out_dtype;
  std::vector<int64_t> out_shape;
  const std::string& out_name;  // for error messages
  BufferPool* pool;

  OpKind op() const { return node.op; }
  const WideBuffer& in(size_t i) const { return *inputs[i]; }
  WideBuffer make_output() const { return WideBuffer(out_dtype, out_shape, out_name, pool); }
};

WideBuffer evaluate_unary(const OpCall& call);        // elementwise.cpp
WideBuffer evaluate_binary(const OpCall& call);       // elementwise.cpp
WideBuffer evaluate_select_clamp(const OpCall& call); // elementwise.cpp
WideBuffer evaluate_cast(const OpCall& call);         // cast.cpp
WideBuffer evaluate_reduction(const OpCall& call);    // reductions.cpp
WideBuffer evaluate_layout(const OpCall& call);       // data_movement.cpp: broadcast reshape transpose slice concat pad
WideBuffer evaluate_gather(const OpCall& call);       // data_movement.cpp
WideBuffer evaluate_source(const OpCall& call);       // sources.cpp: iota, constant
WideBuffer evaluate_dot(const OpCall& call);          // dot.cpp
WideBuffer evaluate_attention(const OpCall& call);    // attention.cpp
WideBuffer evaluate_conv(const OpCall& call);         // conv.cpp: a bias when call.inputs has 3

// Called once per evaluated node with its call (operands still alive) and result.
using NodeObserver = std::function<void(const OpCall& call, const WideBuffer& result)>;

// stitch::interpret, calling `observe` (when set) after each node.
std::vector<Tensor> interpret_observed(const Graph& g, const std::vector<Tensor>& inputs,
                                       const NodeObserver& observe);

}  // namespace stitch::interp
