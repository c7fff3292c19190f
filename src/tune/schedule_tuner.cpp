#include "tune/schedule_tuner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include <unistd.h>

#include "codegen/cpu/cpp_emitter.h"
#include "ir/structural_key.h"
#include "lower/lower_plan.h"
#include "lower/schedule_groups.h"
#include "stitch/error.h"
#include "stitch/interpreter.h"
#include "stitch/tensor.h"
#include "tensor/compare.h"
#include "tune/group_graph.h"

namespace stitch::tune {

namespace fs = std::filesystem;
using schedule::GroupSchedule;

namespace {

// Bumped when what a measurement means changes (the timing method, the file format).
constexpr const char* kFormat = "stitch-tuning-v1";

// The target fields that change which candidates exist or what they compile to.
std::string target_text(const schedule::RowScheduleTarget& t) {
  return fmt::format("target {} prefetch {} stream_min_bytes {} transpose_tiles {} l1 {} l2 {}\n", t.name(), t.prefetch,
                     t.stream_min_bytes, t.transpose_tiles, t.cpu_l1_bytes, t.cpu_l2_bytes);
}

bool all_static(const Graph& g) {
  for (ValueId p : g.params()) {
    for (const Dim& d : g.type(p).shape) {
      if (!d.is_static()) return false;
    }
  }
  return true;
}

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

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Written to a temporary name and renamed, so a reader never sees half a file.
void write_file(const fs::path& p, const std::string& text) {
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

// One group to measure: its graph, candidates and where its choice goes.
struct Pending {
  int group = -1;
  GroupGraph sub;
  std::vector<GroupSchedule> candidates;
  std::vector<std::string> kernel_names;  // one per candidate
  std::vector<lower::LoweredGroup> lowered;
  fs::path path;
  std::string fingerprint;
};

double run_seconds(runtime::cpu::KernelFunction f, std::vector<void*>& buffers, const TuneOptions& options) {
  const int64_t* no_scalars = nullptr;
  f(buffers.data(), no_scalars);  // warm-up: pages touched, caches filled
  double best = std::numeric_limits<double>::infinity(), total = 0;
  for (int runs = 0; runs < options.min_runs || total < options.min_seconds; ++runs) {
    const auto start = std::chrono::steady_clock::now();
    f(buffers.data(), no_scalars);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::min(best, s);
    total += s;
    if (runs > 1000) break;
  }
  return best;
}

}  // namespace

ScheduleTuner::ScheduleTuner(runtime::cpu::KernelCache& kernels, TuneOptions options)
    : kernels_(kernels), options_(std::move(options)) {
  directory_ = options_.directory.empty() ? kernels_.directory() / "tuning" : options_.directory;
}

std::string ScheduleTuner::key() const { return "tuned from " + directory_.string(); }

fs::path ScheduleTuner::entry_path(const Graph& group_graph, const schedule::RowScheduleTarget& target) const {
  const std::string key = structural_key(group_graph) + target_text(target) + runtime::cpu::target_description();
  return directory_ / (runtime::cpu::sha256_hex(key) + ".tune");
}

std::vector<std::optional<GroupSchedule>> ScheduleTuner::choose(const Graph& g, const FusionPlan& plan,
                                                               const schedule::RowScheduleTarget& target) {
  STITCH_ASSERT(target.machine == schedule::RowScheduleTarget::Machine::Cpu, "the tuner measures on the CPU");
  std::vector<std::optional<GroupSchedule>> out(plan.groups.size());
  // The compiler and machine the kernels are measured with: a new compiler
  // makes every entry stale.
  const std::string compiler = kernels_.key("", runtime::cpu::CompilerOptions{});
  std::vector<Pending> pending;
  for (size_t i = 0; i < plan.groups.size(); ++i) {
    const FusionGroup& group = plan.groups[i];
    std::vector<GroupSchedule> candidates = lower::schedule_candidates(g, group, target);
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
    p.candidates = lower::schedule_candidates(p.sub.graph, p.sub.plan.groups[0], target);
    STITCH_ASSERT(p.candidates.size() == candidates.size(), "a group and its own graph have the same candidates");
    p.path = entry_path(p.sub.graph, target);
    std::string fingerprint = std::string(kFormat) + "\n" + compiler + "\n";
    for (const GroupSchedule& c : p.candidates) fingerprint += c.key() + "\n";
    p.fingerprint = runtime::cpu::sha256_hex(fingerprint);
    std::error_code ec;
    if (fs::exists(p.path, ec)) {
      const std::optional<Entry> e = parse_entry(read_file(p.path));
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
          chosen.reason = "tuned (cached)";
          if (index != 0) ++stats_.changed;
          report_ += fmt::format("group {}: {} (cached)\n", i, chosen.key());
          out[i] = std::move(chosen);
          continue;
        }
        ++stats_.corrupt;
        report_ += fmt::format("group {}: tuning cache entry {} names no candidate: measured again\n", i, p.path.string());
      }
    }
    pending.push_back(std::move(p));
  }
  if (pending.empty()) return out;

  // Every candidate of every pending group in one translation unit.
  std::vector<kir::Kernel> kernels;
  for (size_t k = 0; k < pending.size(); ++k) {
    Pending& p = pending[k];
    for (size_t j = 0; j < p.candidates.size(); ++j) {
      const std::string prefix = fmt::format("tune_{}_{}_c{}", p.path.stem().string().substr(0, 12), k, j);
      std::vector<lower::LoweredGroup> l =
          lower::lower_plan(p.sub.graph, p.sub.plan, {p.candidates[j]}, prefix, target);
      STITCH_ASSERT(l.size() == 1 && l[0].kernel, "a candidate schedule lowers: " + p.candidates[j].describe());
      p.kernel_names.push_back(l[0].kernel->name);
      kernels.push_back(*l[0].kernel);
      p.lowered.push_back(std::move(l[0]));
    }
  }
  const runtime::cpu::CpuModule module = kernels_.load_or_compile(codegen::cpu::emit_cpp_translation_unit(kernels));

  for (Pending& p : pending) {
    const Graph& sg = p.sub.graph;
    std::vector<Tensor> inputs;
    uint64_t seed = 0x5eed;
    for (ValueId v : sg.params()) {
      Tensor t(sg.type(v).dtype, concrete_shape(sg.type(v).shape, {}));
      fill_random(t, seed++);
      inputs.push_back(std::move(t));
    }
    std::vector<Tensor> want;
    try {
      want = interpret(sg, inputs);
    } catch (const UserError& e) {
      ++stats_.untunable;
      report_ += fmt::format("group {}: not tuned: random inputs are not valid for it ({})\n", p.group, e.what());
      continue;
    }
    std::map<int, size_t> param_index;
    for (size_t i = 0; i < sg.params().size(); ++i) param_index[sg.params()[i].index] = i;
    std::map<int, size_t> output_index;
    for (size_t i = 0; i < sg.outputs().size(); ++i) output_index[sg.outputs()[i].value.index] = i;

    Entry entry;
    entry.fingerprint = p.fingerprint;
    std::vector<double> seconds(p.candidates.size(), std::numeric_limits<double>::infinity());
    bool default_ok = false;
    for (size_t j = 0; j < p.candidates.size(); ++j) {
      const lower::GroupSignature& sig = p.lowered[j].signature;
      std::vector<Tensor> outputs;
      for (const GraphOutput& o : sg.outputs()) {
        outputs.push_back(Tensor::uninitialized(sg.type(o.value).dtype, concrete_shape(sg.type(o.value).shape, {})));
      }
      std::vector<void*> buffers;
      for (ValueId v : sig.inputs) buffers.push_back(inputs.at(param_index.at(v.index)).raw());
      for (ValueId v : sig.outputs) buffers.push_back(outputs.at(output_index.at(v.index)).raw());
      int32_t status = 0;
      if (sig.status) buffers.push_back(&status);
      const double s = run_seconds(module.function(p.kernel_names[j]), buffers, options_);
      std::string mismatch;
      if (status != 0) mismatch = "the kernel rejected the input";
      for (size_t o = 0; o < outputs.size() && mismatch.empty(); ++o) {
        const ErrorAllowance allowance = output_allowance(sg, sg.outputs()[o].value, {});
        mismatch = compare_with_interpreter(outputs[o], want[o], allowance).describe();
      }
      if (!mismatch.empty()) {
        if (j > 0) ++stats_.rejected;
        report_ += fmt::format("group {}: candidate {} disagrees with the interpreter: {}\n", p.group,
                               p.candidates[j].key(), mismatch);
        continue;
      }
      if (j == 0) default_ok = true;
      seconds[j] = options_.adjust_seconds ? options_.adjust_seconds(static_cast<int>(j), s) : s;
      entry.times.emplace_back(p.candidates[j].key(), seconds[j]);
    }
    if (!default_ok) {
      ++stats_.untunable;
      report_ += fmt::format("group {}: not tuned: its default schedule could not be measured\n", p.group);
      continue;
    }
    ++stats_.measured;
    size_t best = 0;
    for (size_t j = 1; j < seconds.size(); ++j) {
      if (seconds[j] < seconds[best]) best = j;
    }
    if (best != 0 && seconds[best] >= seconds[0] * (1 - options_.margin)) best = 0;
    entry.choice = p.candidates[best].key();
    write_file(p.path, print_entry(entry));
    // The choice in the plan's own numbering (candidates of the original group, same order).
    GroupSchedule chosen = lower::schedule_candidates(g, plan.groups[static_cast<size_t>(p.group)], target)[best];
    chosen.reason = fmt::format("tuned: {:.4g} ms, the default {:.4g} ms", seconds[best] * 1e3, seconds[0] * 1e3);
    if (best != 0) ++stats_.changed;
    std::string line = fmt::format("group {}:", p.group);
    for (size_t j = 0; j < seconds.size(); ++j) {
      line += fmt::format(" {}{} {:.4g} ms;", j == best ? "*" : "", p.candidates[j].key(), seconds[j] * 1e3);
    }
    report_ += line + "\n";
    out[static_cast<size_t>(p.group)] = std::move(chosen);
  }
  return out;
}

bool tuning_requested_by_environment() {
  const char* env = std::getenv("STITCH_TUNE");
  if (!env || std::string(env).empty() || std::string(env) == "0") return false;
  if (std::string(env) == "1") return true;
  throw UserError(fmt::format("STITCH_TUNE={}: use 1 to tune schedules by measurement, 0 (or unset) not to", env));
}

}  // namespace stitch::tune
