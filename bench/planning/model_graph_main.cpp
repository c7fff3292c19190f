// Prints a model-shaped random graph (tests/support/model_graph.h) as .stitch
// text, for timing the planners on it (bench/planning/time_planners.py).
//
//   stitch_model_graph SEED NODES [--run-sized] > model.stitch
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "model_graph.h"
#include "stitch/text.h"

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4 || (argc == 4 && std::string(argv[3]) != "--run-sized")) {
    std::fprintf(stderr, "usage: stitch_model_graph SEED NODES [--run-sized]\n");
    return 2;
  }
  try {
    const unsigned long long seed = std::stoull(argv[1]);
    const int nodes = std::stoi(argv[2]);
    if (nodes < 1) throw std::invalid_argument("NODES must be positive");
    const auto options = stitch::testing::model_graph_options(seed, nodes, nodes, argc == 4);
    std::fputs(stitch::print_graph(stitch::testing::model_graph(options)).c_str(), stdout);
    std::fprintf(stderr, "%s\n", stitch::testing::describe(options).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stitch_model_graph: %s\n", e.what());
    return 2;
  }
  return 0;
}
