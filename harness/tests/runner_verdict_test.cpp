// Every verdict the runner gives, reached through the scripted adapter (scripted_adapter.cpp):
// one case, a script per test saying which verb fails, dies, hangs or leaks. The roles run in
// ipcheck-selftest, as real role processes; these tests are the runner's side.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "ipcheck/runner.hpp"
#include "ipcheck/spawn.hpp"

namespace ipcheck {
namespace {

using reports::CaseResult;
using reports::Status;

constexpr const char* kCase = "selftest.scripted";

RunOptions scripted(const std::string& script) {
  RunOptions o;
  o.adapter = "scripted";
  o.role_executable = IPCHECK_SELFTEST_EXE;
  o.filters = {kCase};
  o.exact = true;
  o.timeout_s = 5;
  o.inactivity_s = 5;
  o.grace_s = 0.5;
  // Under the asan and tsan presets a fault must stay a signal, as it is in a normal build.
  o.env = {"IPCHECK_SCRIPTED=" + script, "ASAN_OPTIONS=handle_segv=0:detect_leaks=0",
           "TSAN_OPTIONS=handle_segv=0:halt_on_error=1"};
  return o;
}

CaseResult run_one(const RunOptions& o) { return run_case(*find_case(kCase), o); }

bool mentions(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

class RunnerVerdicts : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { become_subreaper(); }
};

TEST_F(RunnerVerdicts, EveryVerbAnsweringIsPass) {
  const CaseResult r = run_one(scripted(""));
  EXPECT_EQ(r.status, Status::pass) << r.reason;
  EXPECT_EQ(r.roles.size(), 2u);
}

TEST_F(RunnerVerdicts, ARuntimeErrorOnAMustCheckIsFail) {
  const CaseResult r = run_one(scripted("mem_open=fail:invalid"));
  EXPECT_EQ(r.status, Status::fail) << r.reason;
  EXPECT_TRUE(mentions(r.reason, "mem_open")) << r.reason;
}

TEST_F(RunnerVerdicts, AnAdapterThatIsNotThereIsSkip) {
  const CaseResult r = run_one(scripted("init=fail:not_implemented"));
  EXPECT_EQ(r.status, Status::skip) << r.reason;
  EXPECT_TRUE(mentions(r.reason, "scripted failure of init")) << r.reason;
}

TEST_F(RunnerVerdicts, ACoveredFailureIsXfail) {
  const std::string dir = ::testing::TempDir() + "runner-verdicts-xfail";
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/scripted.txt";
  std::ofstream(file) << kCase << "  fail  clause=harness.selftest.must  a scripted deviation (https://example.org)\n";
  RunOptions o = scripted("mem_open=fail:invalid");
  o.expectations_path = file;
  const reports::Results res = run_suite(o);
  ASSERT_EQ(res.cases.size(), 1u);
  EXPECT_EQ(res.cases[0].status, Status::xfail) << res.cases[0].reason;
}

TEST_F(RunnerVerdicts, AFailureNoLineCoversStaysFail) {
  const std::string dir = ::testing::TempDir() + "runner-verdicts-uncovered";
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/scripted.txt";
  std::ofstream(file) << kCase << "  fail  clause=harness.selftest.should  covers another clause (https://example.org)\n";
  RunOptions o = scripted("mem_open=fail:invalid");
  o.expectations_path = file;
  const reports::Results res = run_suite(o);
  ASSERT_EQ(res.cases.size(), 1u);
  EXPECT_EQ(res.cases[0].status, Status::fail) << res.cases[0].reason;
}

// Start slots cover what the driver serialises (Adapter::init: contexts), not what it does
// not (Adapter::prepare: the library and its process-wide init): with one slot, both roles of
// the case are in prepare at once, as they could not be if the slot were taken before it.
TEST_F(RunnerVerdicts, OneStartSlotLetsRolesPrepareSideBySide) {
  const std::string dir = ::testing::TempDir() + "runner-verdicts-meet-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  RunOptions o = scripted("prepare=meet:" + dir + ":2");
  o.starts_per_device = 1;
  o.jobs = 1;
  const reports::Results res = run_suite(o);
  ASSERT_EQ(res.cases.size(), 1u);
  EXPECT_EQ(res.cases[0].status, Status::pass) << res.cases[0].reason;
  EXPECT_TRUE(res.cases[0].attempts.empty()) << "passed only when run again: " << res.cases[0].attempts[0].reason;
  const auto& s = res.run.runner.at("scheduling");
  EXPECT_EQ(s["starts_per_device"], 1);
  EXPECT_EQ(s["adapter_starts"].get<int>(), 2) << s.dump();
  std::filesystem::remove_all(dir);
}

TEST_F(RunnerVerdicts, ARoleKilledByASignalIsCrash) {
  const CaseResult r = run_one(scripted("mem_open=crash"));
  EXPECT_EQ(r.status, Status::crash) << r.reason;
  EXPECT_TRUE(mentions(r.reason, "SIGSEGV")) << r.reason;
}

// A runtime that kills its own process with SIGKILL: a crash, not the machine running out
// (no OOM report of the kernel names the role, and the harness sent no signal).
TEST_F(RunnerVerdicts, ARoleThatKillsItselfWithSigkillIsCrash) {
  const CaseResult r = run_one(scripted("mem_open=kill"));
  EXPECT_EQ(r.status, Status::crash) << r.reason;
  EXPECT_TRUE(mentions(r.reason, "SIGKILL")) << r.reason;
}

TEST_F(RunnerVerdicts, AVerbThatNeverReturnsIsTimeout) {
  RunOptions o = scripted("mem_open=hang");
  o.timeout_s = 1.5;
  o.inactivity_s = 1.5;
  const CaseResult r = run_one(o);
  EXPECT_EQ(r.status, Status::timeout) << r.reason;
}

TEST_F(RunnerVerdicts, WhatAnOpenKeepsIsLeak) {
  const CaseResult r = run_one(scripted("mem_open=leak"));
  EXPECT_EQ(r.status, Status::leak) << r.reason;
  EXPECT_FALSE(r.findings.empty());
}

TEST_F(RunnerVerdicts, TheMachineRunningOutIsErrorNotTheAdapters) {
  const CaseResult r = run_one(scripted("init=fail:exhausted"));
  EXPECT_EQ(r.status, Status::error) << r.reason;
  EXPECT_TRUE(mentions(r.reason, "ran out of resources")) << r.reason;
}

TEST_F(RunnerVerdicts, AnInterruptedRunIsIncomplete) {
  std::atomic<bool> interrupted{false};
  RunOptions o = scripted("mem_open=hang");
  o.timeout_s = 30;
  o.inactivity_s = 30;
  o.interrupted = &interrupted;
  std::thread stop([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    interrupted = true;
  });
  const CaseResult r = run_one(o);
  stop.join();
  EXPECT_EQ(r.status, Status::incomplete) << r.reason;
}

}  // namespace
}  // namespace ipcheck
