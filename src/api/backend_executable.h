// What the public Executable (include/stitch/runtime.h) wraps: one back end's
// compiled graph behind one interface, so that executable.cpp names no
// back end's types and the CUDA one exists only in builds that have it.
#pragma once

#include "package/package_file.h"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "fusion/fusion_plan.h"
#include "fusion/planner.h"
#include "runtime/common/caller_memory.h"
#include "pipeline/pipeline.h"
#include "stitch/error.h"
#include "stitch/graph.h"
#include "stitch/runtime.h"
#include "stitch/tensor.h"

namespace stitch::api {

class BackendExecutable {
 public:
  virtual ~BackendExecutable() = default;
  virtual std::vector<Tensor> run(const std::vector<Tensor>& inputs) = 0;
  virtual void run(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) = 0;
  virtual void run_into(const std::vector<ArrayView>& inputs, const OutputMemory& output) = 0;
  virtual void run_on_device(const std::vector<ArrayView>& inputs, const OutputMemory& output, std::uintptr_t stream) = 0;
  virtual int kernel_count() const = 0;
  virtual const Graph& graph() const = 0;
  virtual const FusionPlan& plan() const = 0;
  virtual const std::string& fallback() const = 0;
  virtual const CacheStats& cache_stats() const = 0;
};

// A back end's executable behind the interface: every call forwards. Where
// the executable cannot write into given outputs (CUDA's host entry point
// allocates them; reusing host tensors would save no device work), run
// replaces them.
template <class Exe>
class BackendExecutableOf final : public BackendExecutable {
 public:
  BackendExecutableOf(Exe exe, CacheStats stats) : exe_(std::move(exe)), stats_(stats) {}

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override { return exe_.run(inputs); }
  void run(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) override {
    if constexpr (requires { exe_.run(inputs, outputs); }) {
      exe_.run(inputs, outputs);
    } else {
      outputs = exe_.run(inputs);
    }
  }
  // Where the executable has no entry point on the caller's memory, through
  // tensors: the inputs copied in, the outputs copied out.
  void run_into(const std::vector<ArrayView>& inputs, const OutputMemory& output) override {
    if constexpr (requires { exe_.run_into(inputs, output); }) {
      exe_.run_into(inputs, output);
    } else {
      runtime::copy_outputs(exe_.run(runtime::tensors_of(inputs)), output);
    }
  }
  // Device memory: the CUDA executable's entry point; the CPU's has none.
  void run_on_device(const std::vector<ArrayView>& inputs, const OutputMemory& output, std::uintptr_t stream) override {
    if constexpr (requires { exe_.run_at(inputs, output, stream); }) {
      exe_.run_at(inputs, output, stream);
    } else {
      throw UserError("run_on_device: this executable is compiled for the CPU, which runs on host memory (run_into)");
    }
  }
  int kernel_count() const override { return exe_.kernel_count(); }
  const Graph& graph() const override { return exe_.graph(); }
  const FusionPlan& plan() const override { return exe_.plan(); }
  const std::string& fallback() const override { return exe_.fallback(); }
  const CacheStats& cache_stats() const override { return stats_; }

 private:
  Exe exe_;
  CacheStats stats_;
};

// What both back ends take from CompileOptions, resolved.
struct BackendRequest {
  PlannerKind planner = PlannerKind::Stitch;
  bool tune = false;
  std::filesystem::path cache_directory;
  pipeline::StageDump dump;
  std::vector<std::string> constant_params;  // CompileOptions::constant_params
  bool f32_intermediates = false;            // CompileOptions::f32_intermediates
};

// `canonical` is in canonical form. Each throws UserError as the back end's
// executable does (a group it cannot lower).
std::unique_ptr<BackendExecutable> compile_for_cpu(const Graph& canonical, const BackendRequest& request);
// A package (docs/packages.md) from its objects, no compiler: for this CPU,
// or for Backend::Cuda's device (UserError where there is none).
std::unique_ptr<BackendExecutable> load_cpu_package(const package::Package& p, const std::string& path);
std::unique_ptr<BackendExecutable> load_cuda_package(const package::Package& p, const std::string& path);
// UserError when this build has no CUDA support or no device can be opened.
std::unique_ptr<BackendExecutable> compile_for_cuda(const Graph& canonical, const BackendRequest& request);

// Whether compile_for_cuda can open a device; `why` says why not.
bool cuda_device_available(std::string* why = nullptr);

}  // namespace stitch::api
