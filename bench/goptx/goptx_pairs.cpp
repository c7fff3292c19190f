// The benchmark's pairs and the launches of each variant (docs/goptx-bench.md, Pairs).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "goptx_bench.h"
#include "ptx/parser.h"
#include "ptx/printer.h"
#include "ptx/weave/pack.h"
#include "ptx/weave/weave.h"
#include "stitch/error.h"

namespace stitch::bench::goptx {

namespace {

constexpr uint32_t kBlock = 256;

template <class T>
HostArg buffer_of(const std::vector<T>& v) {
  HostArg a;
  a.buffer = true;
  a.bytes.resize(v.size() * sizeof(T));
  std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  return a;
}

template <class T>
HostArg scalar_of(T v) {
  HostArg a;
  a.bytes.resize(sizeof(T));
  std::memcpy(a.bytes.data(), &v, sizeof(T));
  return a;
}

std::vector<float> random_floats(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

uint32_t blocks_for(size_t n) { return static_cast<uint32_t>((n + kBlock - 1) / kBlock); }

// Memory-bound elements per kernel: 2^25 floats (128 MiB an array) on a GPU,
// a few thousand on the interpreter.
size_t memory_elements(Scale s) { return s == Scale::Full ? size_t{1} << 25 : 3000; }

KernelSpec collatz(Scale s, uint32_t seed) {
  // Compute-bound: about a hundred dependent integer steps a thread for
  // starts below 2^16, and little memory traffic.
  const size_t n = s == Scale::Full ? size_t{1} << 21 : 1500;
  std::mt19937 rng(seed);
  std::vector<uint32_t> start(n);
  for (uint32_t& v : start) v = rng() % 65536;
  return {"collatz_steps", "collatz_steps", "compute-bound", blocks_for(n), kBlock, 0,
          {buffer_of(start), buffer_of(std::vector<int32_t>(n, -1)), scalar_of<int32_t>(static_cast<int32_t>(n))}};
}

KernelSpec fma_chain(Scale s, uint32_t seed) {
  // Compute-bound without divergence: a chain of dependent FMAs a thread,
  // the same trip count for every thread.
  const size_t n = s == Scale::Full ? size_t{1} << 21 : 1500;
  const int32_t iterations = s == Scale::Full ? 2000 : 60;
  return {"fma_chain", "fma_chain", "compute-bound (uniform)", blocks_for(n), kBlock, 0,
          {buffer_of(random_floats(n, seed, -1, 1)), buffer_of(std::vector<float>(n, -1)),
           scalar_of<int32_t>(static_cast<int32_t>(n)), scalar_of<int32_t>(iterations)}};
}

KernelSpec first_or_second(Scale s, const char* which) {
  const size_t n = memory_elements(s);
  return {which, "weave_first_second", "memory-bound", blocks_for(n), kBlock, 0,
          {buffer_of(random_floats(n, which[0] == 'f' ? 6 : 7, -1, 1)), buffer_of(std::vector<float>(2 * n, -1)),
           scalar_of<int32_t>(static_cast<int32_t>(n))}};
}

KernelSpec block_reduce(Scale s) {
  const size_t n = memory_elements(s);
  const uint32_t grid = blocks_for(n);
  return {"block_reduce_sum", "block_reduce_sum", "memory-bound", grid, kBlock, 0,
          {buffer_of(random_floats(n, 1, -2, 2)), buffer_of(std::vector<float>(grid, -1)),
           scalar_of<int32_t>(static_cast<int32_t>(n))}};
}

KernelSpec warp_reduce(Scale s) {
  const size_t n = memory_elements(s);
  const uint32_t grid = blocks_for(n);
  const size_t warps = size_t{grid} * kBlock / 32;
  return {"warp_reduce", "warp_reduce", "memory-bound", grid, kBlock, 0,
          {buffer_of(random_floats(n, 5, -1, 1)), buffer_of(std::vector<float>(warps, -1)),
           buffer_of(std::vector<float>(warps, -1)), buffer_of(std::vector<uint32_t>(warps, 7)),
           scalar_of<int32_t>(static_cast<int32_t>(n))}};
}

KernelSpec device_calls(Scale s) {
  const size_t n = memory_elements(s);
  return {"device_calls", "device_calls", "memory-bound (calls, SFU math)", blocks_for(n), kBlock,
          kBlock * sizeof(float),
          {buffer_of(random_floats(n, 3, -3, 3)), buffer_of(std::vector<float>(n, -1)),
           scalar_of<int32_t>(static_cast<int32_t>(n))}};
}

// Stitch's CUDA emitter's kernels (corpus_*.cu, written at build time): the
// full graph's kernel covers its shape exactly, 1024 elements a CTA.
KernelSpec triad(Scale s) {
  const bool full = s == Scale::Full;
  const size_t n = full ? 33554432 : 3001;
  return {full ? "k_babelstream_triad_g0" : "k_babelstream_triad_small_g0", "corpus_babelstream_triad",
          "memory-bound", full ? 32768u : 3u, kBlock, 0,
          {buffer_of(random_floats(n, 11, -1, 1)), buffer_of(random_floats(n, 12, -1, 1)),
           buffer_of(std::vector<float>(n, -1))}};
}

KernelSpec gelu(Scale s) {
  const bool full = s == Scale::Full;
  const size_t n = full ? size_t{8192} * 3072 : 3700;
  return {full ? "k_gelu_tanh_g0" : "k_gelu_tanh_small_g0", "corpus_gelu_tanh", "memory-bound", full ? 24576u : 4u,
          kBlock, 0, {buffer_of(random_floats(n, 13, -4, 4)), buffer_of(std::vector<float>(n, -1))}};
}

ptx::Module load_module(const std::string& dir, const std::string& file, std::string* text) {
  const std::string path = dir + "/" + file + ".ptx";
  std::ifstream in(path);
  if (!in) throw UserError(fmt::format("cannot read {} (build the target stitch_goptx_bench's PTX)", path));
  std::stringstream s;
  s << in.rdbuf();
  *text = s.str();
  return ptx::parse_module(*text, path);
}

std::vector<ArgRef> args_of(const KernelSpec& k, int side) {
  std::vector<ArgRef> refs;
  for (size_t i = 0; i < k.args.size(); ++i) refs.push_back({side, i, 0});
  return refs;
}

}  // namespace

std::vector<Pair> bench_pairs(Scale s) {
  return {
      {"first+second", "hand-written", first_or_second(s, "first"), first_or_second(s, "second")},
      {"block_reduce_sum+collatz", "hand-written", block_reduce(s), collatz(s, 21)},
      {"warp_reduce+collatz", "hand-written", warp_reduce(s), collatz(s, 22)},
      {"device_calls+collatz", "hand-written", device_calls(s), collatz(s, 23)},
      {"corpus:babelstream_triad+collatz", "corpus", triad(s), collatz(s, 24)},
      {"corpus:gelu_tanh+collatz", "corpus", gelu(s), collatz(s, 25)},
      {"block_reduce_sum+fma_chain", "hand-written", block_reduce(s), fma_chain(s, 26)},
      {"corpus:babelstream_triad+fma_chain", "corpus", triad(s), fma_chain(s, 27)},
      {"corpus:gelu_tanh+fma_chain", "corpus", gelu(s), fma_chain(s, 28)},
  };
}

const char* variant_name(Variant v) {
  switch (v) {
    case Variant::Sequential: return "sequential";
    case Variant::Concurrent: return "concurrent";
    case Variant::Packed: return "packed";
    case Variant::WovenConcat: return "woven-concat";
    case Variant::WovenLatency: return "woven-latency";
  }
  return "?";
}

const char* variant_description(Variant v) {
  switch (v) {
    case Variant::Sequential: return "A then B on one stream (two launches)";
    case Variant::Concurrent: return "A and B on two streams (two launches that may overlap)";
    case Variant::Packed: return "one launch, CTAs split between A and B (PTX-level horizontal fusion, src/ptx/weave/pack.h)";
    case Variant::WovenConcat: return "one launch, every thread runs A's code then B's (ptx::weave, Concat)";
    case Variant::WovenLatency: return "one launch, A's and B's code interleaved by the latency model (ptx::weave, Latency)";
  }
  return "?";
}

std::vector<Launch> PairVariants::launches(Variant v) const {
  switch (v) {
    case Variant::Sequential:
    case Variant::Concurrent: return sequential;
    case Variant::Packed: return {packed};
    case Variant::WovenConcat: return {woven_concat};
    case Variant::WovenLatency: return {woven_latency};
  }
  return {};
}

PairVariants build_variants(const Pair& pair, const std::string& ptx_dir) {
  PairVariants v;
  const KernelSpec& a = pair.a;
  const KernelSpec& b = pair.b;
  if (a.block != b.block) throw UserError(fmt::format("pair {}: the kernels' blocks differ", pair.name));
  std::string text_a, text_b;
  v.a = load_module(ptx_dir, a.ptx_file, &text_a);
  v.b = load_module(ptx_dir, b.ptx_file, &text_b);
  v.sequential = {{text_a, a.name, a.grid, a.block, a.dynamic_shared, args_of(a, 0)},
                  {text_b, b.name, b.grid, b.block, b.dynamic_shared, args_of(b, 1)}};
  std::vector<ArgRef> both = args_of(a, 0);
  for (const ArgRef& r : args_of(b, 1)) both.push_back(r);
  const uint32_t shared = std::max(a.dynamic_shared, b.dynamic_shared);

  ptx::PackOptions pack_options;
  pack_options.kernel_a = a.name;
  pack_options.kernel_b = b.name;
  pack_options.grid_a = std::array<uint32_t, 3>{a.grid, 1, 1};
  pack_options.grid_b = std::array<uint32_t, 3>{b.grid, 1, 1};
  const ptx::Module packed = ptx::pack(v.a, v.b, pack_options);
  v.packed = {ptx::print_module(packed), a.name + "_" + b.name + "_packed", a.grid + b.grid, a.block, shared, both};
  v.packed.args.push_back({2, 0, a.grid});
  v.packed.args.push_back({2, 0, b.grid});

  for (ptx::WeaveStrategy strategy : {ptx::WeaveStrategy::Concat, ptx::WeaveStrategy::Latency}) {
    ptx::WeaveOptions options;
    options.kernel_a = a.name;
    options.kernel_b = b.name;
    options.strategy = strategy;
    if (a.grid != b.grid) {
      options.grid_a = std::array<uint32_t, 3>{a.grid, 1, 1};
      options.grid_b = std::array<uint32_t, 3>{b.grid, 1, 1};
    }
    const ptx::Module woven = ptx::weave(v.a, v.b, options);
    Launch launch{ptx::print_module(woven), a.name + "_" + b.name + "_woven", std::max(a.grid, b.grid), a.block, shared,
                  both};
    (strategy == ptx::WeaveStrategy::Concat ? v.woven_concat : v.woven_latency) = std::move(launch);
  }
  return v;
}

}  // namespace stitch::bench::goptx
