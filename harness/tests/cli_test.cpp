// The option parser and the expectations file format: clear errors naming the problem.
#include <gtest/gtest.h>

#include "ipcheck/cli.hpp"
#include "ipcheck/expectations.hpp"

namespace ipcheck {
namespace {

cli::Options make() {
  cli::Options o("run", "", "");
  o.value("--adapter", "NAME", "", "ref").value("--jobs", "N", "", "1").multi("--filter", "GLOB", "").flag("--quiet", "");
  return o;
}

TEST(Options, ParsesValuesFlagsAndShortJobs) {
  auto o = make();
  ASSERT_TRUE(o.parse({"--adapter=ze", "-j4", "--filter", "a", "--filter", "b", "--quiet"}));
  EXPECT_EQ(o.get("--adapter"), "ze");
  EXPECT_EQ(o.get_int("--jobs", 1, 64), 4);
  EXPECT_EQ(o.all("--filter"), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(o.has("--quiet"));
}

TEST(Options, DefaultsApply) {
  auto o = make();
  ASSERT_TRUE(o.parse({}));
  EXPECT_EQ(o.get("--adapter"), "ref");
}

TEST(Options, UnknownOptionNamesIt) {
  auto o = make();
  try {
    o.parse({"--adaptor", "ref"});
    FAIL();
  } catch (const cli::UsageError& e) {
    EXPECT_STREQ(e.what(), "unknown option '--adaptor'");
  }
}

TEST(Options, MissingValueAndBadNumberAreUsageErrors) {
  auto o = make();
  EXPECT_THROW(o.parse({"--adapter"}), cli::UsageError);
  auto p = make();
  ASSERT_TRUE(p.parse({"-j", "many"}));
  try {
    p.get_int("--jobs", 1, 64);
    FAIL();
  } catch (const cli::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'many'"), std::string::npos);
  }
}

TEST(Options, RepeatedSingleValueIsRefused) {
  auto o = make();
  EXPECT_THROW(o.parse({"--adapter", "a", "--adapter", "b"}), cli::UsageError);
}

}  // namespace
}  // namespace ipcheck
