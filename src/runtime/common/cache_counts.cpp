#include "runtime/common/cache_counts.h"

#include <fmt/format.h>

namespace stitch::runtime {

EntryCounts EntryCounts::operator-(const EntryCounts& before) const {
  EntryCounts d;
  d.hits = hits - before.hits;
  d.remote_hits = remote_hits - before.remote_hits;
  d.misses = misses - before.misses;
  d.recompiled_corrupt = recompiled_corrupt - before.recompiled_corrupt;
  d.rejected_unsigned = rejected_unsigned - before.rejected_unsigned;
  return d;
}

std::string cache_dump_line(const EntryCounts& c) {
  std::string line = fmt::format("cache: hits={} remote_hits={} misses={}", c.hits, c.remote_hits, c.compiles());
  if (c.recompiled_corrupt) line += fmt::format(" recompiled_corrupt={}", c.recompiled_corrupt);
  if (c.rejected_unsigned) line += fmt::format(" rejected_unsigned={}", c.rejected_unsigned);
  return line + "\n";
}

}  // namespace stitch::runtime
