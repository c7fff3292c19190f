#include "case_runner.h"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <map>
#include <memory>
#include <optional>

#include "ir/canonicalize.h"
#include "onnx/importer.h"
#include "disputed_reference.h"
#include "reference_compare.h"
#include "stitch/error.h"
#include "stitch/interpreter.h"
#include "stitch/ops.h"

namespace stitch::onnx_node {

namespace {

// Every planner.
constexpr PlannerKind kPlanners[] = {PlannerKind::None, PlannerKind::Xla, PlannerKind::Stitch, PlannerKind::Greedy,
                                     PlannerKind::Ilp};

// What the shard is doing, for the crash report: a crash in one case kills
// the whole shard, and this names the case.
char g_doing[512] = "starting";

void doing(const std::string& what) {
  const size_t n = std::min(what.size(), sizeof g_doing - 1);
  std::memcpy(g_doing, what.data(), n);
  g_doing[n] = '\0';
}

extern "C" void report_crash(int sig) {
  constexpr char kPrefix[] = "onnx_node_conformance: crashed while ";
  // Only async-signal-safe calls here; then die of the same signal.
  [[maybe_unused]] ssize_t ignored = write(STDERR_FILENO, kPrefix, sizeof kPrefix - 1);
  ignored = write(STDERR_FILENO, g_doing, strlen(g_doing));
  ignored = write(STDERR_FILENO, "\n", 1);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

// A case that imported, with everything each path needs.
struct ImportedCase {
  size_t result = 0;  // index into the results
  bool expanded = false;
  onnx_import::ImportedModel model;
  Graph canonical;
  std::vector<DataSet> sets;
  std::vector<std::vector<Tensor>> args;  // per data set, one tensor per graph parameter
};

void fail(CaseResult& r, std::string_view path, const std::string& what) {
  r.outcome = Outcome::Fail;
  if (!r.reason.empty()) r.reason += "\n";
  r.reason += fmt::format("{}: {}", path, what);
}

// The graph's parameters in order: bound ones from the initializers, the rest
// from the data set's inputs, matched by name.
std::vector<Tensor> bind_parameters(const onnx_import::ImportedModel& m, const std::vector<DeclaredInput>& declared,
                                    const DataSet& set) {
  std::map<std::string, const Tensor*> by_param;
  for (size_t i = 0; i < declared.size() && i < set.inputs.size(); ++i) {
    auto renamed = m.input_names.find(declared[i].name);
    by_param[renamed == m.input_names.end() ? declared[i].name : renamed->second] = &set.inputs[i];
  }
  std::vector<Tensor> args;
  for (ValueId p : m.graph.params()) {
    const std::string& name = m.graph.value_name(p);
    if (auto bound = m.bound.find(name); bound != m.bound.end()) {
      args.push_back(bound->second);
    } else if (auto given = by_param.find(name); given != by_param.end()) {
      args.push_back(*given->second);
    } else {
      throw UserError(fmt::format("parameter '{}' is neither bound nor a graph input of the data set", name));
    }
  }
  return args;
}

// Imports the model, feeding as known values (ImportOptions::known_inputs)
// the graph inputs it must know, such as a Reshape's shape given as an input:
// the graph is then specialised on the data set's values for them. Throws
// UserError (unsupported) when the data sets disagree on such a value.
onnx_import::ImportedModel import_with_known_inputs(const NodeCase& c, const std::vector<DeclaredInput>& declared,
                                                    std::vector<DataSet>& sets, CaseResult& r) {
  onnx_import::ImportOptions options;
  for (;;) {
    try {
      return onnx_import::import_onnx((c.dir / "model.onnx").string(), options);
    } catch (const onnx_import::NeedsKnownInput& e) {
      auto it = std::find_if(declared.begin(), declared.end(),
                             [&](const DeclaredInput& d) { return d.name == e.input(); });
      if (it == declared.end() || options.known_inputs.count(e.input())) throw;
      if (sets.empty()) sets = load_data_sets(c);
      if (sets.empty()) throw;
      const size_t index = static_cast<size_t>(it - declared.begin());
      if (index >= sets[0].inputs.size()) throw;
      for (const DataSet& s : sets) {
        if (index >= s.inputs.size() || !compare_tensors(s.inputs[index], sets[0].inputs[index], Tolerance::exact()).ok) {
          throw UserError(fmt::format("{} (the data sets give it different values)", e.what()));
        }
      }
      options.known_inputs[e.input()] = sets[0].inputs[index];
      r.known_inputs += (r.known_inputs.empty() ? "" : ", ") + e.input();
    }
  }
}

std::optional<ImportedCase> import_case(const NodeCase& c, size_t index, CaseResult& r) {
  ImportedCase ic;
  ic.result = index;
  ic.expanded = c.expanded();
  std::vector<DeclaredInput> declared;
  doing(fmt::format("importing {}", c.name));
  try {
    declared = declared_inputs(c);
    ic.model = import_with_known_inputs(c, declared, ic.sets, r);
  } catch (const UserError& e) {
    r.outcome = Outcome::Unsupported;
    r.reason = e.what();
    return std::nullopt;
  } catch (const std::exception& e) {
    fail(r, "import", e.what());
    return std::nullopt;
  }
  try {
    if (ic.sets.empty()) ic.sets = load_data_sets(c);
    if (ic.sets.empty()) throw UserError("no test_data_set_* folder");
    apply_disputed_reference(c.name, ic.sets);
    if (std::string contradiction = data_contradicts_model(declared, ic.sets); !contradiction.empty()) {
      r.outcome = Outcome::Unsupported;
      r.reason = contradiction;
      return std::nullopt;
    }
    for (const DataSet& s : ic.sets) ic.args.push_back(bind_parameters(ic.model, declared, s));
    ic.canonical = canonicalize(ic.model.graph);
  } catch (const std::exception& e) {
    fail(r, "data", e.what());
    return std::nullopt;
  }
  return ic;
}

// Runs `run` on every data set and compares with the reference outputs.
template <class Run>
void check_path(ImportedCase& ic, CaseResult& r, std::string_view path, Run&& run) {
  for (size_t s = 0; s < ic.sets.size(); ++s) {
    doing(fmt::format("running {} on {}", r.name, path));
    std::string diff;
    try {
      diff = compare_outputs(run(ic.args[s]), ic.sets[s].outputs);
    } catch (const std::exception& e) {
      diff = e.what();
    }
    if (!diff.empty()) fail(r, path, ic.sets.size() > 1 ? fmt::format("{}: {}", ic.sets[s].name, diff) : diff);
  }
}

void record_fusion(const ImportedCase& ic, const CompiledCase& exe, CaseResult& r) {
  r.graph_ops = non_trivial_op_count(ic.canonical);
  r.xla_kernels = exe.kernel_count();
  if (r.graph_ops >= 2 && r.xla_kernels >= r.graph_ops) {
    fail(r, "fusion",
         fmt::format("the xla planner runs {} kernels for {} non-trivial ops: not fused", r.xla_kernels, r.graph_ops));
  }
}

// Compiles a batch in one translation unit; when that fails (one bad graph
// fails them all), each graph alone, to say which one. A null entry is a
// graph that did not compile, its failure recorded.
std::vector<std::unique_ptr<CompiledCase>> compile_chunk(const std::vector<ImportedCase*>& chunk, PlannerKind planner,
                                                         CaseBackend& backend, std::vector<CaseResult>& results) {
  std::vector<Graph> graphs;
  for (const ImportedCase* ic : chunk) graphs.push_back(ic->canonical);
  try {
    doing(fmt::format("compiling {} graphs for {} on {} ({}, ...)", graphs.size(), planner_name(planner),
                      backend.name(), results[chunk.front()->result].name));
    return backend.compile_batch(graphs, planner);
  } catch (const std::exception&) {
  }
  std::vector<std::unique_ptr<CompiledCase>> exes(chunk.size());
  for (size_t k = 0; k < chunk.size(); ++k) {
    try {
      doing(fmt::format("compiling {} for {} on {}", results[chunk[k]->result].name, planner_name(planner),
                        backend.name()));
      exes[k] = std::move(backend.compile_batch({graphs[k]}, planner).front());
    } catch (const std::exception& e) {
      fail(results[chunk[k]->result], planner_name(planner), fmt::format("compile: {}", e.what()));
    }
  }
  return exes;
}

void run_planner(std::vector<ImportedCase>& cases, PlannerKind planner, CaseBackend& backend, size_t batch_size,
                 std::vector<CaseResult>& results) {
  std::vector<ImportedCase*> ready;
  for (ImportedCase& ic : cases) {
    std::string refused;
    try {
      refused = backend.unsupported_reason(ic.canonical, planner);
    } catch (const std::exception& e) {
      refused = e.what();
    }
    if (refused.empty()) {
      ready.push_back(&ic);
    } else {
      fail(results[ic.result], planner_name(planner),
           fmt::format("the {} back end refuses the graph: {}", backend.name(), refused));
    }
  }
  for (size_t begin = 0; begin < ready.size(); begin += batch_size) {
    std::vector<ImportedCase*> chunk(ready.begin() + static_cast<std::ptrdiff_t>(begin),
                                     ready.begin() + static_cast<std::ptrdiff_t>(std::min(ready.size(), begin + batch_size)));
    std::vector<std::unique_ptr<CompiledCase>> exes = compile_chunk(chunk, planner, backend, results);
    for (size_t k = 0; k < chunk.size(); ++k) {
      if (!exes[k]) continue;
      ImportedCase& ic = *chunk[k];
      CaseResult& r = results[ic.result];
      CompiledCase& exe = *exes[k];
      check_path(ic, r, planner_name(planner), [&](const std::vector<Tensor>& args) { return exe.run(args); });
      if (planner == PlannerKind::Xla && ic.expanded) record_fusion(ic, exe, r);
      if (planner == PlannerKind::Stitch && ic.expanded) r.stitch_kernels = exe.kernel_count();
    }
  }
}

}  // namespace

void install_crash_report() {
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(sig, report_crash);
}

std::string_view outcome_name(Outcome o) {
  switch (o) {
    case Outcome::Pass: return "pass";
    case Outcome::Fail: return "fail";
    case Outcome::Unsupported: return "unsupported";
  }
  return "?";
}

int non_trivial_op_count(const Graph& canonical) {
  int n = 0;
  for (const Node& node : canonical.nodes()) {
    const OpCategory category = op_info(node.op).category;
    if (category == OpCategory::Source || category == OpCategory::Broadcast || node.op == OpKind::Reshape) continue;
    ++n;
  }
  return n;
}

std::vector<CaseResult> run_cases(const std::vector<NodeCase>& cases, CaseBackend& backend, size_t batch_size) {
  std::vector<CaseResult> results(cases.size());
  std::vector<ImportedCase> imported;
  for (size_t i = 0; i < cases.size(); ++i) {
    results[i].name = cases[i].name;
    if (std::optional<ImportedCase> ic = import_case(cases[i], i, results[i])) imported.push_back(std::move(*ic));
  }
  for (ImportedCase& ic : imported) {
    check_path(ic, results[ic.result], "interpreter",
               [&](const std::vector<Tensor>& args) { return interpret(ic.model.graph, args); });
  }
  for (PlannerKind planner : kPlanners) run_planner(imported, planner, backend, batch_size, results);
  return results;
}

}  // namespace stitch::onnx_node
