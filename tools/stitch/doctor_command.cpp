#include "doctor_command.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>
#include <string>

#include "cli.h"
#include "runtime/cpu/toolchain_check.h"
#ifdef STITCH_HAVE_CUDA
#include "runtime/cuda/context.h"
#endif

namespace stitch::cli {

DoctorCommand::DoctorCommand(CLI::App& app) {
  command_ = app.add_subcommand("doctor", "Check what the CPU back end needs (compiler, OpenMP, SLEEF, cache) and CUDA");
}

bool DoctorCommand::selected() const { return command_->parsed(); }

int DoctorCommand::run() const {
  bool all = true;
  for (const runtime::cpu::ToolchainCheck& check : runtime::cpu::check_cpu_toolchain()) {
    all = all && check.ok;
    std::cout << fmt::format("{:<8} {:<9} {}\n", check.ok ? "ok" : check.checked ? "missing" : "skipped", check.name, check.detail);
    if (!check.fix.empty()) std::cout << fmt::format("{:<18} fix: {}\n", "", check.fix);
  }
  // The CUDA back end is optional: reported, never a failure.
#ifdef STITCH_HAVE_CUDA
  std::string why;
  const bool cuda = runtime::cuda::CudaContext::open(&why) != nullptr;
  std::cout << fmt::format("{:<8} {:<9} {}\n", "info", "cuda",
                           cuda ? "a CUDA device: the cuda back end runs"
                                : "the cuda back end is unavailable (optional): " + why);
#else
  std::cout << fmt::format("{:<8} {:<9} {}\n", "info", "cuda", "this build has no CUDA back end (optional)");
#endif
  std::cout << (all ? "the CPU back end has everything it needs\n"
                    : "the CPU back end cannot compile kernels until what is missing is installed\n");
  return all ? kExitOk : kExitCheckFailed;
}

}  // namespace stitch::cli
