// The graphs the GPU suites run and the symbol bindings each runs with.
// Header-only because two binaries read it: test_gpu runs them on the GPU,
// and test_runtime_cuda compiles the same translation units for sm_90 with
// NVRTC on machines without one (tests/runtime_cuda/cubin_cache_test.cpp), so
// CI notices a test input that does not lower or compile before the GPU
// machine runs it.
//
// Shapes are chosen to reach each branch of the schedules: rows shorter than
// a warp and not multiples of 32, many short rows (11000 x 123) against few
// long ones (64 x 12345, longer than a block strides in one pass), and
// symbols bound to 0 (empty tensors, empty rows and columns).
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "../support/dot_test_graphs.h"
#include "ir/canonicalize.h"
#include "stitch/graph.h"
#include "stitch/ops.h"
#include "stitch/text.h"

namespace stitch::gpu_testing {

struct GpuGraph {
  Graph graph;                           // as written: the interpreter runs this one
  std::vector<SymbolBindings> bindings;  // one run per entry; {{}} for a static graph
};

inline std::vector<std::string> parameter_symbols(const Graph& g) {
  std::set<std::string> names;
  for (ValueId p : g.params()) {
    for (const Dim& d : g.type(p).shape) {
      if (d.is_symbolic()) names.insert(d.name());
    }
  }
  return {names.begin(), names.end()};
}

// One binding per extent, every symbol of the parameters bound to it; a
// single empty binding for a static graph.
inline std::vector<SymbolBindings> every_symbol_bound_to(const Graph& g, const std::vector<int64_t>& extents) {
  const std::vector<std::string> symbols = parameter_symbols(g);
  if (symbols.empty()) return {SymbolBindings{}};
  std::vector<SymbolBindings> out;
  for (int64_t extent : extents) {
    SymbolBindings b;
    for (const std::string& s : symbols) b[s] = extent;
    out.push_back(std::move(b));
  }
  return out;
}

inline std::vector<std::filesystem::path> stitch_files(const std::string& folder) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(STITCH_SOURCE_DIR) / folder)) {
    if (entry.path().extension() == ".stitch") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

inline bool is_test_sized_workload(const std::string& name) {
  auto ends_with = [&](const std::string& suffix) {
    return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with("_small") || ends_with("_dyn");
}

// Symbols that appear in a result but in no parameter cannot be bound by any
// input (the interpreter rejects such a graph on every input), so no back end
// can run the graph; the parser corpus has two, written to test the parser.
inline bool every_result_symbol_is_bound(const Graph& g) {
  const std::vector<std::string> bound = parameter_symbols(g);
  for (const Node& n : g.nodes()) {
    for (const Dim& d : g.type(n.output).shape) {
      if (d.is_symbolic() && std::find(bound.begin(), bound.end(), d.name()) == bound.end()) return false;
    }
  }
  return true;
}

// The extents symbolic corpus graphs run with: empty, one, a few, and enough
// rows to give every SM several blocks.
inline const std::vector<int64_t>& corpus_extents() {
  static const std::vector<int64_t> extents = {0, 1, 7, 300};
  return extents;
}

// Every graph of tests/ir/corpus (it reaches every op, composite and dtype)
// whose symbols inputs can bind, and the `_small`/`_dyn` graphs of
// bench/workloads (the entry graphs are 128+ MiB, too big for a test).
inline std::vector<GpuGraph> corpus_graphs() {
  std::vector<GpuGraph> out;
  for (const auto& file : stitch_files("tests/ir/corpus")) {
    for (const Graph& g : parse_file(file.string()).graphs) {
      if (every_result_symbol_is_bound(g)) out.push_back({g, every_symbol_bound_to(g, corpus_extents())});
    }
  }
  for (const auto& file : stitch_files("bench/workloads")) {
    for (const Graph& g : parse_file(file.string()).graphs) {
      if (is_test_sized_workload(g.name())) out.push_back({g, every_symbol_bound_to(g, corpus_extents())});
    }
  }
  return out;
}

inline bool has_reduction(const Graph& g) {
  const Graph c = canonicalize(g);
  return std::any_of(c.nodes().begin(), c.nodes().end(), [](const Node& n) { return is_reduction(n.op); });
}

// For the forced row schedules: the reduction workloads' `_small`/`_dyn`
// graphs, and softmax, LayerNorm, RMSNorm, log-softmax, reduce_sum and argmax
// over rows of 5 (shorter than a warp: several rows per warp), 17, 100, 123,
// 4096 and 12345 elements, with symbolic row counts from 0 to 11000, and
// rows of a symbolic length from 0 to 1000.
inline std::vector<GpuGraph> row_schedule_graphs() {
  std::vector<GpuGraph> out;
  for (const auto& file : stitch_files("bench/workloads")) {
    for (const Graph& g : parse_file(file.string()).graphs) {
      if (is_test_sized_workload(g.name()) && has_reduction(g)) {
        out.push_back({g, every_symbol_bound_to(g, {0, 1, 7, 300})});
      }
    }
  }
  const std::vector<std::pair<std::string, std::string>> ops = {
      {"softmax", "y = softmax(x, axis=-1)"},
      {"layernorm", "y = layer_norm(x, g, b, axes=[-1], eps=1e-5)"},
      {"rmsnorm", "y = rms_norm(x, g, axes=[-1], eps=1e-6)"},
      {"log_softmax", "y = log_softmax(x, axis=-1)"},
      {"reduce_sum", "y = reduce_sum(x, axes=[1])"},
      {"argmax", "y = argmax(x, axes=[1])"},
  };
  // Row length -> the row counts R it runs with (the elements kept near a
  // million, so the interpreter stays quick).
  const std::vector<std::pair<std::string, std::vector<int64_t>>> widths = {
      {"5", {0, 1, 37, 11000}}, {"17", {37, 11000}}, {"100", {1, 37}},
      {"123", {11000}},         {"4096", {4}},        {"12345", {1, 64}},
  };
  for (const auto& [name, body] : ops) {
    const bool per_row = name == "reduce_sum" || name == "argmax";
    auto graph = [&](const std::string& rows, const std::string& cols) {
      const std::string result = per_row ? fmt::format("{}[{}]", name == "argmax" ? "i64" : "f32", rows)
                                         : fmt::format("f32[{}, {}]", rows, cols);
      const std::string text = fmt::format(
          "graph {0}_{1}x{2}(x: f32[{1}, {2}], g: f32[{2}], b: f32[{2}]) -> ({3}) {{\n  {4}\n  return y\n}}\n", name,
          rows, cols, result, body);
      return parse_module(text).graphs.front();
    };
    for (const auto& [cols, row_counts] : widths) {
      std::vector<SymbolBindings> bindings;
      for (int64_t r : row_counts) bindings.push_back({{"R", r}});
      out.push_back({graph("R", cols), bindings});
    }
    // argmax over an empty row has no answer; its rejection is tested apart.
    std::vector<SymbolBindings> lengths;
    for (int64_t w : {0, 1, 31, 33, 1000}) {
      if (w > 0 || name != "argmax") lengths.push_back({{"W", w}});
    }
    out.push_back({graph("37", "W"), lengths});
  }
  return out;
}

// For the forced column tiles: column reductions of several kinds and dtypes
// over row counts from 0 to 11000, a middle axis, many column tiles (1000
// columns), and the column workloads.
inline std::vector<GpuGraph> column_tile_graphs() {
  const std::vector<std::pair<std::string, std::vector<int64_t>>> texts = {
      {"graph cols(x: f32[R, 45]) -> (f32[45], f32[45], f32[45]) {\n  s = reduce_sum(x, axes=[0])\n"
       "  m = reduce_max(x, axes=[0])\n  n = reduce_min(x, axes=[0])\n  return s, m, n\n}\n",
       {0, 1, 100, 11000}},
      {"graph half(x: f16[R, 40]) -> (f16[40]) {\n  s = reduce_mean(x, axes=[0])\n  return s\n}\n", {1, 7, 300}},
      {"graph middle(x: f32[4, R, 5]) -> (f32[4, 5]) {\n  s = reduce_sum(x, axes=[1])\n  return s\n}\n",
       {0, 30, 1000}},
      {"graph wide(x: f64[R, 1000]) -> (f64[1000], f64[R, 1000]) {\n  s = reduce_sum(x, axes=[0])\n"
       "  c = sub(x, s)\n  return s, c\n}\n",
       {3, 257}},
  };
  std::vector<GpuGraph> out;
  for (const auto& [text, rows] : texts) {
    std::vector<SymbolBindings> bindings;
    for (int64_t r : rows) bindings.push_back({{"R", r}});
    out.push_back({parse_module(text).graphs.front(), bindings});
  }
  for (const char* file : {"column_reduce_sub.stitch", "double_center.stitch"}) {
    const auto path = std::filesystem::path(STITCH_SOURCE_DIR) / "bench" / "workloads" / file;
    for (const Graph& g : parse_file(path.string()).graphs) {
      if (is_test_sized_workload(g.name())) out.push_back({g, every_symbol_bound_to(g, {1, 7, 300})});
    }
  }
  return out;
}

// The canonical forms, in order: what pipeline::compile_cuda_batch takes.
inline std::vector<Graph> canonical_graphs(const std::vector<GpuGraph>& graphs) {
  std::vector<Graph> out;
  for (const GpuGraph& g : graphs) out.push_back(canonicalize(g.graph));
  return out;
}

// The graphs of the executable and dot tests (executable_gpu_test.cpp,
// dot_gpu_test.cpp), here so the NVRTC check without a GPU compiles them too.

// Loop, row-reduction and stitched work in one graph.
inline const char* const kFusableGraph =
    R"(graph fusable(x: f32[16, 32], y: f32[16, 32]) -> (f32[16, 32], f32[16]) {
  a = mul(x, y)
  b = exp(a)
  c = add(b, x)
  s = reduce_sum(c, axes=[1])
  m = reduce_max(c, axes=[1])
  t = add(s, m)
  return c, t
})";

// Run twice into the same outputs: a value returned twice, a full reduction.
inline const char* const kRunTwiceGraph =
    R"(graph twice(x: f32[64, 32]) -> (f32[64, 32], f32[64], f32[64, 32], f32[]) {
  a = exp(x)
  s = reduce_sum(a, axes=[1])
  b = mul(a, 3.0)
  t = reduce_max(s)
  return b, s, b, t
})";

// A gather whose indices come from the caller: out of range is a UserError.
inline const char* const kGatherGraph = R"(graph take(x: f32[5, 3], i: i64[4]) -> (f32[4, 3]) {
  y = gather(x, i, axis=0)
  z = mul(y, 2.0)
  return z
})";

// argmax/argmin over an axis that is empty when N = 0.
inline const char* const kArgmaxGraph = R"(graph am(x: f32[3, N]) -> (i64[3], i64[3]) {
  i = argmax(x, axes=[1])
  j = argmin(x, axes=[1])
  return i, j
})";

// Empty rows, no rows, empty columns: identity-filled totals and empty
// results, on the same kernels that run the non-empty shapes.
inline const char* const kEmptiesGraph = R"(graph empties(x: f32[B, 64], y: f32[4, N])
    -> (f32[B, 64], f32[64], f32[64], f32[B], f32[4], f32[4], f32[4, N], f32[]) {
  s = softmax(x, axis=-1)
  c = reduce_sum(x, axes=[0])
  m = reduce_max(x, axes=[0])
  r = reduce_sum(x, axes=[1])
  t = reduce_sum(y, axes=[1])
  u = reduce_max(y, axes=[1])
  e = exp(y)
  f = reduce_sum(y)
  return s, c, m, r, t, u, e, f
})";

// A parameter returned (twice) and a value returned twice.
inline const char* const kPassthroughGraph = R"(graph passthrough(x: f32[8, 3], y: i32[5])
    -> (f32[8, 3], f32[8, 3], f32[8, 3], i32[5], f32[8], f32[8, 3]) {
  a = exp(x)
  s = reduce_sum(a, axes=[1])
  return x, a, a, y, s, x
})";

inline const char* const kSmallDotsGraph = testing::kDotShapeClassesGraph;

// Dots large enough for cuBLAS's tiled kernels, in each float dtype and
// i32; a batch broadcast against a batch, 1-D operands, transposed operands.
inline const char* const kLargeDotsGraph =
    R"(graph big(a: f32[128, 256], b: f32[256, 96], d: f64[200], e: f64[200, 40],
                 h: f16[3, 1, 64, 128], k: f16[5, 128, 32], g: bf16[64, 128], w: bf16[128],
                 i: i32[2, 33, 17], j: i32[17, 9], u: f32[1000])
    -> (f32[128, 96], f64[40], f16[3, 5, 64, 32], bf16[64], i32[2, 33, 9], f32[], f32[96, 128]) {
  ab = dot(a, b)
  de = dot(d, e)
  hk = dot(h, k)
  gw = dot(g, w)
  ij = dot(i, j)
  uu = dot(u, u)
  at = transpose(a)
  bt = transpose(b)
  tt = dot(bt, at)
  ts = tanh(tt)
  return ab, de, hk, gw, ij, uu, ts
})";

// A symbolic batch, bound to 0 among others.
inline const char* const kBatchedDotsGraph =
    R"(graph bdot(x: f32[B, 4, 8], w: f32[8, 16], y: f16[B, 2, 8], z: f16[B, 8, 3])
    -> (f32[B, 4, 16], f16[B, 2, 3]) {
  d = dot(x, w)
  t = tanh(d)
  e = dot(y, z)
  return t, e
})";

// Every graph above, for the NVRTC check.
inline std::vector<std::string> executable_test_graphs() {
  return {kFusableGraph,     kRunTwiceGraph,  kGatherGraph,    kArgmaxGraph,     kEmptiesGraph,
          kPassthroughGraph, kSmallDotsGraph, kLargeDotsGraph, kBatchedDotsGraph};
}

}  // namespace stitch::gpu_testing
