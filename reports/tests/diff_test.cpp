// The diff that gates CI: regressions in the status order (skip never counts), the worst
// first; fixes, new and removed cases, observation and benchmark changes; golden files.
#include <gtest/gtest.h>

#include "golden.hpp"
#include "ipcheck/reports/diff.hpp"

namespace ipcheck::reports {
namespace {

using testing::fixture;
using testing::matches_golden;

const char* kOld = "ze-1.3.29735.json";   // 1 fail, 1 xfail, 1 skip
const char* kMid = "ze-1.3.29803.json";   // the same, but memory.roundtrip.page crashed
const char* kNew = "ze-1.6.31294.json";   // crash, timeout, leak, fail, a fix, new and removed cases

Diff fixture_diff(const char* a, const char* b) {
  return diff_results(fixture(a), fixture(b), std::string("data/") + a, std::string("data/") + b);
}

// A run of the given cases and statuses, nothing else.
Results run_of(std::initializer_list<std::pair<const char*, Status>> cases) {
  Results r;
  r.run.adapter = "ref";
  for (const auto& [id, s] : cases) {
    CaseResult c;
    c.id = id;
    c.status = s;
    r.cases.push_back(c);
  }
  r.summary = summarize(r.cases);
  return r;
}

TEST(Diff, ARunAgainstItselfHasNoChanges) {
  const Diff d = fixture_diff(kNew, kNew);
  EXPECT_TRUE(d.empty());
  EXPECT_FALSE(d.has_regression());
  EXPECT_FALSE(d.driver_changed());
  EXPECT_EQ(d.bench_within_noise, 4) << "every judged benchmark is within its own noise";
  EXPECT_TRUE(matches_golden("diff-same.txt", render_diff_text(d)));
}

TEST(Diff, OnePassToCrashIsTheRegressionNamedFirst) {
  const Diff d = fixture_diff(kOld, kMid);
  ASSERT_EQ(d.regressions.size(), 1u);
  EXPECT_EQ(d.regressions[0].id, "memory.roundtrip.page");
  EXPECT_EQ(d.regressions[0].from, Status::pass);
  EXPECT_EQ(d.regressions[0].to, Status::crash);
  EXPECT_TRUE(d.has_regression());
  const std::string text = render_diff_text(d);
  // The first case the text names is the one that crashed (the header names only runs).
  const auto first_case = text.find("memory.");
  ASSERT_NE(first_case, std::string::npos);
  EXPECT_EQ(text.compare(first_case, 21, "memory.roundtrip.page"), 0) << text;
  EXPECT_TRUE(matches_golden("diff-pass-to-crash.txt", text));
}

TEST(Diff, RegressionsComeWorstFirst) {
  const Diff d = fixture_diff(kOld, kNew);
  ASSERT_EQ(d.regressions.size(), 4u);
  EXPECT_EQ(d.regressions[0].id, "memory.roundtrip.page");
  EXPECT_EQ(d.regressions[0].to, Status::crash);
  EXPECT_EQ(d.regressions[1].to, Status::timeout);
  EXPECT_EQ(d.regressions[2].to, Status::leak);
  EXPECT_EQ(d.regressions[3].to, Status::fail);
  ASSERT_EQ(d.fixes.size(), 1u);
  EXPECT_EQ(d.fixes[0].id, "event.open.size");
  ASSERT_EQ(d.changes.size(), 1u);
  EXPECT_EQ(d.changes[0].id, "physical.roundtrip") << "skip -> pass is a change, not a fix";
  ASSERT_EQ(d.added.size(), 2u);
  EXPECT_EQ(d.added[0].id, "event.open.stale") << "new cases with problems first";
  ASSERT_EQ(d.removed.size(), 1u);
  EXPECT_EQ(d.removed[0].id, "rb.open.garbage");
  ASSERT_EQ(d.observations.size(), 1u);
  EXPECT_EQ(d.observations[0].name, "memory.open.repeat_pointer");
  EXPECT_EQ(d.observations[0].from, "unique");
  EXPECT_EQ(d.observations[0].to, "same");
  EXPECT_TRUE(d.driver_changed());
}

TEST(Diff, SkipAndIncompleteAreNeverRegressions) {
  const Results a = run_of({{"a", Status::pass}, {"b", Status::skip}, {"c", Status::crash}, {"d", Status::pass},
                            {"e", Status::incomplete}});
  const Results b = run_of({{"a", Status::skip}, {"b", Status::crash}, {"c", Status::skip}, {"d", Status::incomplete},
                            {"e", Status::crash}});
  const Diff d = diff_results(a, b, "a", "b");
  EXPECT_FALSE(d.has_regression());
  EXPECT_TRUE(d.fixes.empty());
  EXPECT_EQ(d.changes.size(), 3u) << "to skip or incomplete: a change, never a regression";
  // But a case that judged nothing before and crashes now is a new failure, and the gate fails.
  ASSERT_EQ(d.new_failures.size(), 2u);
  EXPECT_EQ(d.new_failures[0].id, "b");
  EXPECT_EQ(d.new_failures[0].from, Status::skip);
  EXPECT_EQ(d.new_failures[1].id, "e");
  EXPECT_EQ(d.new_failures[1].from, Status::incomplete);
  EXPECT_TRUE(d.fails_gate());
}

// Coverage lost: a case that ran and was judged (pass, xfail: a known deviation it still
// shows) and now skips for a reason of the runtime under test (it did not start, it lacks the
// verb) is a regression, unless an expectations line names it.
// A skip of the machine's or the selection's (no skip_by) stays a change.
TEST(Diff, PassToASkipOfTheRuntimesIsARegression) {
  const Results a = run_of({{"init", Status::pass}, {"verb", Status::xfail}, {"machine", Status::pass},
                            {"known", Status::pass}});
  Results b = run_of({{"init", Status::skip}, {"verb", Status::skip}, {"machine", Status::skip}, {"known", Status::skip}});
  b.cases[0].skip_by = "runtime_init";
  b.cases[0].reason = "adapter 'ur' is not available here: device_lost (UR_RESULT_ERROR_DEVICE_LOST): urContextCreate";
  b.cases[1].skip_by = "runtime";
  b.cases[3].skip_by = "runtime";
  b.cases[3].expectation = "the runtime dropped phys_put in 2.0 (ur.txt:3)";
  const Diff d = diff_results(a, b, "a", "b");
  ASSERT_EQ(d.regressions.size(), 2u);
  EXPECT_EQ(d.regressions[0].id, "init");
  EXPECT_EQ(d.regressions[0].to, Status::skip);
  EXPECT_NE(d.regressions[0].reason.find("coverage lost (runtime_init)"), std::string::npos) << d.regressions[0].reason;
  EXPECT_EQ(d.regressions[1].id, "verb");
  ASSERT_EQ(d.changes.size(), 2u) << "the machine's skip and the expected one are changes";
  EXPECT_TRUE(d.fails_gate());
}

// Measured on a two-GPU machine: a cross-device case that skipped on one GPU ended `leak` on
// two, and the diff said "never a regression" and exited 0. A case that did not run before
// and ends with an unexpected status now fails the gate, listed apart from regressions.
TEST(Diff, ACaseThatDidNotRunBeforeAndFailsNowFailsTheGate) {
  const Results a = run_of({{"cross", Status::skip}, {"err", Status::error}, {"ok", Status::skip}, {"x", Status::skip}});
  const Results b = run_of({{"cross", Status::leak}, {"err", Status::fail}, {"ok", Status::pass}, {"x", Status::xfail},
                            {"brand_new", Status::timeout}, {"new_ok", Status::pass}});
  const Diff d = diff_results(a, b, "a", "b");
  EXPECT_FALSE(d.has_regression());
  ASSERT_EQ(d.new_failures.size(), 3u);
  EXPECT_EQ(d.new_failures[0].id, "brand_new") << "worst first: timeout";
  EXPECT_FALSE(d.new_failures[0].from.has_value()) << "absent from the old run";
  EXPECT_EQ(d.new_failures[1].id, "cross");
  EXPECT_EQ(d.new_failures[1].to, Status::leak);
  EXPECT_EQ(d.new_failures[2].id, "err");
  EXPECT_TRUE(d.fails_gate());
  EXPECT_NE(render_diff_text(d).find("new failures"), std::string::npos);
  EXPECT_EQ(diff_to_json(d).at("gate_failed"), true);
  EXPECT_EQ(diff_to_json(d).at("new_failures").size(), 3u);
}

TEST(Diff, SkipToPassOrXfailIsNoNewFailure) {
  const Results a = run_of({{"a", Status::skip}, {"b", Status::skip}});
  const Results b = run_of({{"a", Status::pass}, {"b", Status::xfail}, {"c", Status::pass}});
  const Diff d = diff_results(a, b, "a", "b");
  EXPECT_TRUE(d.new_failures.empty());
  EXPECT_FALSE(d.fails_gate());
}

TEST(Diff, AClauseNotRunBeforeThatFailsNowFailsTheGate) {
  Results a = run_of({{"a", Status::pass}});
  Results b = run_of({{"a", Status::pass}});
  ClauseInfo k;
  k.id = "sycl.mem.open.peer";
  k.verdict = ClauseVerdict::not_run;
  a.clauses.push_back(k);
  k.verdict = ClauseVerdict::fail;
  b.clauses.push_back(k);
  ClauseInfo only_new;
  only_new.id = "sycl.mem.open.other";
  only_new.verdict = ClauseVerdict::fail;
  b.clauses.push_back(only_new);
  ClauseInfo passing;
  passing.id = "sycl.mem.open.fine";
  passing.verdict = ClauseVerdict::pass;
  b.clauses.push_back(passing);
  const Diff d = diff_results(a, b, "a", "b");
  ASSERT_EQ(d.new_clause_failures.size(), 2u);
  EXPECT_EQ(d.new_clause_failures[0].id, "sycl.mem.open.peer");
  EXPECT_EQ(d.new_clause_failures[1].id, "sycl.mem.open.other");
  EXPECT_TRUE(d.fails_gate());
  EXPECT_FALSE(d.has_regression());
}

TEST(Diff, XfailSitsBetweenPassAndFail) {
  const Results a = run_of({{"a", Status::xfail}, {"b", Status::fail}, {"c", Status::pass}});
  const Results b = run_of({{"a", Status::fail}, {"b", Status::xfail}, {"c", Status::xfail}});
  const Diff d = diff_results(a, b, "a", "b");
  ASSERT_EQ(d.regressions.size(), 2u);
  EXPECT_EQ(d.regressions[0].id, "a") << "xfail -> fail is the worse of the two";
  EXPECT_EQ(d.regressions[1].id, "c");
  ASSERT_EQ(d.fixes.size(), 1u);
  EXPECT_EQ(d.fixes[0].id, "b");
}

TEST(Diff, ObservationsAddedAndGoneAreChanges) {
  Results a = run_of({{"a", Status::pass}});
  Results b = a;
  a.cases[0].observations = {{"gone", "1"}, {"kept", "x"}};
  b.cases[0].observations = {{"kept", "x"}, {"fresh", "2"}};
  const Diff d = diff_results(a, b, "a", "b");
  ASSERT_EQ(d.observations.size(), 2u);
  EXPECT_EQ(d.observations[0].name, "fresh");
  EXPECT_FALSE(d.observations[0].from);
  EXPECT_EQ(d.observations[1].name, "gone");
  EXPECT_FALSE(d.observations[1].to);
  EXPECT_FALSE(d.has_regression()) << "behaviour changes are reported, not judged";
}

Benchmark bench(double median, double spread, int reps) {
  Benchmark b;
  b.name = "x";
  b.unit = "ns";
  b.median = median;
  b.spread = spread;
  b.repetitions = reps;
  return b;
}

// A bpf-audited role's call profile: one verb, its calls and counters.
Results profiled(const std::string& audit, long long calls, long long getfd) {
  Results r;
  r.run.audit = audit;
  CaseResult c;
  c.id = "memory.open.repeat";
  c.audit = nlohmann::json::parse(R"({"roles": {"consumer": {"method": ")" + audit + R"(", "calls_from": "role",
      "profile": {"mem_open": {"calls": )" + std::to_string(calls) + R"(, "pidfd_getfd": )" + std::to_string(getfd) +
                                  R"(, "syscalls": 99}}}}})");
  r.cases.push_back(c);
  return r;
}

TEST(Profiles, ChangesArePerCallAndNeverGate) {
  // 4 opens making 4 descriptor fetches, then 4 opens making 8: one more per call.
  const Diff d = diff_results(profiled("bpf", 4, 4), profiled("bpf", 4, 8), "old", "new");
  ASSERT_EQ(d.profiles.size(), 1u);
  EXPECT_EQ(d.profiles[0].verb, "mem_open");
  EXPECT_EQ(d.profiles[0].counter, "pidfd_getfd");
  EXPECT_DOUBLE_EQ(d.profiles[0].from, 1.0);
  EXPECT_DOUBLE_EQ(d.profiles[0].to, 2.0);
  EXPECT_FALSE(d.has_regression());
  EXPECT_NE(render_diff_text(d).find("mem_open: pidfd_getfd 1 -> 2"), std::string::npos) << render_diff_text(d);
}

TEST(Profiles, SameCostPerCallIsNoChangeAndSyscallCountsAreNoise) {
  // Twice the calls, twice the fetches: the same cost per call; `syscalls` is never compared.
  EXPECT_TRUE(diff_results(profiled("bpf", 4, 4), profiled("bpf", 8, 8), "old", "new").profiles.empty());
}

TEST(Profiles, NotComparedUnlessBothRunsUsedBpf) {
  const Diff d = diff_results(profiled("proc", 4, 4), profiled("bpf", 4, 8), "old", "new");
  EXPECT_TRUE(d.profiles.empty());
  EXPECT_NE(d.profile_note.find("old run was audited with 'proc'"), std::string::npos) << d.profile_note;
}

TEST(Bench, AChangeCountsOnlyBeyondTheNoiseOfBothRuns) {
  EXPECT_TRUE(beyond_noise(bench(100, 5, 10), bench(120, 5, 10)));
  EXPECT_FALSE(beyond_noise(bench(100, 5, 10), bench(109, 5, 10))) << "the intervals overlap";
  EXPECT_FALSE(beyond_noise(bench(100, 1, 10), bench(120, 30, 10))) << "the new run is noisy enough to explain it";
  EXPECT_FALSE(beyond_noise(bench(100, 0, 1), bench(200, 0, 1))) << "one repetition measures no noise";
}

TEST(Bench, ARatioThatMovedBeyondItsIntervalIsNamedEvenWhenItsMedianDidNot) {
  Results a = run_of({}), b = run_of({});
  auto entry = [](double median, double ratio, double low, double high) {
    return nlohmann::json{{"name", "ref/mem_open_close/4KiB"}, {"unit", "ns"}, {"median", median}, {"spread", 2000},
                           {"repetitions", 10}, {"floor", median / ratio}, {"ratio", ratio},
                           {"ratio_low", low}, {"ratio_high", high}};
  };
  a.bench = {{"benchmarks", {entry(20000, 1.20, 1.15, 1.26)}}};
  b.bench = {{"benchmarks", {entry(21000, 1.60, 1.50, 1.70)}}};
  Diff d = diff_results(a, b, "a", "b");
  ASSERT_EQ(d.bench.size(), 1u) << "the median moved within its spread, the ratio beyond its interval";
  EXPECT_TRUE(d.bench[0].ratio_moved);
  EXPECT_TRUE(d.bench[0].worse);
  EXPECT_NE(render_diff_text(d).find("beyond noise"), std::string::npos);
  b.bench = {{"benchmarks", {entry(21000, 1.24, 1.18, 1.30)}}};
  d = diff_results(a, b, "a", "b");
  EXPECT_TRUE(d.bench.empty()) << "overlapping intervals: within noise";
  EXPECT_EQ(d.bench_within_noise, 1);
}

TEST(Bench, DirectionFollowsWhatIsBetter) {
  Results a = run_of({}), b = run_of({});
  a.bench = {{"benchmarks", {{{"name", "copy"}, {"unit", "GiB/s"}, {"median", 10}, {"spread", 0.1}, {"repetitions", 5}, {"better", "higher"}}}}};
  b.bench = {{"benchmarks", {{{"name", "copy"}, {"unit", "GiB/s"}, {"median", 8}, {"spread", 0.1}, {"repetitions", 5}, {"better", "higher"}}}}};
  const Diff d = diff_results(a, b, "a", "b");
  ASSERT_EQ(d.bench.size(), 1u);
  EXPECT_TRUE(d.bench[0].worse) << "less throughput is worse";
  EXPECT_FALSE(d.has_regression()) << "benchmarks are reported, not gated";
}

TEST(Bench, FixtureChangesOnOneMachine) {
  // The fixtures come from two CI hosts; on one machine the medians themselves are compared.
  Results a = fixture(kOld), b = fixture(kNew);
  b.run.hostname = a.run.hostname;
  b.run.devices = a.run.devices;
  const Diff d = diff_results(a, b, "old", "new");
  EXPECT_FALSE(d.bench_across_machines);
  ASSERT_EQ(d.bench.size(), 2u);
  EXPECT_EQ(d.bench[0].name, "mem_open/4KiB");
  EXPECT_TRUE(d.bench[0].worse);
  EXPECT_EQ(d.bench[1].name, "event_signal_wait");
  EXPECT_FALSE(d.bench[1].worse);
  EXPECT_EQ(d.bench_within_noise, 1);
  EXPECT_EQ(d.bench_unjudged, std::vector<std::string>{"harness_case_overhead"});
  EXPECT_EQ(d.bench_added, std::vector<std::string>{"mem_close/4KiB"});
  const Diff none = fixture_diff(kOld, kMid);
  EXPECT_TRUE(none.bench_removed.empty()) << "a run without benchmarks removed none";
  EXPECT_EQ(none.bench_note, "benchmarks not compared: the new run has none");
}

TEST(Bench, AcrossMachinesOnlyRatiosToFloorsCount) {
  // gpu-ci-7 then gpu-ci-3: mem_open's median rose 20% and event_signal_wait's fell 25%, but
  // their ratios to the in-run floors moved by 1.20x and 1.33x, within the cross-machine noise.
  const Diff d = fixture_diff(kOld, kNew);
  EXPECT_TRUE(d.bench_across_machines);
  EXPECT_TRUE(d.bench.empty());
  EXPECT_EQ(d.bench_within_noise, 3);
  EXPECT_EQ(d.bench_unjudged, std::vector<std::string>{"harness_case_overhead"});
  EXPECT_NE(render_diff_text(d).find("ratios to their in-run floors only"), std::string::npos) << render_diff_text(d);
}

Benchmark floored(double median, double spread, double floor) {
  Benchmark b = bench(median, spread, 10);
  b.floor = floor;
  b.ratio = median / floor;
  return b;
}

TEST(Bench, CrossMachineNoiseIsAFactorOnTheRatio) {
  EXPECT_FALSE(beyond_cross_machine_noise(floored(100, 1, 100), floored(130, 1, 100))) << "30%: the H100/H200 spread";
  EXPECT_TRUE(beyond_cross_machine_noise(floored(100, 1, 100), floored(200, 1, 100))) << "twice the floor ratio";
  EXPECT_TRUE(beyond_cross_machine_noise(floored(200, 1, 100), floored(100, 1, 100))) << "half of it";
  EXPECT_FALSE(beyond_cross_machine_noise(floored(100, 40, 100), floored(200, 40, 100))) << "noisy runs widen it";
  EXPECT_FALSE(beyond_cross_machine_noise(bench(100, 1, 10), bench(300, 1, 10))) << "no floor: not comparable";
}

TEST(Bench, WithoutAFloorNotComparedAcrossMachines) {
  Results a = run_of({}), b = run_of({});
  a.run.hostname = "h100-a";
  b.run.hostname = "h100-b";
  a.bench = {{"benchmarks", {{{"name", "catalog"}, {"unit", "s"}, {"median", 10}, {"spread", 0.1}, {"repetitions", 5}}}}};
  b.bench = {{"benchmarks", {{{"name", "catalog"}, {"unit", "s"}, {"median", 30}, {"spread", 0.1}, {"repetitions", 5}}}}};
  const Diff d = diff_results(a, b, "a", "b");
  EXPECT_TRUE(d.bench.empty());
  EXPECT_EQ(d.bench_no_floor, std::vector<std::string>{"catalog"});
}

Results fuzzed(long long executions, nlohmann::json verdicts, std::vector<std::pair<std::string, std::string>> findings) {
  Results r = run_of({});
  r.fuzz = {{"status", "completed"}, {"executions", executions}, {"verdicts", verdicts}, {"findings", nlohmann::json::array()}};
  for (const auto& [outcome, clause] : findings) r.fuzz["findings"].push_back({{"outcome", outcome}, {"clause", clause}});
  return r;
}

TEST(FuzzDiff, ExecutionsOutcomesAndFindingClasses) {
  const Results a = fuzzed(1000, {{"rejected", 990}, {"findings", 10}},
                           {{"crash", "rb.open.garbage"}, {"context_lost", "rb.open.garbage"}});
  const Results b = fuzzed(1200, {{"rejected", 1195}, {"findings", 5}},
                           {{"crash", "rb.open.garbage"}, {"confused_deputy", "rb.open.confused_deputy"}});
  const Diff d = diff_results(a, b, "a", "b");
  ASSERT_TRUE(d.fuzz.compared);
  EXPECT_EQ(d.fuzz.old_executions, 1000);
  EXPECT_EQ(d.fuzz.new_executions, 1200);
  ASSERT_EQ(d.fuzz.outcomes.size(), 2u);
  EXPECT_EQ(d.fuzz.classes_new, std::vector<std::string>{"confused_deputy (rb.open.confused_deputy)"});
  EXPECT_EQ(d.fuzz.classes_gone, std::vector<std::string>{"context_lost (rb.open.garbage)"});
  EXPECT_FALSE(d.empty());
  EXPECT_FALSE(d.has_regression()) << "fuzz changes are reported, not gated";
  const std::string text = render_diff_text(d);
  EXPECT_NE(text.find("new finding class: confused_deputy (rb.open.confused_deputy)"), std::string::npos) << text;
  EXPECT_NE(text.find("1000 -> 1200 executions"), std::string::npos) << text;
  EXPECT_TRUE(diff_results(a, a, "a", "a").fuzz.outcomes.empty());
  EXPECT_FALSE(diff_results(a, run_of({}), "a", "none").fuzz.compared);
}

TEST(DiffGolden, Text) { EXPECT_TRUE(matches_golden("diff.txt", render_diff_text(fixture_diff(kOld, kNew)))); }
TEST(DiffGolden, Markdown) { EXPECT_TRUE(matches_golden("diff.md", render_diff_markdown(fixture_diff(kOld, kNew)))); }
TEST(DiffGolden, Json) {
  const nlohmann::json j = diff_to_json(fixture_diff(kOld, kNew));
  EXPECT_EQ(j["schema"], "ipcheck.diff/1");
  EXPECT_EQ(j["regression"], true);
  EXPECT_EQ(j["regressions"][0]["id"], "memory.roundtrip.page");
  EXPECT_TRUE(matches_golden("diff.json", j.dump(2) + "\n"));
}

}  // namespace
}  // namespace ipcheck::reports
