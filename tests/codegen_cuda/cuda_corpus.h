// Shared by the CUDA emitter tests: graphs lowered through the compile
// pipeline's stages for the CUDA back end (canonicalize through plan, then
// the lowering per group), and what a kernel's Kernel IR and PTX contain.
#pragma once

#include <string>
#include <vector>

#include "fusion/planner.h"
#include "kir/kernel.h"
#include "schedule/select.h"
#include "stitch/graph.h"

namespace stitch::testing {

struct LoweredKernels {
  std::vector<kir::Kernel> kernels;
  std::vector<std::string> not_lowered;  // one reason per loop/reduction group without a kernel
};

// `graph` as parsed; kernels are named "<prefix>_g<index>". Row groups take
// the row schedule chosen for `rows` (sm_90 unless told).
LoweredKernels lower_for_cuda(const Graph& graph, PlannerKind planner, const std::string& prefix,
                              const schedule::RowScheduleTarget& rows = schedule::RowScheduleTarget::gpu());

// A C identifier made of `text` (other characters become '_').
std::string identifier(const std::string& text);

// The .stitch files of bench/workloads and tests/ir/corpus, sorted.
std::vector<std::string> corpus_files();

struct KirFeatures {
  bool warp_reduction = false;
  bool block_reduction = false;
  bool barrier = false;
  bool shared = false;
};
KirFeatures kir_features(const kir::Kernel& k);

// The text of `.entry NAME(` up to the next entry (or the end) in `ptx`; "" if absent.
std::string ptx_entry(const std::string& ptx, const std::string& name);

}  // namespace stitch::testing
