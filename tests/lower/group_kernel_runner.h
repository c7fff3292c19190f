// Test helpers of the group lowerings: the whole graph as one fusion group,
// and one lowered kernel run on the CPU against the graph's parameters.
#pragma once

#include <stdexcept>
#include <algorithm>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "codegen/cpu/cpp_emitter.h"
#include "fusion/fusion_plan.h"
#include "kir/kernel.h"
#include "lower/lower_loop_group.h"
#include "runtime/cpu/cpu_compiler.h"
#include "stitch/graph.h"
#include "stitch/interpreter.h"
#include "stitch/tensor.h"

namespace stitch::testing {

// Every node of `g` in one group of `kind`, rooted at the graph's outputs.
inline FusionGroup whole_graph_group(const Graph& g, GroupKind kind) {
  FusionGroup group;
  group.kind = kind;
  for (int n = 0; n < static_cast<int>(g.nodes().size()); ++n) group.nodes.push_back(n);
  for (const GraphOutput& out : g.outputs()) group.roots.push_back(g.value(out.value).producer);
  std::sort(group.roots.begin(), group.roots.end());
  group.roots.erase(std::unique(group.roots.begin(), group.roots.end()), group.roots.end());
  return group;
}

// Runs `kernel` (loaded in `module`, with signature `sig` over `g`) on
// `inputs`, one per parameter; returns one tensor per graph output.
inline std::vector<Tensor> run_group_kernel(const runtime::cpu::CpuModule& module, const Graph& g,
                                            const kir::Kernel& kernel, const kir::GroupSignature& sig,
                                            const std::vector<Tensor>& inputs) {
  SymbolBindings bindings = bind_inputs(g, inputs);
  std::unordered_map<int, Tensor> values;
  for (size_t i = 0; i < g.params().size(); ++i) values[g.params()[i].index] = inputs[i];
  std::vector<Tensor*> buffers;
  for (ValueId v : sig.inputs) buffers.push_back(&values.at(v.index));
  for (ValueId v : sig.outputs) values[v.index] = Tensor(g.type(v).dtype, concrete_shape(g.type(v).shape, bindings));
  for (ValueId v : sig.outputs) buffers.push_back(&values.at(v.index));
  // A gather's status word (docs/lowering.md, Gather), zero before the run.
  Tensor status(DType::i32, {1});
  if (sig.status) {
    status.data<int32_t>()[0] = 0;
    buffers.push_back(&status);
  }
  std::vector<int64_t> scalars;
  for (const std::string& s : sig.symbols) scalars.push_back(runtime::cpu::scalar_slot(bindings.at(s)));
  runtime::cpu::run_kernel(module, kernel, buffers, scalars);
  if (sig.status && status.data<int32_t>()[0] != 0) {
    throw std::runtime_error("kernel " + kernel.name + " reported a gather index out of range");
  }
  std::vector<Tensor> out;
  for (const GraphOutput& o : g.outputs()) out.push_back(values.at(o.value.index));
  return out;
}

// One lowered group of a suite's case.
template <class Case>
struct LoweredGroup {
  Case c;
  Graph graph;
  FusionGroup group;
  kir::Kernel kernel;
  kir::GroupSignature signature;
};

// A suite's lowered groups, compiled together into one module (one compiler
// run for the suite), each run against its graph's parameters.
template <class Case>
class LoweredGroups {
 public:
  void add(Case c, Graph g, FusionGroup group, kir::Kernel kernel) {
    kir::GroupSignature sig = lower::loop_group_signature(g, group);
    groups_.push_back({std::move(c), std::move(g), std::move(group), std::move(kernel), std::move(sig)});
  }
  void compile() {
    std::vector<kir::Kernel> kernels;
    for (const LoweredGroup<Case>& l : groups_) kernels.push_back(l.kernel);
    module_ = std::make_unique<runtime::cpu::CpuModule>(
        runtime::cpu::compile_and_load(codegen::cpu::emit_cpp_translation_unit(kernels)));
  }
  const std::vector<LoweredGroup<Case>>& all() const { return groups_; }
  std::vector<Tensor> run(const LoweredGroup<Case>& l, const std::vector<Tensor>& inputs) const {
    return run_group_kernel(*module_, l.graph, l.kernel, l.signature, inputs);
  }

 private:
  std::vector<LoweredGroup<Case>> groups_;
  std::unique_ptr<runtime::cpu::CpuModule> module_;
};

}  // namespace stitch::testing
