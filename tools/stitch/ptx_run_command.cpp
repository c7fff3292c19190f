#include "ptx_run_command.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>

#include "cli.h"
#include "gpu_model/profile_json.h"
#include "ptx/sim/interpreter.h"
#include "ptx_commands.h"
#include "ptx/parser.h"
#include "stitch/error.h"
#include "stitch/npy.h"
#include "stitch/tensor.h"

namespace stitch::cli {

std::array<uint32_t, 3> parse_dims3(const std::string& text, const char* option) {
  std::array<uint32_t, 3> dims{1, 1, 1};
  size_t at = 0;
  for (int k = 0; k < 3; ++k) {
    const size_t comma = text.find(',', at);
    const std::string part = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || end != part.data() + part.size() || v == 0 || v > 0x7fffffff) {
      throw UserError(fmt::format("{} {}: expected X[,Y[,Z]] with positive integers", option, text));
    }
    dims[k] = static_cast<uint32_t>(v);
    if (comma == std::string::npos) return dims;
    at = comma + 1;
  }
  throw UserError(fmt::format("{} {}: at most three dimensions", option, text));
}

namespace {


template <class T>
ptx::KernelArg integer_arg(const std::string& arg, const std::string& number) {
  T v{};
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
  if (number.empty() || ec != std::errc() || end != number.data() + number.size()) {
    throw UserError(fmt::format("--arg {}: not a {}-bit {} integer in range", arg, sizeof(T) * 8,
                                std::numeric_limits<T>::is_signed ? "signed" : "unsigned"));
  }
  return ptx::KernelArg::scalar<T>(v);
}

template <class T>
ptx::KernelArg float_arg(const std::string& arg, const std::string& number) {
  char* end = nullptr;
  // strtof / strtod round the decimal once to the type.
  const T v = sizeof(T) == 4 ? static_cast<T>(std::strtof(number.c_str(), &end)) : static_cast<T>(std::strtod(number.c_str(), &end));
  if (number.empty() || end != number.c_str() + number.size()) throw UserError(fmt::format("--arg {}: not a number", arg));
  return ptx::KernelArg::scalar<T>(v);
}

// TYPE:NUMBER (i32:5, u64:9, f32:1.5, ...).
ptx::KernelArg scalar_arg(const std::string& arg) {
  const size_t colon = arg.find(':');
  if (colon == std::string::npos) {
    throw UserError(fmt::format("--arg {}: expected FILE.npy for a pointer or TYPE:NUMBER for a scalar "
                                "(i32, u32, i64, u64, f32, f64)",
                                arg));
  }
  const std::string type = arg.substr(0, colon), number = arg.substr(colon + 1);
  if (type == "i32") return integer_arg<int32_t>(arg, number);
  if (type == "u32") return integer_arg<uint32_t>(arg, number);
  if (type == "i64") return integer_arg<int64_t>(arg, number);
  if (type == "u64") return integer_arg<uint64_t>(arg, number);
  if (type == "f32") return float_arg<float>(arg, number);
  if (type == "f64") return float_arg<double>(arg, number);
  throw UserError(fmt::format("--arg {}: unknown scalar type {} (i32, u32, i64, u64, f32, f64)", arg, type));
}

bool is_npy(const std::string& arg) { return arg.size() > 4 && arg.compare(arg.size() - 4, 4, ".npy") == 0; }

}  // namespace

PtxRunCommand::PtxRunCommand(CLI::App& ptx_group) {
  command_ = ptx_group.add_subcommand("run", "Run one kernel of a PTX file on the SIMT interpreter (docs/ptx-interpreter.md)");
  command_->add_option("FILE", file_, "a .ptx file")->required();
  command_->add_option("--kernel", kernel_, "the .entry to run")->required();
  command_->add_option("--grid", grid_, "CTAs: X[,Y[,Z]]")->required();
  command_->add_option("--block", block_, "threads per CTA: X[,Y[,Z]]")->required();
  command_->add_option("--dynamic-shared", dynamic_shared_, "bytes of dynamic shared memory per CTA (default 0)");
  command_->add_option("--arg", args_,
                       "one per kernel parameter, in order: FILE.npy (a global buffer) or TYPE:NUMBER "
                       "(i32, u32, i64, u64, f32, f64)");
  command_->add_option("--output-dir", output_dir_, "write the buffer of pointer argument k to DIR/arg<k>.npy");
  command_->add_option("--profile", profile_,
                       "print the GPU model's profile of the launch on TARGET (h100, h200) as one JSON object "
                       "(docs/gpu-model.md); a large grid runs a sample of its CTAs");
  command_->add_option("--cta-budget", cta_budget_, "with --profile: CTAs interpreted at most (default 192)");
}

bool PtxRunCommand::selected() const { return command_->parsed(); }

int PtxRunCommand::run() const {
  std::optional<gpu_model::GpuTarget> target;
  if (!profile_.empty()) target = gpu_model::target_or_error(profile_, "--profile");
  if (cta_budget_ == 0) throw UserError("--cta-budget: at least 1");
  if (target && !output_dir_.empty()) {
    throw UserError("--output-dir with --profile: a profiled run may interpret a sample of the CTAs, so its buffers "
                    "are not written");
  }
  std::string text;
  {
    std::ifstream in(file_, std::ios::binary);
    if (!in) throw UserError("cannot open " + file_);
    std::stringstream buffer;
    buffer << in.rdbuf();
    text = buffer.str();
  }
  ptx::Interpreter interp(ptx::parse_module(text, file_));

  ptx::LaunchConfig config;
  config.grid = parse_dims3(grid_, "--grid");
  config.block = parse_dims3(block_, "--block");
  config.dynamic_shared_bytes = dynamic_shared_;

  const std::vector<ptx::VarDecl> params = interp.kernel_params(kernel_);
  if (args_.size() != params.size()) {
    throw UserError(fmt::format("kernel {} takes {} parameters; give one --arg for each ({} given)", kernel_,
                                params.size(), args_.size()));
  }
  std::vector<Tensor> buffers(args_.size());
  std::vector<ptx::KernelArg> args;
  for (size_t k = 0; k < args_.size(); ++k) {
    if (is_npy(args_[k])) {
      buffers[k] = read_npy(args_[k]);
      args.push_back(ptx::KernelArg::buffer(buffers[k].raw(), buffers[k].nbytes(), fmt::format("arg{} ({})", k, args_[k])));
    } else {
      args.push_back(scalar_arg(args_[k]));
    }
  }
  if (target) {
    const gpu_model::KernelProfile profile = gpu_model::profile_launch(
        text, kernel_, config, 0, *target,
        [&](const ptx::InterpreterOptions& options) { interp.run(kernel_, config, args, options); }, cta_budget_);
    std::cout << gpu_model::profile_json(profile).dump(1) << "\n";
    return kExitOk;
  }
  const auto start = std::chrono::steady_clock::now();
  const ptx::RunStats stats = interp.run(kernel_, config, args);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << fmt::format("{}: {} CTAs, {} warp instructions ({} thread instructions) in {:.3f} ms\n", kernel_,
                           stats.ctas, stats.warp_instructions, stats.thread_instructions, seconds * 1e3);
  if (!output_dir_.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(output_dir_, ec);
    if (ec) throw UserError(fmt::format("--output-dir {}: {}", output_dir_, ec.message()));
    for (size_t k = 0; k < args_.size(); ++k) {
      if (args[k].is_buffer) write_npy((std::filesystem::path(output_dir_) / fmt::format("arg{}.npy", k)).string(), buffers[k]);
    }
  }
  return kExitOk;
}

}  // namespace stitch::cli
