#include "tune/schedule_tuner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>
#include <sstream>

#include "ir/structural_key.h"
#include "pipeline/schedule_groups.h"
#include "options/options.h"
#include "stitch/error.h"
#include "tune/cache_file.h"
#include "tune/group_graph.h"
#include "tune/measure.h"

namespace stitch::tune {

namespace fs = std::filesystem;
using schedule::GroupSchedule;

namespace {

// The reason a tuned schedule gives, the same whether measured now or read
// from the cache: the lowering writes it into the kernel's source as a
// comment, and a different text would miss the kernel cache. The times are
// in the report (STITCH_DUMP=tune) and the cache entry.
constexpr const char* kTunedReason = "tuned: the fastest candidate measured on this machine";

// Bumped when what a measurement means changes (the timing method, the file format).
constexpr const char* kFormat = "stitch-tuning-v1";

// A cache entry: what it was measured for, and the choice.
struct Entry {
  std::string fingerprint;
  std::string choice;                                // a candidate's key()
  std::vector<std::pair<std::string, double>> times;  // candidate key() -> seconds
};

std::string print_entry(const Entry& e) {
  std::string out = std::string(kFormat) + "\n";
  out += "fingerprint " + e.fingerprint + "\n";
  out += "choice " + e.choice + "\n";
  for (const auto& [key, seconds] : e.times) out += fmt::format("time {:.9g} {}\n", seconds, key);
  return out;
}

// nullopt when the text is not an entry (corrupt).
std::optional<Entry> parse_entry(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != kFormat) return std::nullopt;
  Entry e;
  bool fingerprint = false, choice = false;
  while (std::getline(in, line)) {
    if (line.rfind("fingerprint ", 0) == 0) {
      e.fingerprint = line.substr(12);
      fingerprint = true;
    } else if (line.rfind("choice ", 0) == 0) {
      e.choice = line.substr(7);
      choice = true;
    } else if (line.rfind("time ", 0) == 0) {
      const size_t space = line.find(' ', 5);
      if (space == std::string::npos) return std::nullopt;
      char* end = nullptr;
      const std::string number = line.substr(5, space - 5);
      const double seconds = std::strtod(number.c_str(), &end);
      if (end == number.c_str() || *end != '\0') return std::nullopt;
      e.times.emplace_back(line.substr(space + 1), seconds);
    } else {
      return std::nullopt;
    }
  }
  if (!fingerprint || !choice || e.fingerprint.empty() || e.choice.empty()) return std::nullopt;
  return e;
}

// One group to measure: its graph, candidates and where its choice goes.
struct Pending {
  int group = -1;
  // Later groups of the same structure (the same cache entry): they take
  // this group's choice, measured once.
  std::vector<int> alike;
  GroupGraph sub;
  std::vector<GroupSchedule> candidates;
  fs::path path;
  std::string fingerprint;
};

}  // namespace

Measurer cpu_measurer(runtime::cpu::KernelCache& kernels) {
  Measurer m;
  m.machine = schedule::RowScheduleTarget::Machine::Cpu;
  m.description = runtime::cpu::target_description();
  // The compiler and machine the kernels are measured with.
  m.compiler = kernels.key("", runtime::cpu::CompilerOptions{});
  m.measure = [&kernels](const std::vector<Trial>& trials, const schedule::RowScheduleTarget& target,
                         const MeasureOptions& options) { return measure_trials(kernels, trials, target, options); };
  return m;
}

ScheduleTuner::ScheduleTuner(runtime::cpu::KernelCache& kernels, TuneOptions options)
    : ScheduleTuner(cpu_measurer(kernels), tuning_directory(kernels, options.directory), options) {}

ScheduleTuner::ScheduleTuner(Measurer measurer, std::filesystem::path directory, TuneOptions options)
    : measurer_(std::move(measurer)),
      options_(std::move(options)),
      directory_(options_.directory.empty() ? std::move(directory) : options_.directory) {}

std::string ScheduleTuner::key() const { return "tuned from " + directory_.string(); }

fs::path ScheduleTuner::entry_path(const Graph& group_graph, const schedule::RowScheduleTarget& target) const {
  const std::string key = structural_key(group_graph) + measured_target_text(target, measurer_.description);
  return directory_ / (runtime::cpu::sha256_hex(key) + ".tune");
}

std::vector<std::optional<GroupSchedule>> ScheduleTuner::choose(const Graph& g, const FusionPlan& plan,
                                                               const schedule::RowScheduleTarget& target) {
  STITCH_ASSERT(target.machine == measurer_.machine, "the tuner measures on the machine it compiles for");
  std::vector<std::optional<GroupSchedule>> out(plan.groups.size());
  // A new compiler makes every entry stale.
  const std::string& compiler = measurer_.compiler;
  std::vector<Pending> pending;
  // Each group's candidates in the plan's own numbering; a choice is taken
  // from them by its position among the group graph's.
  std::vector<std::vector<GroupSchedule>> own(plan.groups.size());
  for (size_t i = 0; i < plan.groups.size(); ++i) {
    const FusionGroup& group = plan.groups[i];
    own[i] = pipeline::schedule_candidates(g, group, target);
    const std::vector<GroupSchedule>& candidates = own[i];
    if (candidates.size() < 2) continue;
    ++stats_.groups;
    Pending p;
    p.group = static_cast<int>(i);
    p.sub = group_graph(g, group, "tune");
    if (!all_static(p.sub.graph)) {
      ++stats_.untunable;
      report_ += fmt::format("group {}: not tuned: symbolic shapes\n", i);
      continue;
    }
    // The candidates of the group in its own graph (node numbers differ).
    p.candidates = pipeline::schedule_candidates(p.sub.graph, p.sub.plan.groups[0], target);
    STITCH_ASSERT(p.candidates.size() == candidates.size(), "a group and its own graph have the same candidates");
    p.path = entry_path(p.sub.graph, target);
    std::string fingerprint = std::string(kFormat) + "\n" + compiler + "\n";
    for (const GroupSchedule& c : p.candidates) fingerprint += c.key() + "\n";
    p.fingerprint = runtime::cpu::sha256_hex(fingerprint);
    std::error_code ec;
    if (fs::exists(p.path, ec)) {
      const std::optional<Entry> e = parse_entry(read_cache_file(p.path));
      if (!e) {
        ++stats_.corrupt;
        report_ += fmt::format("group {}: tuning cache entry {} is corrupt: measured again\n", i, p.path.string());
      } else if (e->fingerprint != p.fingerprint) {
        ++stats_.stale;
        report_ += fmt::format("group {}: tuning cache entry is stale (other candidates or compiler): measured again\n", i);
      } else {
        // Keys are in the group graph's numbering; the same position among
        // the plan's own candidates is the choice.
        auto it = std::find_if(p.candidates.begin(), p.candidates.end(),
                               [&](const GroupSchedule& c) { return c.key() == e->choice; });
        if (it != p.candidates.end()) {
          ++stats_.hits;
          const size_t index = static_cast<size_t>(it - p.candidates.begin());
          GroupSchedule chosen = candidates[index];
          chosen.reason = kTunedReason;
          if (index != 0) ++stats_.changed;
          report_ += fmt::format("group {}: {} (cached)\n", i, chosen.key());
          out[i] = std::move(chosen);
          continue;
        }
        ++stats_.corrupt;
        report_ += fmt::format("group {}: tuning cache entry {} names no candidate: measured again\n", i, p.path.string());
      }
    }
    auto same = std::find_if(pending.begin(), pending.end(), [&](const Pending& q) { return q.path == p.path; });
    if (same != pending.end()) {
      same->alike.push_back(p.group);
    } else {
      pending.push_back(std::move(p));
    }
  }
  if (pending.empty()) return out;

  // Every candidate of every pending group, in one translation unit.
  std::vector<Trial> trials;
  for (const Pending& p : pending) {
    for (const GroupSchedule& c : p.candidates) trials.push_back({&p.sub, c});
  }
  const std::vector<TrialResult> results = measurer_.measure(trials, target, options_.measure);

  size_t t = 0;
  for (Pending& p : pending) {
    Entry entry;
    entry.fingerprint = p.fingerprint;
    std::vector<double> seconds(p.candidates.size(), std::numeric_limits<double>::infinity());
    std::string not_measured;
    for (size_t j = 0; j < p.candidates.size(); ++j, ++t) {
      const TrialResult& r = results[t];
      if (!r.problem.empty()) {
        if (j == 0) not_measured = r.problem;
        if (r.mismatch) {
          if (j > 0) ++stats_.rejected;
          report_ += fmt::format("group {}: candidate {} {}\n", p.group, p.candidates[j].key(), r.problem);
        }
        continue;
      }
      seconds[j] = options_.adjust_seconds ? options_.adjust_seconds(static_cast<int>(j), r.seconds) : r.seconds;
      entry.times.emplace_back(p.candidates[j].key(), seconds[j]);
    }
    if (!not_measured.empty()) {
      ++stats_.untunable;
      report_ += fmt::format("group {}: not tuned: its default schedule could not be measured: {}\n", p.group,
                             not_measured);
      continue;
    }
    ++stats_.measured;
    size_t best = 0;
    for (size_t j = 1; j < seconds.size(); ++j) {
      if (seconds[j] < seconds[best]) best = j;
    }
    if (best != 0 && seconds[best] >= seconds[0] * (1 - options_.margin)) best = 0;
    entry.choice = p.candidates[best].key();
    write_cache_file(p.path, print_entry(entry));
    std::string line = fmt::format("group {}:", p.group);
    for (size_t j = 0; j < seconds.size(); ++j) {
      line += fmt::format(" {}{} {:.4g} ms;", j == best ? "*" : "", p.candidates[j].key(), seconds[j] * 1e3);
    }
    report_ += line + "\n";
    // The choice among each group's own candidates (same order).
    std::vector<int> groups{p.group};
    groups.insert(groups.end(), p.alike.begin(), p.alike.end());
    for (int gi : groups) {
      GroupSchedule chosen = own[static_cast<size_t>(gi)][best];
      chosen.reason = kTunedReason;
      if (best != 0) ++stats_.changed;
      if (gi != p.group) ++stats_.measured;
      if (gi != p.group) report_ += fmt::format("group {}: as group {} (the same structure)\n", gi, p.group);
      out[static_cast<size_t>(gi)] = std::move(chosen);
    }
  }
  return out;
}

bool tuning_requested_by_environment() {
  return environment_options().tune;
}

}  // namespace stitch::tune
