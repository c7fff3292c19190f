#include "runtime/cuda/weave_steps.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "ptx/parser.h"
#include "ptx/printer.h"
#include "ptx/weave/weave.h"
#include "stitch/error.h"

namespace stitch::runtime::cuda {

bool independent_steps(const StepValues& a, const StepValues& b) {
  const std::set<int> writes_a(a.writes.begin(), a.writes.end());
  const std::set<int> writes_b(b.writes.begin(), b.writes.end());
  auto touches = [](const std::set<int>& writes, const StepValues& other) {
    return std::any_of(other.reads.begin(), other.reads.end(), [&](int v) { return writes.contains(v); }) ||
           std::any_of(other.writes.begin(), other.writes.end(), [&](int v) { return writes.contains(v); });
  };
  return !touches(writes_a, b) && !touches(writes_b, a);
}

WovenKernels weave_kernel_pairs(const std::string& module_ptx,
                                const std::vector<std::pair<std::string, std::string>>& pairs) {
  WovenKernels out;
  if (pairs.empty()) return out;
  // NVRTC's PTX ends in a NUL for cuModuleLoadData; the parser wants text.
  const std::string text(module_ptx.c_str());
  const ptx::Module module = ptx::parse_module(text, "nvrtc.ptx");
  std::optional<ptx::Module> combined;
  for (const auto& [a, b] : pairs) {
    ptx::WeaveOptions options;
    options.kernel_a = a;
    options.kernel_b = b;
    options.strategy = ptx::WeaveStrategy::Latency;
    options.grid_params = true;
    try {
      ptx::Module woven = ptx::weave(module, module, options);
      const std::string name = a + "_" + b + "_woven";
      if (!combined) {
        combined = std::move(woven);
      } else {
        // Both come from one module: only the woven .entry is new.
        combined->items.push_back(*woven.find_function(name));
      }
      out.names.push_back(name);
    } catch (const UserError& e) {
      out.names.emplace_back();
      out.refusals += fmt::format("not woven: {} and {}: {}\n", a, b, e.what());
    }
  }
  if (combined) out.ptx = ptx::print_module(*combined);
  return out;
}

}  // namespace stitch::runtime::cuda
