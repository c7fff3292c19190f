#include "ptx_weave_command.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <fstream>
#include <iostream>

#include "cli.h"
#include "ptx/printer.h"
#include "ptx/weave/weave.h"
#include "ptx_commands.h"
#include "ptx_run_command.h"
#include "stitch/error.h"

namespace stitch::cli {

PtxWeaveCommand::PtxWeaveCommand(CLI::App& ptx_group) {
  command_ = ptx_group.add_subcommand(
      "weave", "Weave two kernels into one .entry whose instruction streams interleave (GoPTX; docs/goptx.md)");
  command_->add_option("A", file_a_, "the first kernel's .ptx file")->required();
  command_->add_option("B", file_b_, "the second kernel's .ptx file")->required();
  command_->add_option("--kernel-a", kernel_a_, "the .entry to take from A (default: its only one)");
  command_->add_option("--kernel-b", kernel_b_, "the .entry to take from B (default: its only one)");
  command_->add_option("--strategy", strategy_, "concat (A's code, then B's) or latency (default)")
      ->check(CLI::IsMember({"concat", "latency"}));
  command_->add_option("--name", name_, "the woven .entry's name (default <a>_<b>_woven)");
  command_->add_option("-o,--output", output_, "the woven module's .ptx file")->required();
  command_->add_option("--grid-a", grid_a_,
                       "A's grid X[,Y[,Z]] when it differs from B's: the woven kernel runs on the larger grid and "
                       "each kernel only in CTAs of its own (give --grid-b too)");
  command_->add_option("--grid-b", grid_b_, "B's grid X[,Y[,Z]] (with --grid-a)");
  command_->add_option("--arch", arch_, "the latency table: sm_80 or sm_90 (default: from A's .target)")
      ->check(CLI::IsMember({"sm_80", "sm_90"}));
  command_->add_option("--slice", slice_, "shortest slice, in statements, of adaptive slicing (0: none; default 24)")
      ->check(CLI::NonNegativeNumber);
  command_->add_flag("--report", report_, "print the merged graph's size on stderr");
}

bool PtxWeaveCommand::selected() const { return command_->parsed(); }

int PtxWeaveCommand::run() const {
  const ptx::Module a = load_ptx(file_a_);
  const ptx::Module b = load_ptx(file_b_);
  ptx::WeaveOptions options;
  options.kernel_a = kernel_a_;
  options.kernel_b = kernel_b_;
  options.strategy = strategy_ == "concat" ? ptx::WeaveStrategy::Concat : ptx::WeaveStrategy::Latency;
  options.name = name_;
  options.slice_instructions = slice_;
  if (!arch_.empty()) options.arch = arch_ == "sm_80" ? ptx::WeaveArch::Sm80 : ptx::WeaveArch::Sm90;
  if (grid_a_.empty() != grid_b_.empty()) throw UserError("--grid-a and --grid-b go together");
  if (!grid_a_.empty()) {
    options.grid_a = parse_dims3(grid_a_, "--grid-a");
    options.grid_b = parse_dims3(grid_b_, "--grid-b");
  }
  ptx::WeaveReport report;
  const std::string text = ptx::print_module(ptx::weave(a, b, options, &report));
  std::ofstream out(output_, std::ios::binary);
  if (!out) throw UserError(fmt::format("-o {}: cannot write", output_));
  out << text;
  out.close();
  if (!out) throw UserError(fmt::format("-o {}: write failed", output_));
  if (report_) {
    std::cerr << fmt::format("woven: {} merged blocks, {} instructions, {} blocks sliced, {} barrier pairs merged, "
                             "{} of {} statements in blocks where both kernels advance\n",
                             report.merged_blocks, report.instructions, report.sliced_blocks, report.barriers_merged,
                             report.interleavable_statements, report.statements);
  }
  return kExitOk;
}

}  // namespace stitch::cli
