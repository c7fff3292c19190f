// Running a package (docs/packages.md): the graph planned and lowered again
// under the package's settings, which generates the same sources, whose
// objects come from the package instead of a compiler. No compiler runs and
// none needs to be installed.
#pragma once

#include <map>
#include <string>

#include "package/package_file.h"
#include "runtime/cpu/executable.h"
#include "stitch/error.h"
#include "stitch/graph.h"

namespace stitch::package {

// The target of `p` this machine runs: for the CPU the highest ISA level whose
// features it has (native first, when its features are all here). Throws
// UserError naming the package, each target and what this machine lacks.
const PackageTarget& choose_cpu_target(const Package& p, const std::string& path);

// The package's graph as given (parsed from its text).
Graph package_graph(const Package& p, const std::string& path);

// A setting the package records (UserError when it does not).
int64_t package_setting(const Package& p, const std::string& path, const std::string& name);
// UserError when this environment resolves a setting otherwise (a STITCH_*
// switch): the generated sources would not be the packaged ones.
void check_package_settings(const Package& p, const std::string& path, const std::map<std::string, int64_t>& resolved);
// The error for a source the package holds no object for.
UserError code_not_in_package(const Package& p, const std::string& path);

// The package compiled for this CPU from its objects. Throws UserError when
// the package is not a CPU one, no target runs here, a STITCH_* switch of the
// environment contradicts the package's settings, or this Stitch generates a
// source the package holds no object for (another Stitch's code generation).
runtime::cpu::CpuExecutable load_cpu_package(const Package& p, const std::string& path);

}  // namespace stitch::package
