#include "cuda_corpus.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <variant>

#include "ir/canonicalize.h"
#include "lower/lower_plan.h"
#include "pipeline/pipeline.h"
#include "lower_scheduled.h"

namespace stitch::testing {

LoweredKernels lower_for_cuda(const Graph& graph, PlannerKind planner, const std::string& prefix,
                              const schedule::RowScheduleTarget& rows) {
  // The pipeline's graph stages and plan for the CUDA back end (convolutions
  // and attention as their composites, no dot epilogues); the lowering is
  // asked per group so that groups it refuses are reported, not thrown.
  pipeline::Compilation c = pipeline::compilation_of(canonicalize(graph), planner, PlanOptions{}, rows);
  pipeline::Backend cuda;
  cuda.name = "cuda";
  pipeline::run_pipeline(c, cuda, "split-reductions", "plan");
  LoweredKernels out;
  for (lower::LoweredGroup& l : stitch::testing::lower_with_default_schedules(c.graph, c.plan, prefix, rows)) {
    if (l.kernel) {
      out.kernels.push_back(std::move(*l.kernel));
    } else if (c.plan.groups[l.group].kind != GroupKind::Library) {
      out.not_lowered.push_back(l.not_lowered_reason);
    }
  }
  return out;
}

std::string identifier(const std::string& text) {
  std::string out;
  for (char c : text) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

std::vector<std::string> corpus_files() {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const char* dir : {"bench/workloads", "tests/ir/corpus"}) {
    for (const auto& e : fs::directory_iterator(fs::path(STITCH_SOURCE_DIR) / dir)) {
      if (e.path().extension() == ".stitch") files.push_back(e.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

namespace {

void scan(const kir::StmtList& stmts, KirFeatures& f) {
  for (const kir::Stmt& s : stmts) {
    if (const auto* loop = std::get_if<kir::ForStmt>(&s.node)) {
      scan(loop->body, f);
    } else if (const auto* branch = std::get_if<kir::IfStmt>(&s.node)) {
      scan(branch->then_body, f);
      scan(branch->else_body, f);
    } else if (std::holds_alternative<kir::BarrierStmt>(s.node)) {
      f.barrier = true;
    } else if (const auto* r = std::get_if<kir::ReduceStmt>(&s.node)) {
      (r->scope == kir::ReduceScope::Warp ? f.warp_reduction : f.block_reduction) = true;
    }
  }
}

}  // namespace

KirFeatures kir_features(const kir::Kernel& k) {
  KirFeatures f;
  f.shared = !k.shared.empty();
  scan(k.body, f);
  return f;
}

std::string ptx_entry(const std::string& ptx, const std::string& name) {
  const size_t begin = ptx.find(".entry " + name + "(");
  if (begin == std::string::npos) return "";
  const size_t end = ptx.find(".entry ", begin + 1);
  return ptx.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

}  // namespace stitch::testing
