// A graph in the text format (docs/text-format.md), compiled for the CPU by
// two planners: `xla` (XLA's fusion rules) and `stitch` (which also fuses
// across reductions), run on the same inputs and compared.
//   text_graph                 the graph embedded below
//   text_graph FILE [GRAPH]    the graph GRAPH (default: the first) of a .stitch file
// Exits 1 when the two results differ by more than kTolerance, 2 on bad input.
#include <stitch/stitch.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {

const char* const kText = R"(
# A residual add, then softmax over each row: xla makes several kernels of it,
# stitch one.
graph residual_softmax(x: f32[256, 1000], r: f32[256, 1000]) -> (f32[256, 1000]) {
  s = add(x, r)
  y = softmax(s, axis=-1)
  return y
}
)";

// Both planners' kernels sum rows in f32, in different orders.
constexpr double kTolerance = 1e-4;
// The extent given to each symbolic dim of a graph read from a file.
constexpr int64_t kSymbolExtent = 16;

std::vector<stitch::Tensor> random_inputs(const stitch::Graph& g) {
  stitch::SymbolBindings symbols;
  std::vector<stitch::Tensor> inputs;
  for (size_t i = 0; i < g.params().size(); ++i) {
    const stitch::TensorType& type = g.type(g.params()[i]);
    for (const stitch::Dim& d : type.shape) {
      if (d.is_symbolic()) symbols[d.name()] = kSymbolExtent;
    }
    inputs.emplace_back(type.dtype, stitch::concrete_shape(type.shape, symbols));
    stitch::fill_random(inputs.back(), 7 + i);
  }
  return inputs;
}

// The largest |a - b| / (1 + |b|) over every output; a NaN sticks.
double max_difference(const std::vector<stitch::Tensor>& a, const std::vector<stitch::Tensor>& b) {
  double worst = 0;
  for (size_t t = 0; t < a.size(); ++t) {
    for (int64_t i = 0; i < a[t].numel(); ++i) {
      const double x = a[t].get_f64(i), y = b[t].get_f64(i);
      if (x == y) continue;  // equal infinities too
      const double d = std::abs(x - y) / (1 + std::abs(y));
      if (!(d <= worst)) worst = d;
    }
  }
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const stitch::Module module = argc > 1 ? stitch::parse_file(argv[1]) : stitch::parse_module(kText, "<embedded>");
    if (module.graphs.empty()) throw stitch::UserError("no graph defined");
    const stitch::Graph* graph = argc > 2 ? module.find(argv[2]) : &module.graphs.front();
    if (!graph) throw stitch::UserError(std::string(argv[1]) + ": no graph named '" + argv[2] + "'");
    const std::vector<stitch::Tensor> inputs = random_inputs(*graph);

    std::vector<std::vector<stitch::Tensor>> results;
    for (const char* planner : {"xla", "stitch"}) {
      stitch::CompileOptions options;
      options.planner = planner;
      stitch::Executable exe = stitch::Executable::compile(*graph, options);
      results.push_back(exe.run(inputs));
      std::printf("%s: planner %s, %d kernel(s)\n", graph->name().c_str(), planner, exe.kernel_count());
    }
    const double difference = max_difference(results[1], results[0]);
    std::printf("max relative difference stitch vs xla: %.3g (tolerance %.0e)\n", difference, kTolerance);
    return difference <= kTolerance ? 0 : 1;
  } catch (const stitch::UserError& e) {
    std::fprintf(stderr, "%s\n", e.formatted().c_str());
    return 2;
  }
}
