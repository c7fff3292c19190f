#include "package/package_load.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "ir/canonicalize.h"
#include "package/cpu_isa.h"
#include "package/package_build.h"
#include "pipeline/cpu_route.h"
#include "stitch/error.h"
#include "stitch/text.h"

namespace stitch::package {
namespace {

// The targets' order of preference: native (built for exactly such a CPU),
// then the highest level.
int preference(const std::string& arch) {
  if (arch == "native") return 5;
  if (arch == "x86-64-v4") return 4;
  if (arch == "x86-64-v3") return 3;
  if (arch == "x86-64-v2") return 2;
  return 1;
}

// The package's settings as the pipeline's options, refused where a STITCH_*
// switch of this environment would resolve them otherwise (the generated
// sources would then not be the packaged ones).
pipeline::CpuCompileOptions options_of(const Package& p, const std::string& path) {
  pipeline::CpuCompileOptions o;
  const auto setting = [&](const std::string& name) { return package_setting(p, path, name); };
  o.plan.max_fusions = static_cast<int>(setting("max_fusions"));
  o.plan.dot_epilogues = setting("dot_epilogues") != 0;
  o.plan.attention = setting("attention") != 0;
  o.plan.conv_calls = setting("conv_calls") != 0;
  o.plan.channels_last = setting("channels_last") != 0;
  o.plan.f32_intermediates = setting("f32_intermediates") != 0;
  o.rows.stream_min_bytes = setting("stream_min_bytes");
  o.rows.prefetch = setting("prefetch") != 0;
  o.rows.transpose_tiles = setting("transpose_tiles") != 0;
  o.rows.held_rows = setting("held_rows") != 0;
  o.rows.cpu_l2_bytes = setting("cpu_l2_bytes");
  o.rows.cpu_l1_bytes = setting("cpu_l1_bytes");
  check_package_settings(p, path, cpu_package_settings(o.plan, o.rows));
  return o;
}

}  // namespace

int64_t package_setting(const Package& p, const std::string& path, const std::string& name) {
  auto it = p.settings.find(name);
  if (it == p.settings.end()) throw UserError(fmt::format("{}: the package does not record '{}'", path, name));
  return it->second;
}

void check_package_settings(const Package& p, const std::string& path, const std::map<std::string, int64_t>& resolved) {
  for (const auto& [name, value] : resolved) {
    const int64_t built = package_setting(p, path, name);
    if (value != built) {
      throw UserError(fmt::format("{}: built with {}={}, but this environment makes it {} (a STITCH_* variable); unset "
                                  "it to run the package, or build the package under it",
                                  path, name, built, value));
    }
  }
}

UserError code_not_in_package(const Package& p, const std::string& path) {
  return UserError(fmt::format("{}: this Stitch generates code the package holds no kernels for (the package was "
                               "built by Stitch {}); build the package again with this Stitch",
                               path, p.stitch_version));
}

const PackageTarget& choose_cpu_target(const Package& p, const std::string& path) {
  const PackageTarget* best = nullptr;
  std::string refusals;
  for (const PackageTarget& t : p.targets) {
    const std::vector<std::string> missing = missing_cpu_features(t.features);
    if (missing.empty()) {
      if (!best || preference(t.arch) > preference(best->arch)) best = &t;
    } else {
      refusals += fmt::format("\n  {} (built on {}): this CPU lacks {}", t.arch, t.built_on.empty() ? "?" : t.built_on,
                              fmt::join(missing, ", "));
    }
  }
  if (!best) {
    throw UserError(fmt::format("{}: no target of the package runs on this CPU ({}):{}\nbuild it with a lower level, "
                                "e.g. `stitch package ... --arch x86-64-v3`",
                                path, host_cpu_name(), refusals.empty() ? " it has no targets" : refusals));
  }
  return *best;
}

Graph package_graph(const Package& p, const std::string& path) {
  Module m = parse_module(p.graph_text, path + " (its graph)");
  if (m.graphs.size() != 1) throw UserError(fmt::format("{}: the package holds {} graphs, not one", path, m.graphs.size()));
  return std::move(m.graphs.front());
}

runtime::cpu::CpuExecutable load_cpu_package(const Package& p, const std::string& path) {
  if (p.backend != "cpu") {
    throw UserError(fmt::format("{}: a package for --backend {}, not cpu", path, p.backend));
  }
  const std::optional<PlannerKind> planner = parse_planner_kind(p.planner);
  if (!planner) throw UserError(fmt::format("{}: unknown planner '{}'", path, p.planner));
  const PackageTarget& target = choose_cpu_target(p, path);
  pipeline::CpuCompileOptions options = options_of(p, path);
  options.tuner_key = "package " + path;

  // Each object is written to a private file, loaded, and unlinked: the
  // mapping outlives the file, and nothing is left behind.
  std::string scratch = (std::filesystem::temp_directory_path() / "stitch-package-XXXXXX").string();
  if (!mkdtemp(scratch.data())) throw UserError(fmt::format("{}: cannot create a temporary directory", path));
  struct Remove {
    std::string dir;
    ~Remove() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } remove{scratch};
  options.build_module = [&](const std::string& source) {
    const std::string sha = runtime::sha256_hex(source);
    auto object = std::find_if(target.objects.begin(), target.objects.end(),
                               [&](const PackageObject& o) { return o.source_sha256 == sha; });
    if (object == target.objects.end()) {
      if (std::count(target.rejected.begin(), target.rejected.end(), sha)) {
        throw runtime::cpu::CompileError("the compiler rejected this unit when the package was built", "");
      }
      throw code_not_in_package(p, path);
    }
    const std::filesystem::path file = std::filesystem::path(scratch) / (sha + ".so");
    {
      std::ofstream out(file, std::ios::binary);
      out.write(object->bytes.data(), static_cast<std::streamsize>(object->bytes.size()));
      if (!out.flush()) throw UserError(fmt::format("{}: cannot write a kernel object to {}", path, scratch));
    }
    return runtime::cpu::CpuModule::load(file);
  };
  // The kernel cache is not consulted (build_module replaces it); an object
  // of its own keeps this package's executables apart in its memory level.
  runtime::cpu::KernelCache cache(std::filesystem::path(scratch) / "unused", 0, std::nullopt, nullptr);
  return pipeline::compile_cpu(canonicalize(package_graph(p, path)), *planner, cache, options);
}

}  // namespace stitch::package
