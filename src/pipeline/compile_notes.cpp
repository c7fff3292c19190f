#include "pipeline/compile_notes.h"

#include <fmt/format.h>

#include <iostream>

#include "kir/printer.h"

namespace stitch::pipeline {

std::string unsupported_message(const std::string& backend, const std::string& reason) {
  return fmt::format("--backend {} cannot run this graph yet: {}; use --backend interp", backend, reason);
}

std::string print_kernels(const std::vector<kir::Kernel>& kernels) {
  std::string text;
  for (const kir::Kernel& k : kernels) text += kir::print_kernel(k);
  return text;
}

void report_warning(const std::function<void(const std::string&)>& warn, const std::string& message) {
  if (warn) {
    warn(message);
  } else {
    std::cerr << "stitch: warning: " << message << "\n";
  }
}

std::string fallback_note(const Graph& g, PlannerKind planner, const std::string& what, const std::string& error) {
  return fmt::format("compiling the fused {} of graph '{}' (planner {}) failed:\n{}\n", what, g.name(),
                     planner_name(planner), error);
}

std::string interpreter_note(const Graph& g, const std::string& error) {
  return fmt::format("{}\nrunning graph '{}' on the reference interpreter instead (slow)", error, g.name());
}

}  // namespace stitch::pipeline
