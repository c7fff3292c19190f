// `stitch package` (docs/packages.md, docs/cli.md): a graph, its plan and its
// compiled kernels for each listed target, in one file that `stitch run`,
// Executable::load and stitch.load_package run with no compiler present.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace stitch::cli {

class PackageCommand {
 public:
  explicit PackageCommand(CLI::App& app);
  bool selected() const;
  int run() const;

 private:
  CLI::App* command_ = nullptr;
  std::string file_, graph_name_, backend_ = "cpu", arch_, planner_ = "stitch", output_;
  bool f32_intermediates_ = false;
};

}  // namespace stitch::cli
