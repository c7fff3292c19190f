// `stitch`: the command-line front end (DESIGN.md, CLI; docs/cli.md).
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <fmt/format.h>

#include <iostream>
#include <new>
#include <optional>

#include "cache_command.h"
#include "doctor_command.h"
#include "package_command.h"
#include "graph_commands.h"
#include "cli.h"
#include "ptx_commands.h"
#include "ptx_run_command.h"
#include "ptx_weave_command.h"
#include "stitch/error.h"
#include "stitch/tensor.h"

namespace {

using namespace stitch;
using namespace stitch::cli;

int dispatch(int argc, char** argv) {
  CLI::App app{"Stitch: a kernel-fusion compiler and runtime for memory-bound tensor programs", "stitch"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "stitch 0.1");

  GraphCommands graphs(app);
  PtxCommands ptx(app);
  PtxRunCommand ptx_run(*app.get_subcommand("ptx"));
  PtxWeaveCommand ptx_weave(*app.get_subcommand("ptx"));
  CacheCommand cache(app);
  DoctorCommand doctor(app);
  PackageCommand package(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitBadInput;
  }
  if (std::optional<int> status = graphs.run()) return *status;
  if (ptx_run.selected()) return ptx_run.run();
  if (ptx_weave.selected()) return ptx_weave.run();
  if (ptx.selected()) return ptx.run();
  if (cache.selected()) return cache.run();
  if (doctor.selected()) return doctor.run();
  if (package.selected()) return package.run();
  return kExitBadInput;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    // Read at the first large allocation; checked here so that a bad value
    // is reported on every run, large or not.
    stitch::detail::huge_pages_enabled();
    return dispatch(argc, argv);
  } catch (const stitch::UserError& e) {
    std::cerr << e.formatted() << "\n";
    return kExitBadInput;
  } catch (const stitch::InternalError& e) {
    std::cerr << "stitch: " << e.what() << "\nThis is a bug in Stitch; please report it with the input.\n";
    return kExitInternal;
  } catch (const std::bad_alloc&) {
    // Memory is the environment's limit, not a bug; every tensor allocation
    // names its bytes (docs/limits.md), this catches the rest.
    std::cerr << "error: out of memory (an allocation other than a tensor's failed)\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "stitch: internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}
