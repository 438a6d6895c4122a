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

TEST(Expectations, ParsesAndMatchesByCaseOrFailingClause) {
  auto e = Expectations::parse(
      "# comment\n"
      "memory.open.repeat  fail  CUDA returns the same pointer https://example.invalid/issue#1\n"
      "sycl.mem.open.size  fail  driver accepts long handles\n",
      "cuda.txt");
  ASSERT_EQ(e.entries().size(), 2u);
  EXPECT_NE(e.entries()[0].reason.find("#1"), std::string::npos) << "links keep their anchors";
  reports::CaseResult c;
  c.id = "memory.open.repeat";
  c.status = reports::Status::fail;
  EXPECT_NE(e.match(c), nullptr);
  c.status = reports::Status::crash;
  EXPECT_EQ(e.match(c), nullptr) << "a crash is not the expected failure";
  reports::CaseResult d;
  d.id = "memory.open.size";
  d.status = reports::Status::fail;
  d.checks.push_back({"sycl.mem.open.size", "must", "fail", "consumer", "", ""});
  EXPECT_NE(e.match(d), nullptr);
}

TEST(Expectations, BadLinesNameFileAndLine) {
  try {
    Expectations::parse("a.case\n", "x.txt");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("x.txt:1"), std::string::npos);
  }
  EXPECT_THROW(Expectations::parse("a.case pass because\n", "x.txt"), std::runtime_error);
  EXPECT_THROW(Expectations::parse("a.case fail\n", "x.txt"), std::runtime_error);
}

}  // namespace
}  // namespace ipcheck
