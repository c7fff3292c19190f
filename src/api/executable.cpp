// The public compile-and-run API (include/stitch/runtime.h, docs/library.md):
// options checked and resolved, the graph canonicalized as the CLI does, then
// handed to the back end.
#include <fmt/format.h>

#include <cstdlib>
#include <iostream>
#include <optional>

#include "api/backend_executable.h"
#include "api/kernel_caches.h"
#include "fusion/planner.h"
#include "ir/canonicalize.h"
#include "options/options.h"
#include "stitch/error.h"
#include "stitch/runtime.h"
#include "stitch/text.h"

namespace stitch {

namespace {

// What CompileOptions::dump asks for, printed to stderr as the CLI prints it.
pipeline::StageDump stage_dump(const std::string& requested) {
  const EnvironmentOptions env = environment_options();
  if (requested.empty() && env.dump.empty()) return {};
  return {[requested, env](std::string_view stage) {
            return requested.empty() ? env.dumps(stage) : dump_list_matches(requested, stage);
          },
          [](std::string_view stage, const std::string& text) {
            std::cerr << "// STITCH_DUMP " << stage << "\n" << text;
          }};
}

Graph canonicalize_with_dump(const Graph& g, const pipeline::StageDump& dump) {
  if (!dump.wants || !dump.wants("canonicalize")) return canonicalize(g);
  std::cerr << "// STITCH_DUMP graph: as given\n" << print_graph(g);
  return canonicalize(g, [](const std::string& pass, const Graph& after) {
    std::cerr << "// STITCH_DUMP graph: after " << pass << "\n" << print_graph(after);
  });
}

PlannerKind planner_kind(const std::string& name) {
  std::optional<PlannerKind> kind = parse_planner_kind(name);
  if (!kind) {
    throw UserError(fmt::format("CompileOptions::planner: unknown planner '{}' (planners: none, xla, stitch, ilp, "
                                "greedy)", name));
  }
  return *kind;
}

}  // namespace

std::string backend_name(Backend backend) {
  switch (backend) {
    case Backend::Cpu: return "cpu";
    case Backend::Cuda: return "cuda";
  }
  return fmt::format("Backend({})", static_cast<int>(backend));
}

struct Executable::Impl {
  Backend backend;
  std::string planner;
  std::unique_ptr<api::BackendExecutable> exe;
};

Executable Executable::compile(const Graph& graph, const CompileOptions& options) {
  if (options.backend != Backend::Cpu && options.backend != Backend::Cuda) {
    throw UserError(fmt::format("CompileOptions::backend: {} is not a back end (Backend::Cpu or Backend::Cuda)",
                                static_cast<int>(options.backend)));
  }
  api::BackendRequest request;
  request.planner = planner_kind(options.planner);
  request.tune = options.tune;
  request.dump = stage_dump(options.dump);
  request.constant_params = options.constant_params;
  request.f32_intermediates = options.f32_intermediates;
  std::string why;
  // Before the canonicalization and the cache directory: the answer that
  // matters to a caller without a GPU is that there is none.
  if (options.backend == Backend::Cuda && !api::cuda_device_available(&why)) {
    throw UserError("Backend::Cuda is not available: " + why);
  }
  request.cache_directory = api::resolve_cache_directory(options.cache_dir);
  const Graph canonical = canonicalize_with_dump(graph, request.dump);
  auto impl = std::make_unique<Impl>();
  impl->backend = options.backend;
  impl->planner = options.planner;
  impl->exe = options.backend == Backend::Cpu ? api::compile_for_cpu(canonical, request)
                                              : api::compile_for_cuda(canonical, request);
  return Executable(std::move(impl));
}

Executable Executable::load(const std::string& path) {
  const package::Package p = package::read_package(path);
  auto impl = std::make_unique<Impl>();
  impl->backend = p.backend == "cuda" ? Backend::Cuda : Backend::Cpu;
  impl->planner = p.planner;
  impl->exe = p.backend == "cuda" ? api::load_cuda_package(p, path) : api::load_cpu_package(p, path);
  return Executable(std::move(impl));
}

Executable::Executable(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Executable::Executable(Executable&&) noexcept = default;
Executable& Executable::operator=(Executable&&) noexcept = default;
Executable::~Executable() = default;

std::vector<Tensor> Executable::run(const std::vector<Tensor>& inputs) { return impl_->exe->run(inputs); }
void Executable::run(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs) {
  impl_->exe->run(inputs, outputs);
}
void Executable::run_into(const std::vector<ArrayView>& inputs, const OutputMemory& output) {
  impl_->exe->run_into(inputs, output);
}
void Executable::run_on_device(const std::vector<ArrayView>& inputs, const OutputMemory& output, std::uintptr_t stream) {
  impl_->exe->run_on_device(inputs, output, stream);
}

Backend Executable::backend() const { return impl_->backend; }
const std::string& Executable::planner() const { return impl_->planner; }
int Executable::kernel_count() const { return impl_->exe->kernel_count(); }
std::string Executable::plan_text() const { return print_plan(impl_->exe->graph(), impl_->exe->plan()); }
const std::string& Executable::fallback() const { return impl_->exe->fallback(); }
const CacheStats& Executable::cache_stats() const { return impl_->exe->cache_stats(); }
const Graph& Executable::graph() const { return impl_->exe->graph(); }

bool cuda_available() { return api::cuda_device_available(); }

std::string version() { return STITCH_VERSION; }

}  // namespace stitch
