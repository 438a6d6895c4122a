// Flakes: attempts combined into one verdict (flaky), known flakes in expectations files, and
// the runner's reruns in fresh processes against a self-test case that fails on demand.
#include <unistd.h>

#include <cstdio>

#include <gtest/gtest.h>

#include "ipcheck/expectations.hpp"
#include "ipcheck/runner.hpp"
#include "ipcheck/spawn.hpp"
#include "ipcheck/verdict.hpp"

namespace ipcheck {
namespace {

using reports::CaseResult;
using reports::Status;

// ---------------------------------------------------------------- attempts

CaseResult attempt(Status s, std::string reason, double seconds = 1) {
  CaseResult c;
  c.id = "memory.x";
  c.status = s;
  c.reason = std::move(reason);
  c.duration_s = seconds;
  return c;
}

TEST(Attempts, OnlyWhatAnotherAttemptCanChangeIsRerun) {
  for (Status s : {Status::fail, Status::leak, Status::timeout, Status::crash, Status::error})
    EXPECT_TRUE(verdict::wants_rerun(attempt(s, ""))) << reports::to_string(s);
  for (Status s : {Status::pass, Status::xfail, Status::skip, Status::incomplete, Status::flaky})
    EXPECT_FALSE(verdict::wants_rerun(attempt(s, ""))) << reports::to_string(s);
}

TEST(Attempts, FailedThenPassedIsFlakyWithEveryAttemptKept) {
  const CaseResult c = verdict::combine_attempts(
      {attempt(Status::crash, "consumer died by SIGSEGV", 2), attempt(Status::fail, "x", 1), attempt(Status::pass, "", 3)});
  EXPECT_EQ(c.status, Status::flaky);
  EXPECT_NE(c.reason.find("passed on attempt 3 of 3 after attempt 1 was crash: consumer died by SIGSEGV"),
            std::string::npos)
      << c.reason;
  ASSERT_EQ(c.attempts.size(), 3u);
  EXPECT_EQ(c.attempts[0].status, Status::crash);
  EXPECT_EQ(c.attempts[2].status, Status::pass);
  EXPECT_DOUBLE_EQ(c.duration_s, 6);
  EXPECT_FALSE(reports::is_problem(c.status)) << "a flake does not fail the run";
  EXPECT_EQ(reports::severity(c.status), -1) << "and is never a regression";
}

TEST(Attempts, NeverPassedKeepsTheFirstJudgedAttempt) {
  const CaseResult c = verdict::combine_attempts(
      {attempt(Status::error, "fork failed"), attempt(Status::fail, "first"), attempt(Status::crash, "second")});
  EXPECT_EQ(c.status, Status::fail);
  EXPECT_EQ(c.reason, "first");
  ASSERT_EQ(c.attempts.size(), 3u);
  ASSERT_FALSE(c.warnings.empty());
  EXPECT_NE(c.warnings.back().find("never passed: error, fail, crash"), std::string::npos) << c.warnings.back();
}

TEST(Attempts, AHarnessErrorThenAPassIsAPass) {
  const CaseResult c = verdict::combine_attempts({attempt(Status::error, "could not fork"), attempt(Status::pass, "")});
  EXPECT_EQ(c.status, Status::pass) << "an error judged nothing";
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("harness error, not judged: could not fork"), std::string::npos);
  EXPECT_EQ(c.attempts.size(), 2u);
}

TEST(Attempts, OneAttemptIsUnchanged) {
  const CaseResult c = verdict::combine_attempts({attempt(Status::fail, "once")});
  EXPECT_EQ(c.status, Status::fail);
  EXPECT_TRUE(c.attempts.empty());
}

TEST(Attempts, ResultsKeepEveryAttempt) {
  reports::Results r;
  r.cases.push_back(verdict::combine_attempts({attempt(Status::timeout, "hung"), attempt(Status::pass, "")}));
  r.cases.back().description = "d";
  r.summary = reports::summarize(r.cases);
  const reports::Results back = reports::from_json(reports::to_json(r));
  ASSERT_EQ(back.cases.size(), 1u);
  const CaseResult& c = back.cases[0];
  EXPECT_EQ(c.status, Status::flaky);
  ASSERT_EQ(c.attempts.size(), 2u);
  EXPECT_EQ(c.attempts[0].status, Status::timeout);
  EXPECT_EQ(c.attempts[0].reason, "hung");
  EXPECT_EQ(c.attempts[0].id, "memory.x") << "an attempt belongs to its case";
  EXPECT_EQ(back.summary.of(Status::flaky), 1);
  EXPECT_EQ(back.summary.unexpected, 0);
  EXPECT_EQ(reports::to_json(back), reports::to_json(r)) << "written the same again";
}

// ---------------------------------------------------------------- known flakes

TEST(Expectations, AFlakyLineMarksAFlakeExpectedAndNeverGoesStale) {
  const auto e = Expectations::parse("memory.x  flaky  reason=*SIGSEGV*  the driver races at exit (https://example.org/1)\n"
                                     "memory.y  flaky  known flake of memory.y\n",
                                     "flakes.txt");
  ASSERT_EQ(e.entries().size(), 2u);
  EXPECT_EQ(e.entries()[0].status, Status::flaky);
  verdict::ExpectationUse use(e);
  CaseResult flake = verdict::combine_attempts({attempt(Status::crash, "consumer died by SIGSEGV"), attempt(Status::pass, "")});
  use.apply(flake, "1.0");
  EXPECT_EQ(flake.status, Status::flaky) << "a known flake stays flaky";
  ASSERT_TRUE(flake.expected_status);
  EXPECT_EQ(*flake.expected_status, Status::flaky);
  EXPECT_NE(flake.expectation.find("the driver races at exit"), std::string::npos) << flake.expectation;
  // A case that fails on every attempt is not covered by its flaky line.
  CaseResult broken = attempt(Status::fail, "always");
  broken.id = "memory.y";
  use.apply(broken, "1.0");
  EXPECT_EQ(broken.status, Status::fail);
  // memory.y passed: its flaky line matched nothing, and is not stale.
  CaseResult passed = attempt(Status::pass, "");
  passed.id = "memory.y";
  EXPECT_TRUE(use.stale({flake, passed}, "1.0").empty());
  EXPECT_TRUE(use.report({flake, passed}, "1.0")["stale"].empty());
}

TEST(Expectations, AFlakyLineTakesOnlyReasonAndDriver) {
  try {
    Expectations::parse("memory.x  flaky  check=*size*  no\n", "flakes.txt");
    ADD_FAILURE() << "check= on a flaky line was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("flakes.txt:1: a flaky line takes only reason="), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(Expectations::parse("memory.x  flaky  driver=>=2  reason=*x*  yes\n", "flakes.txt"));
}

// ---------------------------------------------------------------- the runner

class FlakyRunnerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { become_subreaper(); }
  RunOptions options(std::vector<std::string> filters) {
    RunOptions o;
    o.adapter = "ref";
    o.role_executable = IPCHECK_SELFTEST_EXE;
    o.filters = std::move(filters);
    o.exact = true;
    o.include_hidden = true;
    o.audit = "proc";
    o.timeout_s = 10;
    o.inactivity_s = 10;
    o.grace_s = 0.5;
    o.jobs = 2;
    o.env = {"ASAN_OPTIONS=handle_segv=0:detect_leaks=0", "TSAN_OPTIONS=handle_segv=0:halt_on_error=1"};
    return o;
  }
};

TEST_F(FlakyRunnerTest, AFlakeFoundByARerunInFreshProcesses) {
  const std::string counter = ::testing::TempDir() + "/flaky-counter-" + std::to_string(::getpid());
  std::remove(counter.c_str());
  RunOptions o = options({"selftest.flaky"});
  o.env.push_back("IPCHECK_SELFTEST_FLAKY=" + counter + ":2");
  o.rerun_failures = 3;
  const reports::Results r = run_suite(o);
  ASSERT_EQ(r.cases.size(), 1u);
  const CaseResult& c = r.cases[0];
  EXPECT_EQ(c.status, Status::flaky) << c.reason;
  ASSERT_EQ(c.attempts.size(), 3u) << "fail, fail, pass";
  EXPECT_EQ(c.attempts[0].status, Status::fail);
  EXPECT_EQ(c.attempts[1].status, Status::fail);
  EXPECT_EQ(c.attempts[2].status, Status::pass);
  EXPECT_NE(c.attempts[0].roles.at(0).pid, c.attempts[2].roles.at(0).pid) << "each attempt in fresh processes";
  EXPECT_EQ(r.summary.unexpected, 0);
  EXPECT_EQ(r.run.options.value("rerun_failures", 0), 3);
  std::remove(counter.c_str());
  // Without reruns the same switch makes a plain failure.
  RunOptions once = options({"selftest.flaky"});
  once.env.push_back("IPCHECK_SELFTEST_FLAKY=" + counter + ":1");
  const reports::Results f = run_suite(once);
  ASSERT_EQ(f.cases.size(), 1u);
  EXPECT_EQ(f.cases[0].status, Status::fail);
  EXPECT_TRUE(f.cases[0].attempts.empty());
  std::remove(counter.c_str());
}

}  // namespace
}  // namespace ipcheck
