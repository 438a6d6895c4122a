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

// Numbers parse the same for every option: decimal digits, nothing around them.
TEST(Options, NumbersAreStrictEverywhere) {
  for (const char* bad : {" 5", "5 ", "0x10", "abc", "-1", "", "+3", "1.5", "99999999999999999999"}) {
    auto o = make();
    ASSERT_TRUE(o.parse({"--jobs", bad}));
    try {
      (void)o.get_int("--jobs", 1, 64);
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const cli::UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("option '--jobs' is '" + std::string(bad) + "'"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(cli::parse_whole("-12"), -12);
  EXPECT_EQ(cli::parse_unsigned("0x10", true), 16u);
  EXPECT_EQ(cli::parse_unsigned("0x10", false), std::nullopt);
  EXPECT_EQ(cli::parse_unsigned("-1", true), std::nullopt);
  EXPECT_EQ(cli::parse_decimal("2.5e1"), 25.0);
  for (const char* bad : {"inf", "nan", "1e999", " 1", "1 ", "0x1p3", "--1", ""})
    EXPECT_EQ(cli::parse_decimal(bad), std::nullopt) << bad;
}

// --adapter-opt keys are the adapter's own; a wrong one is named with the valid ones.
TEST(Options, AdapterOptionKeysAreChecked) {
  cli::Options o("run", "", "");
  cli::add_adapter_options(o, "adapter");
  ASSERT_TRUE(o.parse({"--adapter", "ref", "--adapter-opt", "devices=ref0=all", "--transport", "scm"}));
  const cli::AdapterChoice c = cli::adapter_choice(o);
  EXPECT_EQ(c.adapter, "ref");
  EXPECT_EQ(c.transport, "scm");
  EXPECT_EQ(c.options.at("devices"), "ref0=all");
  cli::Options bad("run", "", "");
  cli::add_adapter_options(bad, "adapter");
  ASSERT_TRUE(bad.parse({"--adapter-opt", "colour=green"}));
  try {
    (void)cli::adapter_choice(bad);
    ADD_FAILURE() << "an unknown key was accepted";
  } catch (const cli::UsageError& e) {
    EXPECT_STREQ(e.what(), "--adapter-opt 'colour' is no option of adapter ref; ref takes devices");
  }
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
