// Runs node test cases on every path Stitch has: the reference interpreter and
// a compiled back end (CPU or CUDA, case_backend.h) under each planner, each
// against the case's reference outputs (reference_compare.h).
// docs/onnx-conformance.md says what counts as a pass, a failure and
// unsupported.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "case_backend.h"
#include "node_case.h"
#include "stitch/graph.h"

namespace stitch::onnx_node {

enum class Outcome { Pass, Fail, Unsupported };
std::string_view outcome_name(Outcome o);

struct CaseResult {
  std::string name;
  Outcome outcome = Outcome::Pass;
  // Unsupported: the importer's message. Fail: one line per failure,
  // "PATH: what went wrong", PATH one of import, data, interpreter, the
  // planners' names, fusion.
  std::string reason;
  // `_expanded` cases that imported: the canonical graph's non-trivial ops
  // (non_trivial_op_count) and the kernels the xla planner's executable runs;
  // -1 when not measured.
  int graph_ops = -1;
  int xla_kernels = -1;
  // Graph inputs the model was specialised on (ImportOptions::known_inputs),
  // comma-separated; empty for most cases.
  std::string known_inputs;
  // `_expanded` cases: the kernels the stitch planner's executable runs
  // (recorded, not asserted); -1 when not measured.
  int stitch_kernels = -1;
};

// Nodes that are work of their own: all but constants, iotas, broadcasts and
// reshapes, which a fused kernel folds into its indexing.
int non_trivial_op_count(const Graph& canonical);

// Cases compiled per translation unit (CaseBackend::compile_batch): one
// compiler run (the C++ compiler, NVRTC) amortised over many small graphs.
inline constexpr size_t kDefaultBatchSize = 48;

// On a crash (SIGSEGV, SIGABRT, ...), print which case and path was running
// before dying of the same signal.
void install_crash_report();

// One result per case, in order, the planners run on `backend`.
std::vector<CaseResult> run_cases(const std::vector<NodeCase>& cases, CaseBackend& backend,
                                  size_t batch_size = kDefaultBatchSize);

}  // namespace stitch::onnx_node
