// The compiled back ends the conformance runner checks each planner on
// (docs/onnx-conformance.md): the CPU back end, and the CUDA one where the
// build has it. One interface, so case_runner.cpp has a single planner loop
// whatever the back end.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fusion/planner.h"
#include "stitch/graph.h"
#include "stitch/tensor.h"

namespace stitch::onnx_node {

// One graph compiled by a back end.
class CompiledCase {
 public:
  virtual ~CompiledCase() = default;
  // Host tensors in and out, the inputs checked as the interpreter does.
  virtual std::vector<Tensor> run(const std::vector<Tensor>& inputs) = 0;
  virtual int kernel_count() const = 0;  // kernels plus library calls per run
};

class CaseBackend {
 public:
  virtual ~CaseBackend() = default;
  // "CPU", "CUDA": named in failure reasons.
  virtual std::string_view name() const = 0;
  // The name and, for a GPU, the device the cases ran on, for the summary.
  virtual std::string description() const { return std::string(name()); }
  // "" when the back end lowers every group of the graph's plan, else why not.
  virtual std::string unsupported_reason(const Graph& canonical, PlannerKind planner) const = 0;
  // Every graph's kernels in one translation unit and one compiler run. No
  // fallback: throws when it fails, and one bad graph fails them all.
  virtual std::vector<std::unique_ptr<CompiledCase>> compile_batch(const std::vector<Graph>& canonical_graphs,
                                                                   PlannerKind planner) = 0;
};

// The names `run --backend` takes.
// cuda-sim is the CUDA back end on the simulated driver (docs/cuda-sim.md).
inline constexpr std::string_view kBackendNames[] = {"cpu", "cuda", "cuda-sim"};

// The back end `name` ("cpu" or "cuda") with its compiled kernels cached in
// `cache_dir`; nullptr with `why` when it cannot run here: no GPU or driver,
// or a build without the CUDA back end.
std::unique_ptr<CaseBackend> open_backend(std::string_view name, const std::filesystem::path& cache_dir,
                                          std::string& why);

}  // namespace stitch::onnx_node
