// stitch_bench_reference: the hand-written references of reference_kernels.h
// beside the compiled CPU back end on the same inputs (docs/cpu-backend.md,
// Benchmarks). Per workload (entry graph = the file's first graph) it prints
// one JSON document: median seconds of N timed runs after warm-up, minimal
// bytes, GB/s, and the reference's largest difference from each compiled
// variant (absolute, and relative to 1 + |reference|).
//
//   stitch_bench_reference [--repeat N] [--workloads layernorm,softmax,swish,gelu_tanh]
//                          [--source-dir DIR]   (writes DIR/<workload>_<planner>.cpp)
//
// Variants: reference; none and xla through CpuExecutable::run (which also
// allocates and returns output tensors); none_kernels and xla_kernels, the
// same compiled kernels called on preallocated buffers; copy, an OpenMP copy
// of the workload's byte footprint.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/reference/reference_kernels.h"
#include "codegen/cpu/cpp_emitter.h"
#include "fusion/planner.h"
#include "ir/canonicalize.h"
#include "lower/lower_plan.h"
#include "pipeline/pipeline.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "stitch/text.h"

namespace stitch::bench {
namespace {

std::string g_source_dir;  // --source-dir: where generated translation units go

double median_seconds(const std::function<void()>& fn, int repeat) {
  for (int i = 0; i < 2; ++i) fn();
  std::vector<double> times;
  for (int i = 0; i < repeat; ++i) {
    auto start = std::chrono::steady_clock::now();
    fn();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

struct Difference {
  double max_abs = 0;
  double max_rel = 0;
};

Difference compare(const Tensor& want, const Tensor& got) {
  Difference d;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double w = want.get_f64(i), g = got.get_f64(i);
    const double abs = std::fabs(w - g);
    d.max_abs = std::max(d.max_abs, abs);
    d.max_rel = std::max(d.max_rel, abs / (1.0 + std::fabs(w)));
  }
  return d;
}

// The compile pipeline's plan, schedule and lower stages (docs/pipeline.md)
// on `g` as given: the reference kernels are timed on the same graph, so it
// is not split.
std::vector<lower::LoweredGroup> lower_through_the_pipeline(const Graph& g, PlannerKind planner) {
  pipeline::Compilation c = pipeline::compilation_of(g, planner, {}, schedule::RowScheduleTarget::cpu());
  c.graph = g;
  c.kernel_prefix = "bench";
  run_pipeline(c, pipeline::Backend{}, "plan", "lower");
  return std::move(c.lowered.groups);
}

// The compiled kernels of `planner`, called in plan order on buffers
// allocated once (one per value, no pooling), so only kernel time is timed.
class KernelRunner {
 public:
  KernelRunner(const std::string& name, const Graph& g, PlannerKind planner, runtime::cpu::KernelCache& cache,
               const std::vector<Tensor>& inputs)
      : groups_(lower_through_the_pipeline(g, planner)) {
    std::vector<kir::Kernel> kernels;
    for (const lower::LoweredGroup& l : groups_) kernels.push_back(*l.kernel);
    const std::string source = codegen::cpu::emit_cpp_translation_unit(kernels);
    if (!g_source_dir.empty()) {
      std::ofstream(g_source_dir + "/" + name + "_" + std::string(planner_name(planner)) + ".cpp") << source;
    }
    module_ = cache.load_or_compile(source);
    for (size_t i = 0; i < g.params().size(); ++i) {
      address_[g.params()[i].index] = const_cast<std::byte*>(inputs[i].raw());
    }
    for (const lower::LoweredGroup& l : groups_) {
      for (ValueId v : l.signature.outputs) {
        values_.emplace(v.index, Tensor(g.type(v).dtype, concrete_shape(g.type(v).shape, {})));
        address_[v.index] = values_.at(v.index).raw();
      }
      functions_.push_back(module_.function(l.kernel->name));
    }
    output_ = g.outputs().front().value.index;
  }

  void run() {
    for (size_t i = 0; i < groups_.size(); ++i) run_kernel(i);
  }
  void run_kernel(size_t i) {
    std::vector<void*> buffers;
    for (ValueId v : groups_[i].signature.inputs) buffers.push_back(address_.at(v.index));
    for (ValueId v : groups_[i].signature.outputs) buffers.push_back(address_.at(v.index));
    functions_[i](buffers.data(), nullptr);
  }
  size_t kernel_count() const { return groups_.size(); }
  const Tensor& output() const { return values_.at(output_); }

 private:
  std::vector<lower::LoweredGroup> groups_;
  runtime::cpu::CpuModule module_;
  std::vector<runtime::cpu::KernelFunction> functions_;
  std::map<int, Tensor> values_;
  std::map<int, void*> address_;
  int output_ = -1;
};

nlohmann::json bench_workload(const std::string& name, int repeat, runtime::cpu::KernelCache& cache) {
  Module m = parse_file(std::string(STITCH_SOURCE_DIR) + "/bench/workloads/" + name + ".stitch");
  const Graph g = canonicalize(m.graphs.front());
  std::vector<Tensor> inputs;
  int64_t bytes = 0;
  for (ValueId p : g.params()) {
    inputs.emplace_back(g.type(p).dtype, concrete_shape(g.type(p).shape, {}));
    fill_random(inputs.back(), 1 + inputs.size());
    bytes += static_cast<int64_t>(inputs.back().nbytes());
  }
  const ValueId out = g.outputs().front().value;
  Tensor reference(g.type(out).dtype, concrete_shape(g.type(out).shape, {}));
  bytes += static_cast<int64_t>(reference.nbytes());

  std::function<void()> run_reference;
  const float* x = inputs[0].data<float>();
  float* y = reference.data<float>();
  const std::vector<int64_t>& shape = reference.shape();
  if (name == "layernorm") {
    run_reference = [&] {
      reference_layernorm(x, inputs[1].data<float>(), inputs[2].data<float>(), y, shape[0], shape[1], 1e-5f);
    };
  } else if (name == "softmax") {
    run_reference = [&] { reference_softmax(x, y, shape[0], shape[1]); };
  } else if (name == "swish") {
    run_reference = [&] { reference_swish(x, y, reference.numel()); };
  } else if (name == "gelu_tanh") {
    run_reference = [&] { reference_gelu_tanh(x, y, reference.numel()); };
  } else {
    throw std::runtime_error("no reference for workload " + name);
  }

  nlohmann::json results = nlohmann::json::array();
  auto record = [&](const std::string& variant, double seconds, const Tensor* got) {
    nlohmann::json r = {{"workload", name},      {"variant", variant}, {"median_s", seconds},
                        {"bytes_min", bytes},    {"gbps", static_cast<double>(bytes) / seconds / 1e9}};
    if (got) {
      Difference d = compare(reference, *got);
      r["max_abs_diff"] = d.max_abs;
      r["max_rel_diff"] = d.max_rel;
    }
    results.push_back(r);
    std::fprintf(stderr, "%-10s %-13s %9.3f ms %7.2f GB/s\n", name.c_str(), variant.c_str(), seconds * 1e3,
                 static_cast<double>(bytes) / seconds / 1e9);
  };
  record("reference", median_seconds(run_reference, repeat), nullptr);
  Tensor copy_out(DType::f32, {bytes / 8});
  std::vector<float> copy_in(static_cast<size_t>(bytes / 8), 1.0f);
  record("copy", median_seconds([&] { reference_copy(copy_in.data(), copy_out.data<float>(), bytes / 8); }, repeat),
         nullptr);
  for (PlannerKind planner : {PlannerKind::None, PlannerKind::Xla}) {
    const std::string variant(planner_name(planner));
    runtime::cpu::CpuExecutable exe = pipeline::compile_cpu(g, planner, cache);
    // In-place runs: the outputs and the workspace are reused, as stitch bench
    // times them (docs/executable.md); the kernels-only row isolates launches.
    std::vector<Tensor> got;
    record(variant, median_seconds([&] { exe.run(inputs, got); }, repeat), &got.front());
    KernelRunner kernels(name, g, planner, cache, inputs);
    record(variant + "_kernels", median_seconds([&] { kernels.run(); }, repeat), &kernels.output());
    nlohmann::json per_kernel = nlohmann::json::array();
    for (size_t i = 0; i < kernels.kernel_count(); ++i) {
      per_kernel.push_back(median_seconds([&] { kernels.run_kernel(i); }, repeat));
    }
    results.back()["kernel_median_s"] = per_kernel;
  }
  return results;
}

}  // namespace
}  // namespace stitch::bench

int main(int argc, char** argv) {
  int repeat = 10;
  std::vector<std::string> workloads = {"layernorm", "softmax", "swish", "gelu_tanh"};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--repeat") {
      repeat = std::max(1, std::stoi(value));
    } else if (flag == "--workloads") {
      workloads.clear();
      for (size_t start = 0; start <= value.size();) {
        size_t comma = std::min(value.find(',', start), value.size());
        workloads.push_back(value.substr(start, comma - start));
        start = comma + 1;
      }
    } else if (flag == "--source-dir") {
      stitch::bench::g_source_dir = value;
    } else {
      std::fprintf(stderr, "usage: stitch_bench_reference [--repeat N] [--workloads a,b] [--source-dir DIR]\n");
      return 2;
    }
  }
  stitch::runtime::cpu::KernelCache cache;
  nlohmann::json doc = {{"backend", "cpu"}, {"repeat", repeat}, {"results", nlohmann::json::array()}};
  for (const std::string& w : workloads) {
    for (const nlohmann::json& r : stitch::bench::bench_workload(w, repeat, cache)) doc["results"].push_back(r);
  }
  std::printf("%s\n", doc.dump(2).c_str());
  return 0;
}
