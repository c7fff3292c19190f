// `stitch report` and `stitch plan --format html` (docs/report.md): the
// fusion report of one graph as a self-contained HTML page; with --run, the
// graph run on the back end and every launch's time in the page.
#include <fmt/format.h>

#include <iostream>

#include "bench_common.h"
#include "cli.h"
#include "report/html_report.h"
#include "report/report.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "sim_profiler.h"
#include "stitch/interpreter.h"
#ifdef STITCH_HAVE_CUDA
#include "gpu_model/time_model.h"
#include "runtime/cuda/cubin_cache.h"
#include "pipeline/cuda/cuda_route.h"
#include "runtime/cuda/cuda_executable.h"
#endif

namespace stitch::cli {

namespace {

// What `--run` tells the report on the CPU: each launch's mean over `repeat`
// profiled runs, the run's median, and a copy of the run's footprint.
void run_on_cpu_into(report::Report& r, const Graph& canonical, PlannerKind planner,
                     const std::vector<Tensor>& inputs, const ReportOptions& o) {
  runtime::cpu::KernelCache cache;
  pipeline::CpuCompileOptions options;
  options.dump = stage_dumps();
  options.rows.forced = forced_row_schedule(o.row_schedule);
  runtime::cpu::CpuExecutable exe = pipeline::compile_cpu(canonical, planner, cache, options);
  if (!exe.fallback().empty()) r.notes.push_back("The fused kernels did not all compile; what ran: " + exe.fallback());
  std::vector<Tensor> outputs;
  const double total = median_seconds(1, o.repeat, [&] { exe.run(inputs, outputs); });
  exe.set_step_profiling(true);
  for (int i = 0; i < o.repeat; ++i) exe.run(inputs, outputs);
  const double runs = static_cast<double>(std::max<int64_t>(exe.profiled_runs(), 1));
  std::vector<report::TimedStep> steps;
  for (const runtime::cpu::CpuExecutable::StepTime& s : exe.step_times()) {
    steps.push_back({s.label, s.seconds / runs, s.epilogue_seconds / runs});
  }
  exe.set_step_profiling(false);
  CopyBenchmark copy(cache);
  const double copy_gbps = copy.gbps(minimal_bytes(canonical, inputs, outputs), 1, o.repeat);
  report::add_run(r, steps,
                  fmt::format("measured on this machine's CPU, each launch the mean of {} runs with a clock read "
                              "around it, the run the median of {}", o.repeat, o.repeat),
                  total, copy_gbps);
}

#ifdef STITCH_HAVE_CUDA
std::vector<runtime::cuda::DeviceTensor> uploaded(const std::shared_ptr<runtime::cuda::CudaContext>& context,
                                                  const std::vector<Tensor>& inputs) {
  std::vector<runtime::cuda::DeviceTensor> out;
  for (const Tensor& t : inputs) out.push_back(runtime::cuda::upload(context, t));
  return out;
}

std::vector<const runtime::cuda::DeviceTensor*> pointers(const std::vector<runtime::cuda::DeviceTensor>& tensors) {
  std::vector<const runtime::cuda::DeviceTensor*> out;
  for (const runtime::cuda::DeviceTensor& t : tensors) out.push_back(&t);
  return out;
}

// --backend cuda-sim: one run on the simulated driver with every launch
// profiled by the GPU model for --profile's target; nothing is timed.
void run_on_simulated_gpu_into(report::Report& r, const Graph& canonical, PlannerKind planner,
                               const std::vector<Tensor>& inputs, const ReportOptions& o) {
  const gpu_model::GpuTarget target = gpu_model::target_or_error(o.profile, "--profile");
  const gpu_model::FittedConstants constants = gpu_model::fitted_constants(target);
  std::shared_ptr<runtime::cuda::CudaContext> context = opened_cuda_context();
  const SimProfiler profiler = SimProfiler::find();
  runtime::cuda::CubinCache cubins;
  pipeline::CudaCompileOptions options;
  options.forced_rows = forced_row_schedule(o.row_schedule);
  options.model_target = target.name;
  options.dump = stage_dumps();
  runtime::cuda::CudaExecutable exe = pipeline::compile_cuda(canonical, planner, context, cubins, options);
  if (!exe.fallback().empty()) r.notes.push_back("The fused kernels did not all compile; what ran: " + exe.fallback());
  const std::vector<runtime::cuda::DeviceTensor> device_inputs = uploaded(context, inputs);
  std::vector<runtime::cuda::DeviceTensor> outputs;
  profiler.taken();
  STITCH_ASSERT(profiler.start(target.name.c_str(), 192) == 0, "the simulated driver refused " + target.name);
  try {
    exe.run_on_device(pointers(device_inputs), outputs);
    context->synchronize();
  } catch (...) {
    profiler.start(nullptr, 0);
    throw;
  }
  profiler.start(nullptr, 0);
  std::vector<report::TimedStep> steps;
  double total = 0;
  for (const nlohmann::json& p : profiler.taken()) {
    steps.push_back({p.at("kernel").get<std::string>(), p.at("predicted_s").get<double>(), 0});
    total += steps.back().seconds;
  }
  const int64_t bytes = minimal_bytes(canonical, inputs);
  const double copy_s = gpu_model::copy_seconds(target, constants, static_cast<double>(bytes));
  report::add_run(r, steps,
                  fmt::format("the GPU model's predictions for the {} ({}) from one run on the simulated driver; "
                              "nothing was timed", target.name, target.device.product),
                  total, copy_s > 0 ? static_cast<double>(bytes) / copy_s / 1e9 : 0);
  r.run_predicted = true;
}

// --backend cuda: each launch's device time (events around it), the mean of
// --repeat profiled runs, and the run's median with a synchronise.
void run_on_gpu_into(report::Report& r, const Graph& canonical, PlannerKind planner, const std::vector<Tensor>& inputs,
                     const ReportOptions& o) {
  std::shared_ptr<runtime::cuda::CudaContext> context = opened_cuda_context();
  runtime::cuda::CubinCache cubins;
  pipeline::CudaCompileOptions options;
  options.forced_rows = forced_row_schedule(o.row_schedule);
  options.dump = stage_dumps();
  runtime::cuda::CudaExecutable exe = pipeline::compile_cuda(canonical, planner, context, cubins, options);
  if (!exe.fallback().empty()) r.notes.push_back("The fused kernels did not all compile; what ran: " + exe.fallback());
  const std::vector<runtime::cuda::DeviceTensor> device_inputs = uploaded(context, inputs);
  std::vector<runtime::cuda::DeviceTensor> outputs;
  const double total = median_seconds(2, o.repeat, [&] {
    exe.run_on_device(pointers(device_inputs), outputs);
    context->synchronize();
  });
  exe.set_step_profiling(true);
  for (int i = 0; i < o.repeat; ++i) exe.run_on_device(pointers(device_inputs), outputs);
  const std::vector<runtime::cuda::CudaExecutable::StepTime> times = exe.step_times();
  const double runs = static_cast<double>(std::max<int64_t>(exe.profiled_runs(), 1));
  exe.set_step_profiling(false);
  std::vector<report::TimedStep> steps;
  for (const runtime::cuda::CudaExecutable::StepTime& s : times) steps.push_back({s.label, s.seconds / runs, 0});
  report::add_run(r, steps,
                  fmt::format("measured on {}: each launch the mean of {} runs between two events on the stream, "
                              "the run the median of {} with a synchronise", context->device().summary(), o.repeat,
                              o.repeat),
                  total, cuda_copy_gbps(context, minimal_bytes(canonical, inputs), 2, o.repeat));
}
#endif

}  // namespace

std::string report_page(const std::string& file, const ReportOptions& o) {
  if (o.backend != "cpu" && o.backend != "cuda" && o.backend != "cuda-sim") {
    throw UserError(fmt::format("--backend {}: use cpu, cuda or cuda-sim", o.backend));
  }
  if (o.repeat < 1) throw UserError("--repeat: at least 1");
  if (o.run && o.backend == "cuda") require_cuda_device();
  if (o.run && o.backend == "cuda-sim") use_simulated_cuda_driver();
  const PlannerKind planner = o.run ? executable_planner(o.backend == "cpu" ? "cpu" : "cuda", o.planner)
                                    : implemented_planner(o.planner.empty() ? "xla" : o.planner);
  ModelInputs model;
  Module m = load_module(file, &model, &o.inputs);
  const Graph canonical = canonicalize_with_dumps(select_graph(m, o.graph_name, file));
  SymbolBindings bindings = parse_dims(o.inputs.dims);
  std::vector<Tensor> inputs;
  if (o.run) {
    inputs = gather_inputs(canonical, o.inputs, model);
    bindings = bind_inputs(canonical, inputs);
  }
  report::Report r = report::collect_report(canonical, planner, o.backend, bindings, forced_row_schedule(o.row_schedule),
                                            "", o.backend == "cuda-sim" ? o.profile : "");
  r.file = std::filesystem::path(file).filename().string();
  if (o.run && o.backend == "cpu") run_on_cpu_into(r, canonical, planner, inputs, o);
#ifdef STITCH_HAVE_CUDA
  if (o.run && o.backend == "cuda-sim") run_on_simulated_gpu_into(r, canonical, planner, inputs, o);
  if (o.run && o.backend == "cuda") run_on_gpu_into(r, canonical, planner, inputs, o);
#endif
  if (dump_enabled("report")) std::cerr << "// STITCH_DUMP report: the drawing's Graphviz source\n" << r.dot;
  std::string warning;
  std::string page = report::html_report(r, &warning);
  if (!warning.empty()) std::cerr << "stitch: warning: the report has no drawing of the plan: " << warning << "\n";
  return page;
}

int report_command(const std::string& file, const ReportOptions& o, const std::string& output) {
  return write_output(report_page(file, o), output);
}

}  // namespace stitch::cli
