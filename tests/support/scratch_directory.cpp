#include "scratch_directory.h"

#include <stdlib.h>

#include <stdexcept>
#include <system_error>

namespace stitch::testing {

ScratchDirectory::ScratchDirectory(const std::string& prefix) {
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (!mkdtemp(pattern.data())) throw std::runtime_error("cannot create a directory like " + pattern);
  path_ = pattern;
}

ScratchDirectory::~ScratchDirectory() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace stitch::testing
