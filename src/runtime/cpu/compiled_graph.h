// What the CPU runs of a compiled graph (docs/executable.md): its launch
// list, each step bound to its entry point in the loaded kernels, and the
// plan and source it came from. The compile layer makes it
// (pipeline/cpu_route.h); CpuExecutable runs it, and the kernel cache's
// in-memory level shares it between executables of structurally equal graphs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/fusion_plan.h"
#include "runtime/common/dot_panels.h"
#include "runtime/common/launch_list.h"
#include "runtime/cpu/kernel_cache.h"
#include "stitch/graph.h"

namespace stitch::runtime::cpu {

// One entry of the launch list, bound to its entry points.
struct Step : BoundStepBase {
  KernelFunction function = nullptr;  // Kernel
  // Dot: its epilogue (fusion/dot_epilogues.h), run by the panels of `panels`.
  KernelFunction epilogue = nullptr;
  std::vector<DotPanel> panels;
  // Dot: B read as the transpose of this value (its last two axes swapped) by
  // the gemm's flag, instead of the node's own operand (fold_operand_transposes).
  ValueId b_transposed;
  // What StepTime calls it: "kernel" or the library op, and a label.
  std::string kind_name, label;
};

struct CompiledGraph {
  FusionPlan plan;
  std::vector<Step> steps;
  std::string source;
  CpuModule module;  // keeps the kernels' shared object loaded
  // Set when compile() fell back; with `interpret`, run() uses the reference
  // interpreter because no plan compiled.
  std::string fallback;
  bool interpret = false;
};

}  // namespace stitch::runtime::cpu
