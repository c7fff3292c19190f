// stitch run FILE --kernel NAME (docs/cli.md): one call of a user kernel on the
// interpreter and the CPU, with the same output; bad invocations exit 2.
#include <gtest/gtest.h>

#include "cli_runner.h"
#include "stitch/npy.h"

namespace stitch {
namespace {

constexpr const char* kKernels = R"(kernel saxpy(a: f32, x: f32[n], y: f32[n]) over i < n {
  y[i] = a * x[i] + y[i]
}
kernel dot(x: f32[n], y: f32[n]) -> sum f64 over i < n {
  yield f64(x[i]) * f64(y[i])
}
)";

class KernelCli : public CliTest {};

TEST_F(KernelCli, TheInterpreterAndTheCpuPrintTheSameWrites) {
  std::string file = write("k.stitch", kKernels);
  CliResult interp = run_cli("run " + file + " --kernel saxpy --scalar a=2 --random-inputs 1 --dim n=9 --print --backend interp");
  CliResult cpu = run_cli("run " + file + " --kernel saxpy --scalar a=2 --random-inputs 1 --dim n=9 --print --backend cpu");
  ASSERT_EQ(interp.status, 0) << interp.output;
  ASSERT_EQ(cpu.status, 0) << cpu.output;
  EXPECT_EQ(interp.output, cpu.output);
  EXPECT_EQ(interp.output.rfind("y = f32[9] {", 0), 0u) << interp.output;  // only what the kernel writes
}

TEST_F(KernelCli, AReductionsValueAndArraysFromFiles) {
  std::string file = write("k.stitch", kKernels);
  Tensor x(DType::f32, {4});
  Tensor y(DType::f32, {4});
  for (int64_t i = 0; i < 4; ++i) {
    x.set_f64(i, static_cast<double>(i));
    y.set_f64(i, 2.0);
  }
  std::string args = " --kernel dot --input x=" + write_npy_file("x.npy", x) + " --input y=" + write_npy_file("y.npy", y);
  CliResult r = run_cli("run " + file + args + " --print --output-dir " + (dir_ / "out").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output, "dot = f64[] {12}\n");
  EXPECT_EQ(read_npy((dir_ / "out" / "dot.npy").string()).get_f64(0), 12.0);
}

TEST_F(KernelCli, BadInvocationsExitTwoWithTheReason) {
  std::string file = write("k.stitch", kKernels);
  struct Case {
    std::string args;
    std::string error;
  };
  for (const Case& c : std::vector<Case>{
           {"--kernel nope", "no kernel named 'nope' (kernels: saxpy, dot)"},
           {"--kernel saxpy --random-inputs 1 --dim n=3", "error: missing scalar 'a' (give --scalar a=VALUE)"},
           {"--kernel saxpy --scalar a=two --random-inputs 1 --dim n=3", "error: --scalar a=two: not a number"},
           {"--kernel saxpy --scalar a=1 --random-inputs 1", "symbol n is not bound (give --dim n=N)"},
           {"--kernel saxpy --scalar a=1 --scalar q=1", "kernel 'saxpy' has no scalar 'q'"},
           {"--kernel saxpy --graph g", "give --graph or --kernel, not both"},
           {"--scalar a=1", "--scalar binds a user kernel's scalar; give --kernel NAME"},
           {"--kernel saxpy --scalar a=1 --random-inputs 1 --dim n=3 --backend cuda --input q=x.npy", "error: "},
       }) {
    CliResult r = run_cli("run " + file + " " + c.args);
    EXPECT_EQ(r.status, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.error), std::string::npos) << c.args << "\n" << r.output;
  }
}

TEST_F(KernelCli, AnIndexOutOfRangeExitsTwoOnEveryBackEndNotACrash) {
  std::string file = write("oob.stitch", "kernel shift(x: f32[n], y: f32[n]) over i < n {\n  y[i] = x[i + 1]\n}\n");
  for (const char* backend : {"interp", "cpu"}) {
    CliResult r = run_cli("run " + file + " --kernel shift --random-inputs 1 --dim n=1000 --backend " + backend);
    EXPECT_EQ(r.status, 2) << backend << "\n" << r.output;
    EXPECT_NE(r.output.find("oob.stitch:2:10: error: kernel 'shift'"), std::string::npos) << backend << "\n" << r.output;
    EXPECT_NE(r.output.find("x[1000]"), std::string::npos) << backend << "\n" << r.output;
  }
}

}  // namespace
}  // namespace stitch
