// The simulated CUDA driver's profiler (docs/gpu-model.md), as `stitch bench
// --backend cuda-sim --profile` and `stitch report --run --backend cuda-sim`
// read it: every launch profiled with the GPU model while it is on.
#pragma once

#ifdef STITCH_HAVE_CUDA
#include <dlfcn.h>

#include <cstdlib>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli.h"
#include "stitch/error.h"

namespace stitch::cli {

// The simulated driver's profiling entry points (src/runtime/cuda_sim/sim_driver.cpp).
struct SimProfiler {
  int (*start)(const char* target, unsigned long long cta_budget) = nullptr;
  char* (*take)() = nullptr;

  static SimProfiler find() {
    void* handle = dlopen(simulated_driver_path().c_str(), RTLD_NOW | RTLD_NOLOAD);
    SimProfiler p;
    if (handle != nullptr) {
      p.start = reinterpret_cast<int (*)(const char*, unsigned long long)>(dlsym(handle, "stitch_cuda_sim_profile"));
      p.take = reinterpret_cast<char* (*)()>(dlsym(handle, "stitch_cuda_sim_take_profiles"));
    }
    if (p.start == nullptr || p.take == nullptr) {
      throw UserError("--profile: the simulated CUDA driver " + simulated_driver_path() +
                      " has no profiling entry points (an older build?)");
    }
    return p;
  }
  nlohmann::json taken() const {
    std::unique_ptr<char, decltype(&std::free)> text(take(), &std::free);
    return nlohmann::json::parse(text.get());
  }
};

}  // namespace stitch::cli
#endif
