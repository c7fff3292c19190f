#include "package/cuda/cuda_package.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "gpu_model/analytic.h"
#include "ir/canonicalize.h"
#include "package/package_load.h"
#include "pipeline/cuda/cuda_route.h"
#include "runtime/cuda/context.h"
#include "stitch/error.h"
#include "stitch/text.h"

namespace stitch::package {
namespace {

using runtime::cuda::ModuleImage;

// 90 for "sm_90"; nullopt for anything else.
std::optional<int> arch_number(std::string_view arch) {
  if (arch.substr(0, 3) != "sm_") return std::nullopt;
  int n = 0;
  const auto [end, ec] = std::from_chars(arch.data() + 3, arch.data() + arch.size(), n);
  if (ec != std::errc() || end != arch.data() + arch.size() || n < 50 || n > 200) return std::nullopt;
  return n;
}

// What decides a CUDA package's code besides the graph and the architecture.
std::map<std::string, int64_t> cuda_settings(const PlanOptions& plan, const schedule::RowScheduleTarget& rows) {
  return {{"max_fusions", resolve_max_fusions(plan)},
          {"f32_intermediates", plan.f32_intermediates},
          {"held_rows", rows.held_rows},
          {"transpose_tiles", rows.transpose_tiles}};
}

// The device-free target the package is built for, and loaded under.
pipeline::CudaCompileOptions options_for(const std::string& arch, bool f32_intermediates, int max_fusions) {
  pipeline::CudaCompileOptions o;
  o.plan.f32_intermediates = f32_intermediates;
  o.plan.max_fusions = max_fusions;
  o.rows = gpu_model::with_row_model(schedule::RowScheduleTarget::gpu(arch));
  o.weave = 0;
  return o;
}

}  // namespace

Package build_cuda_package(const Graph& graph, const PackageRequest& request, runtime::cuda::CubinCache& cache) {
  const std::vector<std::string> arches = request.arches.empty() ? std::vector<std::string>{"sm_90"} : request.arches;
  Package p = package_of(graph, "cuda", request.planner);
  const Graph canonical = canonicalize(graph);
  for (const std::string& arch : arches) {
    if (!arch_number(arch)) throw UserError(fmt::format("stitch package: --arch {}: not a GPU architecture (sm_80, sm_90, ...)", arch));
    pipeline::CudaCompileOptions options = options_for(arch, request.f32_intermediates, -1);
    const std::map<std::string, int64_t> settings = cuda_settings(options.plan, *options.rows);
    STITCH_ASSERT(p.settings.empty() || p.settings == settings, "CUDA package settings differ between targets");
    p.settings = settings;
    const std::string source = pipeline::cuda_translation_unit(canonical, request.planner, options);
    PackageTarget target;
    target.arch = arch;
    target.built_on = "nvrtc";
    const std::string sha = runtime::sha256_hex(source);
    try {
      // The cubin, then its PTX: the same NVRTC run, stored beside it.
      target.objects.push_back({sha, cache.load_or_compile(source, arch, ModuleImage::Cubin)});
      target.ptx[sha] = cache.load_or_compile(source, arch, ModuleImage::Ptx);
    } catch (const runtime::cpu::CompileError& e) {
      throw UserError(fmt::format("stitch package: NVRTC rejected the kernels for {} (a CUDA package holds the whole "
                                  "plan's kernels only):\n{}",
                                  arch, e.diagnostics()));
    }
    if (std::find(p.sources.begin(), p.sources.end(), source) == p.sources.end()) p.sources.push_back(source);
    if (p.plan_text.empty()) {
      p.plan_text = fmt::format("(planned for {}; `stitch plan --backend cuda` prints the groups)\n", arch);
    }
    p.targets.push_back(std::move(target));
  }
  return p;
}

runtime::cuda::CudaExecutable load_cuda_package(const Package& p, const std::string& path,
                                                std::shared_ptr<runtime::cuda::CudaContext> context) {
  if (p.backend != "cuda") throw UserError(fmt::format("{}: a package for --backend {}, not cuda", path, p.backend));
  const std::optional<PlannerKind> planner = parse_planner_kind(p.planner);
  if (!planner) throw UserError(fmt::format("{}: unknown planner '{}'", path, p.planner));
  const std::string device_arch = context->device().arch();
  const int device = arch_number(device_arch).value_or(0);
  // The device's own architecture (its cubin; PTX on cuda-sim), else the
  // newest older one, whose PTX the driver compiles for this device.
  const PackageTarget* chosen = nullptr;
  std::string built;
  for (const PackageTarget& t : p.targets) {
    built += (built.empty() ? "" : ", ") + t.arch;
    const int n = arch_number(t.arch).value_or(1 << 20);
    if (n <= device && (!chosen || n > arch_number(chosen->arch).value_or(0))) chosen = &t;
  }
  if (!chosen) {
    throw UserError(fmt::format("{}: built for {}; this GPU is {}, older than every target: build the package with "
                                "--arch {}",
                                path, built, device_arch, device_arch));
  }
  const bool own_cubin = chosen->arch == device_arch;
  pipeline::CudaCompileOptions options =
      options_for(chosen->arch, package_setting(p, path, "f32_intermediates") != 0,
                  static_cast<int>(package_setting(p, path, "max_fusions")));
  check_package_settings(p, path, cuda_settings(options.plan, *options.rows));
  options.build_image = [&p, &path, chosen, own_cubin](const std::string& source, ModuleImage image) -> std::string {
    const std::string sha = runtime::sha256_hex(source);
    auto object = std::find_if(chosen->objects.begin(), chosen->objects.end(),
                               [&](const PackageObject& o) { return o.source_sha256 == sha; });
    auto ptx = chosen->ptx.find(sha);
    if (object == chosen->objects.end() || ptx == chosen->ptx.end()) throw code_not_in_package(p, path);
    return image == ModuleImage::Cubin && own_cubin ? object->bytes : ptx->second;
  };
  // The cubin cache is not consulted (build_image replaces it).
  runtime::cuda::CubinCache unused(std::filesystem::temp_directory_path() / "stitch-package-unused", std::nullopt, nullptr);
  return pipeline::compile_cuda(canonicalize(package_graph(p, path)), *planner, std::move(context), unused, options);
}

}  // namespace stitch::package
