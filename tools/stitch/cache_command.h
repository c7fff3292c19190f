// `stitch cache info|clear` (docs/cli.md, stitch cache; docs/kernel-cache.md):
// what the kernel cache directory holds, and emptying it while other
// processes may be using it.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace stitch::cli {

class CacheCommand {
 public:
  // Adds the `cache` group with `info` and `clear`.
  explicit CacheCommand(CLI::App& app);

  // Whether the command line chose `cache ...`.
  bool selected() const;
  // Runs it: the exit status; UserError (status 2) for a bad directory or a
  // bad $STITCH_CACHE_MAX_BYTES.
  int run() const;

 private:
  CLI::App* group_ = nullptr;
  CLI::App* info_ = nullptr;
  CLI::App* clear_ = nullptr;
  std::string directory_;
};

}  // namespace stitch::cli
