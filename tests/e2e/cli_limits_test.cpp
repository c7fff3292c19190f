// Sizes over their limits through the CLI (docs/limits.md): every case exits 2
// with a message naming the value and the limit, never an internal error, a
// crash or a wrapped count; a failed host allocation names its bytes.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>

#include "cli_runner.h"

namespace stitch {
namespace {

const std::string kLimit = "281474976710656";

constexpr const char* kBig =
    "graph g(x: f32[100000000000, 100000000]) -> (f32[100000000000, 100000000]) {\n  y = exp(x)\n  return y\n}\n";
// y is N^3 floats: over the limit from N = 41,286 on.
constexpr const char* kCube = "graph g(x: f32[N]) {\n  y = broadcast(x, shape=[N, N, N])\n  return y\n}\n";

// `stitch ARGS` with its address space limited to 4 GB (`ulimit -v`): a
// cheap, sure way to make a large allocation fail.
CliResult run_cli_under_address_limit(const std::string& args) {
  return testing::run_command("/bin/sh -c 'ulimit -v 4000000 && exec " + std::string(STITCH_CLI) + " " + args + "'");
}

class CliLimits : public CliTest {
 protected:
  // Exit status 2, each of `parts` in the output, and no internal error.
  void expect_bad_input(const CliResult& r, std::initializer_list<std::string> parts) {
    EXPECT_EQ(r.status, 2) << r.output;
    for (const std::string& p : parts) EXPECT_NE(r.output.find(p), std::string::npos) << "want: " << p << "\n" << r.output;
    EXPECT_EQ(r.output.find("bug in Stitch"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("internal error"), std::string::npos) << r.output;
  }
  std::string write_bytes(const std::string& name, const std::string& bytes) {
    const std::filesystem::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
  }
};

// (a) Static shapes, when the graph is parsed: every command.
TEST_F(CliLimits, StaticShapeOverTheLimitIsALocatedError) {
  const std::string file = write("big.stitch", kBig);
  for (const std::string& cmd : {"run " + file + " --random-inputs 1", "plan " + file, "print " + file,
                                "emit " + file, "check " + file}) {
    expect_bad_input(run_cli(cmd), {"big.stitch:1:9: error: parameter 'x': f32[100000000000, 100000000] has "
                                    "10000000000000000000 elements of 4 bytes (40000000000000000000 bytes)",
                                    "the limit is " + kLimit + " bytes (2^48) per tensor"});
  }
}

TEST_F(CliLimits, OpResultOverTheLimitIsALocatedError) {
  const std::string file =
      write("b.stitch", "graph g(x: f32[1000000, 1000]) {\n  y = broadcast(x, shape=[100000, 1000000, 1000])\n"
                        "  return y\n}\n");
  expect_bad_input(run_cli("plan " + file), {"b.stitch:2:", "broadcast 'y'", "100000000000000 elements", kLimit});
}

// (b) Symbols, when bound: --dim, inputs, random inputs.
TEST_F(CliLimits, DimOptionIsCheckedAsItIsRead) {
  const std::string file = write("c.stitch", kCube);
  const std::string run = "run " + file + " --backend interp --random-inputs 1 ";
  expect_bad_input(run_cli(run + "--dim N=300000000000000"),
                   {"--dim N=300000000000000: N is 300000000000000, more than the limit of " + kLimit});
  expect_bad_input(run_cli(run + "--dim N=-3"), {"--dim N=-3: N is -3: an extent cannot be negative"});
  expect_bad_input(run_cli(run + "--dim N=abc"), {"--dim N=abc: 'abc' is not a non-negative integer"});
  expect_bad_input(run_cli(run + "--dim N=12x"), {"--dim N=12x: '12x' is not a non-negative integer"});
  expect_bad_input(run_cli(run + "--dim N=99999999999999999999"),
                   {"--dim N=99999999999999999999: 99999999999999999999 does not fit in 64 bits; the limit on any "
                    "extent is " + kLimit});
  expect_bad_input(run_cli("plan " + file + " --dim N=-1"), {"--dim N=-1: N is -1"});
}

TEST_F(CliLimits, BoundSymbolsThatMakeAnIntermediateTooLargeAreRefusedBeforeRunning) {
  const std::string file = write("c.stitch", kCube);
  const std::string want = "value 'y' of graph 'g': f32[N, N, N] has 1000000000000000 elements of 4 bytes "
                           "(4000000000000000 bytes; with N = 100000); the limit is " + kLimit;
  expect_bad_input(run_cli("run " + file + " --backend interp --random-inputs 1 --dim N=100000"), {want});
  expect_bad_input(run_cli("run " + file + " --backend cpu --random-inputs 1 --dim N=100000"), {want});
  const std::string x = write_npy_file("x.npy", Tensor(DType::f32, {100000}));
  expect_bad_input(run_cli("run " + file + " --backend interp --input x=" + x), {want});
  // Within the limit: runs.
  const CliResult ok = run_cli("run " + file + " --backend interp --random-inputs 1 --dim N=3");
  EXPECT_EQ(ok.status, 0) << ok.output;
}

TEST_F(CliLimits, RandomInputOverTheLimitIsRefusedBeforeAllocating) {
  const std::string file = write("s.stitch", "graph g(x: f32[N, M]) {\n  y = exp(x)\n  return y\n}\n");
  expect_bad_input(run_cli("run " + file + " --random-inputs 1 --dim N=100000000 --dim M=100000000"),
                   {"random input 'x': f32[100000000, 100000000] has 10000000000000000 elements", kLimit});
}

// (f) stitch plan: byte counts under --dim, never wrapped.
TEST_F(CliLimits, PlanRefusesBindingsOverTheLimitAndNeverWraps) {
  const std::string big = write("big.stitch", kBig);
  const CliResult before = run_cli("plan " + big);
  EXPECT_EQ(before.output.find("3106511852580896768"), std::string::npos) << before.output;
  const std::string file = write("c.stitch", kCube);
  expect_bad_input(run_cli("plan " + file + " --dim N=100000"), {"value 'y': f32[N, N, N]", "with N = 100000",
                                                                  kLimit});
  const std::string five =
      write("five.stitch", "graph g(x: f32[A, B, C, D, E]) {\n  y = exp(x)\n  return y\n}\n");
  expect_bad_input(run_cli("plan " + five),
                   {"value 'x': f32[A, B, C, D, E]", kLimit, "A, B, C, D, E not bound by --dim, counted as 1024"});
  const CliResult ok = run_cli("plan " + file + " --dim N=1000");
  ASSERT_EQ(ok.status, 0) << ok.output;
  EXPECT_NE(ok.output.find("bytes total: 4000 read, 4000000000 written"), std::string::npos) << ok.output;
}

// (c) .npy headers.
TEST_F(CliLimits, NpyShapeOverTheLimitIsRefused) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000, 100000000), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(header.size());
  bytes += '\x00';
  const std::string npy = write_bytes("big.npy", bytes + header);
  const std::string file = write("e.stitch", "graph g(x: f32[N, M]) {\n  y = exp(x)\n  return y\n}\n");
  expect_bad_input(run_cli("run " + file + " --input x=" + npy),
                   {"big.npy: f32[100000000000, 100000000] has 10000000000000000000 elements", kLimit});
}

TEST_F(CliLimits, NpyHeaderLengthOverTheLimitIsRefused) {
  std::string bytes = "\x93NUMPY";
  bytes += '\x02';
  bytes += '\x00';
  bytes += std::string("\x00\x00\x20\x00", 4);  // 2^21, all present
  const std::string npy = write_bytes("long.npy", bytes + std::string(size_t{1} << 21, ' '));
  const std::string file = write("e.stitch", "graph g(x: f32[N]) {\n  y = exp(x)\n  return y\n}\n");
  expect_bad_input(run_cli("run " + file + " --input x=" + npy),
                   {"long.npy: the .npy header claims 2097152 bytes; the limit is 1048576"});
}

// (e) The kernel language: array extents, literal and bound ranges.
TEST_F(CliLimits, KernelSizesOverTheLimit) {
  const std::string arrays = write("a.stitch", "kernel k(x: f32[100000000000, 100000000]) over i < 1 {\n"
                                               "  x[0, 0] = 1.0\n}\n");
  expect_bad_input(run_cli("print " + arrays), {"a.stitch:1:10: error: array 'x': f32[100000000000, 100000000]",
                                                kLimit});
  const std::string ranges = write("r.stitch", "kernel k(x: f32[n], m: i64) over i < m, j < m {\n"
                                               "  if i == 0 && j == 0 { x[0] = 1.0 }\n}\n");
  expect_bad_input(run_cli("run " + ranges + " --kernel k --backend interp --random-inputs 1 --dim n=4 "
                           "--scalar m=100000000"),
                   {"kernel 'k': the range i < 100000000, j < 100000000 has more indices than the limit of " + kLimit});
  expect_bad_input(run_cli("run " + ranges + " --kernel k --random-inputs 1 --dim n=300000000000000 --scalar m=1"),
                   {"--dim n=300000000000000", kLimit});
}

// 2. Out of memory: within the limit, over what the process may map.
TEST_F(CliLimits, FailedAllocationNamesTheBytesAndTheTensor) {
#ifdef STITCH_SANITIZED
  // AddressSanitizer reserves terabytes of address space for its shadow
  // memory, so RLIMIT_AS cannot bound the child; the unsanitized build runs this.
  GTEST_SKIP() << "RLIMIT_AS and AddressSanitizer do not mix";
#endif
  const std::string file = write("m.stitch", "graph g(x: f32[N]) {\n  y = exp(x)\n  return y\n}\n");
  const CliResult r = run_cli_under_address_limit(
      "run " + file + " --backend interp --random-inputs 1 --dim N=4000000000");
  expect_bad_input(r, {"random input 'x': out of memory: the host did not give the 16000000000 bytes of a "
                       "f32[4000000000] tensor"});
}

}  // namespace
}  // namespace stitch
