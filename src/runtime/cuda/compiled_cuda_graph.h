// What a GPU runs of a compiled graph (docs/cuda-runtime.md): its launch
// list, each kernel step bound to its function in the loaded module (and a
// woven pair's), and the plan and source it came from. The compile layer
// makes it (pipeline/cuda/cuda_route.h); CudaExecutable runs it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/fusion_plan.h"
#include "kir/kernel.h"
#include "runtime/common/launch_list.h"
#include "runtime/cuda/cuda_module.h"

namespace stitch::runtime::cuda {

// One entry of the launch list, bound to its function (no dot epilogues on
// CUDA: PlanOptions::for_gpu plans none).
struct CudaStep : BoundStepBase {
  CUfunction function = nullptr;  // Kernel
  kir::Kernel kernel;             // Kernel: its parameters and launch geometry
  int64_t dynamic_shared_bytes = 0;  // Kernel: its arena when over the static 48 KiB
  // --weave: this kernel and the next step's run as one launch of `woven`
  // (the first's arguments, the second's, then both grids).
  CUfunction woven = nullptr;
  int64_t woven_dynamic_shared_bytes = 0;
};

struct CompiledCudaGraph {
  FusionPlan plan;
  std::vector<CudaStep> steps;
  std::string source;
  std::shared_ptr<CudaModule> module;
  std::string fallback;
  bool interpret = false;  // nothing compiled: the reference interpreter runs
  std::shared_ptr<CudaModule> woven_module;  // the woven kernels (CudaCompileOptions::weave)
  std::string weave_refusals;
};

}  // namespace stitch::runtime::cuda
