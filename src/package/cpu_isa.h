// The CPU targets a package is built for (docs/packages.md, CPU targets): the
// x86-64 micro-architecture levels of the psABI (x86-64, x86-64-v2, -v3, -v4),
// each compiled with -march=LEVEL and needing that level's features, and
// `native`, compiled with -march=native and needing every feature of the
// builder's CPU. Features are named as /proc/cpuinfo's `flags` names them.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace stitch::package {

struct CpuIsa {
  std::string arch;                   // "x86-64-v3", "native"
  std::string march;                  // the -march value
  std::vector<std::string> features;  // what a machine must have to run it
};

// `arch`'s ISA (for native: this CPU's features); nullopt for an unknown name.
std::optional<CpuIsa> cpu_isa(std::string_view arch);
// The names cpu_isa knows, for messages.
std::string cpu_isa_names();

// This CPU's features (/proc/cpuinfo's first `flags` line).
std::set<std::string> host_cpu_features();
// The first `model name` of /proc/cpuinfo ("" when none).
std::string host_cpu_name();

// Those of `required` that this CPU lacks, in order.
std::vector<std::string> missing_cpu_features(const std::vector<std::string>& required);

}  // namespace stitch::package
