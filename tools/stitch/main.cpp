// `stitch`: the command-line front end (DESIGN.md, CLI; docs/cli.md).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>
#include <new>

#include "cli.h"
#include "stitch/error.h"

namespace {

using namespace stitch;
using namespace stitch::cli;

int dispatch(int argc, char** argv) {
  CLI::App app{"Stitch: a kernel-fusion compiler and runtime for memory-bound tensor programs", "stitch"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "stitch 0.1");

  std::string file, graph_name, backend = "interp", planner, output_dir;
  bool print_values = false;
  InputSpec inputs;

  CLI::App* run = app.add_subcommand("run", "Run a graph and write or print its results");
  run->add_option("FILE", file, "a .stitch file")->required();
  run->add_option("--graph", graph_name, "graph to run (default: the first in the file)");
  run->add_option("--backend", backend, "where to run it")->check(CLI::IsMember({"interp", "cpu", "cuda"}));
  run->add_option("--planner", planner, "fusion planner (ignored by the interpreter; cpu: none or xla, default xla)")
      ->check(CLI::IsMember({"none", "xla", "stitch", "ilp"}));
  run->add_option("--input", inputs.bindings, "bind a parameter: NAME=FILE.npy (repeatable)");
  run->add_option("--random-inputs", inputs.seed, "fill unbound parameters with seeded random values")
      ->each([&](const std::string&) { inputs.random = true; });
  run->add_option("--dim", inputs.dims, "bind a symbolic dim for random inputs: SYMBOL=N (repeatable)");
  run->add_option("--output-dir", output_dir, "write each result to DIR/<name>.npy");
  run->add_flag("--print", print_values, "print the results");

  bool raw = false;
  CLI::App* print = app.add_subcommand("print", "Print a file's graphs in canonical text form");
  print->add_option("FILE", file, "a .stitch file")->required();
  print->add_option("--graph", graph_name, "print only this graph");
  print->add_flag("--raw", raw, "print as parsed, before canonicalisation");

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
  if (*run) return run_command(file, graph_name, backend, planner, inputs, output_dir, print_values);
  if (*print) return print_command(file, graph_name, !raw);
  return kExitBadInput;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return dispatch(argc, argv);
  } catch (const stitch::UserError& e) {
    std::cerr << e.formatted() << "\n";
    return kExitBadInput;
  } catch (const stitch::InternalError& e) {
    std::cerr << "stitch: " << e.what() << "\nThis is a bug in Stitch; please report it with the input.\n";
    return kExitInternal;
  } catch (const std::bad_alloc&) {
    std::cerr << "stitch: error: out of memory\n";
    return kExitInternal;
  } catch (const std::exception& e) {
    std::cerr << "stitch: internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}
