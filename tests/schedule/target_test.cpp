// GPU table entries and the host CPU target (docs/schedule.md, Targets).
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>

#include "schedule/target.h"

namespace stitch::schedule {
namespace {

TEST(GpuTarget, Sm80IsTheA100Table) {
  const GpuTarget& t = sm80_target();
  EXPECT_EQ(t.arch, "sm_80");
  EXPECT_EQ(t.sm_count, 108);
  EXPECT_EQ(t.warp_size, 32);
  EXPECT_EQ(t.max_threads_per_sm, 2048);
  EXPECT_EQ(t.max_warps_per_sm(), 64);
  EXPECT_EQ(t.max_threads_per_block, 1024);
  EXPECT_EQ(t.max_blocks_per_sm, 32);
  EXPECT_EQ(t.registers_per_sm, 65536);
  EXPECT_EQ(t.max_registers_per_thread, 255);
  EXPECT_EQ(t.shared_bytes_per_sm, 164 * 1024);
  EXPECT_EQ(t.shared_bytes_per_block, 48 * 1024);
  EXPECT_EQ(t.shared_bytes_per_block_optin, 163 * 1024);
  EXPECT_DOUBLE_EQ(t.clock_hz, 1.41e9);
  EXPECT_DOUBLE_EQ(t.memory_bytes_per_second, 1555e9);
}

TEST(GpuTarget, Sm90IsTheH100Table) {
  const GpuTarget& t = sm90_target();
  EXPECT_EQ(t.arch, "sm_90");
  EXPECT_EQ(t.sm_count, 132);
  EXPECT_EQ(t.max_threads_per_sm, 2048);
  EXPECT_EQ(t.max_blocks_per_sm, 32);
  EXPECT_EQ(t.registers_per_sm, 65536);
  EXPECT_EQ(t.shared_bytes_per_sm, 228 * 1024);
  EXPECT_EQ(t.shared_bytes_per_block_optin, 227 * 1024);
  EXPECT_DOUBLE_EQ(t.clock_hz, 1.98e9);
  EXPECT_DOUBLE_EQ(t.memory_bytes_per_second, 3.35e12);
  // fp32 lanes per SM double from 8.0 to 9.0.
  EXPECT_DOUBLE_EQ(t.alu.per_cycle, 2 * sm80_target().alu.per_cycle);
}

TEST(GpuTarget, LooksUpByArch) {
  EXPECT_EQ(gpu_target("sm_90")->sm_count, 132);
  EXPECT_EQ(gpu_target("sm_80")->sm_count, 108);
  EXPECT_FALSE(gpu_target("sm_70").has_value());
  EXPECT_EQ(gpu_target_names(), (std::vector<std::string>{"sm_80", "sm_90"}));
  const ScheduleLimits limits = sm90_target().limits();
  EXPECT_EQ(limits.warp_size, 32);
  EXPECT_EQ(limits.max_block_threads, 1024);
  EXPECT_EQ(limits.shared_bytes_per_block, 48 * 1024);
}

TEST(CpuTarget, ParsesSysfsCacheSizes) {
  EXPECT_EQ(parse_cache_size("32K"), 32 * 1024);
  EXPECT_EQ(parse_cache_size("1024K"), 1024 * 1024);
  EXPECT_EQ(parse_cache_size("8M"), 8 << 20);
  EXPECT_EQ(parse_cache_size("512"), 512);
  EXPECT_FALSE(parse_cache_size("").has_value());
  EXPECT_FALSE(parse_cache_size("K").has_value());
  EXPECT_FALSE(parse_cache_size("32KB").has_value());
}

void write(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text << "\n";
}

TEST(CpuTarget, ReadsCachesFromASysfsDirectory) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "stitch_cpu_cache";
  std::filesystem::remove_all(dir);
  const char* caches[][3] = {{"1", "Data", "48K"}, {"1", "Instruction", "32K"}, {"2", "Unified", "2048K"},
                             {"3", "Unified", "32M"}};
  for (int i = 0; i < 4; ++i) {
    write(dir / ("index" + std::to_string(i)) / "level", caches[i][0]);
    write(dir / ("index" + std::to_string(i)) / "type", caches[i][1]);
    write(dir / ("index" + std::to_string(i)) / "size", caches[i][2]);
  }
  CpuTarget t = host_cpu_target(dir.string());
  EXPECT_TRUE(t.caches_from_sysfs);
  EXPECT_EQ(t.l1d_bytes, 48 * 1024);
  EXPECT_EQ(t.l2_bytes, 2 << 20);
  EXPECT_EQ(t.l3_bytes, 32 << 20);
  std::filesystem::remove_all(dir);
}

TEST(CpuTarget, LoadsTheHost) {
  CpuTarget t = host_cpu_target();
  EXPECT_GE(t.cores, 1);
  EXPECT_TRUE(t.vector_bytes == 16 || t.vector_bytes == 32 || t.vector_bytes == 64) << t.vector_bytes;
  // The measured M(V) curve is the fusion planners' own, not a copy.
  EXPECT_EQ(t.memory.bandwidth_curve, cpu_target_model().bandwidth_curve);
  EXPECT_GT(t.memory.bandwidth(int64_t{1} << 26), 0);
  if (std::filesystem::exists("/sys/devices/system/cpu/cpu0/cache/index0/size")) {
    EXPECT_TRUE(t.caches_from_sysfs);
    EXPECT_GT(t.l1d_bytes, 0);
  }
}

TEST(CpuTarget, MissingSysfsLeavesCachesUnknown) {
  CpuTarget t = host_cpu_target("/nonexistent/stitch/cache");
  EXPECT_FALSE(t.caches_from_sysfs);
  EXPECT_EQ(t.l1d_bytes, 0);
  EXPECT_EQ(t.l2_bytes, 0);
  EXPECT_EQ(t.l3_bytes, 0);
}

}  // namespace
}  // namespace stitch::schedule
