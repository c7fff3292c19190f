// The texts the compile layer reports: an unsupported path, the fallback
// ladder's notes, the kernels' Kernel IR for STITCH_DUMP=kir, warnings.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "fusion/planner.h"
#include "kir/kernel.h"
#include "stitch/graph.h"

namespace stitch::pipeline {

// "--backend BACKEND cannot run this graph yet: REASON; use --backend interp".
std::string unsupported_message(const std::string& backend, const std::string& reason);

// The texts of the fallback reports (the compile stage, pipeline.h).
std::string fallback_note(const Graph& g, PlannerKind planner, const std::string& what, const std::string& error);
std::string interpreter_note(const Graph& g, const std::string& error);

// Every kernel's Kernel IR text, for STITCH_DUMP=kir.
std::string print_kernels(const std::vector<kir::Kernel>& kernels);

// `warn` with the message, or "stitch: warning: MESSAGE" on stderr without one.
void report_warning(const std::function<void(const std::string&)>& warn, const std::string& message);

}  // namespace stitch::pipeline
