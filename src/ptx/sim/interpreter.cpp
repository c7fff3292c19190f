#include "ptx/sim/interpreter.h"

#include <fmt/format.h>

#include "ptx/sim/decode.h"
#include "ptx/sim/warp.h"

namespace stitch::ptx {

Interpreter::Interpreter(Module module)
    : module_(std::move(module)), decoder_(std::make_unique<sim::Decoder>(module_)) {}

Interpreter::~Interpreter() = default;

std::vector<VarDecl> Interpreter::kernel_params(const std::string& name) const {
  const Function* f = module_.find_function(name);
  if (f == nullptr || !f->is_entry) throw UserError(fmt::format("no kernel named {} in the module", name));
  return f->params;
}

namespace {

void check_config(const LaunchConfig& config) {
  for (int k = 0; k < 3; ++k) {
    if (config.grid[k] == 0 || config.block[k] == 0) throw UserError("grid and block dimensions must be positive");
  }
  const uint64_t threads = uint64_t{config.block[0]} * config.block[1] * config.block[2];
  if (threads > 1024) throw UserError(fmt::format("a CTA of {} threads exceeds CUDA's limit of 1024", threads));
}

// The launch of `kernel` without its global memory and parameter bytes.
sim::Launch make_launch(const sim::Program& program, uint32_t kernel, const LaunchConfig& config,
                        const InterpreterOptions& options) {
  sim::Launch launch;
  launch.program = &program;
  launch.kernel = kernel;
  launch.grid = config.grid;
  launch.block = config.block;
  launch.dynamic_shared = config.dynamic_shared_bytes;
  const uint32_t dynamic_base =
      (program.static_shared_bytes + program.dynamic_shared_align - 1) / program.dynamic_shared_align *
      program.dynamic_shared_align;
  launch.shared_bytes = config.dynamic_shared_bytes == 0 ? program.static_shared_bytes
                                                         : dynamic_base + config.dynamic_shared_bytes;
  launch.detect_races = options.detect_races;
  launch.max_warp_instructions = options.max_warp_instructions;
  launch.observer = options.observer;
  launch.only_ctas = &options.only_ctas;
  const sim::DFunction& f = program.functions[kernel];
  const sim::ParamSlot* last = f.params.empty() ? nullptr : &f.params.back();
  launch.params.assign(last == nullptr ? 0 : last->offset + last->size, std::byte{0});
  return launch;
}

// Module variables, initialised afresh for every launch (`storage` keeps their bytes).
void add_module_variables(const sim::Program& program, sim::GlobalMemory& global,
                          std::vector<std::vector<uint8_t>>& storage) {
  storage.reserve(program.variables.size());
  for (const sim::ModuleVariable& v : program.variables) {
    storage.push_back(v.init);
    global.add(v.address, reinterpret_cast<std::byte*>(storage.back().data()), v.init.size(), v.name, v.read_only);
  }
}

RunStats finish(sim::Launch& launch, const LaunchConfig& config, const InterpreterOptions& options) {
  std::vector<std::vector<uint64_t>> pc_counts;
  if (options.count_instructions) {
    for (const sim::DFunction& f : launch.program->functions) pc_counts.emplace_back(f.code.size(), 0);
    launch.pc_counts = &pc_counts;
  }
  sim::run_grid(launch);
  RunStats stats;
  for (size_t f = 0; f < pc_counts.size(); ++f) {
    const sim::DFunction& function = launch.program->functions[f];
    for (size_t pc = 0; pc < pc_counts[f].size(); ++pc) {
      if (pc_counts[f][pc] > 0) stats.instruction_counts.push_back({function.name, function.info[pc].loc, pc_counts[f][pc]});
    }
  }
  stats.warp_instructions = launch.warp_instructions;
  stats.thread_instructions = launch.thread_instructions;
  stats.ctas = options.only_ctas.empty() ? uint64_t{config.grid[0]} * config.grid[1] * config.grid[2]
                                         : options.only_ctas.size();
  return stats;
}

}  // namespace

RunStats Interpreter::run_with_memory(const std::string& name, const LaunchConfig& config,
                                      const std::vector<GlobalRegion>& memory, const void* const* params,
                                      const InterpreterOptions& options) {
  uint32_t index = 0;
  const sim::Program& program = decoder_->prepare(name, &index);
  const sim::DFunction& kernel = program.functions[index];
  check_config(config);
  sim::Launch launch = make_launch(program, index, config, options);
  sim::GlobalMemory global;
  std::vector<std::vector<uint8_t>> variables;
  add_module_variables(program, global, variables);
  STITCH_ASSERT(program.global_end <= kFirstRegionAddress, "module variables reach the device regions");
  for (const GlobalRegion& r : memory) {
    STITCH_ASSERT(r.address >= kFirstRegionAddress && r.address + r.size <= kEndRegionAddress,
                  "a global region lies outside the region addresses");
    global.add(r.address, r.data, r.size, r.name, false);  // asserts that regions do not overlap
  }
  launch.global = &global;
  for (size_t k = 0; k < kernel.params.size(); ++k) {
    const sim::ParamSlot& slot = kernel.params[k];
    if (slot.size > 0) std::memcpy(launch.params.data() + slot.offset, params[k], slot.size);
  }
  return finish(launch, config, options);
}

RunStats Interpreter::run(const std::string& name, const LaunchConfig& config, const std::vector<KernelArg>& args,
                          const InterpreterOptions& options) {
  uint32_t index = 0;
  const sim::Program& program = decoder_->prepare(name, &index);
  const sim::DFunction& kernel = program.functions[index];
  if (args.size() != kernel.params.size()) {
    throw UserError(fmt::format("kernel {} takes {} parameters, {} arguments given", name, kernel.params.size(),
                                args.size()));
  }
  check_config(config);
  sim::Launch launch = make_launch(program, index, config, options);

  // Module variables first, then the buffers, each 256-aligned with a gap
  // after it so that running off a buffer's end faults instead of reading a
  // neighbour's bytes.
  sim::GlobalMemory global;
  std::vector<std::vector<uint8_t>> variables;
  add_module_variables(program, global, variables);
  uint64_t next = (program.global_end + 0xffff) & ~uint64_t{0xffff};
  std::vector<uint64_t> addresses(args.size(), 0);
  for (size_t k = 0; k < args.size(); ++k) {
    if (!args[k].is_buffer) continue;
    addresses[k] = next;
    global.add(next, args[k].data, args[k].size, args[k].name.empty() ? fmt::format("arg{}", k) : args[k].name, false);
    next = (next + args[k].size + 4096 + 255) & ~uint64_t{255};
  }
  launch.global = &global;

  for (size_t k = 0; k < args.size(); ++k) {
    const sim::ParamSlot& slot = kernel.params[k];
    if (args[k].is_buffer) {
      if (slot.size != 8) {
        throw UserError(fmt::format("argument {} of {} is a buffer, but parameter {} takes {} bytes (not a 64-bit "
                                    "address)",
                                    k, name, k, slot.size));
      }
      std::memcpy(launch.params.data() + slot.offset, &addresses[k], 8);
    } else {
      if (args[k].bytes.size() != slot.size) {
        throw UserError(fmt::format("argument {} of {} has {} bytes, but the parameter takes {}", k, name,
                                    args[k].bytes.size(), slot.size));
      }
      std::memcpy(launch.params.data() + slot.offset, args[k].bytes.data(), slot.size);
    }
  }
  return finish(launch, config, options);
}

}  // namespace stitch::ptx
