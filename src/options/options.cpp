#include "options/options.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <mutex>

#include "stitch/error.h"

namespace stitch {
namespace {

// Every variable environment_options() reads, in the order of the raw values
// it compares to see whether anything changed.
constexpr std::array kVariables = {
    "STITCH_DUMP",          "STITCH_TUNE",          "STITCH_MAX_FUSIONS",       "STITCH_DOT_EPILOGUES",
    "STITCH_ATTENTION",     "STITCH_CONV_CALLS",    "STITCH_CHANNELS_LAST",     "STITCH_PREFETCH",
    "STITCH_STREAM_MIN_BYTES", "STITCH_HUGE_PAGES", "STITCH_WEAVE",             "STITCH_CACHE_DIR",
    "STITCH_CACHE_MAX_BYTES", "STITCH_CXX",         "STITCH_CUDA_DRIVER",       "STITCH_CUDA_SIM_DRIVER",
    "STITCH_CUDA_SIM_PROFILE", "STITCH_CUDA_SIM_PROFILE_OUT", "STITCH_CUDA_SIM_PTX_DIR", "STITCH_CUDA_SIM_FAIL",
    "STITCH_TEST_PERTURB_CHECK", "STITCH_HELD_ROWS", "STITCH_CACHE_KEY", "STITCH_CACHE_KEY_FILE",
    "STITCH_REMOTE_CACHE", "STITCH_REMOTE_CACHE_MAX_ENTRY", "STITCH_REMOTE_CACHE_TRUST", "STITCH_REMOTE_CACHE_TIMEOUT_MS",
};
using RawValues = std::array<std::optional<std::string>, kVariables.size()>;

RawValues raw_values() {
  RawValues raw;
  for (size_t i = 0; i < kVariables.size(); ++i) {
    if (const char* v = std::getenv(kVariables[i])) raw[i] = v;
  }
  return raw;
}

// The value of `name` in `raw`, or "" when unset.
const std::string& value(const RawValues& raw, std::string_view name) {
  static const std::string unset;
  for (size_t i = 0; i < kVariables.size(); ++i) {
    if (kVariables[i] == name) return raw[i] ? *raw[i] : unset;
  }
  fail_internal(fmt::format("environment_options: {} is not read", name), __FILE__, __LINE__);
}

// Unset or empty: the default; "0" off, "1" on; anything else is bad input.
bool on_off(const RawValues& raw, std::string_view name, bool default_value) {
  const std::string& v = value(raw, name);
  if (v.empty()) return default_value;
  if (v != "0" && v != "1") throw UserError(fmt::format("{}={}: not 0 or 1", name, v));
  return v == "1";
}

// STITCH_CACHE_KEY itself, or the contents of STITCH_CACHE_KEY_FILE (less one
// trailing newline, as `echo` writes it); both set, an unreadable or an empty
// file is bad input.
std::optional<std::string> cache_secret(const RawValues& raw) {
  const std::string& key = value(raw, "STITCH_CACHE_KEY");
  const std::string& file = value(raw, "STITCH_CACHE_KEY_FILE");
  if (!key.empty() && !file.empty()) {
    throw UserError("STITCH_CACHE_KEY and STITCH_CACHE_KEY_FILE are both set: set one");
  }
  if (!key.empty()) return key;
  if (file.empty()) return std::nullopt;
  std::ifstream in(file, std::ios::binary);
  if (!in) throw UserError(fmt::format("STITCH_CACHE_KEY_FILE={}: cannot be read", file));
  std::stringstream bytes;
  bytes << in.rdbuf();
  std::string secret = bytes.str();
  if (!secret.empty() && secret.back() == '\n') secret.pop_back();
  if (secret.empty()) throw UserError(fmt::format("STITCH_CACHE_KEY_FILE={}: holds no secret", file));
  return secret;
}

std::optional<int64_t> integer(const RawValues& raw, std::string_view name, int64_t low, int64_t high,
                               std::string_view what) {
  const std::string& v = value(raw, name);
  if (v.empty()) return std::nullopt;
  int64_t n = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || n < low || n > high) {
    throw UserError(fmt::format("{}={}: not {}", name, v, what));
  }
  return n;
}

std::vector<std::string> dump_list(const std::string& text) {
  std::vector<std::string> stages;
  const std::vector<std::string_view>& known = dump_stage_names();
  for (size_t start = 0; start <= text.size() && !text.empty();) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string name = text.substr(start, end - start);
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string names;
      for (std::string_view k : known) names += (names.empty() ? "" : ", ") + std::string(k);
      throw UserError(fmt::format("STITCH_DUMP={}: no stage '{}' (the stages: {})", text, name, names));
    }
    stages.push_back(name);
    start = end + 1;
  }
  return stages;
}

EnvironmentOptions parse(const RawValues& raw) {
  EnvironmentOptions o;
  o.dump = dump_list(value(raw, "STITCH_DUMP"));
  // STITCH_TUNE: "0", "1" or unset, as the other switches.
  o.tune = on_off(raw, "STITCH_TUNE", false);
  o.max_fusions = static_cast<int>(
      integer(raw, "STITCH_MAX_FUSIONS", 0, 1'000'000'000, "a non-negative integer").value_or(-1));
  o.dot_epilogues = on_off(raw, "STITCH_DOT_EPILOGUES", true);
  o.attention = on_off(raw, "STITCH_ATTENTION", true);
  o.conv_calls = on_off(raw, "STITCH_CONV_CALLS", true);
  o.channels_last = on_off(raw, "STITCH_CHANNELS_LAST", true);
  o.prefetch = on_off(raw, "STITCH_PREFETCH", true);
  o.held_rows = on_off(raw, "STITCH_HELD_ROWS", true);
  o.stream_min_bytes = integer(raw, "STITCH_STREAM_MIN_BYTES", INT64_MIN, INT64_MAX, "an integer");
  o.huge_pages = on_off(raw, "STITCH_HUGE_PAGES", true);
  o.weave = on_off(raw, "STITCH_WEAVE", false);
  o.cache_dir = value(raw, "STITCH_CACHE_DIR");
  if (const std::string& bound = value(raw, "STITCH_CACHE_MAX_BYTES"); !bound.empty()) {
    o.cache_max_bytes = parse_byte_count(bound, "STITCH_CACHE_MAX_BYTES");
  }
  o.cache_secret = cache_secret(raw);
  o.cache_key_file = value(raw, "STITCH_CACHE_KEY_FILE");
  o.remote_cache = value(raw, "STITCH_REMOTE_CACHE");
  if (const std::string& bound = value(raw, "STITCH_REMOTE_CACHE_MAX_ENTRY"); !bound.empty()) {
    o.remote_cache_max_entry = parse_byte_count(bound, "STITCH_REMOTE_CACHE_MAX_ENTRY");
  }
  o.remote_cache_trust = on_off(raw, "STITCH_REMOTE_CACHE_TRUST", false);
  o.remote_cache_timeout_ms = integer(raw, "STITCH_REMOTE_CACHE_TIMEOUT_MS", 1, 600'000, "a number of milliseconds from 1 to 600000");
  o.cxx = value(raw, "STITCH_CXX");
  o.cuda_driver = value(raw, "STITCH_CUDA_DRIVER");
  o.cuda_sim_driver = value(raw, "STITCH_CUDA_SIM_DRIVER");
  o.cuda_sim_profile = value(raw, "STITCH_CUDA_SIM_PROFILE");
  o.cuda_sim_profile_out = value(raw, "STITCH_CUDA_SIM_PROFILE_OUT");
  o.cuda_sim_ptx_dir = value(raw, "STITCH_CUDA_SIM_PTX_DIR");
  o.cuda_sim_fail = value(raw, "STITCH_CUDA_SIM_FAIL");
  o.test_perturb_check = on_off(raw, "STITCH_TEST_PERTURB_CHECK", false);
  return o;
}

}  // namespace

bool dump_stage_matches(std::string_view requested, std::string_view stage) {
  if (requested == "all" || requested == stage) return true;
  if (requested == "graph") {
    return stage == "canonicalize" || stage == "split-reductions" || stage == "attention" || stage == "conv" ||
           stage == "widen-floats";
  }
  if (requested == "kir") return stage == "lower";
  if (requested == "source") return stage == "emit";
  if (requested == "lazy") return stage == "trace" || stage == "partitions" || stage == "fused";
  return false;
}

bool EnvironmentOptions::dumps(std::string_view stage) const {
  return std::any_of(dump.begin(), dump.end(), [&](const std::string& s) { return dump_stage_matches(s, stage); });
}

EnvironmentOptions environment_options() {
  static std::mutex mutex;
  static RawValues parsed_from;
  static std::optional<EnvironmentOptions> parsed;
  RawValues raw = raw_values();
  const std::lock_guard<std::mutex> lock(mutex);
  if (!parsed || raw != parsed_from) {
    parsed = parse(raw);  // throws before anything is kept: a bad value is reported on every call
    parsed_from = std::move(raw);
  }
  return *parsed;
}

bool dump_list_matches(std::string_view list, std::string_view stage) {
  for (size_t start = 0; start <= list.size();) {
    size_t end = list.find(',', start);
    if (end == std::string_view::npos) end = list.size();
    if (dump_stage_matches(list.substr(start, end - start), stage)) return true;
    start = end + 1;
  }
  return false;
}

const std::vector<std::string_view>& dump_stage_names() {
  // The pipeline's stages (pipeline/pipeline.cpp), then the other
  // dumps (the kernel cache, buffers, tuning, weaving, the report, lazy
  // arrays), then the older names and `all`.
  static const std::vector<std::string_view> names = {
      "canonicalize", "split-reductions", "attention", "conv", "widen-floats", "plan", "schedule", "lower", "emit", "compile",
      "cache", "buffers", "tune", "weave", "report", "trace", "partitions", "fused",
      "graph", "kir", "source", "lazy", "all"};
  return names;
}

uint64_t parse_byte_count(std::string_view text, std::string_view variable) {
  const auto bad = [&] {
    return UserError(fmt::format(
        "{}={}: expected a byte count (digits, optionally followed by K, M, G or T; 0 for no bound)", variable, text));
  };
  uint64_t count = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), count);
  if (ec != std::errc() || end == text.data()) throw bad();
  std::string_view suffix(end, static_cast<size_t>(text.data() + text.size() - end));
  int shift = 0;
  if (!suffix.empty()) {
    const std::string_view units = "KMGT";
    const size_t unit = units.find(suffix.front());
    const std::string_view rest = suffix.substr(1);
    if (unit == std::string_view::npos || !(rest.empty() || rest == "iB")) throw bad();
    shift = 10 * static_cast<int>(unit + 1);
  }
  if (count > (uint64_t{1} << 63) >> shift) throw bad();
  return count << shift;
}

}  // namespace stitch
