// Kernel packing (src/ptx/weave/pack.h): every pair of the kernel cases of
// the weaving tests, packed into one .entry whose first CTAs run A and the
// rest run B, must give bit-identical buffers to running the two kernels one
// after the other on the interpreter, and ptxas must accept the packed module.
#include <gtest/gtest.h>

#include "ptx/printer.h"
#include "ptx/weave/pack.h"
#include "weave_cases.h"

namespace stitch::ptx::testing {
namespace {

#ifdef STITCH_PTX_KERNEL_DIR

void check_packed_pair(const KernelCase& a, const KernelCase& b) {
  SCOPED_TRACE(a.name + " + " + b.name + " (packed)");
  const Module ma = load_kernel_module(a.file);
  const Module mb = load_kernel_module(b.file);
  PackOptions options;
  options.kernel_a = a.kernel;
  options.kernel_b = b.kernel;
  options.grid_a = a.launch.grid;
  options.grid_b = b.launch.grid;
  const Module packed = pack(ma, mb, options);
  const std::string text = print_module(packed);
  EXPECT_EQ(print_module(parse_module(text, "packed.ptx")), text);
  EXPECT_EQ(ptxas_messages(text, "pack_" + a.name + "_" + b.name), "");

  LaunchConfig launch = a.launch;
  launch.grid = {a.launch.grid[0] + b.launch.grid[0], 1, 1};
  launch.dynamic_shared_bytes = std::max(a.launch.dynamic_shared_bytes, b.launch.dynamic_shared_bytes);
  expect_same_as_alone(ma, mb, a, b, packed, a.kernel + "_" + b.kernel + "_packed", launch,
                       {KernelArg::scalar<uint32_t>(a.launch.grid[0]), KernelArg::scalar<uint32_t>(b.launch.grid[0])});
}

// Unlike weaving, packing lets both kernels use dynamic shared memory: each
// CTA runs one of them.
TEST(Pack, EveryPairMatchesTheKernelsRunAlone) {
  const std::vector<KernelCase> cases = kernel_cases();
  for (const KernelCase& a : cases) {
    for (const KernelCase& b : cases) check_packed_pair(a, b);
  }
}

TEST(Pack, TwoDimensionalKernelsAreRefused) {
  const Module transpose = load_kernel_module("transpose_tiled");
  const Module first = load_kernel_module("weave_first_second");
  PackOptions options;
  options.kernel_b = "first";
  const std::string message = error_of([&] { pack(transpose, first, options); });
  EXPECT_NE(message.find("one-dimensional"), std::string::npos) << message;
  EXPECT_NE(message.find("%ctaid.y"), std::string::npos) << message;
}

TEST(Pack, TwoDimensionalGridsAreRefused) {
  const Module m = load_kernel_module("weave_first_second");
  PackOptions options;
  options.kernel_a = "first";
  options.kernel_b = "second";
  options.grid_a = std::array<uint32_t, 3>{4, 2, 1};
  const std::string message = error_of([&] { pack(m, m, options); });
  EXPECT_NE(message.find("not one-dimensional"), std::string::npos) << message;
}

#endif  // STITCH_PTX_KERNEL_DIR

TEST(Pack, AMissingKernelIsNamed) {
  const std::string text = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k1()\n{\nret;\n}\n";
  const Module m = parse_module(text, "one.ptx");
  PackOptions options;
  options.kernel_b = "nope";
  EXPECT_NE(error_of([&] { pack(m, m, options); }).find("'nope'"), std::string::npos);
  const Module packed = pack(m, m, {});
  EXPECT_NE(packed.find_function("k1_k1_packed"), nullptr);
}

}  // namespace
}  // namespace stitch::ptx::testing
