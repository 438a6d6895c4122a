// The runner against deliberately broken roles: each gets the right verdict, and after
// every case no process of it remains and the runner holds no extra descriptor.
#include <dirent.h>
#include <sched.h>
#include <signal.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>
#include <map>

#include <gtest/gtest.h>

#include "ipcheck/audit.hpp"
#include "ipcheck/messages.hpp"
#include "ipcheck/runner.hpp"
#include "ipcheck/spawn.hpp"

namespace ipcheck {
namespace {

using reports::Status;

std::vector<pid_t> children_of_self() {
  std::vector<pid_t> out;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::ifstream in(std::string("/proc/self/task/") + e->d_name + "/children");
      pid_t p;
      while (in >> p) out.push_back(p);
    }
    ::closedir(d);
  }
  return out;
}

class RunnerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { become_subreaper(); }

  // A run_suite of the named hidden self-test cases on ref with `jobs` workers, each role
  // auditing itself, every limit `limit` seconds (tests set what they need beside).
  static RunOptions suite(std::vector<std::string> filters, int jobs, double limit = 20) {
    RunOptions o;
    o.adapter = "ref";
    o.role_executable = IPCHECK_SELFTEST_EXE;
    o.include_hidden = true;
    o.exact = true;
    o.filters = std::move(filters);
    o.jobs = jobs;
    o.audit = "proc";
    o.timeout_s = o.inactivity_s = limit;
    o.grace_s = 0.5;
    return o;
  }

  reports::CaseResult run(const std::string& id, double timeout = 10, const InjectPoint* inject = nullptr) {
    RunOptions o;
    o.adapter = "ref";
    o.role_executable = IPCHECK_SELFTEST_EXE;
    o.timeout_s = timeout;
    o.inactivity_s = timeout;
    o.grace_s = 0.5;
    // Under the asan and tsan presets a fault must stay a signal, as it is in a normal build.
    o.env = {"ASAN_OPTIONS=handle_segv=0:detect_leaks=0", "TSAN_OPTIONS=handle_segv=0:halt_on_error=1"};
    const CaseDef* c = find_case(id);
    EXPECT_NE(c, nullptr) << id;
    const std::size_t fds = count_open_fds();
    reports::CaseResult r = run_case(*c, o, inject);
    // Nothing of the case may remain: no child (the runner reaps) and no extra descriptor.
    EXPECT_EQ(children_of_self(), std::vector<pid_t>{}) << id << " left processes behind";
    EXPECT_EQ(count_open_fds(), fds) << id << " left the runner holding descriptors";
    return r;
  }
};

TEST_F(RunnerTest, PassingCasePasses) {
  auto r = run("selftest.pass");
  EXPECT_EQ(r.status, Status::pass) << r.reason;
  ASSERT_EQ(r.roles.size(), 2u);
  EXPECT_EQ(r.roles[0].exit, "exit 0");
}

TEST_F(RunnerTest, MustFailureFails) {
  auto r = run("selftest.fail");
  EXPECT_EQ(r.status, Status::fail);
  EXPECT_NE(r.reason.find("deliberate failure"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("selftest_cases.cpp"), std::string::npos) << "the reason names file:line: " << r.reason;
}

TEST_F(RunnerTest, ShouldFailureWarns) {
  auto r = run("selftest.should");
  EXPECT_EQ(r.status, Status::pass) << r.reason;
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("deliberate warning"), std::string::npos);
}

TEST_F(RunnerTest, SegvIsCrashNamingRoleAndSignal) {
  auto r = run("selftest.crash.segv");
  EXPECT_EQ(r.status, Status::crash);
  EXPECT_NE(r.reason.find("consumer died by SIGSEGV"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("about to crash"), std::string::npos) << "last output is quoted: " << r.reason;
}

TEST_F(RunnerTest, AbortIsCrash) {
  auto r = run("selftest.crash.abort");
  EXPECT_EQ(r.status, Status::crash);
  EXPECT_NE(r.reason.find("SIGABRT"), std::string::npos) << r.reason;
}

TEST_F(RunnerTest, HangIsTimeoutAndTheGroupIsKilled) {
  auto r = run("selftest.hang", 1.5);
  EXPECT_EQ(r.status, Status::timeout);
  EXPECT_NE(r.reason.find("consumer still running"), std::string::npos) << r.reason;
  EXPECT_LT(r.duration_s, 5.0);
}

TEST_F(RunnerTest, EarlyExitFails) {
  auto r = run("selftest.early_exit");
  EXPECT_EQ(r.status, Status::fail);
  EXPECT_NE(r.reason.find("consumer exited with code 3"), std::string::npos) << r.reason;
}

// A role that cannot be started is the harness's fault: error, never the adapter's fail.
TEST_F(RunnerTest, ExecFailureIsAHarnessErrorWithTheReason) {
  RunOptions o;
  o.adapter = "ref";
  o.role_executable = "/nonexistent/ipcheck";
  const std::size_t fds = count_open_fds();
  auto r = run_case(*find_case("selftest.pass"), o);
  EXPECT_EQ(r.status, Status::error);
  EXPECT_NE(r.reason.find("could not be started"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("No such file"), std::string::npos) << r.reason;
  EXPECT_EQ(count_open_fds(), fds);
  EXPECT_TRUE(children_of_self().empty());
}

// A role of another ipcheck build is refused at its hello: the case is an error that names
// both protocol versions and the fix, at once rather than after the inactivity timeout, and
// the adapter probe (which would make every case of a run an error) refuses it the same way.
TEST_F(RunnerTest, RoleOfAnotherProtocolVersionIsRefused) {
  const std::string ours = "this ipcheck speaks protocol version " + std::to_string(msg::kProtocolVersion);
  const std::map<std::string, std::string> said = {
      {"next", "the role speaks protocol version " + std::to_string(msg::kProtocolVersion + 1)},
      {"unversioned", "names no protocol version"}};
  for (const auto& [mode, what] : said) {
    RunOptions o;
    o.adapter = "ref";
    o.role_executable = IPCHECK_OTHER_VERSION_EXE;
    o.timeout_s = o.inactivity_s = 20;
    o.grace_s = 0.5;
    o.env = {"IPCHECK_TEST_HELLO=" + mode};
    const std::size_t fds = count_open_fds();
    const auto r = run_case(*find_case("selftest.pass"), o);
    EXPECT_EQ(r.status, Status::error) << mode << ": " << r.reason;
    EXPECT_NE(r.reason.find(what), std::string::npos) << r.reason;
    EXPECT_NE(r.reason.find(ours), std::string::npos) << r.reason;
    EXPECT_NE(r.reason.find("rebuild ipcheck"), std::string::npos) << r.reason;
    EXPECT_LT(r.duration_s, 5.0) << mode;
    EXPECT_EQ(children_of_self(), std::vector<pid_t>{}) << mode << " left processes behind";
    EXPECT_EQ(count_open_fds(), fds) << mode << " left the runner holding descriptors";

    const AdapterProbe p = probe_adapter(o);
    EXPECT_TRUE(p.broken) << mode;
    EXPECT_FALSE(p.available) << mode;
    EXPECT_NE(p.reason.find(what), std::string::npos) << p.reason;
    EXPECT_NE(p.reason.find(ours), std::string::npos) << p.reason;
    EXPECT_EQ(children_of_self(), std::vector<pid_t>{}) << "the refused probe was reaped";
  }
}

TEST_F(RunnerTest, RoleThatNeverReadsDoesNotBlockTheRunner) {
  // 8 s: the producer's 64 MB take about a second alone, several under the thread sanitizer on
  // a loaded 2-core machine (3 s was too few there: the producer had not finished at the timeout).
  auto r = run("selftest.no_read", 8);
  EXPECT_EQ(r.status, Status::timeout) << r.reason;
  // The producer finished its 64 MB of sends: the runner kept relaying without blocking.
  bool producer_done = false;
  for (const auto& c : r.checks) producer_done |= c.role == "producer" && c.result == reports::CheckResult::pass;
  EXPECT_TRUE(producer_done);
}

TEST_F(RunnerTest, LeakedDescriptorIsLeak) {
  auto r = run("selftest.leak.fd");
  EXPECT_EQ(r.status, Status::leak);
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings[0].kind, "fd");
  EXPECT_NE(r.findings[0].item.find("/dev/null"), std::string::npos) << r.findings[0].item;
}

TEST_F(RunnerTest, LeakedMappingIsLeak) {
  auto r = run("selftest.leak.mapping");
  EXPECT_EQ(r.status, Status::leak);
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings[0].kind, "mapping");
  EXPECT_NE(r.findings[0].item.find("rw-s"), std::string::npos) << r.findings[0].item;
}

TEST_F(RunnerTest, GrandchildIsLeakAndKilled) {
  auto r = run("selftest.grandchild");
  EXPECT_EQ(r.status, Status::leak) << r.reason;
  ASSERT_FALSE(r.findings.empty());
  EXPECT_EQ(r.findings[0].kind, "process");
  const pid_t grandchild = std::stoi(r.findings[0].item);
  EXPECT_NE(::kill(grandchild, 0), 0) << "grandchild " << grandchild << " still exists";
}

// A role the runner ends (here because another skipped) had no chance to end what it
// started: what its group still holds is killed and noted, not charged to it as a leak.
TEST_F(RunnerTest, WhatARoleCutShortLeftIsKilledAndNotedNotALeak) {
  auto r = run("selftest.skip.cut_short");
  EXPECT_EQ(r.status, Status::skip) << r.reason;
  EXPECT_TRUE(r.findings.empty()) << r.findings.size() << " finding(s), first: " << r.findings[0].item;
  std::string noted;
  for (const auto& w : r.warnings)
    if (w.find("consumer") != std::string::npos && w.find("cut short") != std::string::npos) noted = w;
  ASSERT_FALSE(noted.empty()) << "no warning names what the consumer left when the runner ended it";
  const pid_t child = std::stoi(noted.substr(noted.find(": ") + 2));
  EXPECT_NE(::kill(child, 0), 0) << "the consumer's child " << child << " still exists";
}

TEST_F(RunnerTest, OnDemandRolesRunOnlyWhenSentTo) {
  auto r = run("selftest.on_demand");
  EXPECT_EQ(r.status, Status::pass) << r.reason;
  std::vector<std::string> ran;
  for (const auto& x : r.roles) ran.push_back(x.name);
  EXPECT_EQ(ran, (std::vector<std::string>{"boss", "worker0", "worker2"})) << "worker1 and worker3 were never sent to";
  EXPECT_EQ(r.checks.size(), 6u) << "one by each worker that ran, two by the boss per worker";
  for (const auto& c : r.checks) EXPECT_EQ(c.result, reports::CheckResult::pass) << c.message;
}

TEST_F(RunnerTest, SkipEndsTheCaseAsSkip) {
  auto r = run("selftest.skip");
  EXPECT_EQ(r.status, Status::skip);
  EXPECT_EQ(r.reason, "deliberately not supported");
}

// A case that judges nothing is a bug of the catalog, not of the adapter.
TEST_F(RunnerTest, CaseWithoutChecksIsAnError) {
  auto r = run("selftest.no_checks");
  EXPECT_EQ(r.status, Status::error);
  EXPECT_NE(r.reason.find("no check"), std::string::npos) << r.reason;
}

TEST_F(RunnerTest, RequestedKillIsNotACrash) {
  auto r = run("selftest.kill_expected");
  EXPECT_EQ(r.status, Status::pass) << r.reason;
  EXPECT_EQ(r.roles[1].exit, "signal SIGKILL (expected)");
}

TEST_F(RunnerTest, ExpendableRoleDeathIsNotACrash) {
  auto r = run("selftest.expendable");
  EXPECT_EQ(r.status, Status::pass) << r.reason;
  ASSERT_EQ(r.roles.size(), 2u);
  EXPECT_EQ(r.roles[1].exit, "signal SIGABRT (expected)");
}

TEST_F(RunnerTest, ReceiveGivesUpWhenEveryPeerHasEnded) {
  auto r = run("selftest.receive_alone", 8);
  EXPECT_EQ(r.status, Status::fail) << r.reason;
  EXPECT_NE(r.reason.find("every other role has ended"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("'never sent'"), std::string::npos) << r.reason;
  EXPECT_LT(r.duration_s, 5.0) << "a lone waiter must not wait for the inactivity timeout";
}

TEST_F(RunnerTest, ARoleThatStoppedBreaksTheBarriersItNeverReached) {
  auto r = run("selftest.abort_breaks_barrier", 8);
  EXPECT_NE(r.status, Status::timeout) << r.reason;
  EXPECT_LT(r.duration_s, 5.0) << "the two waiters must be released, not left to the inactivity timeout";
  ASSERT_EQ(r.roles.size(), 3u);
  for (std::size_t i = 1; i < 3; ++i)
    EXPECT_NE(r.roles[i].output_tail.find("barrier 'exported' broken: producer stopped (deliberate stop) before reaching it"),
              std::string::npos)
        << r.roles[i].name << ": " << r.roles[i].output_tail;
}

TEST_F(RunnerTest, InjectionKillsAtTheNamedStep) {
  const InjectPoint at{"producer", "second"};
  auto r = run("selftest.inject", 10, &at);
  EXPECT_EQ(r.status, Status::pass) << r.reason;
  EXPECT_EQ(r.injection, "producer:second");
  bool saw = false;
  for (const auto& c : r.checks) saw |= c.message.find("producer ended: signal SIGKILL") != std::string::npos;
  EXPECT_TRUE(saw);
  // The successor stands by for injected runs only.
  ASSERT_EQ(r.roles.size(), 3u);
  EXPECT_EQ(r.roles[2].name, "successor");
  EXPECT_EQ(r.roles[1].exit, "exit 0");
  ASSERT_TRUE(r.audit.contains("leftovers")) << r.audit.dump();
  EXPECT_TRUE(r.audit["leftovers"]["held"].empty()) << r.audit.dump();
}

TEST_F(RunnerTest, WithoutInjectionStepsPassAndTheSuccessorIsNotStarted) {
  auto r = run("selftest.inject");
  EXPECT_EQ(r.status, Status::pass) << r.reason;
  EXPECT_EQ(r.injection, "");
  EXPECT_EQ(r.roles.size(), 2u);
  EXPECT_FALSE(r.audit.contains("leftovers"));
}

TEST_F(RunnerTest, StepIntoKillsTheRoleOnceItIsBlocked) {
  const InjectPoint at{"producer", "waiting"};
  auto r = run("selftest.inject.into", 10, &at);
  EXPECT_EQ(r.status, Status::pass) << r.reason;
  EXPECT_EQ(r.injection, "producer:waiting");
  ASSERT_TRUE(r.audit.contains("injection")) << r.audit.dump();
  EXPECT_EQ(r.audit["injection"]["killed"].get<std::string>().rfind("blocked (state S", 0), 0u) << r.audit.dump();
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  EXPECT_LT(r.duration_s, 4.0) << "killed in the sleep, not after it";
  // Without injection the step does not stop the role.
  auto plain = run("selftest.inject.into");
  EXPECT_EQ(plain.status, Status::pass) << plain.reason;
}

TEST_F(RunnerTest, InjectionPointNeverReachedIsAnError) {
  const InjectPoint at{"producer", "declared"};
  auto r = run("selftest.inject.unreached", 10, &at);
  EXPECT_EQ(r.status, Status::error);
  EXPECT_NE(r.reason.find("producer:declared was never reached"), std::string::npos) << r.reason;
}

TEST_F(RunnerTest, ObjectHeldAfterTheCaseIsLeakAndItsHolderEnds) {
  const InjectPoint at{"producer", "escaped"};
  auto r = run("selftest.inject.escape", 10, &at);
  EXPECT_EQ(r.status, Status::leak) << r.reason;
  ASSERT_FALSE(r.findings.empty());
  const auto& f = r.findings.front();
  EXPECT_EQ(f.kind, "fd");
  EXPECT_NE(f.item.find("/memfd:selftest-object"), std::string::npos) << f.item;
  EXPECT_NE(f.detail.find("after every process of the case ended"), std::string::npos) << f.detail;
  const pid_t holder = std::stoi(f.role.substr(f.role.find(' ') + 1));
  EXPECT_NE(::kill(holder, 0), 0) << "the escaped holder " << holder << " still exists";
  ASSERT_TRUE(r.audit.contains("leftovers"));
  EXPECT_EQ(r.audit["leftovers"]["objects"].size(), 1u) << r.audit.dump();
}

// ---- A role the machine holds back is not silent (runner_case.cpp: account_silence).

// The first process of ours whose command line names `needle`; 0 when there is none yet.
pid_t child_running(const std::string& needle) {
  for (pid_t p : children_of_self()) {
    std::ifstream in("/proc/" + std::to_string(p) + "/cmdline");
    std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmd.find(needle) != std::string::npos) return p;
  }
  return 0;
}

// Stopped by SIGSTOP for twice the inactivity limit, then continued: the case passes.
TEST_F(RunnerTest, StoppedRoleIsNotSilent) {
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    for (int i = 0; i < 5000 && !stopped; ++i) {
      if (const pid_t p = child_running("selftest.stoppable"); p > 0 && ::kill(p, SIGSTOP) == 0) {
        stopped = true;
        ::sleep(4);
        ::kill(p, SIGCONT);
        return;
      }
      ::usleep(1000);
    }
  });
  RunOptions o;
  o.adapter = "ref";
  o.role_executable = IPCHECK_SELFTEST_EXE;
  o.timeout_s = 30;
  o.inactivity_s = 2;
  o.grace_s = 0.5;
  const reports::CaseResult r = run_case(*find_case("selftest.stoppable"), o);
  stopper.join();
  ASSERT_TRUE(stopped) << "the role was never seen to stop";
  EXPECT_EQ(r.status, Status::pass) << r.reason;
  EXPECT_GE(r.duration_s, 4.0) << "the stop did not hold the role";
  ASSERT_TRUE(r.audit.contains("held_back_s")) << r.audit.dump();
  EXPECT_GE(r.audit["held_back_s"].get<double>(), 3.0) << r.audit.dump();
}

// Starved: the role shares one CPU with many busy threads, so 300 ms of its work take
// seconds; the wait for the CPU is not silence, and the case passes.
TEST_F(RunnerTest, StarvedRoleIsNotSilent) {
  cpu_set_t saved;
  ASSERT_EQ(::sched_getaffinity(0, sizeof saved, &saved), 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &saved)) {
      CPU_SET(c, &one);
      break;
    }
  std::atomic<bool> done{false};
  std::vector<std::thread> hogs;
  ASSERT_EQ(::sched_setaffinity(0, sizeof one, &one), 0);  // this thread; the hogs and the role inherit it
  for (int i = 0; i < 8; ++i)
    hogs.emplace_back([&] {
      volatile unsigned long n = 0;
      const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);  // bounded, whatever happens
      while (!done && std::chrono::steady_clock::now() < end) n = n + 1;
    });
  RunOptions o;
  o.adapter = "ref";
  o.role_executable = IPCHECK_SELFTEST_EXE;
  o.timeout_s = 60;
  o.inactivity_s = 1.5;
  o.grace_s = 0.5;
  o.env = {"IPCHECK_SELFTEST_CPU_MS=300"};
  const reports::CaseResult r = run_case(*find_case("selftest.cpu_work"), o);
  done = true;
  for (auto& t : hogs) t.join();
  ::sched_setaffinity(0, sizeof saved, &saved);
  EXPECT_EQ(r.status, Status::pass) << r.reason;
  // The starvation was real: the 300 ms of work took longer than the inactivity limit.
  EXPECT_GT(r.duration_s, 1.5) << "not starved; the test proves nothing on this machine";
}

// A case that ends timeout while another runs beside it is run again alone; it passes
// then, so the first attempt is an error naming the load, and the case passes.
TEST_F(RunnerTest, TimeoutBesideAnotherCaseIsRunAgainAlone) {
  const std::string lock = ::testing::TempDir() + "crowd.lock";
  std::remove(lock.c_str());  // a role creates it: under a root runner, as a user of this run's own
  RunOptions o = suite({"selftest.crowd", "selftest.needs_alone"}, 2);
  o.inactivity_s = 1.5;
  o.env = {"IPCHECK_SELFTEST_LOCK=" + lock};
  const reports::Results r = run_suite(o);
  ASSERT_EQ(r.cases.size(), 2u);
  const reports::CaseResult& c = r.cases[1];
  EXPECT_EQ(c.id, "selftest.needs_alone");
  EXPECT_EQ(c.status, Status::pass) << c.reason;
  ASSERT_EQ(c.attempts.size(), 2u);
  EXPECT_EQ(c.attempts[0].status, Status::error);
  EXPECT_NE(c.attempts[0].reason.find("timed out while the machine was loaded (1 other case ran beside it"), std::string::npos)
      << c.attempts[0].reason;
  EXPECT_EQ(c.attempts[1].status, Status::pass);
  EXPECT_EQ(r.cases[0].status, Status::pass) << r.cases[0].reason;
  ::unlink(lock.c_str());
}

// A timeout that is the case's own stands: alone it times out again.
TEST_F(RunnerTest, TimeoutThatRecursAloneStands) {
  RunOptions o = suite({"selftest.hang", "selftest.stoppable"}, 2);
  o.inactivity_s = 1;
  const reports::Results r = run_suite(o);
  ASSERT_EQ(r.cases.size(), 2u);
  const reports::CaseResult& c = r.cases[0];
  EXPECT_EQ(c.status, Status::timeout) << c.reason;
  if (c.attempts.size() == 2) {
    EXPECT_EQ(c.attempts[0].status, Status::error) << "ran beside the other: rerun alone";
  }
}

// Start slots: with one role initialising the adapter at a time, a -j 4 run still passes and
// every role's start is counted.
TEST_F(RunnerTest, OneStartAtATimeStillRunsEveryCase) {
  RunOptions o = suite({"selftest.pass", "selftest.should", "selftest.on_demand", "selftest.expendable"}, 4);
  o.starts_per_device = 1;
  const reports::Results r = run_suite(o);
  ASSERT_EQ(r.cases.size(), 4u);
  for (const auto& c : r.cases) EXPECT_TRUE(c.status == Status::pass) << c.id << ": " << c.reason;
  const auto& s = r.run.runner.at("scheduling");
  EXPECT_EQ(s["starts_per_device"], 1);
  EXPECT_GE(s["adapter_starts"].get<int>(), 6) << s.dump();
}

// A precondition the adapter does not meet: judged from the probe's info, the case is a skip
// with no role started (a GPU runtime's start costs a context); without a probe (run_case)
// its role starts, judges the same precondition after its adapter's init, and skips with the
// same reason before its body.
TEST_F(RunnerTest, UnmetPreconditionSkipsBeforeAnyRoleStarts) {
  RunOptions o = suite({"selftest.needs.unmet", "selftest.needs.met"}, 1);
  const reports::Results r = run_suite(o);
  ASSERT_EQ(r.cases.size(), 2u);
  const auto& unmet = r.cases[0];
  ASSERT_EQ(unmet.id, "selftest.needs.unmet");
  EXPECT_EQ(unmet.status, Status::skip) << unmet.reason;
  EXPECT_TRUE(unmet.roles.empty()) << "a role started for a case the probe's info ruled out";
  EXPECT_NE(unmet.reason.find("needs a device named selftest-no-such-device"), std::string::npos) << unmet.reason;
  EXPECT_EQ(r.cases[1].status, Status::pass) << r.cases[1].reason;
  EXPECT_EQ(r.cases[1].roles.size(), 1u);
  // ref has no start slots; its one role's start is still counted.
  EXPECT_EQ(r.run.runner.at("scheduling")["adapter_starts"], 1) << r.run.runner.dump();

  const auto alone = run("selftest.needs.unmet");
  EXPECT_EQ(alone.status, Status::skip) << alone.reason;
  EXPECT_EQ(alone.reason, unmet.reason);
  ASSERT_EQ(alone.roles.size(), 1u) << "without a probe the role judges the precondition itself";
  for (const auto& c : alone.checks) EXPECT_NE(c.message, "the body ran");
}

// A held runtime (--hold-runtime yes): the probe's process, its adapter initialised, lives
// while the cases run (each case's roles are gone when it is done, so the one child left is
// the hold) and ends with the run, taking no descriptor with it; without it none is left.
TEST_F(RunnerTest, HeldRuntimeLivesThroughTheRunAndEndsWithIt) {
  for (const int hold : {1, 0}) {
    RunOptions o = suite({"selftest.pass", "selftest.should"}, 1);
    o.hold_runtime = hold;
    std::vector<std::size_t> alive;
    o.on_case_done = [&](const reports::CaseResult&, std::size_t, std::size_t) { alive.push_back(children_of_self().size()); };
    const std::size_t fds = count_open_fds();
    const reports::Results r = run_suite(o);
    ASSERT_EQ(r.cases.size(), 2u);
    for (const auto& c : r.cases) EXPECT_TRUE(c.status == Status::pass) << c.id << ": " << c.reason;
    EXPECT_EQ(r.run.runner.at("scheduling").at("runtime_held"), hold == 1);
    EXPECT_EQ(alive, std::vector<std::size_t>(2, hold == 1 ? 1u : 0u)) << "hold " << hold;
    EXPECT_EQ(children_of_self(), std::vector<pid_t>{}) << "hold " << hold << " left processes behind";
    EXPECT_EQ(count_open_fds(), fds) << "hold " << hold << " left the runner holding descriptors";
  }
}

// Kept roles (--reuse-roles yes): a role of a passed case serves the next case, which says
// so in its audit; a case's roles are still distinct processes; idle roles live between the
// cases and end with the run, leaving no process and no descriptor behind.
TEST_F(RunnerTest, KeptRolesServeTheNextCaseAndEndWithTheRun) {
  RunOptions o = suite({"selftest.pass", "selftest.should", "selftest.needs.met"}, 1);
  o.reuse_roles = 1;
  std::vector<std::size_t> alive;
  o.on_case_done = [&](const reports::CaseResult&, std::size_t, std::size_t) { alive.push_back(children_of_self().size()); };
  const std::size_t fds = count_open_fds();
  const reports::Results r = run_suite(o);
  ASSERT_EQ(r.cases.size(), 3u);
  for (const auto& c : r.cases) EXPECT_TRUE(c.status == Status::pass) << c.id << ": " << c.reason;
  const auto& sched = r.run.runner.at("scheduling");
  EXPECT_EQ(sched.at("reuse_roles"), true);
  EXPECT_EQ(r.run.options.at("reuse_roles"), "yes");
  EXPECT_GT(sched.at("role_starts_reused").get<int>(), 0);
  EXPECT_EQ(r.cases[0].audit.at("reuse").at("kept_roles").size(), 0u) << "the first case has nothing to reuse";
  EXPECT_GT(r.cases[1].audit.at("reuse").at("kept_roles").size(), 0u);
  ASSERT_EQ(r.cases[0].roles.size(), 2u);
  EXPECT_NE(r.cases[0].roles[0].pid, r.cases[0].roles[1].pid);
  ASSERT_FALSE(alive.empty());
  EXPECT_GT(alive[0], 0u) << "the roles of a passed case are kept while the run goes on";
  EXPECT_EQ(children_of_self(), std::vector<pid_t>{}) << "kept roles outlived the run";
  EXPECT_EQ(count_open_fds(), fds) << "kept roles left the runner holding descriptors";
}

// A role whose case failed or leaked serves no other case: the next one starts fresh. (The
// catalog's order runs each bad case before selftest.needs.met.)
TEST_F(RunnerTest, ARoleOfAFailedOrLeakingCaseIsNotKept) {
  for (const char* bad : {"selftest.fail", "selftest.leak.fd"}) {
    RunOptions o = suite({bad, "selftest.needs.met"}, 1);
    o.reuse_roles = 1;
    const reports::Results r = run_suite(o);
    ASSERT_EQ(r.cases.size(), 2u);
    ASSERT_EQ(r.cases[0].id, bad);
    EXPECT_NE(r.cases[0].status, Status::pass) << bad;
    EXPECT_EQ(r.cases[1].status, Status::pass) << r.cases[1].reason;
    EXPECT_EQ(r.run.runner.at("scheduling").at("role_starts_reused"), 0) << bad;
    EXPECT_EQ(r.cases[1].audit.at("reuse").at("kept_roles").size(), 0u) << bad;
    EXPECT_EQ(children_of_self(), std::vector<pid_t>{});
  }
}

// Without reuse, or for a case the rule keeps fresh, nothing is kept.
TEST_F(RunnerTest, NoRoleIsKeptWithoutReuse) {
  RunOptions o = suite({"selftest.pass", "selftest.should"}, 1);
  o.reuse_roles = 0;
  const reports::Results r = run_suite(o);
  EXPECT_EQ(r.run.options.at("reuse_roles"), "no");
  EXPECT_FALSE(r.run.runner.at("scheduling").contains("role_starts_reused"));
  for (const auto& c : r.cases) EXPECT_FALSE(c.audit.contains("reuse")) << c.id;
}

// Start order: with several workers, cases that declare a longer limit start first (the
// catalog's order among equals); with one, the catalog's order.
TEST(StartOrder, LongCasesFirstWithSeveralWorkers) {
  CaseDef quick1, heavy, quick2, heavier;
  quick1.id = "a";
  heavy.id = "b";
  heavy.timeout_s = 300;
  quick2.id = "c";
  heavier.id = "d";
  heavier.timeout_s = 600;
  const std::vector<const CaseDef*> cases{&quick1, &heavy, &quick2, &heavier};
  EXPECT_EQ(start_order(cases, 2), (std::vector<std::size_t>{3, 1, 0, 2}));
  EXPECT_EQ(start_order(cases, 1), (std::vector<std::size_t>{0, 1, 2, 3}));
  EXPECT_TRUE(start_order({}, 4).empty());
}

// Workers share the expectations' tallies: a -j 4 run applies them the same as -j 1 (and
// the tsan preset's run of this test finds no data race between the workers).
TEST_F(RunnerTest, ParallelWorkersApplyExpectationsUnderTheLock) {
  const std::string path = ::testing::TempDir() + "parallel-expectations.txt";
  {
    std::ofstream f(path);
    f << "selftest.fail  fail  check=\"deliberate failure\"  known in this test (https://example.invalid/1)\n"
         "selftest.should  fail  never matched (https://example.invalid/2)\n";
  }
  RunOptions o = suite({"selftest.pass", "selftest.fail", "selftest.should", "selftest.skip", "selftest.early_exit",
               "selftest.leak.fd"}, 4, 10);
  o.env = {"ASAN_OPTIONS=handle_segv=0:detect_leaks=0", "TSAN_OPTIONS=handle_segv=0:halt_on_error=1"};
  o.expectations_path = path;
  const reports::Results r = run_suite(o);
  ASSERT_EQ(r.cases.size(), 6u);
  std::map<std::string, Status> status;
  for (const auto& c : r.cases) status[c.id] = c.status;
  EXPECT_EQ(status["selftest.pass"], Status::pass);
  EXPECT_EQ(status["selftest.fail"], Status::xfail);
  EXPECT_EQ(status["selftest.should"], Status::pass);
  EXPECT_EQ(status["selftest.early_exit"], Status::fail);
  const auto& lines = r.run.expectations.at("lines");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["matched"].get<int>(), 1) << lines.dump();
  EXPECT_EQ(lines[1]["matched"].get<int>(), 0) << lines.dump();
  ::unlink(path.c_str());
}

}  // namespace
}  // namespace ipcheck
