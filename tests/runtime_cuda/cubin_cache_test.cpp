// The cubin cache (docs/kernel-cache.md, Cubins) without a GPU: NVRTC compiles
// for a named architecture, so misses, hits, corrupt entries, per-arch keys
// and NVRTC's rejection run in CI. The last tests compile the translation
// units the GPU suites (tests/gpu, label gpu) will build, for sm_90 through
// the cache, so a test input that does not lower or compile fails here, long
// before the GPU machine runs it.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "../gpu/gpu_test_graphs.h"
#include "redis_server.h"
#include "codegen/cuda/cuda_emitter.h"
#include "fusion/planner.h"
#include "ir/split_reductions.h"
#include "runtime/common/launch_list.h"
#include "runtime/cpu/cpu_compiler.h"
#include "runtime/cpu/kernel_cache.h"
#include "runtime/cuda/cubin_cache.h"
#include "pipeline/pipeline.h"
#include "schedule/row_schedule.h"
#include "schedule/select.h"
#include "schedule/target.h"
#include "scratch_directory.h"

namespace stitch::runtime::cuda {
namespace {

namespace fs = std::filesystem;

// A cache directory of the test's own, removed afterwards.
struct ScratchDirectory : stitch::testing::ScratchDirectory {
  ScratchDirectory() : stitch::testing::ScratchDirectory("stitch-cubin-cache-test") {}
};

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

const char* const kSource = R"(extern "C" __global__ void k_scale(const float* x, float* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
)";

class CubinCacheTest : public ::testing::TestWithParam<std::string> {
 protected:
  const std::string& arch() const { return GetParam(); }
  ScratchDirectory dir_;
};

TEST_P(CubinCacheTest, AMissCompilesAndStoresThenTheSameObjectHits) {
  CubinCache cache(dir_.path());
  const std::string cubin = cache.load_or_compile(kSource, arch());
  EXPECT_FALSE(cubin.empty());
  EXPECT_EQ(cache.stats().misses, 1);
  EXPECT_EQ(cache.stats().hits, 0);
  const std::string key = cache.key(kSource, arch());
  EXPECT_EQ(key.size(), 64u) << key;
  EXPECT_EQ(read_bytes(cache.cubin_path(key, arch())), cubin);
  EXPECT_TRUE(fs::exists(cache.checksum_path(key, arch())));
  // Entries live under <directory>/cuda/<arch>/.
  EXPECT_EQ(cache.cubin_path(key, arch()).parent_path(), dir_.path() / "cuda" / arch());
  EXPECT_EQ(cache.load_or_compile(kSource, arch()), cubin);
  EXPECT_EQ(cache.stats().hits, 1);
  EXPECT_EQ(cache.stats().misses, 1);
  EXPECT_EQ(cache.stats().recompiled_corrupt, 0);
}

// The simulated driver's PTX (docs/cuda-sim.md) is a separate entry: its own
// key and file, so a cubin and the PTX of one source never replace each other;
// a compile keeps the PTX of the same NVRTC run beside the cubin (and the
// cubin beside the PTX), so the other image is a hit.
TEST_P(CubinCacheTest, ThePtxIsKeptBesideTheCubin) {
  CubinCache cache(dir_.path());
  const std::string cubin = cache.load_or_compile(kSource, arch());
  const std::string ptx_key = cache.key(kSource, arch(), ModuleImage::Ptx);
  EXPECT_NE(ptx_key, cache.key(kSource, arch()));
  EXPECT_EQ(cache.cubin_path(ptx_key, arch(), ModuleImage::Ptx).extension(), ".ptx");
  EXPECT_TRUE(fs::exists(cache.cubin_path(ptx_key, arch(), ModuleImage::Ptx)));
  const std::string ptx = cache.load_or_compile(kSource, arch(), ModuleImage::Ptx);
  EXPECT_EQ(cache.stats().misses, 1);
  EXPECT_EQ(cache.stats().hits, 1);
  EXPECT_NE(ptx.find(".entry k_scale"), std::string::npos) << ptx.substr(0, 200);
  EXPECT_EQ(cubin.rfind("\x7f" "ELF", 0), 0u);
  EXPECT_EQ(read_bytes(cache.cubin_path(ptx_key, arch(), ModuleImage::Ptx)), ptx);
  EXPECT_EQ(cache.load_or_compile(kSource, arch()), cubin);
  EXPECT_EQ(cache.stats().hits, 2);
  // And the other way: a PTX compile (cuda-sim) leaves the cubin for a GPU.
  ScratchDirectory other;
  CubinCache sim(other.path());
  EXPECT_EQ(sim.load_or_compile(kSource, arch(), ModuleImage::Ptx), ptx);
  EXPECT_EQ(sim.load_or_compile(kSource, arch()), cubin);
  EXPECT_EQ(sim.stats().misses, 1);
  EXPECT_EQ(sim.stats().hits, 1);
}

TEST_P(CubinCacheTest, ANewObjectOnTheSameDirectoryHits) {
  const std::string cubin = CubinCache(dir_.path()).load_or_compile(kSource, arch());
  CubinCache again(dir_.path());
  EXPECT_EQ(again.load_or_compile(kSource, arch()), cubin);
  EXPECT_EQ(again.stats().hits, 1);
  EXPECT_EQ(again.stats().misses, 0);
}

TEST_P(CubinCacheTest, ACorruptEntryIsRecompiledAndReplaced) {
  CubinCache first(dir_.path());
  const std::string cubin = first.load_or_compile(kSource, arch());
  const std::string key = first.key(kSource, arch());
  const fs::path path = first.cubin_path(key, arch());
  // Same size, other bytes; then a truncated file; then a missing checksum.
  std::string flipped = cubin;
  for (size_t i = 0; i < flipped.size(); i += 13) flipped[i] = static_cast<char>(flipped[i] ^ 0x21);
  const std::vector<std::pair<std::string, std::function<void()>>> damages = {
      {"flipped bytes", [&] { write_bytes(path, flipped); }},
      {"truncated", [&] { write_bytes(path, cubin.substr(0, cubin.size() / 2)); }},
      {"empty", [&] { write_bytes(path, ""); }},
      {"checksum removed", [&] { fs::remove(first.checksum_path(key, arch())); }},
  };
  for (const auto& [what, damage] : damages) {
    SCOPED_TRACE(what);
    damage();
    CubinCache cache(dir_.path());
    const std::string recompiled = cache.load_or_compile(kSource, arch());
    EXPECT_EQ(cache.stats().recompiled_corrupt, 1);
    EXPECT_EQ(cache.stats().hits, 0);
    EXPECT_EQ(cache.stats().misses, 0);
    EXPECT_EQ(read_bytes(path), recompiled);
    EXPECT_EQ(read_bytes(cache.checksum_path(key, arch())), cpu::sha256_hex(recompiled));
    // Replaced by a good entry: the next object hits it.
    CubinCache next(dir_.path());
    EXPECT_EQ(next.load_or_compile(kSource, arch()), recompiled);
    EXPECT_EQ(next.stats().hits, 1);
  }
}

// Signed entries (docs/kernel-cache.md): under a secret a cubin carries a tag;
// another cubin put under its key with its own checksum is not loaded.
TEST_P(CubinCacheTest, UnderASecretAForgedCubinIsRecompiled) {
  CubinCache cache(dir_.path(), "secret");
  const std::string cubin = cache.load_or_compile(kSource, arch());
  const std::string key = cache.key(kSource, arch());
  EXPECT_EQ(read_bytes(cache.tag_path(key, arch())), entry_tag("secret", key, cubin));
  const std::string other_source = std::string(kSource) + "// another kernel's bytes\n"
                                   "extern \"C\" __global__ void k_other(float* y) { y[0] = 1.0f; }\n";
  const std::string forged = cache.load_or_compile(other_source, arch());
  write_bytes(cache.cubin_path(key, arch()), forged);
  write_bytes(cache.checksum_path(key, arch()), cpu::sha256_hex(forged));
  EXPECT_EQ(CubinCache(dir_.path(), std::nullopt).load_or_compile(kSource, arch()), forged);  // trusted without one
  CubinCache signed_reader(dir_.path(), "secret");
  const std::string recompiled = signed_reader.load_or_compile(kSource, arch());
  EXPECT_NE(recompiled, forged);
  EXPECT_EQ(read_bytes(cache.cubin_path(key, arch())), recompiled);
  EXPECT_EQ(signed_reader.stats().rejected_unsigned, 1);
  CubinCache next(dir_.path(), "secret");
  EXPECT_EQ(next.load_or_compile(kSource, arch()), recompiled);
  EXPECT_EQ(next.stats().hits, 1);
}

TEST_P(CubinCacheTest, NvrtcRejectingTheSourceThrowsItsLogAndStoresNothing) {
  CubinCache cache(dir_.path());
  const std::string bad = "extern \"C\" __global__ void k_bad(float* y) { y[0] = undeclared_name; }\n";
  try {
    cache.load_or_compile(bad, arch());
    ADD_FAILURE() << "NVRTC accepted an undeclared name";
  } catch (const cpu::CompileError& e) {
    EXPECT_TRUE(contains(e.what(), arch())) << e.what();
    EXPECT_TRUE(contains(e.diagnostics(), "undeclared_name")) << e.diagnostics();
    EXPECT_TRUE(contains(e.diagnostics(), "error")) << e.diagnostics();
  }
  EXPECT_EQ(cache.stats().misses, 0);
  EXPECT_FALSE(fs::exists(cache.cubin_path(cache.key(bad, arch()), arch())));
}

TEST_P(CubinCacheTest, TheKeyChangesWithTheSourceOnly) {
  CubinCache cache(dir_.path());
  const std::string key = cache.key(kSource, arch());
  EXPECT_EQ(CubinCache(dir_.path() / "elsewhere").key(kSource, arch()), key);
  EXPECT_NE(cache.key(std::string(kSource) + "\n", arch()), key);
  EXPECT_NE(cache.key(std::string(kSource) + "// another kernel\n", arch()), key);
}

INSTANTIATE_TEST_SUITE_P(Arches, CubinCacheTest, ::testing::Values("sm_90", "sm_80"));

TEST(CubinCache, ADifferentArchitectureIsADifferentEntry) {
  ScratchDirectory dir;
  CubinCache cache(dir.path());
  const std::string k90 = cache.key(kSource, "sm_90"), k80 = cache.key(kSource, "sm_80");
  EXPECT_NE(k90, k80);
  EXPECT_NE(cache.cubin_path(k90, "sm_90"), cache.cubin_path(k80, "sm_80"));
  const std::string c90 = cache.load_or_compile(kSource, "sm_90");
  const std::string c80 = cache.load_or_compile(kSource, "sm_80");
  EXPECT_NE(c90, c80);
  EXPECT_EQ(cache.stats().misses, 2);
  EXPECT_EQ(cache.load_or_compile(kSource, "sm_80"), c80);
  EXPECT_EQ(cache.stats().hits, 1);
}

// The remote tier (docs/kernel-cache.md, A cache shared by many workers): a
// second worker with an empty directory gets the cubin and, beside it, the
// PTX from a real redis-server, and compiles nothing.
TEST(CubinCache, ASecondWorkerGetsTheCubinAndItsPtxFromTheStore) {
  stitch::testing::RedisServer redis;
  RemoteSettings settings;
  settings.address = parse_remote_address(redis.url());
  ScratchDirectory first_dir, second_dir;
  CubinCache first(first_dir.path(), "secret", std::make_shared<RemoteCache>(settings, "secret"));
  const std::string cubin = first.load_or_compile(kSource, "sm_90");
  EXPECT_EQ(first.stats().misses, 1);
  CubinCache second(second_dir.path(), "secret", std::make_shared<RemoteCache>(settings, "secret"));
  EXPECT_EQ(second.load_or_compile(kSource, "sm_90"), cubin);
  const std::string ptx = second.load_or_compile(kSource, "sm_90", ModuleImage::Ptx);
  EXPECT_NE(ptx.find(".entry k_scale"), std::string::npos);
  EXPECT_EQ(second.stats().remote_hits, 2);
  EXPECT_EQ(second.stats().compiles(), 0);
  EXPECT_EQ(cache_dump_line(second.stats()), "cache: hits=0 remote_hits=2 misses=0\n");
}

TEST(CubinCache, NvrtcVersionNamesTheLibrary) {
  EXPECT_TRUE(contains(nvrtc_version(), "nvrtc ")) << nvrtc_version();
  EXPECT_FALSE(contains(nvrtc_version(), "unknown")) << nvrtc_version();
}

// What pipeline::compile_cuda_batch builds for `graphs` before it loads the
// module: split full reductions, plan, lower with the GPU's row schedules,
// one translation unit. The GPU's own ranking uses the queried device; the
// sm_90 table entry with an opt-in shared-memory budget is the nearest
// stand-in (an H100 runs the gpu label).
std::string batch_source(const std::vector<gpu_testing::GpuGraph>& graphs, PlannerKind planner,
                         std::optional<schedule::RowScheduleKind> forced_rows, int64_t forced_column_groups) {
  schedule::RowScheduleTarget rows = schedule::RowScheduleTarget::for_device(schedule::sm90_target());
  rows.forced = forced_rows;
  rows.forced_column_groups = forced_column_groups;
  PlanOptions options;
  options.max_fusions = resolve_max_fusions(options);
  pipeline::Backend backend;
  backend.name = "cuda";
  const std::vector<kir::Kernel> kernels =
      pipeline::lower_batch(gpu_testing::canonical_graphs(graphs), pipeline::compilation_of(Graph(), planner, options, rows),
                           backend)
          .kernels;
  return codegen::cuda::emit_cuda_translation_unit(kernels);
}

void expect_compiles(CubinCache& cache, const std::string& what, const std::string& source) {
  const auto start = std::chrono::steady_clock::now();
  try {
    EXPECT_FALSE(cache.load_or_compile(source, "sm_90").empty()) << what;
  } catch (const cpu::CompileError& e) {
    ADD_FAILURE() << what << ": " << e.what() << "\n" << e.diagnostics();
  }
  std::printf("%s: NVRTC for sm_90 in %.1f s\n", what.c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

std::string planner_test_name(const ::testing::TestParamInfo<PlannerKind>& info) {
  return std::string(planner_name(info.param));
}

class GpuCorpusInputs : public ::testing::TestWithParam<PlannerKind> {};

TEST_P(GpuCorpusInputs, CompileForSm90) {
  ScratchDirectory dir;
  CubinCache cache(dir.path());
  const std::vector<gpu_testing::GpuGraph> graphs = gpu_testing::corpus_graphs();
  ASSERT_GE(graphs.size(), 50u);
  expect_compiles(cache, "corpus " + std::string(planner_name(GetParam())), batch_source(graphs, GetParam(), {}, 0));
}

INSTANTIATE_TEST_SUITE_P(Planners, GpuCorpusInputs,
                         ::testing::Values(PlannerKind::None, PlannerKind::Xla, PlannerKind::Stitch),
                         planner_test_name);

class GpuForcedRowInputs : public ::testing::TestWithParam<schedule::RowScheduleKind> {};

TEST_P(GpuForcedRowInputs, CompileForSm90) {
  ScratchDirectory dir;
  CubinCache cache(dir.path());
  const std::string name(schedule::row_schedule_kind_name(GetParam()));
  const std::vector<gpu_testing::GpuGraph> graphs = gpu_testing::row_schedule_graphs();
  for (PlannerKind planner : {PlannerKind::Stitch, PlannerKind::Xla}) {
    const std::string source = batch_source(graphs, planner, GetParam(), 0);
    // What the GPU test checks in the executable's source.
    EXPECT_TRUE(contains(source, "// row schedule: " + name)) << name;
    expect_compiles(cache, "forced " + name + " " + std::string(planner_name(planner)), source);
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, GpuForcedRowInputs,
                         ::testing::Values(schedule::RowScheduleKind::BlockPerRow,
                                           schedule::RowScheduleKind::WarpPerRow,
                                           schedule::RowScheduleKind::MultiRowPerWarp),
                         [](const ::testing::TestParamInfo<schedule::RowScheduleKind>& info) {
                           std::string name(schedule::row_schedule_kind_name(info.param));
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

TEST(GpuSuiteInputs, TheForcedColumnTilesCompileForSm90) {
  ScratchDirectory dir;
  CubinCache cache(dir.path());
  const std::vector<gpu_testing::GpuGraph> graphs = gpu_testing::column_tile_graphs();
  for (PlannerKind planner : {PlannerKind::Xla, PlannerKind::Stitch}) {
    const std::string source = batch_source(graphs, planner, std::nullopt, 4);
    EXPECT_TRUE(contains(source, "// column schedule: block-tile-column")) << planner_name(planner);
    expect_compiles(cache, "forced column tiles " + std::string(planner_name(planner)), source);
  }
}

TEST(GpuSuiteInputs, TheExecutableAndDotTestGraphsCompileForSm90) {
  ScratchDirectory dir;
  CubinCache cache(dir.path());
  std::vector<gpu_testing::GpuGraph> graphs;
  for (const std::string& text : gpu_testing::executable_test_graphs()) {
    graphs.push_back({parse_module(text).graphs.front(), {}});
  }
  for (PlannerKind planner : {PlannerKind::None, PlannerKind::Xla, PlannerKind::Stitch}) {
    expect_compiles(cache, "executable tests " + std::string(planner_name(planner)),
                    batch_source(graphs, planner, std::nullopt, 0));
  }
}

}  // namespace
}  // namespace stitch::runtime::cuda
