// `stitch ptx print|run|weave` (docs/ptx.md, docs/ptx-interpreter.md,
// docs/goptx.md): the normative spellings, their outputs, and exit status 2
// with nothing written for bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "cli_runner.h"
#include "stitch/npy.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;
using Cli = CliTest;
using Result = CliResult;

const char* const kHeader = ".version 8.0\n.target sm_90\n.address_size 64\n\n";

// out[i] = x[i] OP CONSTANT for i < n, one thread per element (no module header).
std::string elementwise_entry(const std::string& name, const std::string& op, const std::string& constant) {
  return R"(.visible .entry )" + name + R"((.param .u64 x, .param .u64 out, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<8>;
  .reg .f32 %f<3>;
  ld.param.u64 %rd1, [x];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd3, %rd1;
  cvta.to.global.u64 %rd4, %rd2;
  mul.wide.u32 %rd5, %r5, 4;
  add.s64 %rd6, %rd3, %rd5;
  add.s64 %rd7, %rd4, %rd5;
  ld.global.f32 %f1, [%rd6];
  )" + op + R"(.f32 %f2, %f1, )" + constant + R"(;
  st.global.f32 [%rd7], %f2;
DONE:
  ret;
}
)";
}

std::string elementwise_kernel(const std::string& name, const std::string& op, const std::string& constant) {
  return kHeader + elementwise_entry(name, op, constant);
}

Tensor iota_f32(int64_t n, float start) {
  Tensor t(DType::f32, {n});
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = start + static_cast<float>(i);
  return t;
}

TEST_F(Cli, PtxPrintIsCanonicalAndBadPtxIsLocated) {
  const std::string k = write("k.ptx", elementwise_kernel("add_one", "add", "0f3F800000"));
  Result r = run_cli("ptx print " + k);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find(".visible .entry add_one("), std::string::npos) << r.output;
  const std::string printed = write("printed.ptx", r.output);
  EXPECT_EQ(run_cli("ptx print " + printed).output, r.output);

  const std::string bad = write("bad.ptx", ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k(\n");
  r = run_cli("ptx print " + bad);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("bad.ptx:"), std::string::npos) << r.output;
}

TEST_F(Cli, PtxRunWritesEveryPointerArgumentAndNothingOnAFault) {
  const std::string k = write("k.ptx", elementwise_kernel("add_one", "add", "0f3F800000"));
  const std::string x = write_npy_file("x.npy", iota_f32(300, 0));
  const std::string out = write_npy_file("out.npy", Tensor(DType::f32, {300}));
  Result r = run_cli("ptx run " + k + " --kernel add_one --grid 3 --block 128 --arg " + x + " --arg " + out +
                     " --arg u32:300 --output-dir " + (dir_ / "o").string());
  ASSERT_EQ(r.status, 0) << r.output;
  const Tensor result = read_npy((dir_ / "o" / "arg1.npy").string());
  ASSERT_EQ(result.numel(), 300);
  for (int i = 0; i < 300; ++i) EXPECT_EQ(result.data<float>()[i], static_cast<float>(i) + 1) << i;
  EXPECT_TRUE(fs::exists(dir_ / "o" / "arg0.npy"));

  // n larger than the buffers: an out-of-bounds load, exit 2, nothing written.
  r = run_cli("ptx run " + k + " --kernel add_one --grid 3 --block 128 --arg " + x + " --arg " + out +
              " --arg u32:384 --output-dir " + (dir_ / "fault").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "fault" / "arg1.npy"));
}

TEST_F(Cli, PtxRunProfilePrintsTheGpuModelsJsonAndRefusesBadTargets) {
  const std::string k = write("k.ptx", elementwise_kernel("add_one", "add", "0f3F800000"));
  const std::string x = write_npy_file("x.npy", iota_f32(4096, 0));
  const std::string out = write_npy_file("out.npy", Tensor(DType::f32, {4096}));
  const std::string launch = "ptx run " + k + " --kernel add_one --grid 32 --block 128 --arg " + x + " --arg " + out +
                             " --arg u32:4096";
  Result r = run_cli(launch + " --profile h200");
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* key : {"\"predicted_s\"", "\"dram_read_bytes\"", "\"dram_write_bytes\"",
                          "\"sectors_per_request\"", "\"registers\"", "\"occupancy\"", "\"bound\"",
                          "\"predicted_of_copy\""}) {
    EXPECT_NE(r.output.find(key), std::string::npos) << key << "\n" << r.output;
  }
  EXPECT_NE(r.output.find("\"dram_read_bytes\": 16384"), std::string::npos) << r.output;

  r = run_cli(launch + " --profile a100");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("h100, h200"), std::string::npos) << r.output;
  r = run_cli(launch + " --profile h200 --output-dir " + (dir_ / "o").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "o"));
}

TEST_F(Cli, PtxWeaveWritesOneKernelThatDoesWhatBothDo) {
  const std::string a = write("a.ptx", elementwise_kernel("add_one", "add", "0f3F800000"));
  const std::string b = write("b.ptx", elementwise_kernel("twice", "mul", "0f40000000"));
  for (const char* strategy : {"concat", "latency"}) {
    SCOPED_TRACE(strategy);
    const fs::path woven = dir_ / (std::string(strategy) + ".ptx");
    Result r = run_cli("ptx weave " + a + " " + b + " --strategy " + strategy + " -o " + woven.string());
    ASSERT_EQ(r.status, 0) << r.output;
    // A's parameters, then B's; A and B over different lengths.
    const std::string x = write_npy_file("x.npy", iota_f32(200, 0));
    const std::string y = write_npy_file("y.npy", iota_f32(256, 10));
    const std::string out_a = write_npy_file("out_a.npy", Tensor(DType::f32, {200}));
    const std::string out_b = write_npy_file("out_b.npy", Tensor(DType::f32, {256}));
    const fs::path dir = dir_ / (std::string("o_") + strategy);
    r = run_cli("ptx run " + woven.string() + " --kernel add_one_twice_woven --grid 2 --block 128 --arg " + x +
                " --arg " + out_a + " --arg u32:200 --arg " + y + " --arg " + out_b + " --arg u32:256 --output-dir " +
                dir.string());
    ASSERT_EQ(r.status, 0) << r.output;
    const Tensor ra = read_npy((dir / "arg1.npy").string());
    const Tensor rb = read_npy((dir / "arg4.npy").string());
    for (int i = 0; i < 200; ++i) EXPECT_EQ(ra.data<float>()[i], static_cast<float>(i) + 1) << i;
    for (int i = 0; i < 256; ++i) EXPECT_EQ(rb.data<float>()[i], 2 * (10 + static_cast<float>(i))) << i;
  }
}

TEST_F(Cli, PtxWeaveRefusalsExitTwoAndWriteNothing) {
  const std::string a = write("a.ptx", elementwise_kernel("add_one", "add", "0f3F800000"));
  const std::string both = write("both.ptx", kHeader + elementwise_entry("add_one", "add", "0f3F800000") +
                                                 elementwise_entry("twice", "mul", "0f40000000"));
  const fs::path out = dir_ / "woven.ptx";
  Result r = run_cli("ptx weave " + both + " " + a + " -o " + out.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--kernel-a"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out));
  r = run_cli("ptx weave " + both + " " + a + " --kernel-a nope -o " + out.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("'nope'"), std::string::npos) << r.output;
  r = run_cli("ptx weave " + a + " " + a + " --strategy zigzag -o " + out.string());
  EXPECT_EQ(r.status, 2) << r.output;
  r = run_cli("ptx weave " + a + " " + a + " --grid-a 2 -o " + out.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_FALSE(fs::exists(out));
  // Both of one file's kernels, named.
  r = run_cli("ptx weave " + both + " " + both + " --kernel-a twice --kernel-b add_one --name mixed -o " + out.string());
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(read(out).find(".entry mixed("), std::string::npos);
}

TEST_F(Cli, WeaveNeedsACudaBackend) {
  Result r = run_cli("run " + src("bench/workloads/softmax.stitch") + " --graph softmax_small --random-inputs 1 --weave");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--weave"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace stitch
