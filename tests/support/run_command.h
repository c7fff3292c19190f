// Running a shell command from a test: its exit status and its stdout and
// stderr together. Used by the tests that drive the built `stitch` binary.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace stitch::testing {

struct CommandRun {
  int status;          // the exit status, or -1 when it did not exit normally
  std::string output;  // stdout and stderr together
};

inline CommandRun run_command(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return {-1, "popen failed"};
  std::string out;
  std::array<char, 4096> buf;
  for (size_t n; (n = fread(buf.data(), 1, buf.size(), pipe)) > 0;) out.append(buf.data(), n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace stitch::testing
