#include "package/cpu_isa.h"

#include <fstream>
#include <sstream>

namespace stitch::package {
namespace {

// The psABI's levels (x86-64 psABI, "Micro-architecture levels"), each
// adding to the one before, as /proc/cpuinfo spells the features
// (pni is SSE3, abm is LZCNT).
const std::vector<std::pair<std::string, std::vector<std::string>>>& levels() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> table = {
      {"x86-64", {"cmov", "cx8", "fpu", "fxsr", "mmx", "sse", "sse2"}},
      {"x86-64-v2", {"cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3"}},
      {"x86-64-v3", {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"}},
      {"x86-64-v4", {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}},
  };
  return table;
}

std::string first_cpuinfo_field(std::string_view name) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.compare(0, name.size(), name) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, colon);
    if (key.find_last_not_of(" \t") + 1 != name.size()) continue;
    const size_t start = line.find_first_not_of(' ', colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "";
}

}  // namespace

std::optional<CpuIsa> cpu_isa(std::string_view arch) {
  if (arch == "native") {
    const std::set<std::string> host = host_cpu_features();
    return CpuIsa{"native", "native", std::vector<std::string>(host.begin(), host.end())};
  }
  CpuIsa isa{std::string(arch), std::string(arch), {}};
  for (const auto& [name, added] : levels()) {
    isa.features.insert(isa.features.end(), added.begin(), added.end());
    if (name == arch) return isa;
  }
  return std::nullopt;
}

std::string cpu_isa_names() {
  std::string names;
  for (const auto& level : levels()) names += level.first + ", ";
  return names + "native";
}

std::set<std::string> host_cpu_features() {
  std::set<std::string> features;
  std::istringstream flags(first_cpuinfo_field("flags"));
  for (std::string f; flags >> f;) features.insert(f);
  return features;
}

std::string host_cpu_name() { return first_cpuinfo_field("model name"); }

std::vector<std::string> missing_cpu_features(const std::vector<std::string>& required) {
  const std::set<std::string> host = host_cpu_features();
  std::vector<std::string> missing;
  for (const std::string& f : required) {
    if (!host.count(f)) missing.push_back(f);
  }
  return missing;
}

}  // namespace stitch::package
