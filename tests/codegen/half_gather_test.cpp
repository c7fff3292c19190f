// Gathered f16/bf16 reads in generated CPU code (stitch_cpu_runtime.h,
// stitch_bf16_gathered): a read whose index is not the same or consecutive
// across the vector loop's lanes (a transpose) goes through the aligned 32-bit
// word that holds the element; contiguous reads stay plain. The values equal
// the interpreter's bit for bit, also when a buffer starts 2 bytes past a
// 4-byte boundary (the word then begins one element before it) and at the
// buffer's last element.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "ir/canonicalize.h"
#include "pipeline/cpu_route.h"
#include "runtime/cpu/executable.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"

namespace stitch::runtime::cpu {
namespace {

namespace fs = std::filesystem;

Graph graph(const std::string& text) { return canonicalize(parse_module(text, "half_gather.stitch").graphs.front()); }

// Random finite values of the narrow dtype (bit patterns of normal numbers).
Tensor random_half(DType dtype, std::vector<int64_t> shape, uint32_t seed) {
  Tensor t = Tensor::uninitialized(dtype, shape);
  std::mt19937 rng(seed);
  std::vector<uint16_t> bits(static_cast<size_t>(t.numel()));
  for (uint16_t& b : bits) {
    const uint16_t sign = static_cast<uint16_t>(rng() & 1) << 15;
    b = dtype == DType::bf16 ? static_cast<uint16_t>(sign | (0x3C00 + rng() % 0x0800))   // about 2^-7 .. 2^8
                             : static_cast<uint16_t>(sign | (0x2000 + rng() % 0x3000));  // about 2^-7 .. 2^5
  }
  std::memcpy(t.raw(), bits.data(), t.nbytes());
  return t;
}

class HalfGather : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("stitch-half-gather-" + std::to_string(getpid()));
    cache_ = std::make_unique<KernelCache>(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::unique_ptr<KernelCache> cache_;
};

constexpr const char* kTransposes = R"(graph transposes(x: bf16[5, 7, 33], y: f16[5, 7, 33]) {
  a = transpose(x, perm=[2, 0, 1])
  b = transpose(y, perm=[1, 2, 0])
  c = add(a, a)
  d = mul(b, b)
  return c, d
})";

TEST_F(HalfGather, TransposedReadsAreGatheredThroughWordsAndMatchTheInterpreter) {
  const Graph g = graph(kTransposes);
  CpuExecutable exe = pipeline::compile_cpu(g, PlannerKind::Stitch, *cache_);
  EXPECT_NE(exe.source().find("stitch_bf16_gathered(in_"), std::string::npos) << exe.source();
  EXPECT_NE(exe.source().find("stitch_f16_gathered(in_"), std::string::npos) << exe.source();
  Tensor x = random_half(DType::bf16, {5, 7, 33}, 1), y = random_half(DType::f16, {5, 7, 33}, 2);
  const std::vector<Tensor> want = interpret(g, {x, y});
  const std::vector<Tensor> got = exe.run({x, y});
  ASSERT_EQ(got.size(), 2u);
  for (size_t o = 0; o < 2; ++o) {
    ASSERT_EQ(got[o].nbytes(), want[o].nbytes());
    EXPECT_EQ(std::memcmp(got[o].raw(), want[o].raw(), want[o].nbytes()), 0) << "output " << o;
  }
  // The inputs 2 bytes past a 4-byte boundary, the last element at the end of
  // the copy: the words start one element early.
  const int64_t n = x.numel();
  std::vector<uint16_t> xs(static_cast<size_t>(n) + 2), ys(static_cast<size_t>(n) + 2);
  uint16_t* xp = xs.data() + (reinterpret_cast<uintptr_t>(xs.data()) % 4 == 0 ? 1 : 0);
  uint16_t* yp = ys.data() + (reinterpret_cast<uintptr_t>(ys.data()) % 4 == 0 ? 1 : 0);
  ASSERT_EQ(reinterpret_cast<uintptr_t>(xp) % 4, 2u);
  std::memcpy(xp, x.raw(), x.nbytes());
  std::memcpy(yp, y.raw(), y.nbytes());
  const std::vector<int64_t> shape{5, 7, 33};
  std::vector<ArrayView> inputs{{reinterpret_cast<std::byte*>(xp), DType::bf16, shape.data(), 3},
                                {reinterpret_cast<std::byte*>(yp), DType::f16, shape.data(), 3}};
  std::vector<std::vector<uint16_t>> outputs(2, std::vector<uint16_t>(static_cast<size_t>(n)));
  exe.run_into(inputs, [&](size_t i, DType, const std::vector<int64_t>&) {
    return reinterpret_cast<std::byte*>(outputs[i].data());
  });
  for (size_t o = 0; o < 2; ++o) {
    EXPECT_EQ(std::memcmp(outputs[o].data(), want[o].raw(), want[o].nbytes()), 0) << "shifted, output " << o;
  }
}

TEST_F(HalfGather, ContiguousReadsStayPlain) {
  const Graph g = graph(R"(graph rows(x: bf16[64, 96], y: f16[64, 96]) {
  a = add(x, x)
  b = sub(y, reduce_max(y, axes=[1], keepdims=true))
  return a, b
})");
  CpuExecutable exe = pipeline::compile_cpu(g, PlannerKind::Stitch, *cache_);
  EXPECT_EQ(exe.source().find("_gathered(in_"), std::string::npos) << exe.source();
  Tensor x = random_half(DType::bf16, {64, 96}, 3), y = random_half(DType::f16, {64, 96}, 4);
  const std::vector<Tensor> want = interpret(g, {x, y});
  const std::vector<Tensor> got = exe.run({x, y});
  for (size_t o = 0; o < 2; ++o) EXPECT_EQ(std::memcmp(got[o].raw(), want[o].raw(), want[o].nbytes()), 0);
}

}  // namespace
}  // namespace stitch::runtime::cpu
