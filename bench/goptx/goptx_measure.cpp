// Measuring the variants with CUDA events (docs/goptx-bench.md, Method): on a
// GPU through libcuda, or on the simulated driver (`--driver`), whose times
// are the interpreter's and say nothing about a GPU; its runs only prove that
// the path works and that every variant's outputs match.
#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "goptx_bench.h"
#include "goptx_report.h"
#include "runtime/cuda/context.h"
#include "runtime/cuda/event_timer.h"
#include "stitch/error.h"

namespace stitch::bench::goptx {

namespace {

using runtime::cuda::check;
using runtime::cuda::CudaContext;
using runtime::cuda::DeviceBuffer;

// A module loaded on the device. PTX text goes to cuModuleLoadData (the
// driver JIT-compiles it); a driver older than the toolkit's PTX ISA refuses
// it, and then ptxas compiles a cubin for the device instead.
class LoadedModule {
 public:
  LoadedModule(CudaContext& context, const std::string& ptx, const std::string& ptxas) : api_(context.api()) {
    CUresult r = api_.cuModuleLoadData(&module_, ptx.c_str());
    if (r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION && !ptxas.empty()) {
      const std::filesystem::path dir = std::filesystem::temp_directory_path();
      const std::string base = (dir / fmt::format("goptx_{}", ::getpid())).string();
      std::ofstream(base + ".ptx") << ptx;
      const std::string command = fmt::format("{} -arch={} {}.ptx -o {}.cubin", ptxas, context.device().arch(), base, base);
      if (std::system(command.c_str()) != 0) throw UserError("ptxas failed: " + command);
      std::ifstream in(base + ".cubin", std::ios::binary);
      const std::string cubin((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      r = api_.cuModuleLoadData(&module_, cubin.data());
    }
    check(api_, r, "cuModuleLoadData");
  }
  ~LoadedModule() { api_.cuModuleUnload(module_); }
  LoadedModule(const LoadedModule&) = delete;
  LoadedModule& operator=(const LoadedModule&) = delete;

  CUfunction function(const std::string& name) const {
    CUfunction f = nullptr;
    check(api_, api_.cuModuleGetFunction(&f, module_, name.c_str()), "cuModuleGetFunction");
    return f;
  }

 private:
  const runtime::cuda::DriverApi& api_;
  CUmodule module_ = nullptr;
};

// A launch ready to queue: the function and its parameter bytes.
struct Ready {
  CUfunction function = nullptr;
  const Launch* launch = nullptr;
  std::vector<std::vector<std::byte>> values;
  std::vector<void*> pointers;
};

// Device copies of both kernels' buffers, filled from the pair's host bytes.
struct DeviceArgs {
  std::vector<DeviceBuffer> a, b;

  DeviceArgs(const std::shared_ptr<CudaContext>& context, const Pair& pair) {
    auto fill = [&](const KernelSpec& k, std::vector<DeviceBuffer>& out) {
      for (const HostArg& arg : k.args) {
        out.emplace_back(context, arg.buffer ? arg.bytes.size() : 0);
        if (arg.buffer) {
          check(context->api(),
                context->api().cuMemcpyHtoDAsync(out.back().get(), arg.bytes.data(), arg.bytes.size(), context->stream()),
                "cuMemcpyHtoDAsync");
        }
      }
    };
    fill(pair.a, a);
    fill(pair.b, b);
    context->synchronize();
  }

  // Every buffer's bytes, A's then B's.
  std::vector<std::vector<std::byte>> download(CudaContext& context, const Pair& pair) const {
    std::vector<std::vector<std::byte>> out;
    auto get = [&](const KernelSpec& k, const std::vector<DeviceBuffer>& buffers) {
      for (size_t i = 0; i < k.args.size(); ++i) {
        if (!k.args[i].buffer) continue;
        out.emplace_back(k.args[i].bytes.size());
        check(context.api(),
              context.api().cuMemcpyDtoHAsync(out.back().data(), buffers[i].get(), out.back().size(), context.stream()),
              "cuMemcpyDtoHAsync");
      }
    };
    get(pair.a, a);
    get(pair.b, b);
    context.synchronize();
    return out;
  }
};

Ready prepare(const Launch& launch, CUfunction f, const Pair& pair, const DeviceArgs& device) {
  Ready r;
  r.function = f;
  r.launch = &launch;
  for (const ArgRef& ref : launch.args) {
    std::vector<std::byte> bytes;
    if (ref.side == 2) {
      bytes.resize(sizeof(uint32_t));
      std::memcpy(bytes.data(), &ref.value, sizeof(uint32_t));
    } else {
      const KernelSpec& k = ref.side == 0 ? pair.a : pair.b;
      const HostArg& arg = k.args[ref.index];
      if (arg.buffer) {
        const CUdeviceptr p = (ref.side == 0 ? device.a : device.b)[ref.index].get();
        bytes.resize(sizeof(CUdeviceptr));
        std::memcpy(bytes.data(), &p, sizeof(CUdeviceptr));
      } else {
        bytes = arg.bytes;
      }
    }
    r.values.push_back(std::move(bytes));
  }
  for (auto& v : r.values) r.pointers.push_back(v.data());
  return r;
}

void queue(const runtime::cuda::DriverApi& api, Ready& r, CUstream stream) {
  const Launch& l = *r.launch;
  check(api,
        api.cuLaunchKernel(r.function, l.grid, 1, 1, l.block, 1, 1, l.dynamic_shared, stream, r.pointers.data(), nullptr),
        "cuLaunchKernel");
}

// cuStreamWaitEvent, which the runtime's DriverApi does not load: looked up
// in the already-loaded driver; null where it has none (the simulated driver
// runs every stream in order anyway).
using StreamWaitEvent = CUresult (*)(CUstream, CUevent, unsigned int);
StreamWaitEvent stream_wait_event(const std::string& driver) {
  void* handle = ::dlopen(driver.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return nullptr;
  return reinterpret_cast<StreamWaitEvent>(::dlsym(handle, "cuStreamWaitEvent"));
}

// Seconds per run of A and B on two streams: an event on the first stream
// starts the clock, the second stream waits for it, and the run ends at the
// later of the two streams' end events.
std::vector<double> time_concurrent(CudaContext& context, Ready& a, Ready& b, int warmup, int repeats,
                                    StreamWaitEvent wait) {
  const auto& api = context.api();
  CUstream s1 = nullptr, s2 = nullptr;
  check(api, api.cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check(api, api.cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  CUevent start = nullptr, end_a = nullptr, end_b = nullptr;
  for (CUevent* e : {&start, &end_a, &end_b}) check(api, api.cuEventCreate(e, CU_EVENT_DEFAULT), "cuEventCreate");
  std::vector<double> seconds;
  for (int i = 0; i < warmup + repeats; ++i) {
    check(api, api.cuEventRecord(start, s1), "cuEventRecord");
    if (wait != nullptr) check(api, wait(s2, start, 0), "cuStreamWaitEvent");
    queue(api, a, s1);
    queue(api, b, s2);
    check(api, api.cuEventRecord(end_a, s1), "cuEventRecord");
    check(api, api.cuEventRecord(end_b, s2), "cuEventRecord");
    check(api, api.cuEventSynchronize(end_a), "cuEventSynchronize");
    check(api, api.cuEventSynchronize(end_b), "cuEventSynchronize");
    float ms_a = 0, ms_b = 0;
    check(api, api.cuEventElapsedTime(&ms_a, start, end_a), "cuEventElapsedTime");
    check(api, api.cuEventElapsedTime(&ms_b, start, end_b), "cuEventElapsedTime");
    if (i >= warmup) seconds.push_back(std::max(ms_a, ms_b) * 1e-3);
  }
  for (CUevent e : {start, end_a, end_b}) api.cuEventDestroy(e);
  api.cuStreamDestroy(s1);
  api.cuStreamDestroy(s2);
  return seconds;
}

}  // namespace

int run_measurements(const RunOptions& options) {
  std::string why;
  const std::string driver = options.driver.empty() ? "libcuda.so.1" : options.driver;
  std::shared_ptr<CudaContext> context = CudaContext::open(&why, 0, driver);
  if (!context) {
    fmt::print(stderr, "no CUDA device: {}\n", why);
    return 2;
  }
  const bool simulated = context->api().loads_ptx;
  const StreamWaitEvent wait = stream_wait_event(driver);
  MeasuredRun run;
  run.device = context->device();
  run.simulated = simulated;
  run.scale = options.scale;
  run.warmup = options.warmup;
  run.repeats = options.repeats;
  bool all_match = true;
  for (const Pair& pair : bench_pairs(options.scale)) {
    if (!options.only.empty() && pair.name != options.only) continue;
    fmt::print(stderr, "{}\n", pair.name);
    const PairVariants variants = build_variants(pair, options.ptx_dir);
    MeasuredPair measured;
    measured.pair = pair.name;
    measured.source = pair.source;
    measured.kernels = {pair.a.name + " (" + pair.a.kind + ")", pair.b.name + " (" + pair.b.kind + ")"};
    std::vector<std::vector<std::byte>> reference;
    for (Variant v : kVariants) {
      const std::vector<Launch> launches = variants.launches(v);
      std::vector<std::unique_ptr<LoadedModule>> modules;
      DeviceArgs device(context, pair);
      std::vector<Ready> ready;
      for (const Launch& l : launches) {
        modules.push_back(std::make_unique<LoadedModule>(*context, l.module, options.ptxas));
        ready.push_back(prepare(l, modules.back()->function(l.entry), pair, device));
      }
      std::vector<double> seconds;
      if (v == Variant::Concurrent) {
        seconds = time_concurrent(*context, ready[0], ready[1], options.warmup, options.repeats, wait);
      } else {
        runtime::cuda::EventTimer timer(*context, options.repeats);
        seconds = timer.seconds_each(options.warmup, [&] {
          for (Ready& r : ready) queue(context->api(), r, context->stream());
        });
      }
      std::vector<std::vector<std::byte>> outputs = device.download(*context, pair);
      bool match = true;
      if (v == Variant::Sequential) {
        reference = std::move(outputs);
      } else {
        match = outputs == reference;
        if (!match) {
          all_match = false;
          fmt::print(stderr, "MISMATCH: {}: {} differs from sequential\n", pair.name, variant_name(v));
        }
      }
      measured.variants.push_back({v, seconds, match});
    }
    run.pairs.push_back(std::move(measured));
  }
  write_measured(run, options.out_dir, options.results);
  return all_match ? 0 : 1;
}

}  // namespace stitch::bench::goptx
