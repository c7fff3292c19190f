// A directory of a test's own (tests/support).
#pragma once

#include <filesystem>
#include <string>

namespace stitch::testing {

// A fresh directory under the system temporary directory, removed with
// everything in it when the object goes (a kernel cache of the
// test's own, so a run never hits kernels an earlier build compiled); throws
// std::runtime_error when it cannot be made.
class ScratchDirectory {
 public:
  explicit ScratchDirectory(const std::string& prefix);
  ~ScratchDirectory();
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace stitch::testing
