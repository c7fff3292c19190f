// stitch run FILE --kernel NAME: one call of a user kernel on the interpreter,
// the CPU or the GPU (docs/cli.md, Running a user kernel; docs/kernel-language.md).
#include <filesystem>
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "cli.h"
#include "pipeline/user_kernel_route.h"
#include "runtime/cpu/user_kernel_call.h"
#include "stitch/interpreter.h"
#include "stitch/npy.h"

namespace stitch::cli {

namespace {

std::string kernel_list(const Module& m) {
  std::string out;
  for (const UserKernel& k : m.kernels) out += (out.empty() ? "" : ", ") + k.name;
  return out.empty() ? "none" : out;
}

// A --scalar value for parameter `p`: a whole number for an integer or bool
// parameter, any number for a float one.
KernelArg scalar_value(const KernelParam& p, const std::string& text) {
  size_t used = 0;
  try {
    if (is_float(p.dtype)) {
      double v = std::stod(text, &used);
      if (used == text.size()) return KernelArg(v);
    } else {
      long long v = std::stoll(text, &used);
      if (used == text.size()) return KernelArg(static_cast<int64_t>(v));
    }
  } catch (const std::exception&) {
  }
  throw UserError(fmt::format("--scalar {}={}: not a {}", p.name, text, is_float(p.dtype) ? "number" : "whole number"));
}

}  // namespace

int run_kernel_command(const std::string& file, const std::string& kernel_name, const std::string& backend,
                       const InputSpec& spec, const std::vector<std::string>& scalars, const std::string& output_dir,
                       bool print_values) {
  Module m = load_module(file, nullptr);
  const UserKernel* found = m.find_kernel(kernel_name);
  if (found == nullptr) {
    throw UserError(fmt::format("{}: no kernel named '{}' (kernels: {})", file, kernel_name, kernel_list(m)));
  }
  const UserKernel& k = *found;
  if (backend == "cuda") require_cuda_device();
  std::map<std::string, Tensor> given;
  for (const std::string& b : spec.bindings) {
    auto [name, path] = split_binding(b, "--input");
    const KernelParam* p = k.find_param(name);
    if (p == nullptr || !p->is_array) throw UserError(fmt::format("--input {}: kernel '{}' has no array '{}'", b, k.name, name));
    if (!given.emplace(name, read_npy(path)).second) throw UserError(fmt::format("--input: array '{}' is bound twice", name));
  }
  std::map<std::string, std::string> scalar_text;
  for (const std::string& b : scalars) {
    auto [name, text] = split_binding(b, "--scalar");
    const KernelParam* p = k.find_param(name);
    if (p == nullptr || p->is_array) throw UserError(fmt::format("--scalar {}: kernel '{}' has no scalar '{}'", b, k.name, name));
    if (!scalar_text.emplace(name, text).second) throw UserError(fmt::format("--scalar: '{}' is bound twice", name));
  }
  // Symbols from the given arrays, then --dim.
  SymbolBindings dims = parse_dims(spec.dims);
  for (const KernelParam& p : k.params) {
    auto it = given.find(p.name);
    if (it == given.end()) continue;
    for (size_t d = 0; d < p.shape.size() && d < it->second.shape().size(); ++d) {
      if (p.shape[d].is_symbolic()) dims.emplace(p.shape[d].name(), it->second.shape()[d]);
    }
  }
  std::vector<Tensor> arrays;
  arrays.reserve(k.params.size());
  std::vector<KernelArg> args;
  for (size_t i = 0; i < k.params.size(); ++i) {
    const KernelParam& p = k.params[i];
    if (!p.is_array) {
      auto it = scalar_text.find(p.name);
      if (it == scalar_text.end()) throw UserError(fmt::format("missing scalar '{}' (give --scalar {}=VALUE)", p.name, p.name));
      args.push_back(scalar_value(p, it->second));
      continue;
    }
    if (auto it = given.find(p.name); it != given.end()) {
      arrays.push_back(std::move(it->second));
    } else {
      if (!spec.random) {
        throw UserError(fmt::format("missing array '{}' (give --input {}=FILE.npy or --random-inputs SEED)", p.name, p.name));
      }
      for (const Dim& d : p.shape) {
        if (d.is_symbolic() && !dims.count(d.name())) {
          throw UserError(fmt::format("random array '{}': symbol {} is not bound (give --dim {}=N)", p.name, d.name(), d.name()));
        }
      }
      arrays.push_back(allocate_tensor(fmt::format("random array '{}'", p.name), p.dtype, concrete_shape(p.shape, dims)));
      fill_random(arrays.back(), param_seed(spec.seed, i));
    }
    args.emplace_back(arrays.back());
  }
  Tensor result;
  if (backend == "interp") {
    result = interpret_kernel(k, args);
  } else if (backend == "cuda") {
    result = run_user_kernel_on_cuda(k, args);
  } else {
    runtime::cpu::KernelCache cache;
    result = pipeline::run_user_kernel_cpu(k, args, cache);
  }
  if (!output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(output_dir, ec);
    if (ec) throw UserError(fmt::format("--output-dir {}: {}", output_dir, ec.message()));
  }
  auto emit = [&](const std::string& name, const Tensor& t) {
    if (!output_dir.empty()) write_npy((std::filesystem::path(output_dir) / (name + ".npy")).string(), t);
    if (print_values) {
      std::cout << name << " = " << t.str(1000) << "\n";
    } else {
      summarize(name, t);
    }
  };
  size_t a = 0;
  for (const KernelParam& p : k.params) {
    if (!p.is_array) continue;
    const Tensor& t = arrays[a++];
    if (p.access == ArrayAccess::Write || p.access == ArrayAccess::ReadWrite) emit(p.name, t);
  }
  if (k.is_reduction()) emit(k.name, result);
  return kExitOk;
}

}  // namespace stitch::cli
