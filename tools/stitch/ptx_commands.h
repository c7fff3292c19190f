// `stitch ptx ...` (docs/ptx.md, CLI): tools on PTX files. Each subcommand
// is added to the `ptx` group here, so main.cpp only constructs the group
// and runs whichever subcommand was chosen.
#pragma once

#include <string>

#include "ptx/ptx_ast.h"

namespace CLI {
class App;
}

namespace stitch::cli {

// A PTX file parsed; UserError when it cannot be read or parsed.
ptx::Module load_ptx(const std::string& file);

class PtxCommands {
 public:
  // Adds `ptx` and its subcommands to `app`.
  explicit PtxCommands(CLI::App& app);

  // Whether the command line chose `ptx`.
  bool selected() const;
  // Runs the chosen subcommand; the exit status (UserError for bad PTX).
  int run() const;

 private:
  CLI::App* group_ = nullptr;
  CLI::App* print_ = nullptr;
  CLI::App* cfg_ = nullptr;
  std::string file_;
};

}  // namespace stitch::cli
