// What `stitch bench` shares between its back ends (docs/benchmarks.md): the
// workloads parsed and checked before any timing, and the byte count every
// bandwidth figure divides by.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli.h"
#include "runtime/cpu/kernel_cache.h"
#include "stitch/graph.h"
#include "stitch/tensor.h"

namespace stitch::cli {

struct Workload {
  std::string name;
  Graph canonical;
  std::vector<Tensor> inputs;
  ModelInputs model;  // an ONNX model's initializers
};

// Every file's selected graph, canonicalised, with every symbolic dim bound
// by --dim (else a UserError), so bad input fails before minutes of timing.
std::vector<Workload> load_bench_workloads(const std::vector<std::string>& files, const BenchOptions& options);

// UserError for a bad --repeat or --warmup.
void check_bench_options(const BenchOptions& options);
// The --planners, each implemented; UserError for none.
std::vector<PlannerKind> bench_planners(const BenchOptions& options);

// Seeded random inputs for one workload (loaded one workload at a time: the
// corpus's inputs together would take gigabytes).
std::vector<Tensor> bench_inputs(const Workload& w, const BenchOptions& options);

double median(std::vector<double> v);

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// `warmup` untimed calls, then the median of `repeat` timed ones.
template <class F>
double median_seconds(int warmup, int repeat, F&& call) {
  for (int i = 0; i < warmup; ++i) call();
  std::vector<double> times;
  for (int i = 0; i < repeat; ++i) {
    Clock::time_point start = Clock::now();
    call();
    times.push_back(seconds_since(start));
  }
  return median(std::move(times));
}

// The copy the workloads are compared with: the same shape of code the C++
// emitter produces for an elementwise kernel (an OpenMP static loop over
// floats), compiled through the kernel cache with the JIT's own command line.
class CopyBenchmark {
 public:
  explicit CopyBenchmark(runtime::cpu::KernelCache& cache);
  // GB/s (1e9 B/s) of copying bytes/2 bytes: bytes/2 read plus bytes/2 written.
  double gbps(int64_t bytes, int warmup, int repeat);

 private:
  runtime::cpu::CpuModule module_;
  runtime::cpu::KernelFunction copy_;
};

// A fresh directory for a cold-compile measurement, removed with everything
// in it when the object goes.
class ScratchDirectory {
 public:
  ScratchDirectory();
  ~ScratchDirectory();
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

int64_t tensor_bytes(const Tensor& t);
// Every input read once plus every output written once (a value returned
// twice is written once).
int64_t minimal_bytes(const Graph& g, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs);
// The same before a run: the outputs' sizes from their types under the inputs' bindings.
int64_t minimal_bytes(const Graph& g, const std::vector<Tensor>& inputs);

// One timed (workload, planner) as a results row of the JSON
// (docs/benchmarks.md): the measured fields and the rates derived from them.
struct TimedRun {
  std::string workload, planner;
  int kernels = 0;
  int64_t bytes_min = 0;   // every input read once, every output written once
  int64_t plan_bytes = 0;  // what the plan's kernels move (FusionCostModel)
  double median_s = 0, copy_gbps = 0, compile_s = 0, load_s = 0;
};
nlohmann::json timed_row(const TimedRun& run);

// Writes the results document; UserError when the file cannot be written.
void write_bench_json(const std::string& path, const nlohmann::json& doc);

// "2026-11-22T12:46:34Z", now.
std::string utc_timestamp();

}  // namespace stitch::cli
