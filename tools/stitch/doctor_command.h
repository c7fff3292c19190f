// `stitch doctor` (docs/cli.md, stitch doctor): whether this machine has what
// the CPU back end needs (runtime/cpu/toolchain_check.h), and whether the
// CUDA back end has a device; how to install what is missing.
#pragma once

namespace CLI {
class App;
}

namespace stitch::cli {

class DoctorCommand {
 public:
  explicit DoctorCommand(CLI::App& app);
  bool selected() const;
  // 0 when the CPU back end has everything it needs, 1 otherwise.
  int run() const;

 private:
  CLI::App* command_ = nullptr;
};

}  // namespace stitch::cli
