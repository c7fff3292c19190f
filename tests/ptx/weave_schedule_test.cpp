// interleave_by_latency, concatenate and estimate_issue_cycles
// (docs/goptx.md, Dependencies): permutations that keep each stream's
// dependencies, latency hidden with the other stream's work, determinism.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "kernel_files.h"
#include "ptx/parser.h"
#include "ptx/printer.h"
#include "ptx/weave/effects.h"
#include "ptx/weave/schedule.h"

namespace stitch::ptx {
namespace {

namespace fs = std::filesystem;
using testing::kernel_ptx_files;
using testing::read_file;
using Stream = std::vector<const Statement*>;

Module parse_kernel(const std::string& body) {
  return parse_module(".version 8.0\n.target sm_80\n.address_size 64\n.entry k(.param .u64 p)\n{\n" + body + "}\n",
                      "t.ptx");
}

Stream statements_of(const Module& m) {
  Stream s;
  for (const Statement& st : std::get<Function>(m.items.at(0)).body) {
    if (std::holds_alternative<Instruction>(st.node) || std::holds_alternative<Block>(st.node)) s.push_back(&st);
  }
  return s;
}

void flatten(const Statement& s, std::vector<const Instruction*>& out) {
  if (const auto* in = std::get_if<Instruction>(&s.node)) out.push_back(in);
  if (const auto* b = std::get_if<Block>(&s.node)) {
    for (const Statement& inner : b->body) flatten(inner, out);
  }
}

// Whether statement `later` must stay after `earlier` of the same stream,
// decided here from effects_of alone (independently of the scheduler's DAG).
bool must_follow(const Statement& earlier, const Statement& later) {
  std::vector<const Instruction*> xs, ys;
  flatten(earlier, xs);
  flatten(later, ys);
  for (const Instruction* x : xs) {
    for (const Instruction* y : ys) {
      InstructionEffects a = effects_of(*x), b = effects_of(*y);
      // A call inside a scope returns to it: only its memory Fence orders it.
      if (std::holds_alternative<Block>(earlier.node) && x->opcode == "call") a.is_control = false;
      if (std::holds_alternative<Block>(later.node) && y->opcode == "call") b.is_control = false;
      auto meets = [](const std::vector<std::string>& u, const std::vector<std::string>& v) {
        return std::any_of(u.begin(), u.end(), [&](const std::string& r) { return std::count(v.begin(), v.end(), r); });
      };
      if (meets(a.writes, b.reads) || meets(a.reads, b.writes) || meets(a.writes, b.writes)) return true;
      if (a.sync != SyncKind::None || b.sync != SyncKind::None || a.is_control || b.is_control) return true;
      if (a.memory != MemoryEffect::None && b.memory != MemoryEffect::None) {
        if (a.memory == MemoryEffect::Fence || b.memory == MemoryEffect::Fence) return true;
        bool writes = a.memory != MemoryEffect::Read || b.memory != MemoryEffect::Read;
        if (writes && (a.space.empty() || b.space.empty() || a.space == b.space)) return true;
      }
    }
  }
  return false;
}

void expect_valid(const Stream& a, const Stream& b, const std::vector<WovenItem>& order) {
  ASSERT_EQ(order.size(), a.size() + b.size());
  std::set<std::pair<int, size_t>> seen;
  std::vector<std::vector<size_t>> position = {std::vector<size_t>(a.size()), std::vector<size_t>(b.size())};
  for (size_t k = 0; k < order.size(); ++k) {
    const WovenItem& item = order[k];
    ASSERT_TRUE(item.side == 0 || item.side == 1);
    ASSERT_LT(item.index, item.side == 0 ? a.size() : b.size());
    ASSERT_TRUE(seen.insert({item.side, item.index}).second) << "statement issued twice";
    position[static_cast<size_t>(item.side)][item.index] = k;
  }
  for (int side = 0; side < 2; ++side) {
    const Stream& s = side == 0 ? a : b;
    for (size_t j = 0; j < s.size(); ++j) {
      for (size_t i = 0; i < j; ++i) {
        if (!must_follow(*s[i], *s[j])) continue;
        EXPECT_LT(position[static_cast<size_t>(side)][i], position[static_cast<size_t>(side)][j])
            << "side " << side << ": statement " << j << " was moved before " << i;
      }
    }
  }
}

TEST(PtxWeaveSchedule, LoadConsumerIsSeparatedByTheOtherStreamsWork) {
  Module ma = parse_kernel(
      "ld.param.u64 %rd1, [p];\nld.global.f32 %f1, [%rd1];\nadd.f32 %f2, %f1, 0f3F800000;\n"
      "st.global.f32 [%rd1+4], %f2;\n");
  Module mb = parse_kernel(
      "mov.u32 %r1, 1;\nadd.s32 %r2, %r1, 2;\nadd.s32 %r3, %r2, 3;\nmul.lo.s32 %r4, %r3, %r3;\n"
      "xor.b32 %r5, %r4, 7;\nadd.s32 %r6, %r5, %r1;\n");
  Stream a = statements_of(ma), b = statements_of(mb);
  std::vector<WovenItem> order = interleave_by_latency(a, b, WeaveArch::Sm80);
  expect_valid(a, b, order);
  auto at = [&](int side, size_t index) {
    return std::find(order.begin(), order.end(), WovenItem{side, index}) - order.begin();
  };
  // The parameter load heads the longest path and goes first; B's chain
  // fills the cycles until the global load may issue and then its latency.
  EXPECT_EQ(order.front(), (WovenItem{0, 0}));
  EXPECT_LT(at(0, 1), at(1, 5));
  for (size_t i = 0; i < b.size(); ++i) EXPECT_LT(at(1, i), at(0, 2)) << "B's statement " << i;
  EXPECT_LT(estimate_issue_cycles(a, b, order, WeaveArch::Sm80),
            estimate_issue_cycles(a, b, concatenate(a, b), WeaveArch::Sm80));
}

TEST(PtxWeaveSchedule, ConcatenateAndEstimates) {
  Module ma = parse_kernel("ld.global.f32 %f1, [%rd1];\nadd.f32 %f2, %f1, %f1;\n");
  Module mb = parse_kernel("add.s32 %r1, %r1, 1;\n");
  Stream a = statements_of(ma), b = statements_of(mb);
  EXPECT_EQ(concatenate(a, b), (std::vector<WovenItem>{{0, 0}, {0, 1}, {1, 0}}));
  EXPECT_EQ(concatenate({}, b), (std::vector<WovenItem>{{1, 0}}));
  // In order: the load at 0 (424 cycles), its add at 424 (done at 428), B's
  // add behind it at 425 (done at 429); B's add first hides in the load's shadow.
  EXPECT_EQ(estimate_issue_cycles(a, b, concatenate(a, b), WeaveArch::Sm80), 429);
  EXPECT_EQ(estimate_issue_cycles(a, b, {{0, 0}, {1, 0}, {0, 1}}, WeaveArch::Sm80), 428);
  EXPECT_EQ(estimate_issue_cycles(a, b, concatenate(a, b), WeaveArch::Sm90), 472 + 1 + 4);
  EXPECT_TRUE(interleave_by_latency({}, {}, WeaveArch::Sm90).empty());
}

TEST(PtxWeaveSchedule, MemoryFencesAndSyncKeepTheirOrder) {
  Module ma = parse_kernel(
      "st.shared.f32 [%r1], %f1;\nld.shared.f32 %f2, [%r2];\nld.global.f32 %f3, [%rd1];\n"
      "membar.cta;\nld.global.f32 %f4, [%rd2];\nbar.sync 0;\nadd.f32 %f5, %f4, %f3;\n");
  Module mb = parse_kernel("st.global.f32 [%rd3], %f9;\nld.global.f32 %f8, [%rd4];\nadd.f32 %f7, %f8, %f8;\n");
  Stream a = statements_of(ma), b = statements_of(mb);
  std::vector<WovenItem> order = interleave_by_latency(a, b, WeaveArch::Sm90);
  expect_valid(a, b, order);
  std::vector<size_t> a_positions;
  for (const WovenItem& item : order) {
    if (item.side == 0) a_positions.push_back(item.index);
  }
  // The global load may pass the shared accesses (another state space); the
  // shared store and load may not pass each other; the fence and the barrier
  // order everything.
  EXPECT_EQ(a_positions, (std::vector<size_t>{2, 0, 1, 3, 4, 5, 6}));
  std::vector<size_t> b_positions;
  for (const WovenItem& item : order) {
    if (item.side == 1) b_positions.push_back(item.index);
  }
  EXPECT_EQ(b_positions, (std::vector<size_t>{0, 1, 2}));  // the global load stays after the global store
}

TEST(PtxWeaveSchedule, IndependentReadsMayPassEachOther) {
  Module ma = parse_kernel("add.s32 %r1, %r1, 1;\nadd.s32 %r1, %r1, 1;\nadd.s32 %r1, %r1, 1;\nld.global.f32 %f1, [%rd1];\n"
                           "add.f32 %f2, %f1, %f1;\n");
  Module mb = parse_kernel("add.s32 %r9, %r9, 1;\n");
  Stream a = statements_of(ma), b = statements_of(mb);
  std::vector<WovenItem> order = interleave_by_latency(a, b, WeaveArch::Sm80);
  expect_valid(a, b, order);
  // The load heads the critical path, so it is hoisted above the independent adds.
  EXPECT_EQ(order.front(), (WovenItem{0, 3}));
}

TEST(PtxWeaveSchedule, ABlockEndingControlInstructionStaysLast) {
  Module ma = parse_kernel("add.s32 %r1, %r1, 1;\nret;\n");
  Module mb = parse_kernel("ld.global.f32 %f1, [%rd1];\nadd.f32 %f2, %f1, %f1;\nst.global.f32 [%rd1], %f2;\n");
  Stream a = statements_of(ma), b = statements_of(mb);
  for (WeaveArch arch : {WeaveArch::Sm80, WeaveArch::Sm90}) {
    std::vector<WovenItem> order = interleave_by_latency(a, b, arch);
    expect_valid(a, b, order);
    EXPECT_EQ(order.back(), (WovenItem{0, 1}));
    // Both streams end in control: A's first, then B's.
    std::vector<WovenItem> both = interleave_by_latency(a, a, arch);
    EXPECT_EQ(both[2], (WovenItem{0, 1}));
    EXPECT_EQ(both[3], (WovenItem{1, 1}));
  }
}

TEST(PtxWeaveSchedule, ScopesAreOneUnitAndCallsFenceMemory) {
  Module ma = parse_kernel(
      "st.global.f32 [%rd1], %f1;\n{\n.param .b32 param0;\n.param .b32 retval0;\nst.param.f32 [param0+0], %f1;\n"
      "call.uni (retval0), f, (param0);\nld.param.f32 %f2, [retval0+0];\n}\nld.global.f32 %f3, [%rd2];\n"
      "add.f32 %f4, %f2, %f3;\n");
  Module mb = parse_kernel("add.s32 %r9, %r9, 1;\nadd.s32 %r8, %r9, 1;\n");
  Stream a = statements_of(ma), b = statements_of(mb);
  ASSERT_EQ(a.size(), 4u);
  std::vector<WovenItem> order = interleave_by_latency(a, b, WeaveArch::Sm80);
  expect_valid(a, b, order);
  std::vector<size_t> a_positions;
  for (const WovenItem& item : order) {
    if (item.side == 0) a_positions.push_back(item.index);
  }
  EXPECT_EQ(a_positions, (std::vector<size_t>{0, 1, 2, 3}));
}

#ifdef STITCH_PTX_KERNEL_DIR

// Straight-line runs of a function body: statements between labels and after
// each control instruction (the block ends with it).
std::vector<Stream> straight_line_runs(const Function& f) {
  std::vector<Stream> runs(1);
  for (const Statement& s : f.body) {
    if (std::holds_alternative<Label>(s.node)) {
      runs.emplace_back();
      continue;
    }
    if (!std::holds_alternative<Instruction>(s.node) && !std::holds_alternative<Block>(s.node)) continue;
    runs.back().push_back(&s);
    const auto* in = std::get_if<Instruction>(&s.node);
    if (in != nullptr && effects_of(*in).is_control) runs.emplace_back();
  }
  std::erase_if(runs, [](const Stream& r) { return r.empty(); });
  return runs;
}

TEST(PtxWeaveSchedule, RealKernelsBlocksArePermutedKeepingDependencies) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(STITCH_PTX_KERNEL_DIR)) {
    if (entry.path().extension() == ".ptx") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 12u);
  std::vector<Module> modules;
  for (const fs::path& file : files) modules.push_back(parse_module(read_file(file), file.string()));
  std::vector<Stream> runs;
  for (const Module& m : modules) {
    for (const auto& item : m.items) {
      const auto* f = std::get_if<Function>(&item);
      if (f == nullptr || !f->has_body) continue;
      for (Stream& r : straight_line_runs(*f)) runs.push_back(std::move(r));
    }
  }
  ASSERT_GE(runs.size(), 40u);
  size_t separated = 0;
  int64_t woven_total = 0;
  int64_t concat_total = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const Stream& a = runs[i];
    const Stream& b = runs[(i * 7 + 3) % runs.size()];
    std::string listing;
    for (const Statement* s : a) {
      if (const auto* in = std::get_if<Instruction>(&s->node)) listing += "\n  " + print_instruction(*in);
    }
    SCOPED_TRACE("runs " + std::to_string(i) + " and " + std::to_string((i * 7 + 3) % runs.size()) + listing);
    for (WeaveArch arch : {WeaveArch::Sm80, WeaveArch::Sm90}) {
      std::vector<WovenItem> order = interleave_by_latency(a, b, arch);
      expect_valid(a, b, order);
      EXPECT_EQ(order, interleave_by_latency(a, b, arch)) << "not deterministic";
      // A trailing branch waits for the other stream's work, which concatenation
      // does not model: allow it one latency more per pair, and require a gain overall.
      const int64_t woven = estimate_issue_cycles(a, b, order, arch);
      const int64_t concat = estimate_issue_cycles(a, b, concatenate(a, b), arch);
      EXPECT_LE(woven, concat + 4);
      woven_total += woven;
      concat_total += concat;
      // Count the A-side global loads whose first consumer has B's work before it.
      for (size_t k = 0; k + 1 < order.size(); ++k) {
        if (order[k].side != 0) continue;
        const auto* in = std::get_if<Instruction>(&a[order[k].index]->node);
        if (in == nullptr || in->opcode != "ld" || !in->has_modifier("global")) continue;
        separated += order[k + 1].side == 1 ? 1 : 0;
      }
    }
  }
  EXPECT_GT(separated, 0u);
  EXPECT_LT(woven_total * 10, concat_total * 9) << "interleaving should save more than a tenth of the cycles";
}

#endif  // STITCH_PTX_KERNEL_DIR

}  // namespace
}  // namespace stitch::ptx
