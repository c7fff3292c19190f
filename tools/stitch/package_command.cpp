#include "package_command.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <sstream>

#include "cli.h"
#include "package/package_build.h"
#include "package/package_file.h"
#include "stitch/error.h"

namespace stitch::cli {

PackageCommand::PackageCommand(CLI::App& app) {
  command_ = app.add_subcommand("package", "Compile a graph for listed targets into one file that runs without a compiler");
  command_->add_option("file", file_, "a .stitch file")->required();
  command_->add_option("--graph", graph_name_, "the graph to package (default: the first in the file)");
  command_->add_option("--backend", backend_, "cpu (default) or cuda (no GPU needed: NVRTC builds the cubins and PTX)")->check(CLI::IsMember({"cpu", "cuda"}));
  command_->add_option("--arch", arch_,
                       "comma-separated targets: cpu: x86-64, x86-64-v2, x86-64-v3, x86-64-v4, native (default native); "
                       "cuda: sm_80, sm_90, ... (default sm_90)");
  command_->add_option("--planner", planner_, "fusion planner (default stitch)")
      ->check(CLI::IsMember({"none", "xla", "stitch", "ilp", "greedy"}));
  command_->add_flag("--f32-intermediates", f32_intermediates_, "compute f16/bf16 values in f32 between ops");
  command_->add_option("-o,--output", output_, "the package to write (model.stitchpkg)")->required();
}

bool PackageCommand::selected() const { return command_->parsed(); }

int PackageCommand::run() const {
  if (std::filesystem::path(file_).extension() == ".onnx") {
    // Its weights are bound at import and would not travel with the package.
    throw UserError(fmt::format("stitch package: {}: ONNX models are not packaged yet (their weights would have to "
                                "travel with the package); package a .stitch graph",
                                file_));
  }
  Module m = load_module(file_, nullptr);
  const Graph& g = select_graph(m, graph_name_, file_);
  package::PackageRequest request;
  request.backend = backend_;
  request.planner = executable_planner(backend_, planner_);
  request.f32_intermediates = f32_intermediates_;
  std::stringstream arches(arch_);
  for (std::string a; std::getline(arches, a, ',');) {
    if (!a.empty()) request.arches.push_back(a);
  }
  package::Package p;
  if (backend_ == "cuda") {
    p = package_for_cuda(g, request);
  } else {
    runtime::cpu::KernelCache cache;
    p = package::build_cpu_package(g, request, cache);
  }
  package::write_package(output_, p);
  size_t objects = 0, bytes = 0;
  std::string targets;
  for (const package::PackageTarget& t : p.targets) {
    objects += t.objects.size();
    for (const package::PackageObject& o : t.objects) bytes += o.bytes.size();
    targets += (targets.empty() ? "" : ", ") + t.arch;
  }
  std::cout << fmt::format("wrote {}: graph {}, planner {}, targets {}, {} compiled objects ({} bytes)\n", output_,
                           g.name(), p.planner, targets, objects, bytes);
  return kExitOk;
}

}  // namespace stitch::cli
