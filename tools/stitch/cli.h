// Shared pieces of the `stitch` subcommands (DESIGN.md, CLI).
#pragma once

#include "package/package_build.h"
#include "package/package_file.h"

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "fusion/planner.h"
#include "schedule/select.h"
#include "pipeline/pipeline.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "tune/fusion_tuner.h"
#include "tune/schedule_tuner.h"
#include "stitch/graph.h"
#include "stitch/interpreter.h"
#include "stitch/tensor.h"
#ifdef STITCH_HAVE_CUDA
#include "runtime/cuda/context.h"
#include "runtime/cuda/cubin_cache.h"
#include "pipeline/cuda/cuda_route.h"
#include "runtime/cuda/cuda_executable.h"
#endif

namespace stitch::cli {

// Exit statuses (docs/cli.md): 0 success, 1 a check failed, 2 bad usage or
// bad input, 3 an internal error in Stitch.
inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitInternal = 3;

// The graph named `graph_name` in `m`, or the first; UserError if absent.
const Graph& select_graph(const Module& m, const std::string& graph_name, const std::string& file);

struct InputSpec {
  std::vector<std::string> bindings;  // NAME=FILE.npy
  std::vector<std::string> dims;      // SYMBOL=N
  bool random = false;
  uint64_t seed = 0;
};

// What an imported ONNX model adds to its graph: the initializers' tensors
// (docs/onnx.md, Decisions) and the ONNX names of inputs that were renamed.
struct ModelInputs {
  std::map<std::string, Tensor> bound;           // parameter name -> tensor
  std::map<std::string, std::string> aliases;    // ONNX input name -> parameter name
  std::set<std::string> specialized;            // ONNX inputs the model was specialised on
};

// A `.stitch` file parsed, or a `.onnx` model imported as one graph; the
// model's bound tensors and input aliases go to `extras` when given. An ONNX
// input that decides a shape (onnx_import::NeedsKnownInput) is specialised on
// its --input file from `spec` when there is one (docs/onnx.md).
Module load_module(const std::string& file, ModelInputs* extras, const InputSpec* spec = nullptr);

// One tensor per parameter of `g`: a bound parameter's tensor (an ONNX
// initializer), else from --input files (by parameter name or ONNX input
// name), else random when a seed was given. UserError for a missing, unknown
// or repeated input, an --input naming a bound parameter, or a symbolic dim
// that neither an input nor --dim fixes.
std::vector<Tensor> gather_inputs(const Graph& g, const InputSpec& spec, const ModelInputs& model = {});

// Prints the graph after each canonicalisation pass when STITCH_DUMP names
// "graph" (or "all"); returns the canonical graph.
Graph canonicalize_with_dumps(const Graph& g);
// Whether STITCH_DUMP asks for `stage`: a pipeline stage (or an older name
// for one, pipeline::dump_stage_matches), "cache", "buffers" or "all".
bool dump_enabled(const std::string& stage);
// The pipeline stages STITCH_DUMP names, printed to stderr as
// "// STITCH_DUMP <stage>" and the stage's text.
pipeline::StageDump stage_dumps();

// --tune or STITCH_TUNE=1 (docs/tuning.md): both tuners (contested fusion
// decisions, then schedules) over `cache`'s directory, wired into `options`;
// nullptr when tuning is not asked for.
struct Tuners {
  Tuners(runtime::cpu::KernelCache& cache, const tune::TuneOptions& fusion_options,
         const tune::TuneOptions& schedule_options)
      : fusions(cache, fusion_options), schedules(cache, schedule_options) {}
  tune::FusionTuner fusions;
  tune::ScheduleTuner schedules;
};
std::unique_ptr<Tuners> cpu_tuners(bool tune, runtime::cpu::KernelCache& cache, pipeline::CpuCompileOptions& options);
// Two lines on stderr saying what the tuners did (with a warning when a
// candidate disagreed with the interpreter); their reports under STITCH_DUMP=tune.
void report_tuning(const Tuners& tuners);
// The schedule tuner's line (and warning) on stderr; under STITCH_DUMP=tune,
// `earlier_report` and its report.
void report_schedule_tuning(const tune::ScheduleTuner& schedules, const std::string& earlier_report = "");

// --backend cuda (cuda_commands.cpp). Each throws UserError (status 2) when
// this stitch was built without the CUDA toolkit, or when no driver or device
// can be used, saying why.
void require_cuda_device();
// A CUDA package (docs/packages.md) of `graph` for `request`'s architectures,
// built by NVRTC through the cubin cache; no device needed.
package::Package package_for_cuda(const Graph& graph, const package::PackageRequest& request);
// A CUDA package's graph on the device (or cuda-sim), run on `inputs`'
// spec; returns its canonical graph's outputs and sets `canonical`.
std::vector<Tensor> run_cuda_package(const package::Package& p, const std::string& path, const InputSpec& spec,
                                     Graph& canonical);
// --backend cuda-sim: later CUDA work opens the simulated driver
// (docs/cuda-sim.md) instead of libcuda.so.1. Returns "cuda", the back end
// that then runs on it.
std::string use_simulated_cuda_driver();
// Plans, compiles (NVRTC, through the cubin cache) and runs `canonical` on
// the GPU; the planner as for --backend cpu.
#ifdef STITCH_HAVE_CUDA
// The simulated driver: $STITCH_CUDA_SIM_DRIVER, else libstitch_cuda_sim.so
// beside the executable (an installed or copied stitch), else the build
// tree's copy this stitch was built with.
std::string simulated_driver_path();
// The device context of --backend cuda or (after use_simulated_cuda_driver)
// cuda-sim, opened once; UserError as require_cuda_device.
std::shared_ptr<runtime::cuda::CudaContext> opened_cuda_context();
// --tune with --backend cuda: a schedule tuner measuring on `context`'s
// device, its choices beside `cubins`, set as options.tuner (which points
// into it); null when neither `tune` nor STITCH_TUNE asks for one.
std::unique_ptr<tune::ScheduleTuner> cuda_tuner(bool tune, const std::shared_ptr<runtime::cuda::CudaContext>& context,
                                                runtime::cuda::CubinCache& cubins,
                                                pipeline::CudaCompileOptions& options);
#endif
#ifdef STITCH_HAVE_CUDA
// GB/s of a device-to-device copy on `context` moving `bytes` in all (half
// read, half written): the median of `repeat` after `warmup` (bench_cuda_command.cpp).
double cuda_copy_gbps(const std::shared_ptr<runtime::cuda::CudaContext>& context, int64_t bytes, int warmup, int repeat);
#endif
// `tune` (or STITCH_TUNE=1): schedules measured on the device (docs/tuning.md, On a GPU).
std::vector<Tensor> run_on_cuda(const Graph& canonical, const std::string& planner, const std::vector<Tensor>& inputs,
                                bool tune);
// For stitch check: the outputs, and the fallback note ("" when the planner's
// kernels ran).
struct BackendRun {
  std::vector<Tensor> outputs;
  std::string fallback;
};
BackendRun check_run_on_cuda(const Graph& canonical, PlannerKind planner, const std::vector<Tensor>& inputs);
// stitch run --kernel --backend cuda: one user-kernel call on the device.
Tensor run_user_kernel_on_cuda(const UserKernel& kernel, const std::vector<KernelArg>& args);

int run_command(const std::string& file, const std::string& graph_name, const std::string& backend,
                const std::string& planner, const InputSpec& inputs, const std::string& output_dir,
                bool print_values, bool tune);
int print_command(const std::string& file, const std::string& graph_name, bool canonical);

// The planner `--planner` names for a compiled back end ("xla" when empty);
// UserError naming the ones `backend` runs.
PlannerKind executable_planner(const std::string& backend, const std::string& planner);

// A planner named on the command line; UserError naming the implemented ones
// for a planner that does not exist yet (stitch, ilp).
PlannerKind implemented_planner(const std::string& name);

// SYMBOL=N bindings from --dim options; UserError on a malformed one.
SymbolBindings parse_dims(const std::vector<std::string>& dims);

// NAME=VALUE from an option's argument; UserError naming `option` when malformed.
std::pair<std::string, std::string> split_binding(const std::string& s, const char* option);
// The random-input seed of the index-th parameter: distinct, reproducible streams.
uint64_t param_seed(uint64_t seed, size_t index);
// One line per result: dtype, shape, min, max, mean, NaN count.
void summarize(const std::string& name, const Tensor& t);

// stitch run FILE --kernel NAME (kernel_command.cpp, docs/cli.md): one call of a
// user kernel on the interpreter or the CPU; arrays from --input or random,
// scalars from --scalar NAME=VALUE; the arrays it writes and its reduction's
// value are printed or written as .npy.
int run_kernel_command(const std::string& file, const std::string& kernel_name, const std::string& backend,
                       const InputSpec& spec, const std::vector<std::string>& scalars, const std::string& output_dir,
                       bool print_values);

// stitch plan (plan_command.cpp): the groups and the reason for every unfused edge;
// with `explain`, each group's schedule candidates ranked for the GPU `target`.
// --row-schedule NAME (docs/cli.md): the kind every row reduction and
// stitched group takes instead of the chosen one; "" or "auto": none forced.
std::optional<schedule::RowScheduleKind> forced_row_schedule(const std::string& name);
std::vector<std::string> row_schedule_option_values();

// stitch plan (plan_command.cpp): the groups and the reason for every unfused edge;
// with `explain`, each group's schedule candidates ranked for the GPU `target`
// (or, with target "cpu", the CPU's row schedules) and the row schedule chosen.
int plan_command(const std::string& file, const std::string& graph_name, const std::string& planner,
                 const std::string& format, const std::vector<std::string>& dims, const std::string& output,
                 bool explain = false, const std::string& target = "sm_90", const std::string& row_schedule = "");
// `text` to the file `output`, or to stdout when it is empty; UserError when
// the file cannot be written.
int write_output(const std::string& text, const std::string& output);
// stitch emit (plan_command.cpp): the generated translation unit.
int emit_command(const std::string& file, const std::string& graph_name, const std::string& backend,
                 const std::string& planner, const std::string& row_schedule = "");

// stitch report (report_command.cpp, docs/report.md).
struct ReportOptions {
  std::string graph_name;   // empty: the first graph
  std::string backend = "cpu";  // cpu, cuda or cuda-sim
  std::string planner = "xla";
  bool run = false;         // --run: run the graph and put every launch's time in the page
  InputSpec inputs;         // --input, --random-inputs, --dim
  int repeat = 10;          // --repeat: runs timed with --run
  std::string profile = "h200";  // --profile: the GPU model's target on cuda-sim
  std::string row_schedule;      // --row-schedule; "": chosen
};
// The page; UserError (status 2) for bad input. A missing Graphviz leaves the
// drawing out with a warning on stderr.
std::string report_page(const std::string& file, const ReportOptions& options);
// Writes report_page to `output`, or stdout when it is empty.
int report_command(const std::string& file, const ReportOptions& options, const std::string& output);

struct CheckOptions {
  std::string graph_name;          // empty: every graph of every file
  std::vector<std::string> dims;   // SYMBOL=N; unbound symbols take kDefaultCheckDim
  uint64_t seed = 1;
  bool allow_unsupported = false;  // unsupported paths do not fail the check
  std::string backend = "cpu";     // cpu or cuda
  // The planners to check, in this order; empty: every one.
  std::vector<std::string> planners;
};
inline constexpr int64_t kDefaultCheckDim = 3;
// stitch check (check_command.cpp).
int check_command(const std::vector<std::string>& files, const CheckOptions& options);

struct BenchOptions {
  std::string graph_name;  // empty: the first (entry) graph of each file
  std::string backend = "cpu";
  std::vector<std::string> planners = {"none", "xla"};
  int repeat = 10;
  int warmup = 2;
  std::string json_path;  // empty: no JSON
  std::vector<std::string> dims;
  std::string row_schedule;  // --row-schedule; "": chosen for the CPU
  // --fresh-outputs: every timed run allocates its outputs, as a framework's
  // call does, instead of writing into the same tensors (CPU only).
  bool fresh_outputs = false;
  bool tune = false;  // --tune: schedules measured (docs/tuning.md)
  bool steps = false;  // --steps: each step's time too (CPU only)
  std::string profile;  // --profile h100|h200: the GPU model's predictions (cuda-sim only)
  uint64_t cta_budget = 192;  // --cta-budget: CTAs interpreted per launch at most
};
// stitch bench (bench_command.cpp; --backend cuda: bench_cuda_command.cpp).
int bench_command(const std::vector<std::string>& files, const BenchOptions& options);
int bench_cuda_command(const std::vector<std::string>& files, const BenchOptions& options);
// --backend cuda-sim --profile (bench_sim_command.cpp; docs/gpu-model.md).
int bench_cuda_sim_command(const std::vector<std::string>& files, const BenchOptions& options);

}  // namespace stitch::cli
