#include "runtime/cpu/executable.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "codegen/cpu/cpp_emitter.h"
#include "kir/printer.h"
#include "stitch/error.h"
#include "stitch/interpreter.h"

namespace stitch::runtime::cpu {

namespace {

// Kernel names are C identifiers and must be unique within the unit.
std::string kernel_prefix(const std::string& graph_name) {
  std::string out = "k_";
  for (char c : graph_name) out += (std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return out;
}

int64_t value_bytes(const Graph& g, ValueId v, const SymbolBindings& bindings) {
  int64_t n = dtype_size(g.type(v).dtype);
  for (int64_t d : concrete_shape(g.type(v).shape, bindings)) n *= d;
  return n;
}

}  // namespace

CpuExecutable::CpuExecutable(Graph graph, FusionPlan plan, std::vector<lower::LoweredGroup> groups,
                             std::string source, CpuModule module)
    : graph_(std::move(graph)),
      plan_(std::move(plan)),
      groups_(std::move(groups)),
      source_(std::move(source)),
      module_(std::move(module)) {
  for (const lower::LoweredGroup& l : groups_) functions_.push_back(module_.function(l.kernel->name));
}

CpuExecutable CpuExecutable::compile(const Graph& canonical_graph, PlannerKind planner, KernelCache& cache,
                                     const DumpHook& dump) {
  FusionPlan fusion_plan = stitch::plan(canonical_graph, planner);
  if (dump) dump("plan", print_plan(canonical_graph, fusion_plan));
  std::vector<lower::LoweredGroup> lowered =
      lower::lower_plan(canonical_graph, fusion_plan, kernel_prefix(canonical_graph.name()));
  for (const lower::LoweredGroup& l : lowered) {
    if (l.kernel) continue;
    const FusionGroup& group = fusion_plan.groups[l.group];
    std::string what = fmt::format("{}: {}", group_kind_name(group.kind),
                                   group.roots.empty() ? std::string("no roots")
                                                       : describe_node(canonical_graph, group.roots.front()));
    throw UserError(fmt::format("--backend cpu cannot run this graph yet: group {} ({}): {}; use --backend interp",
                                l.group, what, l.not_lowered_reason));
  }
  std::vector<kir::Kernel> kernels;
  for (const lower::LoweredGroup& l : lowered) kernels.push_back(*l.kernel);
  if (dump) {
    std::string text;
    for (const kir::Kernel& k : kernels) text += kir::print_kernel(k);
    dump("kir", text);
  }
  std::string source = codegen::cpu::emit_cpp_translation_unit(kernels);
  if (dump) dump("source", source);
  CacheStats before = cache.stats();
  CpuModule module = cache.load_or_compile(source);
  CacheStats after = cache.stats();
  CpuExecutable exe(canonical_graph, std::move(fusion_plan), std::move(lowered), std::move(source),
                    std::move(module));
  exe.cache_stats_ = {after.hits - before.hits, after.misses - before.misses,
                      after.recompiled_corrupt - before.recompiled_corrupt};
  return exe;
}

std::vector<Tensor> CpuExecutable::run(const std::vector<Tensor>& inputs) {
  const Graph& g = graph_;
  SymbolBindings bindings = bind_inputs(g, inputs);
  const int group_count = static_cast<int>(groups_.size());

  // Graph outputs get tensors of their own (they are returned); every other
  // group root is an intermediate that lives in the pool from its producing
  // group to its last consumer.
  std::map<int, Tensor> outputs;  // by value index
  for (const GraphOutput& o : g.outputs()) {
    if (g.value(o.value).producer >= 0 && !outputs.count(o.value.index)) {
      outputs.emplace(o.value.index, Tensor(g.type(o.value).dtype, concrete_shape(g.type(o.value).shape, bindings)));
    }
  }
  std::map<int, int> last_use;  // intermediate value index -> last group reading it
  for (int i = 0; i < group_count; ++i) {
    for (ValueId v : groups_[i].signature.outputs) {
      if (!outputs.count(v.index)) last_use[v.index] = i;
    }
  }
  for (int i = 0; i < group_count; ++i) {
    for (ValueId v : groups_[i].signature.inputs) {
      if (auto it = last_use.find(v.index); it != last_use.end()) it->second = std::max(it->second, i);
    }
  }

  std::vector<std::vector<std::byte>> pool;
  std::vector<int> free_buffers;          // indices into pool
  std::map<int, int> buffer_of;           // intermediate value index -> pool index
  std::map<int, const std::byte*> params;  // parameter value index -> input data
  for (size_t i = 0; i < g.params().size(); ++i) params[g.params()[i].index] = inputs[i].raw();

  auto address_of = [&](ValueId v) -> void* {
    if (auto it = params.find(v.index); it != params.end()) return const_cast<std::byte*>(it->second);
    if (auto it = outputs.find(v.index); it != outputs.end()) return it->second.raw();
    if (auto it = buffer_of.find(v.index); it != buffer_of.end()) return pool[it->second].data();
    throw InternalError(fmt::format("cpu executable: value {} has no buffer", g.value_name(v)), __FILE__, __LINE__);
  };

  for (int i = 0; i < group_count; ++i) {
    const lower::GroupSignature& sig = groups_[i].signature;
    // Inputs of this group stay held until after it ran, so a root never
    // shares a buffer with a value the same kernel reads.
    for (ValueId v : sig.outputs) {
      if (outputs.count(v.index)) continue;
      size_t bytes = static_cast<size_t>(value_bytes(g, v, bindings));
      // Best fit: the smallest free buffer that is large enough.
      auto best = free_buffers.end();
      for (auto it = free_buffers.begin(); it != free_buffers.end(); ++it) {
        if (pool[*it].size() >= bytes && (best == free_buffers.end() || pool[*it].size() < pool[*best].size())) {
          best = it;
        }
      }
      if (best != free_buffers.end()) {
        buffer_of[v.index] = *best;
        free_buffers.erase(best);
      } else {
        buffer_of[v.index] = static_cast<int>(pool.size());
        pool.emplace_back(bytes);
      }
    }
    std::vector<void*> buffers;
    for (ValueId v : sig.inputs) buffers.push_back(address_of(v));
    for (ValueId v : sig.outputs) buffers.push_back(address_of(v));
    std::vector<int64_t> scalars;
    for (const std::string& s : sig.symbols) scalars.push_back(scalar_slot(bindings.at(s)));
    functions_[i](buffers.data(), scalars.data());
    for (auto& [value, last] : last_use) {
      if (last == i) free_buffers.push_back(buffer_of.at(value));
    }
  }

  peak_intermediate_bytes_ = 0;
  for (const std::vector<std::byte>& b : pool) peak_intermediate_bytes_ += static_cast<int64_t>(b.size());
  intermediate_buffer_count_ = static_cast<int>(pool.size());
  intermediate_value_count_ = static_cast<int>(last_use.size());

  // A value returned twice, or a parameter returned as is, gets its own copy.
  std::vector<Tensor> results;
  for (const GraphOutput& o : g.outputs()) {
    if (g.value(o.value).producer < 0) {
      for (size_t i = 0; i < g.params().size(); ++i) {
        if (g.params()[i] == o.value) results.push_back(inputs[i]);
      }
    } else {
      results.push_back(outputs.at(o.value.index));
    }
  }
  return results;
}

}  // namespace stitch::runtime::cpu
