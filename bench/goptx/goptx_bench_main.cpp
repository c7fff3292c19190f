// stitch_goptx_bench (docs/goptx-bench.md): GoPTX's comparison of two
// kernels run sequentially, concurrently, packed and woven.
//
//   stitch_goptx_bench --results goptx-2026-11-28-h100            # a GPU, CUDA events
//   stitch_goptx_bench --driver libstitch_cuda_sim.so --scale small --repeats 1 ...  # the simulated driver
//   stitch_goptx_bench --estimates --results goptx-estimates-...   # no GPU: static estimates
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "goptx_bench.h"
#include "stitch/error.h"

int main(int argc, char** argv) {
  using namespace stitch::bench::goptx;
  CLI::App app{"GoPTX's comparison: sequential, concurrent, packed and woven kernel pairs"};
  RunOptions options;
  bool estimates = false;
  std::string scale = "full";
  options.ptx_dir = STITCH_GOPTX_PTX_DIR;
  options.out_dir = std::string(STITCH_SOURCE_DIR) + "/bench/results";
#ifdef STITCH_PTXAS
  options.ptxas = STITCH_PTXAS;
#endif
  app.add_flag("--estimates", estimates, "static estimates instead of measurements (no GPU needed)");
  app.add_option("--driver", options.driver, "the CUDA driver library (default libcuda.so.1; the simulated "
                                             "driver's times are not GPU times)");
  app.add_option("--scale", scale, "full (millions of elements, for a GPU) or small (for the interpreter)")
      ->check(CLI::IsMember({"full", "small"}));
  app.add_option("--warmup", options.warmup, "untimed runs before the timed ones")->check(CLI::NonNegativeNumber);
  app.add_option("--repeats", options.repeats, "timed runs per variant")->check(CLI::PositiveNumber);
  app.add_option("--results", options.results, "results name: writes <out-dir>/<name>.json and .md")->required();
  app.add_option("--out-dir", options.out_dir, "where the results go (default bench/results)");
  app.add_option("--ptx-dir", options.ptx_dir, "the kernels' PTX (built with the target)");
  app.add_option("--ptxas", options.ptxas, "ptxas, for the estimates");
  app.add_option("--pair", options.only, "run only this pair");
  CLI11_PARSE(app, argc, argv);
  options.scale = scale == "small" ? Scale::Small : Scale::Full;
  try {
    return estimates ? run_estimates(options) : run_measurements(options);
  } catch (const stitch::UserError& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  }
}
