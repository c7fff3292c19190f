// What a kernel cache counts (docs/kernel-cache.md, What a user sees): the
// CPU kernel cache and the CUDA cubin cache count their entries alike, and
// STITCH_DUMP=cache prints them in one normative line per compiled graph.
#pragma once

#include <string>

namespace stitch::runtime {

struct EntryCounts {
  int hits = 0;                // a verified entry was loaded from the local directory, no compiler run
  int remote_hits = 0;         // a verified entry came from the remote tier (and was stored locally)
  int misses = 0;              // no entry anywhere: compiled and stored
  int recompiled_corrupt = 0;  // an entry failed its checksum (local or remote): compiled and replaced
  int rejected_unsigned = 0;   // under a secret, an entry whose tag did not verify: compiled and replaced

  // Every compiler run: a miss, or a bad entry replaced.
  int compiles() const { return misses + recompiled_corrupt + rejected_unsigned; }
  EntryCounts operator-(const EntryCounts& before) const;
};

// "cache: hits=N remote_hits=N misses=N\n" (normative; misses counts every
// compile), with " recompiled_corrupt=N" and " rejected_unsigned=N" before
// the newline when they are not zero (they are part of the misses).
std::string cache_dump_line(const EntryCounts& counts);

}  // namespace stitch::runtime
