// A shared library opened with dlopen for the rest of the process and its
// entry points resolved by name: how the CUDA driver (driver.h) and cuBLAS
// (cublas.h) are loaded without linking them.
#pragma once

#include <dlfcn.h>

#include <memory>
#include <string>

// The symbol a header's name stands for (cuda.h and cublas_v2.h rename their
// functions by macros, cuMemAlloc to cuMemAlloc_v2): the expansion, as text.
#define STITCH_DL_SYMBOL_TEXT(name) STITCH_DL_SYMBOL_TEXT_EXPANDED(name)
#define STITCH_DL_SYMBOL_TEXT_EXPANDED(name) #name

namespace stitch::runtime::cuda {

// A loader's answer: the entry points, or why there are none.
template <class Api>
struct LoadedApi {
  std::unique_ptr<Api> api;
  std::string why;
};

class DlSymbols {
 public:
  // RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE: the driver and cuBLAS keep threads
  // and per-device state of their own until exit, so they stay mapped.
  explicit DlSymbols(const std::string& library)
      : handle_(dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)) {
    if (!handle_) {
      const char* error = dlerror();
      error_ = error ? error : library;
    }
  }

  bool opened() const { return handle_ != nullptr; }
  // dlerror's text when the library did not open.
  const std::string& error() const { return error_; }

  // Sets `pointer` to `symbol`'s address; a symbol the library lacks is
  // added to missing().
  template <class F>
  void resolve(F& pointer, const char* symbol) {
    pointer = reinterpret_cast<F>(dlsym(handle_, symbol));
    if (!pointer) missing_ += (missing_.empty() ? "" : ", ") + std::string(symbol);
  }
  bool has(const char* symbol) const { return dlsym(handle_, symbol) != nullptr; }
  // The symbols resolve() did not find, comma-separated ("" when none).
  const std::string& missing() const { return missing_; }

 private:
  void* handle_ = nullptr;
  std::string error_, missing_;
};

}  // namespace stitch::runtime::cuda
