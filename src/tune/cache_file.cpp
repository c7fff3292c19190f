#include "tune/cache_file.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "runtime/cpu/cache_maintenance.h"
#include "runtime/cpu/kernel_cache.h"
#include "stitch/error.h"

namespace stitch::tune {

namespace fs = std::filesystem;

fs::path tuning_directory(const runtime::cpu::KernelCache& kernels, const fs::path& directory) {
  return directory.empty() ? kernels.directory() / "tuning" : directory;
}

std::string read_cache_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  // A result read is a result used: eviction's recency (docs/kernel-cache.md).
  if (in) runtime::cpu::touch_cache_file(p);
  return s.str();
}

void write_cache_file(const fs::path& p, const std::string& text) {
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  // Named for this process (runtime::cpu::temporary_tag) so that a cleanup
  // pass can tell whether its writer is still alive; unique per thread too.
  std::string scratch = p.string() + ".tmp-" + runtime::cpu::temporary_tag() + "-XXXXXX";
  const int fd = ::mkstemp(scratch.data());
  if (fd < 0) throw UserError(fmt::format("tuning cache: cannot create a temporary file beside {}", p.string()));
  ::close(fd);
  const fs::path tmp = scratch;
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out) {
      fs::remove(tmp, ec);
      throw UserError(fmt::format("tuning cache: cannot write {}", tmp.string()));
    }
  }
  fs::rename(tmp, p, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw UserError(fmt::format("tuning cache: cannot rename {} to {}: {}", tmp.string(), p.string(), ec.message()));
  }
}

std::string measured_target_text(const schedule::RowScheduleTarget& t, const std::string& description) {
  return fmt::format("target {} prefetch {} stream_min_bytes {} transpose_tiles {} l1 {} l2 {}\n", t.name(), t.prefetch,
                     t.stream_min_bytes, t.transpose_tiles, t.cpu_l1_bytes, t.cpu_l2_bytes) +
         description;
}

std::string measured_target_text(const schedule::RowScheduleTarget& t) {
  return measured_target_text(t, runtime::cpu::target_description());
}

}  // namespace stitch::tune
