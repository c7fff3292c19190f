// Static estimates, for a session without a GPU (docs/goptx-bench.md,
// Estimates): ptxas's registers, spills and shared memory for every variant,
// the H100 occupancy they allow, and the weaver's latency model weighted by
// how often warps executed each basic block on the PTX interpreter. Every
// cycle figure is labelled "estimate (latency model, not measured)".
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <tuple>

#include "goptx_bench.h"
#include "goptx_report.h"
#include "ptx/cfg.h"
#include "ptx/sim/interpreter.h"
#include "ptx/parser.h"
#include "ptx/weave/schedule.h"
#include "stitch/error.h"

namespace stitch::bench::goptx {

namespace {

std::string run_command(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) throw UserError("cannot run " + command);
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) out.append(buffer.data(), n);
  if (::pclose(pipe) != 0) throw UserError(fmt::format("{} failed:\n{}", command, out));
  return out;
}

// The figures ptxas -v prints for entry `kernel` of the PTX text.
StaticFigures ptxas_figures(const std::string& ptxas, const std::string& ptx, const std::string& kernel) {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / fmt::format("goptx_estimate_{}.ptx", ::getpid());
  std::ofstream(file) << ptx;
  const std::string out = run_command(fmt::format("{} -v -arch=sm_90 {} -o /dev/null", ptxas, file.string()));
  std::filesystem::remove(file);
  StaticFigures f;
  bool found = false;
  bool in_kernel = false;
  std::smatch m;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_search(line, m, std::regex("Compiling entry function '([^']+)'"))) in_kernel = m[1] == kernel;
    if (!in_kernel) continue;
    if (std::regex_search(line, m, std::regex("(\\d+) bytes spill stores, (\\d+) bytes spill loads"))) {
      f.spill_store_bytes = std::stoi(m[1]);
      f.spill_load_bytes = std::stoi(m[2]);
    }
    if (std::regex_search(line, m, std::regex("Used (\\d+) registers"))) {
      f.registers = std::stoi(m[1]);
      found = true;
    }
    if (std::regex_search(line, m, std::regex("(\\d+) bytes smem"))) f.static_shared_bytes = std::stoi(m[1]);
  }
  if (!found) throw UserError(fmt::format("ptxas -v printed no figures for {}:\n{}", kernel, out));
  return f;
}

constexpr const char* kOccupancyRules =
    "H100 (compute capability 9.0), as the CUDA Occupancy Calculator and the CUDA C++ Programming Guide's "
    "table of technical specifications per compute capability give them: 65536 32-bit registers, at most 64 "
    "resident warps and 32 resident CTAs per SM; registers allocated per warp in units of 256 "
    "(ceil(registers x 32 / 256) x 256 a warp); 228 KiB of shared memory per SM (the largest carveout), at most "
    "227 KiB per CTA with opt-in, 1 KiB reserved by the system per CTA, allocated in 128-byte units. CTAs per SM = "
    "the least of the warp, CTA, register and shared-memory limits; warps per SM = CTAs x warps per CTA.";

void add_occupancy(StaticFigures& f, uint32_t block) {
  const int warps_per_cta = static_cast<int>((block + 31) / 32);
  const int by_warps = 64 / warps_per_cta;
  const int by_ctas = 32;
  const int regs_per_warp = (f.registers * 32 + 255) / 256 * 256;
  const int by_registers = regs_per_warp == 0 ? by_ctas : 65536 / regs_per_warp / warps_per_cta;
  const int shared = (f.static_shared_bytes + f.dynamic_shared_bytes + 1024 + 127) / 128 * 128;
  const int by_shared = f.static_shared_bytes + f.dynamic_shared_bytes > 227 * 1024 ? 0 : 228 * 1024 / shared;
  const std::vector<std::pair<int, const char*>> limits{
      {by_warps, "warps"}, {by_ctas, "CTAs"}, {by_registers, "registers"}, {by_shared, "shared memory"}};
  const auto least = std::min_element(limits.begin(), limits.end(),
                                      [](const auto& x, const auto& y) { return x.first < y.first; });
  f.ctas_per_sm = least->first;
  f.limited_by = least->second;
  f.warps_per_sm = f.ctas_per_sm * warps_per_cta;
}

// Runs the launch once on the interpreter with instruction counts, and sums
// over every basic block of every function: the block's latency-model cycles
// (one warp issuing it in order) times how often warps executed it.
double model_cycles(const Launch& launch, const Pair& pair) {
  const ptx::Module module = ptx::parse_module(launch.module, launch.entry + ".ptx");
  std::vector<std::vector<std::byte>> storage;
  storage.reserve(launch.args.size());
  std::vector<ptx::KernelArg> args;
  for (const ArgRef& ref : launch.args) {
    if (ref.side == 2) {
      args.push_back(ptx::KernelArg::scalar<uint32_t>(ref.value));
      continue;
    }
    const HostArg& arg = (ref.side == 0 ? pair.a : pair.b).args[ref.index];
    storage.push_back(arg.bytes);
    if (arg.buffer) {
      args.push_back(ptx::KernelArg::buffer(storage.back().data(), storage.back().size(), "buffer"));
    } else {
      ptx::KernelArg k;
      k.bytes = arg.bytes;
      args.push_back(k);
    }
  }
  ptx::InterpreterOptions options;
  options.count_instructions = true;
  ptx::Interpreter interpreter(module);
  const ptx::RunStats stats = interpreter.run(
      launch.entry, {{launch.grid, 1, 1}, {launch.block, 1, 1}, launch.dynamic_shared}, args, options);
  std::map<std::tuple<std::string, int, int>, uint64_t> counts;
  for (const ptx::InstructionCount& c : stats.instruction_counts) {
    counts[{c.function, c.loc.line, c.loc.col}] = c.warp_executions;
  }
  double total = 0;
  for (const auto& item : module.items) {
    const auto* f = std::get_if<ptx::Function>(&item);
    if (f == nullptr || !f->has_body) continue;
    const ptx::ControlFlowGraph cfg = ptx::build_cfg(*f);
    for (const ptx::BasicBlock& b : cfg.blocks) {
      uint64_t executed = 0;
      std::vector<ptx::Statement> statements;
      for (size_t i = b.begin; i < b.end; ++i) {
        const ptx::Instruction& in = *cfg.instructions[i];
        if (auto it = counts.find({f->name, in.loc.line, in.loc.col}); it != counts.end()) {
          executed = std::max(executed, it->second);
        }
        statements.push_back(ptx::Statement{in});
      }
      if (executed == 0) continue;
      std::vector<const ptx::Statement*> stream;
      for (const ptx::Statement& s : statements) stream.push_back(&s);
      const std::vector<ptx::WovenItem> order = ptx::concatenate(stream, {});
      total += static_cast<double>(executed) *
               static_cast<double>(ptx::estimate_issue_cycles(stream, {}, order, ptx::WeaveArch::Sm90));
    }
  }
  return total;
}

EstimatedVariant estimate(const std::string& variant, const Launch& launch, const Pair& pair,
                          const RunOptions& options) {
  EstimatedVariant v;
  v.variant = variant;
  v.kernel = launch.entry;
  v.figures = ptxas_figures(options.ptxas, launch.module, launch.entry);
  v.figures.dynamic_shared_bytes = static_cast<int>(launch.dynamic_shared);
  add_occupancy(v.figures, launch.block);
  v.model_cycles = model_cycles(launch, pair);
  return v;
}

}  // namespace

int run_estimates(const RunOptions& options) {
  if (options.ptxas.empty()) {
    fmt::print(stderr, "the estimates need ptxas (--ptxas)\n");
    return 2;
  }
  EstimatedRun run;
  const std::string version = run_command(options.ptxas + " --version");
  // "Cuda compilation tools, release 13.0, V13.0.88"
  const size_t release = version.find("release");
  run.ptxas_version = release == std::string::npos ? version : version.substr(release, version.find('\n', release) - release);
  run.occupancy_rules = kOccupancyRules;
  for (const Pair& pair : bench_pairs(options.scale)) {
    if (!options.only.empty() && pair.name != options.only) continue;
    fmt::print(stderr, "{}\n", pair.name);
    const PairVariants variants = build_variants(pair, options.ptx_dir);
    EstimatedPair p;
    p.pair = pair.name;
    p.source = pair.source;
    p.kernels = {pair.a.name + " (" + pair.a.kind + ")", pair.b.name + " (" + pair.b.kind + ")"};
    p.variants.push_back(estimate("A alone", variants.sequential[0], pair, options));
    p.variants.push_back(estimate("B alone", variants.sequential[1], pair, options));
    p.sequential_cycles = p.variants[0].model_cycles + p.variants[1].model_cycles;
    p.variants.push_back(estimate("packed", variants.packed, pair, options));
    p.variants.push_back(estimate("woven-concat", variants.woven_concat, pair, options));
    p.variants.push_back(estimate("woven-latency", variants.woven_latency, pair, options));
    run.pairs.push_back(std::move(p));
  }
  write_estimates(run, options.out_dir, options.results);
  return 0;
}

}  // namespace stitch::bench::goptx
