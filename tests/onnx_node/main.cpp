// onnx_node_conformance: the ONNX backend node tests against every Stitch
// path (docs/onnx-conformance.md).
//
//   onnx_node_conformance run --cases DIR [--backend cpu|cuda] [--shard I/N]
//                             [--cache-dir DIR] [--results FILE] [--report FILE]
//   onnx_node_conformance report --results-dir DIR --shards N [--out FILE]
//                                [--skip-if-no-results]
//
// `run` exits 1 when a case the importer accepts fails on any path, and 77
// (CTest's SKIP_RETURN_CODE for these tests) when the back end cannot run
// here: --backend cuda without a GPU. `report` merges the shards'
// results-I.tsv into markdown at --out, else $STITCH_ONNX_CONFORMANCE_REPORT,
// else DIR/report.md, naming any shard that left no results (running some
// shards alone is fine: each fails on its own); with --skip-if-no-results it
// exits 77 instead when no shard left any, as when every GPU shard skipped.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>

#include "case_backend.h"
#include "case_runner.h"
#include "conformance_report.h"
#include "node_case.h"
#include "stitch/error.h"

namespace fs = std::filesystem;
using namespace stitch;
using namespace stitch::onnx_node;

namespace {

// Automake's "skipped" status; the CTest tests declare it SKIP_RETURN_CODE,
// so a machine without a GPU shows the cuda shards as skipped, not passed.
constexpr int kSkipped = 77;

struct RunArgs {
  std::string cases;
  std::string backend = "cpu";
  std::string shard = "0/1";
  std::string cache_dir;
  std::string results;
  std::string report;
  size_t batch_size = kDefaultBatchSize;
};

std::pair<int, int> parse_shard(const std::string& s) {
  int index = -1, count = 0;
  char slash = 0;
  std::istringstream in(s);
  if (!(in >> index >> slash >> count) || slash != '/' || count < 1 || index < 0 || index >= count || !in.eof()) {
    throw UserError(fmt::format("--shard '{}': expected I/N with 0 <= I < N", s));
  }
  return {index, count};
}

// A kernel (or cubin) cache directory of this run's own, removed at the end,
// unless --cache-dir names one (the CTest shards share one per test run).
class CacheDirectory {
 public:
  explicit CacheDirectory(const std::string& given) {
    if (!given.empty()) {
      path_ = given;
      return;
    }
    path_ = fs::temp_directory_path() / fmt::format("stitch-onnx-node-{}", std::random_device{}());
    owned_ = true;
  }
  ~CacheDirectory() {
    std::error_code ignored;
    if (owned_) fs::remove_all(path_, ignored);
  }
  CacheDirectory(const CacheDirectory&) = delete;
  CacheDirectory& operator=(const CacheDirectory&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
  bool owned_ = false;
};

void write_text(const fs::path& file, const std::string& text) {
  if (file.has_parent_path()) fs::create_directories(file.parent_path());
  std::ofstream out(file);
  out << text;
  if (!out) throw UserError(fmt::format("{}: cannot write", file.string()));
}

int run(const RunArgs& a) {
  const auto [index, count] = parse_shard(a.shard);
  install_crash_report();
  const auto start = std::chrono::steady_clock::now();
  CacheDirectory cache_dir(a.cache_dir);
  std::string why;
  std::unique_ptr<CaseBackend> backend = open_backend(a.backend, cache_dir.path(), why);
  if (!backend) {
    std::cout << fmt::format("no GPU: {} (--backend {} skipped)\n", why, a.backend);
    return kSkipped;
  }
  std::vector<NodeCase> cases = shard_of(discover_cases(a.cases), index, count);
  std::vector<CaseResult> results = run_cases(cases, *backend, a.batch_size);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  int passed = 0, failed = 0, unsupported = 0;
  for (const CaseResult& r : results) {
    if (r.outcome == Outcome::Pass) ++passed;
    if (r.outcome == Outcome::Unsupported) ++unsupported;
    if (r.outcome != Outcome::Fail) continue;
    ++failed;
    std::cout << fmt::format("FAIL {}\n  {}\n", r.name, [&] {
      std::string indented;
      for (char c : r.reason) indented += c == '\n' ? std::string("\n  ") : std::string(1, c);
      return indented;
    }());
  }
  std::cout << fmt::format("shard {}/{} on {}: {} cases, {} pass, {} fail, {} unsupported, {:.1f} s\n", index,
                           count, backend->description(), results.size(), passed, failed, unsupported, seconds);
  if (!a.results.empty()) write_results(a.results, results);
  if (!a.report.empty()) write_text(a.report, render_report(results, {}));
  return failed == 0 ? 0 : 1;
}

int report(const std::string& results_dir, int shards, std::string out, bool skip_if_no_results) {
  std::vector<CaseResult> all;
  std::vector<std::string> missing;
  for (int i = 0; i < shards; ++i) {
    fs::path file = fs::path(results_dir) / fmt::format("results-{}.tsv", i);
    if (!fs::exists(file)) {
      missing.push_back(std::to_string(i));
      continue;
    }
    for (CaseResult& r : read_results(file)) all.push_back(std::move(r));
  }
  if (skip_if_no_results && missing.size() == static_cast<size_t>(shards)) {
    std::cout << fmt::format("no shard left results in {}: nothing to report (skipped)\n", results_dir);
    return kSkipped;
  }
  if (out.empty()) {
    const char* env = std::getenv("STITCH_ONNX_CONFORMANCE_REPORT");
    out = env && *env ? env : (fs::path(results_dir) / "report.md").string();
  }
  write_text(out, render_report(all, missing));
  std::cout << fmt::format("wrote {} ({} cases)\n", out, all.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The ONNX backend node tests against every Stitch path (docs/onnx-conformance.md)"};
  app.require_subcommand(1);

  RunArgs run_args;
  CLI::App* run_cmd = app.add_subcommand("run", "run node test cases; exit 1 when a supported case fails");
  run_cmd->add_option("--cases", run_args.cases, "folder the generator wrote (holds node/)")->required();
  run_cmd
      ->add_option("--backend", run_args.backend,
                   "compiled back end the planners run on (cuda: exit 77, skipped, without a GPU)")
      ->check(CLI::IsMember(std::vector<std::string>(std::begin(kBackendNames), std::end(kBackendNames))));
  run_cmd->add_option("--shard", run_args.shard, "I/N: run the cases whose index is I modulo N");
  run_cmd->add_option("--cache-dir", run_args.cache_dir,
                      "kernel (cpu) or cubin (cuda) cache directory (default: a fresh one, removed)");
  run_cmd->add_option("--results", run_args.results, "write the results (tab-separated) here");
  run_cmd->add_option("--report", run_args.report, "write a markdown report of these cases here");
  run_cmd->add_option("--batch-size", run_args.batch_size, "graphs per compiled translation unit");

  std::string results_dir, out;
  int shards = 1;
  bool skip_if_no_results = false;
  CLI::App* report_cmd = app.add_subcommand("report", "merge the shards' results into a markdown report");
  report_cmd->add_option("--results-dir", results_dir, "folder holding results-I.tsv")->required();
  report_cmd->add_option("--shards", shards, "how many shards ran")->required();
  report_cmd->add_option("--out", out, "the report (default: $STITCH_ONNX_CONFORMANCE_REPORT, else DIR/report.md)");
  report_cmd->add_flag("--skip-if-no-results", skip_if_no_results,
                       "exit 77 (skipped), writing nothing, when no shard left results");

  CLI11_PARSE(app, argc, argv);
  try {
    if (*run_cmd) return run(run_args);
    return report(results_dir, shards, out, skip_if_no_results);
  } catch (const UserError& e) {
    std::cerr << "onnx_node_conformance: error: " << e.what() << "\n";
    return 2;
  }
}
