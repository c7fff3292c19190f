#include "runtime/cpu/cpu_compiler.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "options/options.h"
#include "stitch/error.h"

namespace stitch::runtime::cpu {

std::string default_compiler() {
  std::string cxx = environment_options().cxx;
  return cxx.empty() ? std::string("c++") : cxx;
}

namespace {

// Single-quoted for /bin/sh: the temporary paths are ours, but a user's TMPDIR may hold spaces.
std::string shell_quote(const std::string& s) {
  std::string quoted = "'";
  for (char c : s) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Evaluates a shape or stride expression: i64 arithmetic over scalar parameters.
int64_t evaluate_extent(const kir::Expr& e, const kir::Kernel& kernel, const std::vector<int64_t>& scalars) {
  switch (e->kind) {
    case kir::ExprKind::Const: return e->int_value;
    case kir::ExprKind::Var:
      for (size_t i = 0; i < kernel.scalars.size(); ++i) {
        if (kernel.scalars[i].name == e->name) return scalars[i];
      }
      STITCH_ASSERT(false, "shape expression names an unknown scalar " + e->name);
    case kir::ExprKind::Op: {
      std::vector<int64_t> v;
      for (const kir::Expr& operand : e->operands) v.push_back(evaluate_extent(operand, kernel, scalars));
      switch (e->op) {
        case OpKind::Add: return v[0] + v[1];
        case OpKind::Sub: return v[0] - v[1];
        case OpKind::Mul: return v[0] * v[1];
        case OpKind::Div: return v[1] == 0 ? 0 : v[0] / v[1];
        case OpKind::Rem: return v[1] == 0 ? 0 : v[0] % v[1];
        case OpKind::Max: return std::max(v[0], v[1]);
        case OpKind::Min: return std::min(v[0], v[1]);
        default: break;
      }
      break;
    }
    case kir::ExprKind::Load: break;
  }
  STITCH_ASSERT(false, "unsupported op in a buffer shape expression");
}

}  // namespace

std::string compile_command(const CompilerOptions& options, const std::filesystem::path& source_path,
                            const std::filesystem::path& output_path) {
  std::string command = options.compiler;
  for (const std::string& flag : options.flags) command += " " + flag;
  command += " -o " + shell_quote(output_path.string()) + " " + shell_quote(source_path.string());
  for (const std::string& library : options.libraries) command += " " + library;
  return command;
}

void compile_shared_object(const std::string& source, const std::filesystem::path& output_path,
                           const CompilerOptions& options) {
  std::filesystem::path source_path = output_path;
  source_path.replace_extension(".cpp");
  std::filesystem::path log_path = output_path;
  log_path.replace_extension(".log");
  {
    errno = 0;
    std::ofstream out(source_path);
    out << source;
    out.flush();
    if (!out) {
      // The reason (a full disk says "No space left on device") from the failed open or write.
      const int err = errno;
      throw CompileError(fmt::format("cannot write {}: {}", source_path.string(),
                                     err != 0 ? std::strerror(err) : "the stream failed"),
                         "");
    }
  }
  const std::string command = compile_command(options, source_path, output_path);
  const int status = std::system((command + " >" + shell_quote(log_path.string()) + " 2>&1").c_str());
  if (status != 0) {
    const std::string diagnostics = read_file(log_path);
    throw CompileError(fmt::format("C++ compilation of generated kernels failed (status {}): {}\n{}", status,
                                   command, diagnostics),
                       diagnostics);
  }
}

CpuModule CpuModule::load(const std::filesystem::path& shared_object) {
  std::optional<CpuModule> module = try_load(shared_object);
  if (!module) fail_internal(fmt::format("dlopen {} failed: {}", shared_object.string(), dlerror()), __FILE__, __LINE__);
  return std::move(*module);
}

std::optional<CpuModule> CpuModule::try_load(const std::filesystem::path& shared_object) {
  // RTLD_NODELETE: the kernels start libgomp's worker threads, and unmapping
  // the object under them (a dlclose during static destruction at exit)
  // crashed the process after every test had passed.
  void* handle = dlopen(shared_object.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!handle) return std::nullopt;
  CpuModule module;
  module.handle_ = std::shared_ptr<void>(handle, [](void* h) { dlclose(h); });
  module.path_ = shared_object;
  return module;
}

KernelFunction CpuModule::function(const std::string& kernel_name) const {
  void* symbol = dlsym(handle_.get(), kernel_name.c_str());
  if (!symbol) fail_internal(fmt::format("kernel {} not found in {}", kernel_name, path_.string()), __FILE__, __LINE__);
  return reinterpret_cast<KernelFunction>(symbol);
}

CpuModule compile_and_load(const std::string& source, const CompilerOptions& options) {
  std::string pattern = (std::filesystem::temp_directory_path() / "stitch-cpu-XXXXXX").string();
  if (!mkdtemp(pattern.data())) {
    throw CompileError(fmt::format("cannot create a temporary directory: {}", std::strerror(errno)), "");
  }
  const std::filesystem::path output = std::filesystem::path(pattern) / "kernels.so";
  // A failed compile keeps the directory: the error names the source to inspect.
  compile_shared_object(source, output, options);
  CpuModule module = CpuModule::load(output);
  // The loaded mapping outlives the file, so nothing is left behind in TMPDIR.
  std::error_code ignored;
  std::filesystem::remove_all(pattern, ignored);
  return module;
}

int64_t scalar_slot(int64_t value) { return value; }

int64_t scalar_slot_f64(double value) {
  int64_t slot;
  std::memcpy(&slot, &value, sizeof slot);
  return slot;
}

void run_kernel(const CpuModule& module, const kir::Kernel& kernel, const std::vector<Tensor*>& buffers,
                const std::vector<int64_t>& scalars) {
  std::vector<ArrayView> views;
  views.reserve(buffers.size());
  for (Tensor* t : buffers) views.push_back(ArrayView::of(*t));
  run_kernel_on_views(module, kernel, views, scalars);
}

void run_kernel_on_views(const CpuModule& module, const kir::Kernel& kernel, const std::vector<ArrayView>& buffers,
                         const std::vector<int64_t>& scalars) {
  if (buffers.size() != kernel.buffers.size() || scalars.size() != kernel.scalars.size()) {
    throw UserError(fmt::format("kernel {} takes {} buffers and {} scalars, got {} and {}", kernel.name,
                                kernel.buffers.size(), kernel.scalars.size(), buffers.size(), scalars.size()));
  }
  std::vector<void*> pointers;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const kir::BufferParam& param = kernel.buffers[i];
    const ArrayView& t = buffers[i];
    if (t.dtype != param.dtype) {
      throw UserError(fmt::format("kernel {}: buffer {} is {}, got a {} tensor", kernel.name, param.name,
                                  dtype_name(param.dtype), dtype_name(t.dtype)));
    }
    // The highest element the kernel may address, plus one.
    int64_t needed = 1;
    for (size_t d = 0; d < param.shape.size(); ++d) {
      const int64_t extent = evaluate_extent(param.shape[d], kernel, scalars);
      if (extent <= 0) {
        needed = 0;
        break;
      }
      const int64_t stride = param.strides.empty() ? 0 : evaluate_extent(param.strides[d], kernel, scalars);
      needed = param.strides.empty() ? needed * extent : needed + (extent - 1) * stride;
    }
    if (t.numel() < needed) {
      throw UserError(fmt::format("kernel {}: buffer {} needs {} elements, the tensor has {}", kernel.name,
                                  param.name, needed, t.numel()));
    }
    pointers.push_back(t.data);
  }
  module.function(kernel.name)(pointers.data(), scalars.data());
}

}  // namespace stitch::runtime::cpu
