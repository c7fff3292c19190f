// The STITCH_* environment variables (docs/cli.md, Environment), read and
// checked in one place into one typed struct: every switch Stitch's C++ reads
// comes from environment_options(), and a bad value is a UserError naming the
// variable (exit status 2), wherever it is first needed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stitch {

struct EnvironmentOptions {
  // STITCH_DUMP=STAGE[,STAGE...]: the stages whose state is printed
  // (dump_stage_names() lists the names it takes).
  std::vector<std::string> dump;
  bool tune = false;                      // STITCH_TUNE (0/1)
  int max_fusions = -1;                   // STITCH_MAX_FUSIONS; -1: no cap
  bool dot_epilogues = true;              // STITCH_DOT_EPILOGUES
  bool attention = true;                  // STITCH_ATTENTION
  bool conv_calls = true;                 // STITCH_CONV_CALLS
  bool channels_last = true;              // STITCH_CHANNELS_LAST
  bool prefetch = true;                   // STITCH_PREFETCH
  bool held_rows = true;                  // STITCH_HELD_ROWS
  std::optional<int64_t> stream_min_bytes;  // STITCH_STREAM_MIN_BYTES; unset: the machine's default
  bool huge_pages = true;                 // STITCH_HUGE_PAGES
  bool weave = false;                     // STITCH_WEAVE
  std::string cache_dir;                  // STITCH_CACHE_DIR; empty: the default place
  std::optional<uint64_t> cache_max_bytes;  // STITCH_CACHE_MAX_BYTES; unset: the default bound
  // STITCH_CACHE_KEY, or the contents of STITCH_CACHE_KEY_FILE: the secret
  // that signs kernel-cache entries (runtime/common/entry_signature.h); none: unsigned.
  std::optional<std::string> cache_secret;
  std::string cache_key_file;             // STITCH_CACHE_KEY_FILE, where the secret came from
  // The remote tier (runtime/common/remote_cache.h): its URL (empty: none),
  // the largest entry it takes, whether an unsigned store is trusted, and
  // the timeout of a connection and of each command.
  std::string remote_cache;                          // STITCH_REMOTE_CACHE
  std::optional<uint64_t> remote_cache_max_entry;    // STITCH_REMOTE_CACHE_MAX_ENTRY; unset: 64 MiB
  bool remote_cache_trust = false;                   // STITCH_REMOTE_CACHE_TRUST
  std::optional<int64_t> remote_cache_timeout_ms;    // STITCH_REMOTE_CACHE_TIMEOUT_MS; unset: 2000
  std::string cxx;                        // STITCH_CXX; empty: c++
  std::string cuda_driver;                // STITCH_CUDA_DRIVER: another driver library for Backend::Cuda
  std::string cuda_sim_driver;            // STITCH_CUDA_SIM_DRIVER: the simulated driver of --backend cuda-sim
  // The simulated driver's own (docs/cuda-sim.md): profile target and file,
  // where to keep the PTX it is given, and an injected failure.
  std::string cuda_sim_profile, cuda_sim_profile_out, cuda_sim_ptx_dir, cuda_sim_fail;
  bool test_perturb_check = false;        // STITCH_TEST_PERTURB_CHECK (tests only)

  // Whether STITCH_DUMP asks for `stage` (directly, through `all`, or
  // through an older name: graph, kir, source, lazy).
  bool dumps(std::string_view stage) const;
};

// The options of the environment as it is now: parsed at the first call and
// again whenever one of the variables changed since (a test, or a Python
// session through os.environ). Throws UserError on a bad value.
EnvironmentOptions environment_options();

// Whether the STITCH_DUMP name `requested` asks for `stage`: the name itself,
// "all", or an older name that stands for stages: graph (canonicalize,
// split-reductions, attention, conv), kir (lower), source (emit), lazy (the
// lazy runtime's trace, partitions and fused; docs/lazy.md).
bool dump_stage_matches(std::string_view requested, std::string_view stage);

// Whether a comma-separated STITCH_DUMP-style list asks for `stage`
// (`stitch::CompileOptions::dump` takes the same list).
bool dump_list_matches(std::string_view list, std::string_view stage);

// Every name STITCH_DUMP takes: the stages and the older aliases.
const std::vector<std::string_view>& dump_stage_names();

// "4096", "4K", "3MiB", "2G" (K, M, G, T: powers of 1024) -> bytes; else a
// UserError naming `variable`.
uint64_t parse_byte_count(std::string_view text, std::string_view variable);

}  // namespace stitch
