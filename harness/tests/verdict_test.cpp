// The verdict module alone, on typed facts: check judging (rb everywhere, profiles),
// attribution into clause coverage, case classification (harness faults are `error`),
// and expectations that never hide a different failure.
#include <csignal>

#include <gtest/gtest.h>

#include "../src/machine_record.hpp"
#include "ipcheck/verdict.hpp"

namespace ipcheck {
namespace {

using reports::CaseResult;
using reports::Check;
using reports::CheckResult;
using reports::ClauseVerdict;
using reports::Decider;
using reports::Status;

const ClauseRegistration clauses{{
    {"rb.verdict_test.robust", Level::must, "ipcheck verdict test", "an rb statement", ""},
    {"sycl.verdict_test.api", Level::must, "ipcheck verdict test", "a sycl statement", ""},
    {"sycl.verdict_test.other", Level::must, "ipcheck verdict test", "another sycl statement", ""},
}};

Check check(const std::string& clause, CheckResult r, Decider d, bool setup = false, const std::string& msg = "m") {
  Check c;
  c.clause = clause;
  c.result = r;
  c.decided_by = d;
  c.setup = setup;
  c.message = msg;
  c.role = "consumer";
  return c;
}

verdict::CheckReport report(const std::string& clause, bool ok) {
  verdict::CheckReport r;
  r.clause = clause;
  r.ok = ok;
  r.message = "x";
  return r;
}

TEST(Verdict, RobustnessIsJudgedOnEveryAdapter) {
  const std::vector<std::string> cuda_claims = {"sycl", "cuda"};
  EXPECT_EQ(verdict::judge_check(report("rb.verdict_test.robust", false), "c", cuda_claims).check.result,
            CheckResult::fail);
  EXPECT_EQ(verdict::judge_check(report("rb.verdict_test.robust", false), "c", {}).check.result, CheckResult::fail)
      << "no profile claim turns an rb violation into an observation";
  EXPECT_EQ(verdict::judge_check(report("sycl.verdict_test.api", false), "c", {"ze"}).check.result,
            CheckResult::observed)
      << "an API profile the adapter does not claim is observed";
  const auto unknown = verdict::judge_check(report("rb.nothing.here", true), "c", {});
  EXPECT_FALSE(unknown.warning.empty());
  EXPECT_EQ(verdict::judged_profiles({"sycl"}), (std::vector<std::string>{"rb", "sycl"}));
}

TEST(Verdict, CheckReportsRoundTripAndRefuseWrongShapes) {
  auto r = verdict::CheckReport::from(false, Evidence::harness(), "rb.verdict_test.robust", "msg", "f.cpp:1", true);
  r.by = Decider::runtime;
  r.call = "cuIpcOpenMemHandle";
  r.native = 1;
  r.native_name = "CUDA_ERROR_INVALID_VALUE";
  const auto back = verdict::CheckReport::from_json(r.to_json());
  EXPECT_EQ(back.by, Decider::runtime);
  EXPECT_EQ(back.call, "cuIpcOpenMemHandle");
  EXPECT_EQ(back.native_name, "CUDA_ERROR_INVALID_VALUE");
  EXPECT_TRUE(back.setup);
  EXPECT_THROW(verdict::CheckReport::from_json(nlohmann::json::array()), std::invalid_argument);
  EXPECT_THROW(verdict::CheckReport::from_json({{"clause", "x"}}), std::invalid_argument);
  EXPECT_THROW(verdict::CheckReport::from_json({{"clause", "x"}, {"ok", true}, {"by", "driver"}}),
               std::invalid_argument);
}

TEST(Verdict, EvidenceTakesTheWeakerAttribution) {
  Evidence e = Evidence::of(Outcome::runtime_success("cuMemcpyDtoH"));
  EXPECT_EQ(e.by, Decider::runtime);
  EXPECT_EQ(e.call, "cuMemcpyDtoH");
  e.with(Outcome::success());  // an adapter-decided part
  EXPECT_EQ(e.by, Decider::adapter);
  EXPECT_TRUE(e.call.empty());
  e.with(Outcome::runtime_success("cuEventQuery"));
  EXPECT_EQ(e.by, Decider::adapter) << "one emulated part keeps the whole check emulated";
  e.with(Evidence::harness());
  EXPECT_EQ(e.by, Decider::harness);
}

verdict::CaseFacts two_roles() {
  verdict::CaseFacts f;
  for (const char* n : {"producer", "consumer"}) {
    verdict::RoleFacts r;
    r.name = n;
    r.started = true;
    r.exit = ExitStatus{true, 0, 0};
    r.done = true;
    f.roles.push_back(r);
  }
  f.checks = 1;
  return f;
}

TEST(Verdict, HarnessFaultsAreErrorsNeverTheAdapters) {
  CaseResult c;
  auto f = two_roles();
  f.roles[1].started = false;
  f.roles[1].start_error = "fork: Resource temporarily unavailable (EAGAIN)";
  verdict::classify(f, c);
  EXPECT_EQ(c.status, Status::error);
  EXPECT_NE(c.reason.find("EAGAIN"), std::string::npos) << c.reason;

  // A role that reported a limit of the machine, then its peer timed out waiting: error.
  f = two_roles();
  f.harness_errors = {"consumer: the descriptor limit (ulimit -n) is 16"};
  f.timed_out = true;
  f.roles[1].exit = ExitStatus{false, 0, 9};
  verdict::classify(f, c);
  EXPECT_EQ(c.status, Status::error);
  EXPECT_NE(c.reason.find("ulimit -n"), std::string::npos);

  f = two_roles();
  f.checks = 0;
  c = CaseResult{};
  verdict::classify(f, c);
  EXPECT_EQ(c.status, Status::error) << "a case that judges nothing is a catalog bug";

  f = two_roles();
  f.roles[1].exit = ExitStatus{false, 0, 11};
  c = CaseResult{};
  verdict::classify(f, c);
  EXPECT_EQ(c.status, Status::crash);

  // A role stopped by the file size limit (SIGXFSZ, its default action): the machine's, not
  // the adapter's crash.
  f = two_roles();
  f.roles[0].exit = ExitStatus{false, 0, SIGXFSZ};
  c = CaseResult{};
  verdict::classify(f, c);
  EXPECT_EQ(c.status, Status::error);
  EXPECT_NE(c.reason.find("ulimit -f"), std::string::npos) << c.reason;
  EXPECT_FALSE(reports::is_judged(Status::error));
  EXPECT_TRUE(reports::is_problem(Status::error));
}

// A role's death by SIGKILL is a crash (a runtime that kills its own process is not excused)
// unless the harness sent it (an expected death, a timeout) or the machine's own record says
// the machine did (RoleFacts::machine_kill: the kernel's OOM report, the cgroup's count).
TEST(Verdict, SigkillIsACrashUnlessTheMachinesRecordSaysOtherwise) {
  auto f = two_roles();
  f.roles[1].exit = ExitStatus{false, 0, SIGKILL};
  CaseResult c;
  verdict::classify(f, c);
  EXPECT_EQ(c.status, Status::crash) << c.reason;
  EXPECT_NE(c.reason.find("SIGKILL"), std::string::npos) << c.reason;

  f.roles[1].machine_kill = "the kernel's log says so: Out of memory: Killed process 4242 (ipcheck-role)";
  c = CaseResult{};
  verdict::classify(f, c);
  EXPECT_EQ(c.status, Status::error) << c.reason;
  EXPECT_NE(c.reason.find("Out of memory"), std::string::npos) << c.reason;

  // The record excuses SIGKILL only: a SIGSEGV stays a crash whatever the log says.
  f.roles[1].exit = ExitStatus{false, 0, SIGSEGV};
  c = CaseResult{};
  verdict::classify(f, c);
  EXPECT_EQ(c.status, Status::crash) << c.reason;

  f = two_roles();
  f.roles[1].exit = ExitStatus{false, 0, SIGKILL};
  f.roles[1].expected_death = true;  // the runner killed it on request
  c = CaseResult{};
  verdict::classify(f, c);
  EXPECT_NE(c.status, Status::crash) << c.reason;
}

TEST(MachineRecord, TheKernelsOomReportNamesThePid) {
  using machine_record::why_killed_from;
  const std::string log =
      "usb 1-1: new device\n"
      "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,task_memcg=/x,task=ipcheck-role,pid=4242,uid=0\n"
      "Memory cgroup out of memory: Killed process 4242 (ipcheck-role) total-vm:1kB\n";
  EXPECT_NE(why_killed_from(4242, log, 0, 1).find("pid=4242,"), std::string::npos) << "the first line naming it";
  EXPECT_NE(why_killed_from(4242, "x\nOut of memory: Killed process 4242 (ipcheck-role)\n", 0, 0).find("Killed process 4242"),
            std::string::npos);
  EXPECT_EQ(why_killed_from(424, log, 0, 1), "") << "another pid's report is not this role's";
  EXPECT_EQ(why_killed_from(4243, log, 0, 5), "") << "with the log readable, only a line naming the pid counts";
  // Without the kernel log: the cgroup's OOM count, grown while the role ran.
  EXPECT_NE(why_killed_from(4242, std::nullopt, 3, 4).find("OOM kill"), std::string::npos);
  EXPECT_EQ(why_killed_from(4242, std::nullopt, 3, 3), "");
  EXPECT_EQ(why_killed_from(4242, std::nullopt, std::nullopt, 3), "");
}

TEST(Expectations, BlocksMatchersAndRanges) {
  auto e = Expectations::parse(
      "# comment\n"
      "memory.open.repeat  fail  check=\"*same pointer*\"  CUDA returns the same pointer https://example.invalid/i#1\n"
      "@block pool\n"
      "@reason the event pool stays mapped\n"
      "@link https://example.invalid/pool\n"
      "@driver >=580 <590\n"
      "event.open.size  leak  leak=*/dev/shm/cuda.shm.*\n"
      "event.release    leak  leak=\"*/dev/shm/cuda shm*\"  (seen twice)\n"
      "@end\n",
      "cuda.txt");
  ASSERT_EQ(e.entries().size(), 3u);
  EXPECT_NE(e.entries()[0].reason.find("#1"), std::string::npos) << "links keep their anchors";
  EXPECT_EQ(e.entries()[0].match.check, "*same pointer*");
  EXPECT_EQ(e.entries()[1].reason, "the event pool stays mapped");
  EXPECT_EQ(e.entries()[1].link, "https://example.invalid/pool");
  EXPECT_EQ(e.entries()[1].driver, ">=580 <590");
  EXPECT_EQ(e.entries()[2].match.leak, "*/dev/shm/cuda shm*");
  EXPECT_EQ(e.entries()[2].reason, "the event pool stays mapped; (seen twice)");
  EXPECT_EQ(e.entries()[1].where, "cuda.txt:7");

  EXPECT_TRUE(version_in_range("580.159.04", ">=580 <590"));
  EXPECT_FALSE(version_in_range("590.1", ">=580 <590"));
  EXPECT_FALSE(version_in_range("575.2", ">=580"));
  EXPECT_TRUE(version_in_range("anything", ""));
  // A leading word: the product the version starts with (lavapipe against NVIDIA).
  EXPECT_TRUE(version_in_range("Mesa 22.3.6 (LLVM 15.0.6)", "Mesa"));
  EXPECT_TRUE(version_in_range("Mesa 25.0.7 (LLVM 15.0.6)", "Mesa >=25"));
  EXPECT_FALSE(version_in_range("Mesa 22.3.6 (LLVM 15.0.6)", "Mesa >=25"));
  EXPECT_FALSE(version_in_range("580.159.04", "Mesa"));
  EXPECT_FALSE(version_in_range("Mesa 22.3.6", ">=580 <590"));
  EXPECT_FALSE(version_in_range("Mesabarn 1", "Mesa"));
  EXPECT_THROW(check_version_range(">=Mesa"), std::invalid_argument);
}

TEST(Expectations, BadLinesNameFileLineAndFix) {
  auto refused = [](const std::string& text, const std::string& part) {
    try {
      Expectations::parse(text, "x.txt");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("x.txt:"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  refused("a.case\n", "no status");
  refused("a.case pass because\n", "cannot be expected");
  refused("a.case error because\n", "cannot be expected");
  refused("a.case fail\n", "no reason");
  refused("a.case fail colour=red why\n", "unknown key 'colour'");
  refused("a.case fail leak=x why\n", "leak= goes with status leak");
  refused("@block b\n@reason r\na.case fail\n", "never closed");
  refused("@reason why\n", "outside a block");
  refused("@block b\n@driver >=banana\n@end\n", "driver range bound");
  refused("@block b\n@driver >=580 Mesa\n@end\n", "driver range bound");
}

CaseResult failing(std::vector<Check> checks) {
  CaseResult c;
  c.id = "memory.open.repeat";
  c.clauses = {"sycl.verdict_test.api"};
  c.status = Status::fail;
  c.checks = std::move(checks);
  return c;
}

TEST(Expectations, AnExpectedFailureNeverHidesANewOne) {
  auto e = Expectations::parse("memory.open.repeat fail check=\"*same pointer*\" known https://example.invalid\n", "x.txt");
  verdict::ExpectationUse use(e);
  CaseResult c = failing({check("sycl.verdict_test.api", CheckResult::fail, Decider::runtime, false, "the same pointer")});
  use.apply(c, "1.0");
  EXPECT_EQ(c.status, Status::xfail);
  EXPECT_EQ(c.expected_status, Status::fail);
  EXPECT_TRUE(c.checks[0].expected);

  CaseResult d = failing({check("sycl.verdict_test.api", CheckResult::fail, Decider::runtime, false, "the same pointer"),
                          check("sycl.verdict_test.other", CheckResult::fail, Decider::runtime, false, "data differs")});
  use.apply(d, "1.0");
  EXPECT_EQ(d.status, Status::fail) << "the second, different failure is new";
  EXPECT_TRUE(d.checks[0].expected);
  EXPECT_FALSE(d.checks[1].expected);
  ASSERT_FALSE(d.warnings.empty());
  EXPECT_NE(d.warnings[0].find("cover 1 of 2"), std::string::npos) << d.warnings[0];

  CaseResult crash = failing({});
  crash.status = Status::crash;
  use.apply(crash, "1.0");
  EXPECT_EQ(crash.status, Status::crash) << "a fail line never covers a crash";
}

// A skip of the runtime's (lost coverage) that is known: a skip line names the case, which
// stays skip with its expectation recorded (report diff then lets it through). A skip of the
// machine's is never matched, and a skip line takes only reason= and driver=.
TEST(Expectations, ASkipLineNamesAKnownSkipOfTheRuntimes) {
  auto e = Expectations::parse("physical.* skip reason=\"*phys_put*\" the runtime dropped phys_put https://example.invalid\n",
                               "x.txt");
  verdict::ExpectationUse use(e);
  CaseResult c;
  c.id = "physical.open.stale";
  c.status = Status::skip;
  c.skip_by = "runtime";
  c.reason = "put: phys_put is not_implemented on adapter 'ur': ...";
  CaseResult machine = c;
  machine.skip_by.clear();
  CaseResult other = c;
  other.reason = "alloc of device memory: feature_not_supported";
  use.apply(c, "1.0");
  use.apply(machine, "1.0");
  use.apply(other, "1.0");
  EXPECT_EQ(c.status, Status::skip);
  EXPECT_NE(c.expectation.find("dropped phys_put"), std::string::npos) << c.expectation;
  EXPECT_EQ(machine.expectation, "") << "a skip of the machine's needs no line";
  EXPECT_EQ(other.expectation, "") << "reason= must match";
  EXPECT_THROW(Expectations::parse("x skip check=\"*a*\" why https://example.invalid\n", "y.txt"), std::exception);
}

TEST(Expectations, LeaksSignalsDriverRangesAndStaleLines) {
  auto e = Expectations::parse(
      "event.open.size leak leak=*cuda.shm* pool https://example.invalid\n"
      "robustness.open.garbage.event crash signal=SIGSEGV bad handle https://example.invalid\n"
      "event.release leak driver=<500 old drivers https://example.invalid\n"
      "event.bidirectional fail never happens https://example.invalid\n",
      "x.txt");
  verdict::ExpectationUse use(e);
  CaseResult leak;
  leak.id = "event.open.size";
  leak.status = Status::leak;
  leak.findings = {{"consumer", "mapping", "7f-7f rw-s /dev/shm/cuda.shm.0.1.1", "", ""}};
  CaseResult more = leak;
  more.findings.push_back({"consumer", "fd", "fd 9 -> /dev/dri/renderD128", "", ""});
  use.apply(leak, "580.1");
  use.apply(more, "580.1");
  EXPECT_EQ(leak.status, Status::xfail);
  EXPECT_EQ(more.status, Status::leak) << "a second, different leak item is new";

  // An expected leak beside a failed check no line covers: the case fails, by that check.
  CaseResult leak_and_check = leak;
  leak_and_check.status = Status::leak;
  leak_and_check.expected_status.reset();
  leak_and_check.expectation.clear();
  leak_and_check.reason = "consumer left 1 item(s) behind";
  leak_and_check.checks = {check("rb.open.cross_kind", CheckResult::fail, Decider::runtime, false, "gave other, expected invalid")};
  leak_and_check.checks[0].role = "consumer";
  use.apply(leak_and_check, "580.1");
  EXPECT_EQ(leak_and_check.status, Status::fail);
  EXPECT_NE(leak_and_check.reason.find("[consumer] rb.open.cross_kind: gave other, expected invalid"), std::string::npos)
      << leak_and_check.reason;
  EXPECT_NE(leak_and_check.reason.find("the leak beside it is expected (x.txt:1)"), std::string::npos) << leak_and_check.reason;
  CaseResult new_leak_and_check = more;  // a leak no line covers stays the status
  new_leak_and_check.status = Status::leak;
  new_leak_and_check.checks = leak_and_check.checks;
  use.apply(new_leak_and_check, "580.1");
  EXPECT_EQ(new_leak_and_check.status, Status::leak);

  CaseResult crash;
  crash.id = "robustness.open.garbage.event";
  crash.status = Status::crash;
  crash.roles = {{"consumer", 1, "signal SIGSEGV", 0, 11, 0, ""}};
  CaseResult abrt = crash;
  abrt.roles = {{"consumer", 1, "signal SIGABRT", 0, 6, 0, ""}};
  use.apply(crash, "580.1");
  use.apply(abrt, "580.1");
  EXPECT_EQ(crash.status, Status::xfail);
  EXPECT_EQ(abrt.status, Status::crash) << "another signal is another failure";

  CaseResult old;
  old.id = "event.release";
  old.status = Status::leak;
  old.findings = {{"consumer", "mapping", "x", "", ""}};
  use.apply(old, "580.1");
  EXPECT_EQ(old.status, Status::leak) << "the line is limited to drivers before 500";

  CaseResult bidi;
  bidi.id = "event.bidirectional";
  bidi.status = Status::pass;
  const std::vector<CaseResult> cases = {leak, more, crash, abrt, old, bidi};
  const auto stale = use.stale(cases, "580.1");
  ASSERT_EQ(stale.size(), 1u) << "only the line whose case ran and matched nothing (driver-limited lines do not apply)";
  EXPECT_NE(stale[0].find("x.txt:4"), std::string::npos) << stale[0];
  const auto report = use.report(cases, "580.1");
  EXPECT_EQ(report["stale"].size(), 1u);
  EXPECT_EQ(report["lines"][2]["applies"], false);
}

TEST(Expectations, ALeakLineNeverHidesAFailedCheckOfTheSameCase) {
  auto e = Expectations::parse("event.bidirectional leak leak=*cuda.shm* pool https://example.invalid\n", "x.txt");
  verdict::ExpectationUse use(e);
  CaseResult c;
  c.id = "event.bidirectional";
  c.status = Status::leak;  // classify puts leak before fail
  c.findings = {{"consumer", "mapping", "7f-7f rw-s /dev/shm/cuda.shm.0.1.1", "", ""}};
  c.checks = {check("sycl.verdict_test.api", CheckResult::fail, Decider::runtime, false, "not signaled before any signal")};
  const CaseResult fresh = c;
  use.apply(c, "1");
  // The failed check is a problem no line covers: the case fails by it (the leak beside it is
  // the one the line explains, and the status names what is new).
  EXPECT_EQ(c.status, Status::fail) << "the failed check is a problem no line covers";
  EXPECT_NE(c.reason.find("not signaled before any signal"), std::string::npos) << c.reason;
  EXPECT_NE(c.reason.find("is expected (x.txt:1)"), std::string::npos) << c.reason;
  c = fresh;
  auto both = Expectations::parse(
      "event.bidirectional leak leak=*cuda.shm* pool https://example.invalid\n"
      "event.bidirectional fail check=\"*before any signal*\" never recorded https://example.invalid\n",
      "y.txt");
  verdict::ExpectationUse use2(both);
  c.warnings.clear();
  use2.apply(c, "1");
  EXPECT_EQ(c.status, Status::xfail);
  EXPECT_EQ(c.expected_status, Status::leak);
  EXPECT_NE(c.expectation.find("y.txt:1, y.txt:2"), std::string::npos) << c.expectation;
}

const reports::ClauseInfo& clause_of(const reports::Results& r, const std::string& id) {
  for (const auto& k : r.clauses)
    if (k.id == id) return k;
  throw std::runtime_error("no clause " + id);
}

TEST(Coverage, PassOnlyWhereTheRuntimeDecided) {
  reports::Results r;
  CaseResult a;
  a.id = "a";
  a.status = Status::pass;
  a.clauses = {"rb.verdict_test.robust", "sycl.verdict_test.api"};
  // rb: the runtime decided one check; sycl: only the adapter, plus a runtime set-up step.
  a.checks = {check("rb.verdict_test.robust", CheckResult::pass, Decider::runtime),
              check("rb.verdict_test.robust", CheckResult::pass, Decider::adapter),
              check("sycl.verdict_test.api", CheckResult::pass, Decider::adapter),
              check("sycl.verdict_test.api", CheckResult::pass, Decider::runtime, /*setup*/ true)};
  CaseResult skipped;
  skipped.id = "b";
  skipped.status = Status::skip;
  skipped.clauses = {"sycl.verdict_test.other"};
  skipped.checks = {check("sycl.verdict_test.other", CheckResult::pass, Decider::runtime)};
  r.cases = {a, skipped};
  verdict::fill_clause_coverage(r);
  const auto& robust = clause_of(r, "rb.verdict_test.robust");
  EXPECT_EQ(robust.verdict, ClauseVerdict::pass);
  EXPECT_EQ(robust.by_runtime, 1);
  EXPECT_EQ(robust.by_adapter, 1);
  EXPECT_EQ(clause_of(r, "sycl.verdict_test.api").verdict, ClauseVerdict::emulated)
      << "set-up steps decide nothing; the deciding check was the adapter's";
  EXPECT_EQ(clause_of(r, "sycl.verdict_test.other").verdict, ClauseVerdict::not_run)
      << "a clause whose every case skipped is not run, whatever its checks said";
}

// A failed check fails its clause, and only its clause: the case's other clause, whose checks
// passed, passes (found missing by the seeded defect coverage_ignores_failed_check).
TEST(Coverage, AFailedCheckFailsItsClauseOnly) {
  reports::Results r;
  CaseResult a;
  a.id = "a";
  a.status = Status::fail;
  a.clauses = {"rb.verdict_test.robust", "sycl.verdict_test.api"};
  a.checks = {check("rb.verdict_test.robust", CheckResult::pass, Decider::runtime),
              check("rb.verdict_test.robust", CheckResult::fail, Decider::runtime),
              check("sycl.verdict_test.api", CheckResult::pass, Decider::runtime)};
  r.cases = {a};
  verdict::fill_clause_coverage(r);
  const auto& robust = clause_of(r, "rb.verdict_test.robust");
  EXPECT_EQ(robust.verdict, ClauseVerdict::fail);
  EXPECT_EQ(robust.failed, 1);
  EXPECT_EQ(clause_of(r, "sycl.verdict_test.api").verdict, ClauseVerdict::pass);
}

TEST(Coverage, CrashesFailTheirClausesAndExpectationsMakeThemXfail) {
  reports::Results r;
  CaseResult crashed;
  crashed.id = "c";
  crashed.status = Status::crash;
  crashed.clauses = {"rb.verdict_test.robust"};
  crashed.checks = {check("rb.verdict_test.robust", CheckResult::pass, Decider::runtime)};
  CaseResult expected;
  expected.id = "d";
  expected.status = Status::xfail;
  expected.expected_status = Status::leak;
  expected.clauses = {"sycl.verdict_test.api"};
  CaseResult errored;
  errored.id = "e";
  errored.status = Status::error;
  errored.clauses = {"sycl.verdict_test.other"};
  r.cases = {crashed, expected, errored};
  verdict::fill_clause_coverage(r);
  EXPECT_EQ(clause_of(r, "rb.verdict_test.robust").verdict, ClauseVerdict::fail);
  EXPECT_EQ(clause_of(r, "sycl.verdict_test.api").verdict, ClauseVerdict::xfail);
  EXPECT_EQ(clause_of(r, "sycl.verdict_test.other").verdict, ClauseVerdict::not_run);
}

TEST(Observations, EveryValueSeenIsKept) {
  CaseResult c;
  reports::add_observation(c, "memory.open.repeat_pointer", "unique");
  reports::add_observation(c, "memory.open.repeat_pointer", "same");
  reports::add_observation(c, "memory.open.repeat_pointer", "unique");
  EXPECT_EQ(c.observations["memory.open.repeat_pointer"], "same | unique") << "sorted, whatever the order of messages";
}

}  // namespace
}  // namespace ipcheck
