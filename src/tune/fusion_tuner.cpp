#include "tune/fusion_tuner.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "fusion/legality.h"
#include "fusion/planner.h"
#include "ir/structural_key.h"
#include "pipeline/schedule_groups.h"
#include "stitch/error.h"
#include "tune/cache_file.h"
#include "tune/group_graph.h"
#include "tune/measure.h"

namespace stitch::tune {

namespace fs = std::filesystem;

namespace {

constexpr const char* kFormat = "stitch-fusion-tuning-v1";

// xla's kernels inside `group`: those whose roots all lie in it.
std::vector<int> parts_of(const FusionGroup& group, const FusionPlan& xla) {
  std::vector<int> parts;
  for (size_t i = 0; i < xla.groups.size(); ++i) {
    const std::vector<int>& roots = xla.groups[i].roots;
    if (std::all_of(roots.begin(), roots.end(), [&](int r) { return group.contains(r); })) {
      parts.push_back(static_cast<int>(i));
    }
  }
  return parts;
}

// Why `groups` is not a plan that computes `g`, or "": every value a group
// reads from outside itself has a home (a group writing it) or is a
// parameter, no node has two homes, every graph output has a home, and the
// groups are acyclic.
std::string plan_problem(const Graph& g, const std::vector<FusionGroup>& groups) {
  std::map<int, int> home;
  for (size_t i = 0; i < groups.size(); ++i) {
    for (int r : groups[i].roots) {
      if (!home.emplace(r, static_cast<int>(i)).second) return fmt::format("{} would be written twice", describe_node(g, r));
    }
  }
  for (const FusionGroup& grp : groups) {
    for (int n : grp.nodes) {
      for (ValueId v : g.nodes()[static_cast<size_t>(n)].inputs) {
        const int p = g.value(v).producer;
        if (p >= 0 && !grp.contains(p) && !home.count(p)) return fmt::format("{} would not be written", describe_node(g, p));
      }
    }
  }
  for (const GraphOutput& o : g.outputs()) {
    const int p = g.value(o.value).producer;
    if (p >= 0 && !home.count(p)) return fmt::format("output {} would not be written", g.value_name(o.value));
  }
  if (!is_acyclic(build_group_graph(g, groups))) return "the kernels would form a cycle";
  return "";
}

}  // namespace

// A contested kernel of the plan: the planner fused what XLA's rules keep
// apart, so the kernel and its parts are measured against each other.
struct FusionTuner::Contest {
  int group = -1;
  std::vector<int> alike;  // later kernels of the same structure: decided with this one
  std::vector<int> parts;  // xla group indices
  GroupGraph fused;
  std::vector<GroupGraph> apart;
  fs::path path;
  std::string fingerprint;
};

FusionTuner::FusionTuner(runtime::cpu::KernelCache& kernels, TuneOptions options)
    : kernels_(kernels), options_(std::move(options)), directory_(tuning_directory(kernels_, options_.directory)) {}

std::vector<FusionTuner::Contest> FusionTuner::contests_of(const Graph& g, const FusionPlan& plan, const FusionPlan& xla,
                                                         const schedule::RowScheduleTarget& target,
                                                         std::map<int, bool>& decided) {
  const std::string compiler = kernels_.key("", runtime::cpu::CompilerOptions{});
  std::vector<Contest> contests;
  for (size_t i = 0; i < plan.groups.size(); ++i) {
    const FusionGroup& group = plan.groups[i];
    if (group.kind == GroupKind::Library) continue;
    std::vector<int> parts = parts_of(group, xla);
    if (parts.size() < 2) continue;
    ++stats_.contested;
    // A small dot the planner fused (stitch_merges.h, fuse_small_dots) is a
    // library call apart: only kernels are timed here.
    if (std::any_of(parts.begin(), parts.end(),
                    [&](int x) { return xla.groups[static_cast<size_t>(x)].kind == GroupKind::Library; })) {
      ++stats_.untunable;
      report_ += fmt::format("kernel {}: not tuned: apart, one of its parts is a library call\n", i);
      continue;
    }
    Contest c;
    c.group = static_cast<int>(i);
    c.parts = parts;
    c.fused = group_graph(g, group, "fused");
    bool measurable = all_static(c.fused.graph);
    // The partition, in the fused group graph's terms: each part's roots by name.
    std::string key = structural_key(c.fused.graph);
    for (int x : parts) {
      c.apart.push_back(group_graph(g, xla.groups[static_cast<size_t>(x)], fmt::format("part{}", c.apart.size())));
      measurable = measurable && all_static(c.apart.back().graph);
      key += "part";
      for (int r : xla.groups[static_cast<size_t>(x)].roots) {
        key += " " + std::to_string(std::find(group.nodes.begin(), group.nodes.end(), r) - group.nodes.begin());
      }
      key += "\n" + structural_key(c.apart.back().graph);
    }
    if (!measurable) {
      ++stats_.untunable;
      report_ += fmt::format("kernel {}: not tuned: symbolic shapes\n", i);
      continue;
    }
    c.path = directory_ / (runtime::cpu::sha256_hex(key + measured_target_text(target)) + ".fuse");
    c.fingerprint = runtime::cpu::sha256_hex(std::string(kFormat) + "\n" + compiler);
    std::error_code ec;
    if (fs::exists(c.path, ec)) {
      std::istringstream in(read_cache_file(c.path));
      std::string format, fingerprint, choice;
      std::getline(in, format);
      std::getline(in, fingerprint);
      std::getline(in, choice);
      const bool parsed = format == kFormat && fingerprint.rfind("fingerprint ", 0) == 0 &&
                          (choice == "choice fused" || choice == "choice apart");
      if (!parsed) {
        ++stats_.corrupt;
        report_ += fmt::format("kernel {}: fusion tuning entry {} is corrupt: measured again\n", i, c.path.string());
      } else if (fingerprint.substr(12) != c.fingerprint) {
        ++stats_.stale;
        report_ += fmt::format("kernel {}: fusion tuning entry is stale: measured again\n", i);
      } else {
        ++stats_.hits;
        decided[c.group] = choice == "choice apart";
        report_ += fmt::format("kernel {}: {} (cached)\n", i, choice.substr(7));
        continue;
      }
    }
    auto same = std::find_if(contests.begin(), contests.end(), [&](const Contest& q) { return q.path == c.path; });
    if (same != contests.end()) {
      same->alike.push_back(c.group);
    } else {
      contests.push_back(std::move(c));
    }
  }
  return contests;
}

void FusionTuner::measure_contests(const std::vector<Contest>& contests, const schedule::RowScheduleTarget& target,
                                   std::map<int, bool>& decided, std::map<int, std::pair<double, double>>& times) {
  // Every contested kernel and its parts, default schedules, one translation unit.
  std::vector<Trial> trials;
  for (const Contest& c : contests) {
    trials.push_back({&c.fused, pipeline::schedule_group(c.fused.graph, c.fused.plan.groups[0], target)});
    for (const GroupGraph& part : c.apart) {
      trials.push_back({&part, pipeline::schedule_group(part.graph, part.plan.groups[0], target)});
    }
  }
  const std::vector<TrialResult> results = measure_trials(kernels_, trials, target, options_.measure);
  size_t t = 0;
  for (const Contest& c : contests) {
    const TrialResult fused = results[t++];
    double apart = 0;
    std::string problem = fused.problem;
    for (size_t k = 0; k < c.apart.size(); ++k, ++t) {
      if (problem.empty() && !results[t].problem.empty()) problem = results[t].problem;
      apart += results[t].seconds;
    }
    if (!problem.empty()) {
      ++stats_.untunable;
      report_ += fmt::format("kernel {}: not tuned: {}\n", c.group, problem);
      continue;
    }
    double fused_s = fused.seconds;
    if (options_.adjust_seconds) {
      fused_s = options_.adjust_seconds(0, fused_s);
      apart = options_.adjust_seconds(1, apart);
    }
    ++stats_.measured;
    const bool split = apart < fused_s * (1 - options_.margin);
    for (int gi : c.alike) {
      decided[gi] = split;
      times[gi] = {fused_s, apart};
      ++stats_.measured;
    }
    decided[c.group] = split;
    times[c.group] = {fused_s, apart};
    write_cache_file(c.path, fmt::format("{}\nfingerprint {}\nchoice {}\ntime fused {:.9g}\ntime apart {:.9g}\n", kFormat,
                                         c.fingerprint, split ? "apart" : "fused", fused_s, apart));
    report_ += fmt::format("kernel {}: fused {:.4g} ms, its {} xla kernels apart {:.4g} ms: {}\n", c.group,
                           fused_s * 1e3, c.apart.size(), apart * 1e3, split ? "split" : "kept");
  }
}

FusionPlan FusionTuner::split_kernels(const Graph& g, const FusionPlan& plan, const FusionPlan& xla,
                                      const std::map<int, bool>& decided,
                                      const std::map<int, std::pair<double, double>>& times) {
  // The refined plan: split kernels replaced by their xla kernels, when the
  // result is a valid plan.
  FusionPlan out = plan;
  std::vector<FusionGroup> groups;
  for (size_t i = 0; i < plan.groups.size(); ++i) {
    auto it = decided.find(static_cast<int>(i));
    if (it == decided.end() || !it->second) {
      groups.push_back(plan.groups[i]);
      continue;
    }
    std::vector<FusionGroup> parts;
    for (int x : parts_of(plan.groups[i], xla)) parts.push_back(xla.groups[static_cast<size_t>(x)]);
    std::vector<FusionGroup> trial = groups;
    trial.insert(trial.end(), parts.begin(), parts.end());
    for (size_t j = i + 1; j < plan.groups.size(); ++j) trial.push_back(plan.groups[j]);
    if (std::string problem = plan_problem(g, trial); !problem.empty()) {
      ++stats_.untunable;
      report_ += fmt::format("kernel {}: measured faster apart, but not split: {}\n", i, problem);
      groups.push_back(plan.groups[i]);
      continue;
    }
    ++stats_.split;
    const auto measured = times.count(static_cast<int>(i)) ? times.at(static_cast<int>(i)) : std::pair<double, double>{};
    const std::string reason =
        measured.first > 0
            ? fmt::format("tuning measured these kernels apart faster ({:.4g} ms) than fused ({:.4g} ms)",
                          measured.second * 1e3, measured.first * 1e3)
            : std::string("tuning measured these kernels apart faster than fused (cached)");
    // Every edge into a part from outside it that the plan did not already
    // explain is now unfused: say why.
    std::set<std::pair<int, int>> explained;
    for (const FusionRefusal& r : out.refusals) explained.emplace(r.producer, r.consumer);
    for (const FusionGroup& part : parts) {
      for (int n : part.nodes) {
        for (ValueId v : g.nodes()[static_cast<size_t>(n)].inputs) {
          const int p = g.value(v).producer;
          if (p < 0 || part.contains(p) || !explained.emplace(p, n).second) continue;
          out.refusals.push_back({p, n, reason, FusionRefusal::Relation::ProducerConsumer, RefusalCause::Unprofitable});
        }
      }
    }
    groups.insert(groups.end(), parts.begin(), parts.end());
  }
  out.groups = std::move(groups);
  finalize_plan(g, out);
  return out;
}

FusionPlan FusionTuner::refine(const Graph& g, const FusionPlan& plan, const schedule::RowScheduleTarget& target) {
  STITCH_ASSERT(target.machine == schedule::RowScheduleTarget::Machine::Cpu, "the tuner measures on the CPU");
  if (plan.planner == "none" || plan.planner == "xla") return plan;
  const FusionPlan xla = plan_xla(g);
  std::map<int, bool> decided;                       // group -> split (measured or cached)
  std::map<int, std::pair<double, double>> times;   // group -> (fused, apart) seconds
  const std::vector<Contest> contests = contests_of(g, plan, xla, target, decided);
  measure_contests(contests, target, decided, times);
  return split_kernels(g, plan, xla, decided, times);
}

}  // namespace stitch::tune
