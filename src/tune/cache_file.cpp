#include "tune/cache_file.h"

#include <fmt/format.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

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
  return s.str();
}

void write_cache_file(const fs::path& p, const std::string& text) {
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  const fs::path tmp = p.string() + fmt::format(".tmp{}", static_cast<long>(::getpid()));
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out) throw UserError(fmt::format("tuning cache: cannot write {}", tmp.string()));
  }
  fs::rename(tmp, p, ec);
  if (ec) throw UserError(fmt::format("tuning cache: cannot rename {} to {}: {}", tmp.string(), p.string(), ec.message()));
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
