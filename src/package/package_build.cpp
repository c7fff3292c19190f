#include "package/package_build.h"

#include <algorithm>
#include <atomic>
#include <set>

#include <fmt/format.h>

#include "fusion/fusion_plan.h"
#include "ir/canonicalize.h"
#include "package/cpu_isa.h"
#include "pipeline/cpu_route.h"
#include "stitch/error.h"
#include "stitch/text.h"

namespace stitch::package {

std::map<std::string, int64_t> cpu_package_settings(const PlanOptions& plan, const schedule::RowScheduleTarget& rows) {
  return {{"max_fusions", resolve_max_fusions(plan)},
          {"dot_epilogues", resolve_dot_epilogues(plan)},
          {"attention", resolve_attention(plan)},
          {"conv_calls", resolve_conv_calls(plan)},
          {"channels_last", resolve_channels_last(plan)},
          {"f32_intermediates", plan.f32_intermediates},
          {"stream_min_bytes", rows.stream_min_bytes},
          {"prefetch", rows.prefetch},
          {"transpose_tiles", rows.transpose_tiles},
          {"held_rows", rows.held_rows},
          {"cpu_l2_bytes", rows.cpu_l2_bytes},
          {"cpu_l1_bytes", rows.cpu_l1_bytes}};
}

Package package_of(const Graph& graph, const std::string& backend, PlannerKind planner) {
  Package p;
  p.stitch_version = STITCH_PACKAGE_VERSION;
  p.backend = backend;
  p.planner = planner_name(planner);
  Module m;
  m.graphs.push_back(graph);
  p.graph_text = print_module(m);
  return p;
}

Package build_cpu_package(const Graph& graph, const PackageRequest& request, runtime::cpu::KernelCache& cache) {
  if (request.backend != "cpu") {
    throw UserError(fmt::format("stitch package: --backend {} is not packaged yet (cpu is)", request.backend));
  }
  std::vector<std::string> arches = request.arches.empty() ? std::vector<std::string>{"native"} : request.arches;
  Package p = package_of(graph, "cpu", request.planner);
  const Graph canonical = canonicalize(graph);

  pipeline::CpuCompileOptions options;
  options.plan.f32_intermediates = request.f32_intermediates;
  p.settings = cpu_package_settings(options.plan, options.rows);
  std::set<std::string> sources;
  for (const std::string& arch : arches) {
    const std::optional<CpuIsa> isa = cpu_isa(arch);
    if (!isa) throw UserError(fmt::format("stitch package: --arch {}: not a CPU target ({})", arch, cpu_isa_names()));
    if (std::vector<std::string> missing = missing_cpu_features(isa->features); !missing.empty() && arch != "native") {
      // Compiling needs no such CPU, but the build runs the code once (the
      // pipeline loads what it compiles): say so rather than crash.
      throw UserError(fmt::format("stitch package: --arch {} needs {} which this CPU lacks; build it on a machine that has them",
                                  arch, fmt::join(missing, ", ")));
    }
    PackageTarget target;
    target.arch = arch;
    target.features = isa->features;
    target.built_on = host_cpu_name();
    runtime::cpu::CompilerOptions compiler;
    std::replace(compiler.flags.begin(), compiler.flags.end(), std::string("-march=native"), "-march=" + isa->march);
    options.compiler = compiler;
    // The in-memory level keeps every packaged compile apart (a hit there
    // would record no objects).
    static std::atomic<int> builds{0};
    options.tuner_key = fmt::format("package build {}", builds++);
    options.build_module = [&](const std::string& source) {
      // A unit the compiler rejects throws here, is not packaged, and the
      // loader's fallback takes the same path (no object: CompileError).
      const std::string sha = runtime::sha256_hex(source);
      std::optional<runtime::cpu::CpuModule> compiled;
      try {
        compiled = cache.load_or_compile(source, compiler);
      } catch (const runtime::cpu::CompileError&) {
        target.rejected.push_back(sha);
        throw;
      }
      runtime::cpu::CpuModule module = std::move(*compiled);
      const std::string bytes = runtime::cpu::read_cache_file(cache.shared_object_path(cache.key(source, compiler)));
      if (bytes.empty()) throw UserError("stitch package: a compiled kernel was evicted from the cache before it was packaged; run again");
      target.objects.push_back({sha, bytes});
      if (sources.insert(sha).second) p.sources.push_back(source);
      return module;
    };
    runtime::cpu::CpuExecutable exe = pipeline::compile_cpu(canonical, request.planner, cache, options);
    if (p.plan_text.empty()) p.plan_text = print_plan(exe.graph(), exe.plan());
    p.targets.push_back(std::move(target));
  }
  return p;
}

}  // namespace stitch::package
