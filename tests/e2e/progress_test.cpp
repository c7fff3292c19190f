// Progress on long work (docs/cli.md, Progress): the status line's text, and
// that `stitch check`, `stitch bench` and `--tune` draw it on a terminal (a
// pseudo-terminal made by util-linux's `script`) and write nothing of it into
// a pipe.
#include "progress.h"

#include <gtest/gtest.h>

#include "cli_runner.h"

namespace stitch {
namespace {

TEST(ProgressText, CountRateTimeLeftAndTheItemUnderWay) {
  EXPECT_EQ(cli::progress_text("stitch check", 0, 4, 0.0, "g xla"), "stitch check: 0/4 · g xla");
  EXPECT_EQ(cli::progress_text("stitch check", 2, 4, 1.0, "g stitch"), "stitch check: 2/4 · 2.0/s · 1 s left · g stitch");
  EXPECT_EQ(cli::progress_text("b", 1, 3, 5.0, ""), "b: 1/3 · 5.0 s each · 10 s left");
  EXPECT_EQ(cli::progress_text("b", 1, 601, 1.0, ""), "b: 1/601 · 1.0/s · 10m00s left");
  // Cut to the terminal's width in characters, not bytes.
  EXPECT_EQ(cli::progress_text("stitch check", 2, 4, 1.0, "g stitch", 20), "stitch check: 2/4 · ");
}

TEST(ProgressText, ADisabledProgressWritesNothing) {
  ::testing::internal::CaptureStderr();
  {
    cli::Progress p("x", 2, false);
    p.step("a");
    p.step("b");
    cli::Progress::clear_for_output();
  }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

class ProgressCli : public CliTest {
 protected:
  // `args` run with stdout and stderr on a pseudo-terminal.
  CliResult on_terminal(const std::string& args) {
    return testing::run_command("script -qec '" + std::string(STITCH_CLI) + " " + args + "' /dev/null");
  }
  std::string softmax() { return src("bench/workloads/softmax.stitch") + " --graph softmax_small"; }
};

TEST_F(ProgressCli, CheckDrawsItsLineOnATerminalAndNothingIntoAPipe) {
  const std::string args = "check " + softmax() + " --planners xla,stitch";
  CliResult terminal = on_terminal(args);
  ASSERT_EQ(terminal.status, 0) << terminal.output;
  EXPECT_NE(terminal.output.find("stitch check: 0/2 · softmax_small xla"), std::string::npos) << terminal.output;
  EXPECT_NE(terminal.output.find("stitch check: 1/2 · "), std::string::npos) << terminal.output;
  EXPECT_NE(terminal.output.find(" left · softmax_small stitch"), std::string::npos) << terminal.output;
  CliResult piped = run_cli(args);
  ASSERT_EQ(piped.status, 0) << piped.output;
  EXPECT_EQ(piped.output.find("stitch check:"), std::string::npos) << piped.output;
  EXPECT_EQ(piped.output.find('\r'), std::string::npos) << piped.output;
}

TEST_F(ProgressCli, BenchAndTuneDrawTheirsOnATerminal) {
  CliResult bench = on_terminal("bench " + src("bench/workloads/add.stitch") + " " + src("bench/workloads/swish.stitch") +
                                " --repeat 1 --warmup 0");
  ASSERT_EQ(bench.status, 0) << bench.output;
  EXPECT_NE(bench.output.find("stitch bench: 3/4"), std::string::npos) << bench.output;
  CliResult tune = on_terminal("run " + softmax() + " --planner stitch --tune --random-inputs 1");
  ASSERT_EQ(tune.status, 0) << tune.output;
  EXPECT_NE(tune.output.find("stitch: tuning schedules, timing: "), std::string::npos) << tune.output;
  CliResult piped = run_cli("run " + softmax() + " --planner stitch --tune --random-inputs 1");
  EXPECT_EQ(piped.output.find("timing: "), std::string::npos) << piped.output;
}

}  // namespace
}  // namespace stitch
