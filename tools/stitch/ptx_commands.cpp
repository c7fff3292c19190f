#include "ptx_commands.h"

#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>
#include <sstream>

#include "cli.h"
#include "ptx/cfg.h"
#include "ptx/parser.h"
#include "ptx/printer.h"
#include "stitch/error.h"

namespace stitch::cli {

ptx::Module load_ptx(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw UserError("cannot open " + file);
  std::stringstream text;
  text << in.rdbuf();
  return ptx::parse_module(text.str(), file);
}

namespace {


// stitch ptx print FILE.ptx: the canonical text on stdout.
int print_ptx(const std::string& file) {
  std::cout << ptx::print_module(load_ptx(file));
  return kExitOk;
}

// stitch ptx cfg FILE.ptx: each defined function's CFG.
int print_ptx_cfg(const std::string& file) {
  ptx::Module m = load_ptx(file);
  for (const auto& item : m.items) {
    const auto* f = std::get_if<ptx::Function>(&item);
    if (f != nullptr && f->has_body) std::cout << ptx::print_cfg(ptx::build_cfg(*f));
  }
  return kExitOk;
}

}  // namespace

PtxCommands::PtxCommands(CLI::App& app) {
  group_ = app.add_subcommand("ptx", "Tools on PTX files (docs/ptx.md)");
  group_->require_subcommand(1);
  print_ = group_->add_subcommand("print", "Parse a PTX file and print it in canonical form");
  print_->add_option("FILE", file_, "a .ptx file")->required();
  cfg_ = group_->add_subcommand("cfg", "Print each function's basic blocks, dominators and barriers");
  cfg_->add_option("FILE", file_, "a .ptx file")->required();
}

bool PtxCommands::selected() const { return group_->parsed(); }

int PtxCommands::run() const {
  if (print_->parsed()) return print_ptx(file_);
  if (cfg_->parsed()) return print_ptx_cfg(file_);
  return kExitBadInput;
}

}  // namespace stitch::cli
