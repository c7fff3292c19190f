// `stitch package` (docs/packages.md): a graph planned, lowered and compiled
// for each listed target into a Package (package_file.h).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "fusion/planner.h"
#include "package/package_file.h"
#include "runtime/cpu/kernel_cache.h"
#include "schedule/select.h"
#include "stitch/graph.h"

namespace stitch::package {

struct PackageRequest {
  std::string backend = "cpu";
  // CPU: ISA levels (cpu_isa.h); default: native.
  std::vector<std::string> arches;
  PlannerKind planner = PlannerKind::Stitch;
  bool f32_intermediates = false;
};

// Compiles `graph` (as given: it is canonicalized here) for every target of
// `request`, through `cache` (its entries are the objects packaged), and
// returns the package. UserError for an unknown arch or back end, a graph the
// back end cannot run, or a target this machine cannot compile for.
Package build_cpu_package(const Graph& graph, const PackageRequest& request, runtime::cpu::KernelCache& cache);

// A package of `graph` for `backend` and `planner`, before its targets: this
// Stitch's version and format, the graph's text.
Package package_of(const Graph& graph, const std::string& backend, PlannerKind planner);

// The settings a package records (package_file.h), resolved from
// `plan` and `rows` as the pipeline would resolve them now.
std::map<std::string, int64_t> cpu_package_settings(const PlanOptions& plan, const schedule::RowScheduleTarget& rows);

}  // namespace stitch::package
