#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>

#include "cli.h"
#include "fusion/planner.h"
#include "ir/canonicalize.h"
#include "onnx/importer.h"
#include "options/options.h"
#include "package/package_file.h"
#include "package/package_load.h"
#include "progress.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "stitch/interpreter.h"
#include "stitch/npy.h"
#include "stitch/text.h"

namespace stitch::cli {

std::pair<std::string, std::string> split_binding(const std::string& s, const char* option) {
  size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size()) {
    throw UserError(fmt::format("{} expects NAME=VALUE, got '{}'", option, s));
  }
  return {s.substr(0, eq), s.substr(eq + 1)};
}

namespace {

std::string param_list(const Graph& g) {
  std::string out;
  for (ValueId p : g.params()) out += (out.empty() ? "" : ", ") + g.value_name(p);
  return out.empty() ? "none" : out;
}

}  // namespace

uint64_t param_seed(uint64_t seed, size_t index) {
  // Distinct, reproducible streams per parameter.
  return seed * 0x9E3779B97F4A7C15ull + (index + 1) * 0xBF58476D1CE4E5B9ull;
}

void summarize(const std::string& name, const Tensor& t) {
  std::string shape;
  for (int d = 0; d < t.rank(); ++d) shape += (d ? ", " : "") + std::to_string(t.shape()[d]);
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  int64_t nans = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = t.get_f64(i);
    if (std::isnan(v)) {
      ++nans;
      continue;
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  int64_t finite = t.numel() - nans;
  std::cout << fmt::format("{}: {}[{}]", name, dtype_name(t.dtype()), shape);
  if (finite > 0) {
    std::cout << fmt::format("  min={:.6g} max={:.6g} mean={:.6g}", lo, hi, sum / static_cast<double>(finite));
  }
  if (nans) std::cout << fmt::format("  nan={}", nans);
  std::cout << "\n";
}

bool dump_enabled(const std::string& stage) {
  return environment_options().dumps(stage);
}

pipeline::StageDump stage_dumps() {
  return {[](std::string_view stage) { return dump_enabled(std::string(stage)); },
          [](std::string_view stage, const std::string& text) {
            std::cerr << "// STITCH_DUMP " << stage << "\n" << text;
          }};
}

Graph canonicalize_with_dumps(const Graph& g) {
  if (!dump_enabled("canonicalize")) return canonicalize(g);
  std::cerr << "// STITCH_DUMP graph: as parsed\n" << print_graph(g);
  return canonicalize(g, [](const std::string& pass, const Graph& after) {
    std::cerr << "// STITCH_DUMP graph: after " << pass << "\n" << print_graph(after);
  });
}

const Graph& select_graph(const Module& m, const std::string& graph_name, const std::string& file) {
  if (m.graphs.empty()) throw UserError(fmt::format("{}: no graph defined", file));
  if (graph_name.empty()) return m.graphs.front();
  if (const Graph* g = m.find(graph_name)) return *g;
  std::string names;
  for (const Graph& g : m.graphs) names += (names.empty() ? "" : ", ") + g.name();
  throw UserError(fmt::format("{}: no graph named '{}' (graphs: {})", file, graph_name, names));
}

SymbolBindings parse_dims(const std::vector<std::string>& specs) {
  SymbolBindings dims;
  for (const std::string& d : specs) {
    auto [name, text] = split_binding(d, "--dim");
    int64_t n = 0;
    const char* first = text.data();
    const char* last = first + text.size();
    const auto [end, ec] = std::from_chars(first, last, n);
    if (ec == std::errc::result_out_of_range) {
      throw UserError(fmt::format("--dim {}: {} does not fit in 64 bits; the limit on any extent is {}", d, text,
                                  kMaxTensorBytes));
    }
    if (text.empty() || ec != std::errc() || end != last) {
      throw UserError(fmt::format("--dim {}: '{}' is not a non-negative integer", d, text));
    }
    check_extent(fmt::format("--dim {}: {}", d, name), n);
    dims[name] = n;
  }
  return dims;
}

PlannerKind implemented_planner(const std::string& name) {
  std::optional<PlannerKind> kind = parse_planner_kind(name);
  if (!kind) throw UserError(fmt::format("unknown planner '{}' (planners: none, xla, stitch, ilp, greedy)", name));
  return *kind;
}

Module load_module(const std::string& file, ModelInputs* extras, const InputSpec* spec) {
  if (std::filesystem::path(file).extension() != ".onnx") return parse_file(file);
  onnx_import::ImportOptions options;
  onnx_import::ImportedModel imported;
  for (;;) {
    try {
      imported = onnx_import::import_onnx(file, options);
      break;
    } catch (const onnx_import::NeedsKnownInput& e) {
      std::optional<std::string> path;
      for (const std::string& b : spec ? spec->bindings : std::vector<std::string>()) {
        auto [name, file_path] = split_binding(b, "--input");
        if (name == e.input()) path = file_path;
      }
      if (!path || options.known_inputs.count(e.input())) throw;
      options.known_inputs.emplace(e.input(), read_npy(*path));
    }
  }
  if (extras) {
    for (const auto& [name, tensor] : options.known_inputs) extras->specialized.insert(name);
    extras->bound = std::move(imported.bound);
    extras->aliases = std::move(imported.input_names);
  }
  Module m;
  m.graphs.push_back(std::move(imported.graph));
  return m;
}

std::vector<Tensor> gather_inputs(const Graph& g, const InputSpec& spec, const ModelInputs& model) {
  const std::map<std::string, Tensor>& bound = model.bound;
  std::map<std::string, Tensor> given;
  for (const std::string& b : spec.bindings) {
    auto [name, path] = split_binding(b, "--input");
    if (model.specialized.count(name)) continue;  // consumed by the import
    if (auto alias = model.aliases.find(name); alias != model.aliases.end()) name = alias->second;
    if (bound.count(name)) {
      throw UserError(fmt::format("--input {}: '{}' is an initializer of the model, bound automatically", b, name));
    }
    if (!g.find_value(name).valid() || g.value(g.find_value(name)).producer >= 0) {
      throw UserError(fmt::format("--input {}: graph '{}' has no parameter '{}' (parameters: {})", b, g.name(),
                                  name, param_list(g)));
    }
    if (given.count(name)) throw UserError(fmt::format("--input: parameter '{}' is bound twice", name));
    given.emplace(name, read_npy(path));
  }
  SymbolBindings dims = parse_dims(spec.dims);
  // Symbols fixed by the given files take precedence over --dim only when they
  // agree; bind_inputs reports any disagreement later with both names.
  for (ValueId p : g.params()) {
    auto it = given.find(g.value_name(p));
    if (it == given.end()) continue;
    const Shape& s = g.type(p).shape;
    for (size_t d = 0; d < s.size() && d < it->second.shape().size(); ++d) {
      if (s[d].is_symbolic()) dims.emplace(s[d].name(), it->second.shape()[d]);
    }
  }
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < g.params().size(); ++i) {
    ValueId p = g.params()[i];
    const std::string& name = g.value_name(p);
    if (auto it = given.find(name); it != given.end()) {
      inputs.push_back(std::move(it->second));
      continue;
    }
    if (auto it = bound.find(name); it != bound.end()) {
      inputs.push_back(it->second);
      continue;
    }
    if (!spec.random) {
      throw UserError(fmt::format("missing input '{}' (give --input {}=FILE.npy or --random-inputs SEED)", name,
                                  name));
    }
    const TensorType& t = g.type(p);
    for (const Dim& d : t.shape) {
      if (d.is_symbolic() && !dims.count(d.name())) {
        throw UserError(fmt::format("random input '{}': symbolic dim {} is not bound (give --dim {}=N or an --input "
                                    "that fixes it)", name, d.name(), d.name()));
      }
    }
    const std::vector<int64_t> shape = concrete_shape(t.shape, dims);
    check_tensor_size(fmt::format("random input '{}'", name), t.dtype, shape);
    Tensor tensor = allocate_tensor(fmt::format("random input '{}'", name), t.dtype, shape);
    fill_random(tensor, param_seed(spec.seed, i));
    inputs.push_back(std::move(tensor));
  }
  return inputs;
}

namespace {

// --backend cpu: plan, lower, compile through the on-disk kernel cache, run.
std::vector<Tensor> run_on_cpu(const Graph& canonical, const std::string& planner, const std::vector<Tensor>& inputs,
                               bool tune) {
  const PlannerKind kind = executable_planner("cpu", planner);
  runtime::cpu::KernelCache cache;
  pipeline::CpuCompileOptions options;
  options.dump = stage_dumps();
  std::unique_ptr<Tuners> tuners = cpu_tuners(tune, cache, options);
  runtime::cpu::CpuExecutable exe = pipeline::compile_cpu(canonical, kind, cache, options);
  if (tuners) report_tuning(*tuners);
  std::vector<Tensor> results = exe.run(inputs);
  if (dump_enabled("buffers")) {
    std::cerr << fmt::format("buffers: {} kernels and library calls, {} intermediates in {} buffers, peak {} bytes\n",
                             exe.kernel_count(), exe.intermediate_value_count(), exe.intermediate_buffer_count(),
                             exe.peak_intermediate_bytes());
  }
  return results;
}

}  // namespace

std::unique_ptr<Tuners> cpu_tuners(bool tune, runtime::cpu::KernelCache& cache, pipeline::CpuCompileOptions& options) {
  if (!tune && !tune::tuning_requested_by_environment()) return nullptr;
  // A progress line while candidates are checked and timed (docs/cli.md, Progress).
  tune::TuneOptions fusion_options, schedule_options;
  fusion_options.measure.progress = progress_callback("stitch: tuning fusions,");
  schedule_options.measure.progress = progress_callback("stitch: tuning schedules,");
  auto tuners = std::make_unique<Tuners>(cache, fusion_options, schedule_options);
  Tuners* t = tuners.get();
  options.plan_tuner = [t](const Graph& g, const FusionPlan& plan, const schedule::RowScheduleTarget& target) {
    return t->fusions.refine(g, plan, target);
  };
  options.tuner = [t](const Graph& g, const FusionPlan& plan, const schedule::RowScheduleTarget& target) {
    return t->schedules.choose(g, plan, target);
  };
  options.tuner_key = t->schedules.key();
  return tuners;
}

void report_tuning(const Tuners& tuners) {
  const tune::FusionTuneStats& f = tuners.fusions.stats();
  std::cerr << fmt::format(
      "stitch: tuned {} fusion decisions: {} from the tuning cache, {} measured ({} stale, {} corrupt entries), {} not "
      "tunable; {} kernels split back into xla's\n",
      f.contested, f.hits, f.measured, f.stale, f.corrupt, f.untunable, f.split);
  report_schedule_tuning(tuners.schedules, tuners.fusions.report());
}

void report_schedule_tuning(const tune::ScheduleTuner& schedules, const std::string& earlier_report) {
  const tune::TuneStats& s = schedules.stats();
  std::cerr << fmt::format(
      "stitch: tuned {} groups with several candidate schedules: {} from the tuning cache, {} measured ({} stale, {} "
      "corrupt entries), {} not tunable; {} differ from the default\n",
      s.groups, s.hits, s.measured, s.stale, s.corrupt, s.untunable, s.changed);
  if (s.rejected > 0) {
    std::cerr << fmt::format("stitch: warning: {} candidate schedules disagreed with the interpreter and were not "
                             "taken (a bug in Stitch; STITCH_DUMP=tune shows them)\n",
                             s.rejected);
  }
  if (dump_enabled("tune")) std::cerr << "// STITCH_DUMP tune\n" << earlier_report << schedules.report();
}

PlannerKind executable_planner(const std::string& backend, const std::string& planner) {
  std::optional<PlannerKind> kind = parse_planner_kind(planner.empty() ? "xla" : planner);
  if (!kind) {
    throw UserError(
        fmt::format("--backend {} runs --planner none, xla, stitch, ilp or greedy, not '{}'", backend, planner));
  }
  return *kind;
}

int run_package(const std::string& file, const std::string& graph_name, const std::string& backend,
                const std::string& planner, const InputSpec& spec, const std::string& output_dir, bool print_values,
                bool tune);
int write_results(const Graph& canonical, const std::vector<Tensor>& results, const std::string& output_dir,
                  bool print_values);

int run_command(const std::string& file, const std::string& graph_name, const std::string& backend,
                const std::string& planner, const InputSpec& spec, const std::string& output_dir,
                bool print_values, bool tune) {
  if (package::is_package_file(file)) return run_package(file, graph_name, backend, planner, spec, output_dir, print_values, tune);
  ModelInputs model;
  Module m = load_module(file, &model, &spec);
  const Graph& g = select_graph(m, graph_name, file);
  if (tune && backend == "interp") throw UserError("--tune: the interpreter has no schedules to tune; use --backend cpu or cuda");
  if (backend == "cuda") require_cuda_device();
  if (backend != "interp" && backend != "cpu" && backend != "cuda") {
    throw UserError(fmt::format("backend '{}' is not built into this version of stitch; use --backend interp, cpu "
                                "or cuda", backend));
  }
  Graph canonical = canonicalize_with_dumps(g);
  std::vector<Tensor> inputs = gather_inputs(canonical, spec, model);
  std::vector<Tensor> results = backend == "cpu"    ? run_on_cpu(canonical, planner, inputs, tune)
                                : backend == "cuda" ? run_on_cuda(canonical, planner, inputs, tune)
                                                    : interpret(canonical, inputs);
  return write_results(canonical, results, output_dir, print_values);
}

// `stitch run model.stitchpkg`: the package's graph, plan and kernels; no compiler.
int run_package(const std::string& file, const std::string& graph_name, const std::string& backend,
                const std::string& planner, const InputSpec& spec, const std::string& output_dir, bool print_values,
                bool tune) {
  if (!graph_name.empty() || !planner.empty() || tune) {
    throw UserError(fmt::format("{} is a package: its graph and planner are fixed (no --graph, --planner or --tune)", file));
  }
  const package::Package p = package::read_package(file);
  if (backend != p.backend) {
    throw UserError(fmt::format("{} is a package for --backend {}{}, not {}", file, p.backend,
                                p.backend == "cuda" ? " (or cuda-sim)" : "", backend));
  }
  if (p.backend == "cuda") {
    Graph canonical;
    std::vector<Tensor> results = run_cuda_package(p, file, spec, canonical);
    return write_results(canonical, results, output_dir, print_values);
  }
  runtime::cpu::CpuExecutable exe = package::load_cpu_package(p, file);
  const Graph& canonical = exe.graph();
  std::vector<Tensor> inputs = gather_inputs(canonical, spec, ModelInputs{});
  std::vector<Tensor> results = exe.run(inputs);
  return write_results(canonical, results, output_dir, print_values);
}

int write_results(const Graph& canonical, const std::vector<Tensor>& results, const std::string& output_dir,
                  bool print_values) {
  std::set<std::string> written;
  if (!output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(output_dir, ec);
    if (ec) throw UserError(fmt::format("--output-dir {}: {}", output_dir, ec.message()));
  }
  for (size_t i = 0; i < results.size(); ++i) {
    const std::string& name = canonical.outputs()[i].name;
    if (!written.insert(name).second) continue;
    if (!output_dir.empty()) write_npy((std::filesystem::path(output_dir) / (name + ".npy")).string(), results[i]);
    if (print_values) {
      std::cout << name << " = " << results[i].str(1000) << "\n";
    } else {
      summarize(name, results[i]);
    }
  }
  return kExitOk;
}

int print_command(const std::string& file, const std::string& graph_name, bool canonical) {
  Module m = load_module(file, nullptr);
  std::vector<const Graph*> selected;
  if (graph_name.empty()) {
    for (const Graph& g : m.graphs) selected.push_back(&g);
  } else {
    selected.push_back(&select_graph(m, graph_name, file));
  }
  for (size_t i = 0; i < selected.size(); ++i) {
    if (i) std::cout << "\n";
    std::cout << print_graph(canonical ? canonicalize_with_dumps(*selected[i]) : *selected[i]);
  }
  // User kernels (docs/kernel-language.md) print after the graphs, as checked.
  if (graph_name.empty()) {
    for (size_t i = 0; i < m.kernels.size(); ++i) {
      if (i || !selected.empty()) std::cout << "\n";
      std::cout << print_kernel(m.kernels[i]);
    }
  }
  return kExitOk;
}

}  // namespace stitch::cli
