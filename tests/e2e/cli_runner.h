// Running the built `stitch` binary from the end-to-end tests: its exit
// status and output, and a fixture with a scratch directory per test.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "run_command.h"
#include "stitch/npy.h"

namespace stitch {

using CliResult = testing::CommandRun;

// `env` is a prefix of VAR=value settings for the command, or empty.
inline CliResult run_cli(const std::string& args, const std::string& env = "") {
  return testing::run_command((env.empty() ? "" : "env " + env + " ") + std::string(STITCH_CLI) + " " + args);
}

// A fresh directory per test. STITCH_CACHE_DIR points into it, so compiled
// kernels never land in the user's cache and a cache hit can only come from
// the same test; an `env` prefix may still override it.
class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("stitch_e2e_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
            std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    ::setenv("STITCH_CACHE_DIR", (dir_ / "cache").c_str(), 1);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    std::filesystem::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  std::string write_npy_file(const std::string& name, const Tensor& t) {
    std::filesystem::path p = dir_ / name;
    stitch::write_npy(p.string(), t);
    return p.string();
  }
  std::string read(const std::filesystem::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  std::string src(const std::string& rel) { return std::string(STITCH_SOURCE_DIR) + "/" + rel; }

  std::filesystem::path dir_;
};

}  // namespace stitch
