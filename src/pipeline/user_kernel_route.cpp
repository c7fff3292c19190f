#include "pipeline/user_kernel_route.h"

#include <iostream>
#include <map>
#include <mutex>
#include <string>

#include <fmt/format.h>

#include "codegen/cpu/cpp_emitter.h"
#include "interp/index_bounds.h"
#include "interp/kernel_binding.h"
#include "options/options.h"
#include "stitch/error.h"

namespace stitch::pipeline {

using runtime::cpu::CompiledUserKernel;
using runtime::cpu::CpuModule;
using runtime::cpu::KernelCache;

namespace {

// What decides a compiled kernel's bytes besides the kernel's text.
std::string shape_key(const kir::UserKernelShape& s) {
  std::string key = fmt::format("lanes={} rows={} checked={} restrict=", s.lanes, s.rows_per_block, s.check_indices);
  for (bool r : s.restrict_array) key += r ? '1' : '0';
  return key;
}

std::mutex g_compiled_mutex;
// Compiled kernels of this process, by cache directory, kernel text and shape.
std::map<std::string, std::shared_ptr<const CompiledUserKernel>>& compiled_kernels() {
  static std::map<std::string, std::shared_ptr<const CompiledUserKernel>> m;
  return m;
}

std::string memory_key(const UserKernel& k, const kir::UserKernelShape& s, const KernelCache& cache) {
  return cache.directory().string() + "\n" + print_kernel(k) + shape_key(s);
}

}  // namespace

std::vector<std::shared_ptr<const CompiledUserKernel>> compile_user_kernels_cpu(
    const std::vector<UserKernel>& kernels, const std::vector<kir::UserKernelShape>& shapes, KernelCache& cache) {
  STITCH_ASSERT(kernels.size() == shapes.size(), "compile_user_kernels_cpu: one shape per kernel");
  std::vector<kir::LoweredUserKernel> lowered;
  std::vector<kir::Kernel> kirs;
  for (size_t i = 0; i < kernels.size(); ++i) {
    std::string name = kernels.size() == 1 ? "uk_" + kernels[i].name : fmt::format("uk{}_{}", i, kernels[i].name);
    lowered.push_back(lower::lower_user_kernel_cpu(kernels[i], shapes[i], name));
    kirs.push_back(lowered.back().kernel);
  }
  std::string source = codegen::cpu::emit_cpp_translation_unit(kirs);
  // STITCH_DUMP=emit (or source) prints the C++ of user kernels as of graphs.
  if (environment_options().dumps("emit")) {
    std::cerr << "// STITCH_DUMP emit\n" << source;
  }
  auto module = std::make_shared<CpuModule>(cache.load_or_compile(source));
  std::vector<std::shared_ptr<const CompiledUserKernel>> result;
  for (size_t i = 0; i < kernels.size(); ++i) {
    result.push_back(std::make_shared<const CompiledUserKernel>(std::move(lowered[i]), shapes[i], source, module));
  }
  return result;
}

std::shared_ptr<const CompiledUserKernel> compile_user_kernel_cpu(const UserKernel& kernel, const kir::UserKernelShape& shape,
                                                                  KernelCache& cache) {
  std::string key = memory_key(kernel, shape, cache);
  {
    std::lock_guard<std::mutex> lock(g_compiled_mutex);
    auto it = compiled_kernels().find(key);
    if (it != compiled_kernels().end()) return it->second;
  }
  std::shared_ptr<const CompiledUserKernel> c = compile_user_kernels_cpu({kernel}, {shape}, cache).front();
  std::lock_guard<std::mutex> lock(g_compiled_mutex);
  return compiled_kernels().emplace(key, c).first->second;
}

Tensor run_user_kernel_cpu(const UserKernel& kernel, const std::vector<KernelArg>& args, KernelCache& cache) {
  interp::KernelBinding b = interp::bind_kernel(kernel, args);
  kir::UserKernelShape shape = lower::user_kernel_shape(b.extents);
  shape.restrict_array = runtime::cpu::restrict_flags(kernel, args);
  shape.check_indices = !interp::indices_proven_in_range(kernel, b, args);
  return compile_user_kernel_cpu(kernel, shape, cache)->run(kernel, args);
}

}  // namespace stitch::pipeline
