// `stitch ptx run` (docs/ptx-interpreter.md, CLI): runs one kernel of a PTX
// file on the SIMT interpreter, with buffers from .npy files and scalars
// from the command line, and writes the buffers back as .npy files.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace stitch::cli {

// "X[,Y[,Z]]" with positive parts (--grid, --block); UserError naming `option`.
std::array<uint32_t, 3> parse_dims3(const std::string& text, const char* option);

class PtxRunCommand {
 public:
  // Adds `run` to the `ptx` group.
  explicit PtxRunCommand(CLI::App& ptx_group);

  // Whether the command line chose `ptx run`.
  bool selected() const;
  // Runs it: the exit status; UserError (status 2) for bad PTX or arguments
  // and for a failing run, in which case nothing is written.
  int run() const;

 private:
  CLI::App* command_ = nullptr;
  std::string file_;
  std::string kernel_;
  std::string grid_;
  std::string block_;
  uint32_t dynamic_shared_ = 0;
  std::vector<std::string> args_;
  std::string output_dir_;
  std::string profile_;
  uint64_t cta_budget_ = 192;
};

}  // namespace stitch::cli
