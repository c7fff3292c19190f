#include "bench_common.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>

#include "stitch/error.h"
#include "stitch/interpreter.h"

namespace stitch::cli {

std::vector<Workload> load_bench_workloads(const std::vector<std::string>& files, const BenchOptions& options) {
  std::vector<Workload> workloads;
  for (const std::string& file : files) {
    Workload w;
    Module m = load_module(file, &w.model);
    w.canonical = canonicalize_with_dumps(select_graph(m, options.graph_name, file));
    // An ONNX graph is always "main"; the model's file names it better.
    bool onnx = std::filesystem::path(file).extension() == ".onnx";
    w.name = onnx ? std::filesystem::path(file).stem().string() : w.canonical.name();
    SymbolBindings dims = parse_dims(options.dims);
    for (ValueId p : w.canonical.params()) {
      for (const Dim& d : w.canonical.type(p).shape) {
        if (d.is_symbolic() && !dims.count(d.name())) {
          throw UserError(fmt::format("{}: graph '{}': symbolic dim {} is not bound (give --dim {}=N)", file,
                                      w.name, d.name(), d.name()));
        }
      }
    }
    workloads.push_back(std::move(w));
  }
  return workloads;
}

void check_bench_options(const BenchOptions& options) {
  if (options.repeat < 1) throw UserError("--repeat must be at least 1");
  if (options.warmup < 0) throw UserError("--warmup must not be negative");
}

std::vector<PlannerKind> bench_planners(const BenchOptions& options) {
  std::vector<PlannerKind> planners;
  for (const std::string& p : options.planners) planners.push_back(implemented_planner(p));
  if (planners.empty()) throw UserError("--planners names no planner");
  return planners;
}

std::vector<Tensor> bench_inputs(const Workload& w, const BenchOptions& options) {
  InputSpec spec;
  spec.random = true;
  spec.seed = 1;
  spec.dims = options.dims;
  return gather_inputs(w.canonical, spec, w.model);
}

ScratchDirectory::ScratchDirectory() {
  static int counter = 0;
  path_ = std::filesystem::temp_directory_path() / fmt::format("stitch-bench-{}-{}", getpid(), counter++);
  std::filesystem::remove_all(path_);
}

ScratchDirectory::~ScratchDirectory() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int64_t tensor_bytes(const Tensor& t) { return t.numel() * dtype_size(t.dtype()); }

int64_t minimal_bytes(const Graph& g, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) {
  int64_t bytes = 0;
  for (const Tensor& t : inputs) bytes += tensor_bytes(t);
  std::set<int> written;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (written.insert(g.outputs()[i].value.index).second) bytes += tensor_bytes(outputs[i]);
  }
  return bytes;
}

int64_t minimal_bytes(const Graph& g, const std::vector<Tensor>& inputs) {
  int64_t bytes = 0;
  for (const Tensor& t : inputs) bytes += tensor_bytes(t);
  const SymbolBindings bindings = bind_inputs(g, inputs);
  std::set<int> written;
  for (const GraphOutput& out : g.outputs()) {
    if (!written.insert(out.value.index).second) continue;
    int64_t n = dtype_size(g.type(out.value).dtype);
    for (int64_t d : concrete_shape(g.type(out.value).shape, bindings)) n *= d;
    bytes += n;
  }
  return bytes;
}

nlohmann::json timed_row(const TimedRun& run) {
  const double gbps = static_cast<double>(run.bytes_min) / run.median_s / 1e9;
  const double plan_gbps = static_cast<double>(run.plan_bytes) / run.median_s / 1e9;
  return {{"workload", run.workload},
          {"planner", run.planner},
          {"kernels", run.kernels},
          {"bytes_min", run.bytes_min},
          {"median_s", run.median_s},
          {"gbps", gbps},
          {"fraction_of_copy", gbps / run.copy_gbps},
          {"plan_bytes", run.plan_bytes},
          {"plan_gbps", plan_gbps},
          {"plan_fraction_of_copy", plan_gbps / run.copy_gbps},
          {"copy_gbps", run.copy_gbps},
          {"compile_s", run.compile_s},
          {"load_s", run.load_s}};
}

void write_bench_json(const std::string& path, const nlohmann::json& doc) {
  std::ofstream out(path);
  out << doc.dump(2) << "\n";
  out.close();
  if (!out) throw UserError(fmt::format("--json {}: cannot write the file", path));
}

std::string utc_timestamp() {
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return date;
}

namespace {

constexpr const char* kCopySource = R"(#include <cstdint>
extern "C" void stitch_bench_copy(void* const* buffers, const int64_t* scalars) {
  const float* __restrict src = static_cast<const float*>(buffers[0]);
  float* __restrict dst = static_cast<float*>(buffers[1]);
  const int64_t n = scalars[0];
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
}
)";

}  // namespace

CopyBenchmark::CopyBenchmark(runtime::cpu::KernelCache& cache)
    : module_(cache.load_or_compile(kCopySource)), copy_(module_.function("stitch_bench_copy")) {}

double CopyBenchmark::gbps(int64_t bytes, int warmup, int repeat) {
  const int64_t n = std::max<int64_t>(bytes / 2 / static_cast<int64_t>(sizeof(float)), 1);
  // Tensor storage, as the workloads' inputs and outputs have (same
  // alignment, same pages: docs/executable.md, Buffer planning).
  Tensor src(DType::f32, {n}), dst(DType::f32, {n});
  std::fill(src.data<float>(), src.data<float>() + n, 1.0f);
  void* buffers[2] = {src.data<float>(), dst.data<float>()};
  int64_t scalars[1] = {n};
  double s = median_seconds(warmup, repeat, [&] { copy_(buffers, scalars); });
  return static_cast<double>(2 * n * static_cast<int64_t>(sizeof(float))) / s / 1e9;
}

}  // namespace stitch::cli
