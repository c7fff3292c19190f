// Rounding to f16 and bf16 in generated CPU code (stitch_cpu_runtime.h): the
// float fast paths (integer rounding for bf16, F16C for f16) give the same bits
// as the interpreter's rounding from double, on ties, subnormals, overflow to
// infinity, the largest finite values, signed zeros, infinities and NaNs with
// payloads, and on a million random bit patterns; both as stored outputs and as
// the per-op rounding of narrow arithmetic. A bf16 value already rounded (a
// cast's, an op's) is stored by its bits without a second rounding
// (stitch_bf16_bits_of_exact), which the same bits check here.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

#include "ir/canonicalize.h"
#include "pipeline/cpu_route.h"
#include "pipeline/emit_route.h"
#include "runtime/cpu/executable.h"
#include "stitch/interpreter.h"
#include "stitch/text.h"

namespace stitch::runtime::cpu {
namespace {

namespace fs = std::filesystem;

std::vector<uint32_t> patterns() {
  std::vector<uint32_t> bits = {
      0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u,  // zeros, infinities
      0x7FC00000u, 0xFFC00001u, 0x7F800001u, 0x7FBFFFFFu,  // quiet and signalling NaNs with payloads
      0x00000001u, 0x807FFFFFu, 0x00008000u, 0x00018000u,  // subnormals, bf16 ties among them
      0x3F808000u, 0x3F818000u, 0x3F807FFFu, 0x3F808001u,  // bf16 ties to even, either side
      0x7F7FFFFFu, 0x7F7F8000u, 0xFF7F8000u, 0x477FF000u,  // overflow to inf (bf16, f16 max ties)
      0x477FE000u, 0x38800000u, 0x33800000u, 0x33000000u,  // f16 max, min normal, min subnormal, half of it
      0x33000001u, 0x387FE000u, 0x3F801000u, 0x3F803000u,  // f16 ties and near-ties
  };
  std::mt19937 rng(5);
  for (int i = 0; i < (1 << 20); ++i) bits.push_back(static_cast<uint32_t>(rng()));
  return bits;
}

TEST(NarrowRound, FloatFastPathsMatchTheInterpreterBitForBit) {
  const Graph g = canonicalize(parse_module(R"(graph narrow(x: f32[N]) {
  b = cast(x, to=bf16)
  h = cast(x, to=f16)
  bb = add(b, b)
  hh = mul(h, h)
  return b, h, bb, hh
})",
                                            "narrow.stitch")
                                   .graphs.front());
  const std::string source = pipeline::emitted_compilation(g, PlannerKind::Stitch, "cpu").source;
  EXPECT_NE(source.find("stitch_bf16_bits_of_exact("), std::string::npos) << source;
  const std::vector<uint32_t> bits = patterns();
  Tensor x = Tensor::uninitialized(DType::f32, {static_cast<int64_t>(bits.size())});
  std::memcpy(x.raw(), bits.data(), bits.size() * sizeof(uint32_t));
  const std::vector<Tensor> want = interpret(g, {x});
  const fs::path dir = fs::temp_directory_path() / ("stitch-narrow-round-" + std::to_string(getpid()));
  KernelCache cache(dir);
  const std::vector<Tensor> got = pipeline::compile_cpu(g, PlannerKind::Stitch, cache).run({x});
  ASSERT_EQ(got.size(), want.size());
  for (size_t o = 0; o < got.size(); ++o) {
    ASSERT_EQ(got[o].nbytes(), want[o].nbytes());
    std::vector<uint16_t> a(bits.size()), w(bits.size());
    std::memcpy(a.data(), got[o].raw(), got[o].nbytes());
    std::memcpy(w.data(), want[o].raw(), want[o].nbytes());
    int reported = 0;
    for (size_t i = 0; i < bits.size() && reported < 5; ++i) {
      if (a[i] != w[i]) {
        ADD_FAILURE() << "output " << o << ": input bits 0x" << std::hex << bits[i] << " gave 0x" << a[i]
                      << ", the interpreter 0x" << w[i];
        ++reported;
      }
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace stitch::runtime::cpu
