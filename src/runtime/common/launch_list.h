// What the CPU and CUDA executables run (DESIGN.md, Runtime): the launch
// list's steps, made by the compile layer (pipeline/lowered_plan.h), and the
// values each step reads and writes for the buffer plan. Beside it:
// dot_panels.h (a dot epilogue's panels), input_checks.h (what both back ends
// check before a launch).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kir/kernel.h"
#include "kir/group_signature.h"
#include "runtime/common/buffer_plan.h"
#include "stitch/error.h"
#include "stitch/graph.h"
#include "stitch/shape.h"

namespace stitch::runtime {

// Bytes of `v` once its symbols are bound.
int64_t value_bytes(const Graph& g, ValueId v, const SymbolBindings& bindings);

// A group the reference interpreter runs (LoweredGroup::interpreted): its
// ops as a graph of their own, whose parameters are the values `inputs` names
// in the whole graph and whose outputs are the values `outputs` names.
struct InterpretedGroup {
  Graph graph;
  std::vector<ValueId> inputs, outputs;
};

// One entry of a launch list, before a back end binds its entry point: a
// dot (a library call on `node`), the kernel of its group, or a group the
// interpreter runs.
// A dot with an epilogue (fusion/dot_epilogues.h) is one step: the dot's
// call runs `epilogue` a range of its blocks after each panel of rows.
struct LaunchStep {
  bool dot = false;
  int node = -1;                       // dot: the dot node
  const kir::Kernel* kernel = nullptr;  // otherwise, in the LoweredPlan
  std::shared_ptr<const InterpretedGroup> interpreted;  // or this, run by the interpreter
  kir::GroupSignature signature;     // values read and written
  // argmax/argmin nodes whose run-time extents are checked before the launch.
  std::vector<int> arg_reductions;
  // dot: its epilogue's kernel and signature, or nullptr.
  const kir::Kernel* epilogue = nullptr;
  kir::GroupSignature epilogue_signature;
};

// What a back end's launch step holds whatever the back end (the CPU's
// cpu::Step and the GPU's cuda::CudaStep add their entry points): a kernel, a
// library call (a dot) or a group the interpreter runs.
struct BoundStepBase {
  enum class Kind : uint8_t { Kernel, Dot, Interpret };
  Kind kind = Kind::Kernel;
  // Interpret: a group whose kernel did not compile (pipeline/group_fallback.h).
  std::shared_ptr<const InterpretedGroup> interpreted;
  int node = -1;                    // Dot: the dot node
  kir::GroupSignature signature;  // values read and written
  // argmax/argmin roots: an axis they reduce that is empty at run time is the
  // interpreter's UserError, checked before the launch.
  std::vector<int> arg_reductions;
  kir::GroupSignature epilogue_signature;  // Dot: its epilogue's (empty without one)
};

// The values a launch step reads and writes, for the buffer plan.
StepValues signature_values(const kir::GroupSignature& signature);
// A dot step with its epilogue: what the two read (less the dot's result,
// which the step writes) and write.
StepValues signature_values(const kir::GroupSignature& dot, const kir::GroupSignature& epilogue);

// The values a step reads and writes: a `Step` has `signature` and
// `epilogue_signature` (empty unless a dot has an epilogue).
template <class Step>
StepValues step_values(const Step& step) {
  if (step.epilogue_signature.outputs.empty()) return signature_values(step.signature);
  return signature_values(step.signature, step.epilogue_signature);
}

// When each intermediate of a launch list lives (buffer_plan.h): every value
// a step writes, except the graph's parameters and the values `output_slot`
// (value index -> result slot) sends to the result tensors. `Step` needs a
// `signature`.
template <class Step>
Lifetimes launch_lifetimes(const Graph& g, const std::vector<Step>& steps, const std::map<int, size_t>& output_slot) {
  std::set<int> external;
  for (const auto& [value, slot] : output_slot) external.insert(value);
  for (ValueId p : g.params()) external.insert(p.index);
  std::vector<StepValues> values;
  for (const Step& step : steps) values.push_back(step_values(step));
  return plan_lifetimes(values, external);
}

}  // namespace stitch::runtime
