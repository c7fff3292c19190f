// `stitch ptx weave` (docs/goptx.md, CLI): weaves two kernels of PTX files
// into one .entry (GoPTX) and writes the woven module.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace stitch::cli {

class PtxWeaveCommand {
 public:
  // Adds `weave` to the `ptx` group.
  explicit PtxWeaveCommand(CLI::App& ptx_group);

  // Whether the command line chose `ptx weave`.
  bool selected() const;
  // Runs it: the exit status; UserError (status 2) for bad PTX, a kernel
  // that is missing or ambiguous, or a pair that cannot be woven, in which
  // case nothing is written.
  int run() const;

 private:
  CLI::App* command_ = nullptr;
  std::string file_a_;
  std::string file_b_;
  std::string kernel_a_;
  std::string kernel_b_;
  std::string strategy_ = "latency";
  std::string name_;
  std::string output_;
  std::string grid_a_;
  std::string grid_b_;
  std::string arch_;
  int slice_ = 24;
  bool report_ = false;
};

}  // namespace stitch::cli
