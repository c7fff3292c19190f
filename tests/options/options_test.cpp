// The STITCH_* environment read in one place (src/options/options.h): each
// variable's default, good values and bad ones (a UserError naming it), and
// a change after the first read taken at the next.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "options/options.h"
#include "pipeline/pipeline.h"
#include "stitch/error.h"

namespace stitch {
namespace {

// Sets `name` for one scope, then restores what was there.
class ScopedVariable {
 public:
  ScopedVariable(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedVariable() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::string error_of(const char* name, const char* value) {
  ScopedVariable v(name, value);
  try {
    environment_options();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(EnvironmentOptions, DefaultsWhenUnsetOrEmpty) {
  ScopedVariable empty("STITCH_PREFETCH", "");
  const EnvironmentOptions o = environment_options();
  EXPECT_TRUE(o.prefetch);
  EXPECT_TRUE(o.dot_epilogues);
  EXPECT_TRUE(o.huge_pages);
  EXPECT_FALSE(o.weave);
  EXPECT_EQ(o.max_fusions, -1);
}

TEST(EnvironmentOptions, ReadsEachValueAndFollowsChanges) {
  {
    ScopedVariable a("STITCH_ATTENTION", "0");
    ScopedVariable f("STITCH_MAX_FUSIONS", "7");
    ScopedVariable s("STITCH_STREAM_MIN_BYTES", "-1");
    ScopedVariable c("STITCH_CACHE_MAX_BYTES", "3MiB");
    ScopedVariable d("STITCH_DUMP", "plan,kir");
    const EnvironmentOptions o = environment_options();
    EXPECT_FALSE(o.attention);
    EXPECT_EQ(o.max_fusions, 7);
    EXPECT_EQ(o.stream_min_bytes, -1);
    EXPECT_EQ(o.cache_max_bytes, uint64_t{3} << 20);
    EXPECT_TRUE(o.dumps("plan"));
    EXPECT_TRUE(o.dumps("lower"));  // kir is lower's older name
    EXPECT_FALSE(o.dumps("emit"));
  }
  const EnvironmentOptions after = environment_options();
  EXPECT_TRUE(after.attention);
  EXPECT_EQ(after.max_fusions, -1);
  EXPECT_FALSE(after.dumps("plan"));
}

TEST(EnvironmentOptions, BadValuesNameTheVariable) {
  EXPECT_EQ(error_of("STITCH_PREFETCH", "yes"), "STITCH_PREFETCH=yes: not 0 or 1");
  EXPECT_EQ(error_of("STITCH_TUNE", "2"), "STITCH_TUNE=2: not 0 or 1");
  EXPECT_EQ(error_of("STITCH_MAX_FUSIONS", "-3"), "STITCH_MAX_FUSIONS=-3: not a non-negative integer");
  EXPECT_EQ(error_of("STITCH_STREAM_MIN_BYTES", "4MiB"), "STITCH_STREAM_MIN_BYTES=4MiB: not an integer");
  EXPECT_NE(error_of("STITCH_CACHE_MAX_BYTES", "lots").find("STITCH_CACHE_MAX_BYTES=lots: expected a byte count"),
            std::string::npos);
  const std::string dump = error_of("STITCH_DUMP", "plan,shedule");
  EXPECT_NE(dump.find("STITCH_DUMP=plan,shedule: no stage 'shedule'"), std::string::npos) << dump;
  EXPECT_NE(dump.find("schedule"), std::string::npos) << dump;  // lists the names it takes
  // Once the bad value is gone, the options read again.
  EXPECT_TRUE(environment_options().prefetch);
}

// The kernel cache's secret: the variable itself, or a file's contents less
// one trailing newline; both, an unreadable file or an empty one are bad input.
TEST(EnvironmentOptions, TheCacheSecretFromTheVariableOrAFile) {
  EXPECT_FALSE(environment_options().cache_secret.has_value());
  {
    ScopedVariable k("STITCH_CACHE_KEY", "s3cret");
    EXPECT_EQ(environment_options().cache_secret, "s3cret");
  }
  const std::string file = ::testing::TempDir() + "stitch-cache-key";
  std::ofstream(file) << "from a file\n";
  {
    ScopedVariable f("STITCH_CACHE_KEY_FILE", file.c_str());
    EXPECT_EQ(environment_options().cache_secret, "from a file");
    ScopedVariable k("STITCH_CACHE_KEY", "s3cret");
    EXPECT_EQ(error_of("STITCH_CACHE_KEY", "s3cret"), "STITCH_CACHE_KEY and STITCH_CACHE_KEY_FILE are both set: set one");
  }
  // The file is read when the variable changes (here: another file each time).
  const std::string blank = file + "-blank", missing = file + "-missing";
  std::ofstream(blank) << "\n";
  EXPECT_EQ(error_of("STITCH_CACHE_KEY_FILE", blank.c_str()), "STITCH_CACHE_KEY_FILE=" + blank + ": holds no secret");
  EXPECT_EQ(error_of("STITCH_CACHE_KEY_FILE", missing.c_str()), "STITCH_CACHE_KEY_FILE=" + missing + ": cannot be read");
  std::remove(file.c_str());
  std::remove(blank.c_str());
  EXPECT_FALSE(environment_options().cache_secret.has_value());
}

// Every stage of the pipeline's table can be dumped by its name.
TEST(EnvironmentOptions, EveryPipelineStageIsADumpName) {
  const std::vector<std::string_view>& names = dump_stage_names();
  for (const pipeline::Stage& stage : pipeline::pipeline_stages()) {
    EXPECT_NE(std::find(names.begin(), names.end(), stage.name), names.end()) << stage.name;
  }
}

TEST(EnvironmentOptions, ByteCounts) {
  EXPECT_EQ(parse_byte_count("0", "X"), 0u);
  EXPECT_EQ(parse_byte_count("4K", "X"), 4096u);
  EXPECT_EQ(parse_byte_count("2G", "X"), uint64_t{2} << 30);
  EXPECT_THROW(parse_byte_count("1P", "X"), UserError);
  EXPECT_THROW(parse_byte_count("99999999999T", "X"), UserError);
}

}  // namespace
}  // namespace stitch
