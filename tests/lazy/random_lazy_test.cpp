// Random lazy programs (docs/lazy.md): calls drawn from a pool of kernels with
// neighbour, reversed, strided and conditional accesses, arrays bound at
// random (aliasing included), reductions whose values feed later calls, and
// reads in the middle. Each program runs in the reference interpreter call by
// call, and fused with every fused kernel run by the interpreter too, whose
// race checks fail on any fusion the safety check should have refused; a
// smaller set also runs fused and compiled. All must agree.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <random>
#include <string>

#include "stitch/lazy.h"
#include "stitch/text.h"
#include "lazy_programs.h"
#include "tensor/compare.h"

namespace stitch {
namespace {

using namespace lazy_programs;  // NOLINT: the shared program generator

class RandomLazy : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(std::filesystem::temp_directory_path() / ("stitch-random-lazy-" + std::to_string(::getpid())));
    kernels_ = new std::map<std::string, KernelRef>(share_kernels(parse_module(kPool, "pool.stitch")));
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete dir_;
    delete kernels_;
  }

  static Outcome run(const Program& p, LazyOptions::Mode mode, uint64_t seed) {
    LazyOptions options;
    options.mode = mode;
    options.cache_dir = (*dir_ / "cache").string();
    return lazy_programs::run(p, options, seed, *kernels_);
  }

  static std::filesystem::path* dir_;
  static std::map<std::string, KernelRef>* kernels_;
};

std::filesystem::path* RandomLazy::dir_ = nullptr;
std::map<std::string, KernelRef>* RandomLazy::kernels_ = nullptr;

// Runs programs until `wanted` race-free ones ran in `mode` too; returns how
// many calls fused away and how many temporaries lived in registers.
void run_programs(int wanted, LazyOptions::Mode mode, uint64_t seed, int64_t* fused_away, int64_t* in_registers) {
  std::mt19937_64 rng(seed);
  int valid = 0;
  for (int attempt = 0; valid < wanted && attempt < wanted * 20; ++attempt) {
    Program p = random_program(rng);
    Outcome reference;
    try {
      reference = RandomLazy::run(p, LazyOptions::Mode::Reference, seed + static_cast<uint64_t>(attempt));
    } catch (const UserError&) {
      continue;  // a call races with itself (an aliased shift): not a valid program
    }
    ++valid;
    SCOPED_TRACE(describe(p));
    Outcome got = RandomLazy::run(p, mode, seed + static_cast<uint64_t>(attempt));
    expect_same(got, reference, mode == LazyOptions::Mode::Fused ? "fused" : "fused (interpreted)");
    *fused_away += got.stats.calls - got.stats.kernels;
    *in_registers += got.stats.arrays_in_registers;
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_EQ(valid, wanted);
}

TEST_F(RandomLazy, FusedKernelsRunByTheInterpreterMatchAndNeverRace) {
  int64_t fused_away = 0;
  int64_t in_registers = 0;
  run_programs(300, LazyOptions::Mode::FusedReference, 1000, &fused_away, &in_registers);
  EXPECT_GT(fused_away, 300);  // fusion happened, often
  EXPECT_GT(in_registers, 10);  // and dropped temporaries lived in registers
}

TEST_F(RandomLazy, FusedAndCompiledMatch) {
  int64_t fused_away = 0;
  int64_t in_registers = 0;
  run_programs(40, LazyOptions::Mode::Fused, 7000, &fused_away, &in_registers);
  EXPECT_GT(in_registers, 0);
  EXPECT_GT(fused_away, 6);
}

}  // namespace
}  // namespace stitch
