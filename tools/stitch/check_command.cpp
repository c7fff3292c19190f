// `stitch check` (docs/cli.md): every implemented planner x every available
// back end against the reference interpreter, with the tolerance of
// docs/testing.md derived per output from the ops that feed it.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <set>

#include "cli.h"
#include "ir/canonicalize.h"
#include "options/options.h"
#include "progress.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "runtime/cpu/toolchain_check.h"
#include "stitch/interpreter.h"
#include "stitch/ops.h"
#include "stitch/text.h"
#include "tensor/compare.h"

namespace stitch::cli {

namespace {

// The allowance's K, and "+bound" where the propagated bound (which follows
// cancellation and conditioning) is larger somewhere.
std::string tolerance_text(const Tensor& want, const ErrorAllowance& a, const Tensor& propagated) {
  const bool fixed = is_float(want.dtype()) && (a.transcendental || a.reduction_length > 0);
  bool bounded = false;
  if (is_float(want.dtype())) {
    const double eps = machine_epsilon(want.dtype());
    const double k = static_cast<double>(allowance_ulps(a));
    for (int64_t i = 0; i < propagated.numel() && !bounded; ++i) {
      bounded = propagated.get_f64(i) > k * eps * (1 + std::fabs(want.get_f64(i)));
    }
  }
  if (!fixed) return bounded ? "bound" : "exact";
  const std::string k_text = fmt::format("{}eps", allowance_ulps(a));
  return bounded ? k_text + "+bound" : k_text;
}

// Test-only (docs/testing.md): STITCH_TEST_PERTURB_CHECK=1 changes element 0
// of the first compiled output, so the tests can see `stitch check` catch a
// wrong result without a real miscompile.
void perturb_for_tests(std::vector<Tensor>& results) {
  if (!environment_options().test_perturb_check || results.empty() || results[0].numel() == 0) return;
  Tensor& t = results[0];
  if (t.dtype() == DType::boolean) {
    t.set_i64(0, t.get_i64(0) == 0 ? 1 : 0);
  } else if (is_float(t.dtype())) {
    t.set_f64(0, t.get_f64(0) + 1.0);
  } else {
    t.set_i64(0, t.get_i64(0) + 1);
  }
}

struct Tally {
  int rows = 0;
  int mismatches = 0;
  int unsupported = 0;
  int errors = 0;
};

void print_row(const std::string& graph, const std::string& planner, const std::string& backend,
               const std::string& output, const std::string& abs_err, const std::string& rel_err,
               const std::string& tolerance, const std::string& status) {
  Progress::clear_for_output();
  std::cout << fmt::format("{:<24} {:<7} {:<7} {:<16} {:>12} {:>12} {:>14}  {}\n", graph, planner, backend, output,
                           abs_err, rel_err, tolerance, status);
}

std::vector<PlannerKind> checked_planners(const CheckOptions& options) {
  std::vector<PlannerKind> planners;
  for (const std::string& p : options.planners) planners.push_back(implemented_planner(p));
  if (planners.empty()) {
    planners = {PlannerKind::None, PlannerKind::Xla, PlannerKind::Stitch, PlannerKind::Greedy, PlannerKind::Ilp};
  }
  return planners;
}

void check_graph(const Graph& graph, const ModelInputs& model, const CheckOptions& options,
                 runtime::cpu::KernelCache& cache, Tally& tally, Progress& progress) {
  const std::string& name = graph.name();
  // One row for a whole planner (or, with planner "-", the whole graph).
  auto report = [&](const std::string& planner, const std::string& status, int& counter) {
    print_row(name, planner, options.backend, "-", "-", "-", "-", status);
    ++tally.rows;
    ++counter;
  };
  Graph canonical;
  std::vector<Tensor> inputs, want, bounds;
  SymbolBindings dims;
  try {
    canonical = canonicalize(graph);
    InputSpec spec;
    spec.random = true;
    spec.seed = options.seed;
    spec.dims = options.dims;
    dims = parse_dims(options.dims);
    for (ValueId p : canonical.params()) {
      for (const Dim& d : canonical.type(p).shape) {
        if (d.is_symbolic() && dims.emplace(d.name(), kDefaultCheckDim).second) {
          spec.dims.push_back(fmt::format("{}={}", d.name(), kDefaultCheckDim));
        }
      }
    }
    inputs = gather_inputs(canonical, spec, model);
    BoundedReference reference = interpret_with_error_bounds(canonical, inputs);
    want = std::move(reference.outputs);
    bounds = std::move(reference.bounds);
  } catch (const UserError& e) {
    report("-", "error: " + e.formatted(), tally.errors);
    return;
  }
  for (PlannerKind planner : checked_planners(options)) {
    const std::string planner_text(planner_name(planner));
    progress.step(name + " " + planner_text);
    std::vector<Tensor> got;
    try {
      std::string fallback;
      if (options.backend == "cuda") {
        BackendRun run = check_run_on_cuda(canonical, planner, inputs);
        fallback = std::move(run.fallback);
        got = std::move(run.outputs);
      } else {
        pipeline::CpuCompileOptions compile_options;
        compile_options.warn = [](const std::string&) {};  // the fallback is reported as a row below
        runtime::cpu::CpuExecutable exe =
            pipeline::compile_cpu(canonical, planner, cache, compile_options);
        fallback = exe.fallback();
        if (fallback.empty()) got = exe.run(inputs);
      }
      if (!fallback.empty()) {
        // The result would still be right, but this planner x back end did not run.
        report(planner_text, "FAILED: the compiler rejected the plan: " + fallback, tally.mismatches);
        continue;
      }
    } catch (const runtime::cpu::ToolchainMissing&) {
      throw;  // nothing can be checked on this machine: exit status 2, with the fix
    } catch (const UserError& e) {
      // The back end's way of saying a group does not lower yet.
      report(planner_text, std::string("unsupported: ") + e.what(), tally.unsupported);
      continue;
    } catch (const runtime::cpu::CompileError& e) {
      // Generated code the compiler rejects is a Stitch bug: it fails the check.
      report(planner_text, fmt::format("FAILED: {}\n{}", e.what(), e.diagnostics()), tally.mismatches);
      continue;
    }
    perturb_for_tests(got);
    for (size_t i = 0; i < want.size(); ++i) {
      const GraphOutput& out = canonical.outputs()[i];
      ErrorAllowance allowance = output_allowance(canonical, out.value, dims);
      TensorComparison c = compare_with_interpreter(got[i], want[i], allowance, bounds[i]);
      ++tally.rows;
      if (!c.ok) ++tally.mismatches;
      std::string status = c.ok ? "ok" : "MISMATCH";
      if (!c.ok) {
        std::string detail = c.describe();
        std::replace(detail.begin(), detail.end(), '\n', ' ');
        status += ": " + detail;
      }
      print_row(name, planner_text, options.backend, out.name, fmt::format("{:.3g}", c.max_abs_error),
                fmt::format("{:.3g}", c.max_rel_error), tolerance_text(want[i], allowance, bounds[i]), status);
    }
  }
}

}  // namespace

int check_command(const std::vector<std::string>& files, const CheckOptions& options) {
  // Parse everything first: a malformed file is bad input, reported before any run.
  std::vector<Module> modules;
  std::vector<ModelInputs> models(files.size());
  std::vector<std::vector<const Graph*>> selected;
  for (size_t f = 0; f < files.size(); ++f) {
    modules.push_back(load_module(files[f], &models[f]));
  }
  for (size_t f = 0; f < files.size(); ++f) {
    std::vector<const Graph*> graphs;
    if (options.graph_name.empty()) {
      for (const Graph& g : modules[f].graphs) graphs.push_back(&g);
      if (graphs.empty()) throw UserError(fmt::format("{}: no graph defined", files[f]));
    } else {
      graphs.push_back(&select_graph(modules[f], options.graph_name, files[f]));
    }
    selected.push_back(std::move(graphs));
  }
  if (options.backend == "cuda") require_cuda_device();  // before any row: no GPU is bad usage, status 2
  runtime::cpu::KernelCache cache;
  Tally tally;
  print_row("graph", "planner", "backend", "output", "max_abs_err", "max_rel_err", "tolerance", "status");
  size_t graphs = 0;
  for (const std::vector<const Graph*>& s : selected) graphs += s.size();
  Progress progress("stitch check", graphs * checked_planners(options).size());
  for (size_t f = 0; f < selected.size(); ++f) {
    for (const Graph* g : selected[f]) check_graph(*g, models[f], options, cache, tally, progress);
  }
  progress.finish();
  int ok = tally.rows - tally.mismatches - tally.unsupported - tally.errors;
  std::cout << fmt::format("{} ok, {} failed, {} unsupported, {} bad input\n", ok, tally.mismatches,
                           tally.unsupported, tally.errors);
  if (tally.mismatches > 0) return kExitCheckFailed;
  if (tally.unsupported > 0 && !options.allow_unsupported) {
    std::cout << "unsupported paths fail the check; pass --allow-unsupported to accept them\n";
    return kExitCheckFailed;
  }
  if (tally.errors > 0) return kExitBadInput;
  return kExitOk;
}

}  // namespace stitch::cli
