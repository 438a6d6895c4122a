// The arithmetic and the parsing behind the bench section: medians, spreads, floors and
// ratios from Google Benchmark's output. Figures here are made up; real ones are never
// asserted.
#include "ipcheck/bench/counts.hpp"
#include "ipcheck/bench/goals.hpp"
#include "ipcheck/bench/summary.hpp"

#include <gtest/gtest.h>

namespace ipcheck::bench {
namespace {

using nlohmann::json;

TEST(Summary, MedianOfOddAndEvenCounts) {
  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({}), 0);
}

TEST(Summary, MadIsTheMedianDistanceFromTheMedian) {
  // median 3; distances 2 1 0 1 97 -> median 1: one outlier does not move it.
  EXPECT_DOUBLE_EQ(mad({1, 2, 3, 4, 100}), 1);
}

TEST(Summary, LabelsRoundTrip) {
  LabelInfo l;
  l.floor = "ref/floor/mem_open_close/4KiB";
  l.target_ratio = 1.25;
  l.note = "two syscalls";
  const LabelInfo back = parse_label(make_label(l));
  EXPECT_EQ(back.floor, l.floor);
  ASSERT_TRUE(back.target_ratio);
  EXPECT_DOUBLE_EQ(*back.target_ratio, 1.25);
  EXPECT_FALSE(back.target);
  EXPECT_EQ(back.note, "two syscalls");
  EXPECT_TRUE(parse_label("").floor.empty());
}

TEST(Summary, NamesLoseTheSuffixesGoogleBenchmarkAdds) {
  EXPECT_EQ(clean_name("ref/mem_open/4KiB/manual_time"), "ref/mem_open/4KiB");
  EXPECT_EQ(clean_name("harness/two_role_case/real_time"), "harness/two_role_case");
  EXPECT_EQ(clean_name("ref/mem_open/4KiB"), "ref/mem_open/4KiB");
}

json run(const std::string& name, double t, const std::string& unit, const std::string& label = "") {
  return {{"name", name}, {"run_name", name}, {"run_type", "iteration"}, {"real_time", t},
          {"cpu_time", t},  {"time_unit", unit}, {"label", label},        {"iterations", 100}};
}

TEST(Summary, RepetitionsBecomeOneEntryHeldAgainstItsFloor) {
  json doc = {{"context", {{"load_avg", {0.5, 0.4, 0.3}}}}, {"benchmarks", json::array()}};
  for (double t : {1100.0, 1200.0, 1300.0}) doc["benchmarks"].push_back(run("v/manual_time", t, "ns", "floor=f;target_ratio=1.25"));
  // The floor in microseconds: converted to the verb's unit.
  for (double t : {0.9, 1.0, 1.1}) doc["benchmarks"].push_back(run("f", t, "us"));
  doc["benchmarks"].push_back({{"name", "v_median"}, {"run_name", "v"}, {"run_type", "aggregate"}, {"real_time", 1.0}});
  std::vector<std::string> errors;
  const auto series = series_from_google_benchmark(doc, "test", errors);
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[0].samples.size(), 3u);  // the aggregate is not a repetition
  const json list = summarize(series, errors);
  EXPECT_TRUE(errors.empty());
  ASSERT_EQ(list.size(), 2u);
  const json& v = list[0];
  EXPECT_EQ(v["name"], "v");
  EXPECT_EQ(v["unit"], "ns");
  EXPECT_DOUBLE_EQ(v["median"].get<double>(), 1200);
  EXPECT_DOUBLE_EQ(v["spread"].get<double>(), 100);
  EXPECT_EQ(v["repetitions"], 3);
  EXPECT_DOUBLE_EQ(v["floor"].get<double>(), 1000);
  EXPECT_DOUBLE_EQ(v["ratio"].get<double>(), 1.2);
  EXPECT_EQ(v["floor_name"], "f");
  EXPECT_EQ(v["met"], true);
  EXPECT_DOUBLE_EQ(v["load_1m"].get<double>(), 0.5);
  EXPECT_FALSE(list[1].contains("ratio"));
}

// Counters step_<name> of a benchmark become series of their own, in ms, each held against
// the same step of the benchmark's floor where the floor reports it.
TEST(Summary, StepCountersBecomeSeriesHeldAgainstTheFloorsSteps) {
  json doc = {{"benchmarks", json::array()}};
  for (double t : {2.0, 2.2}) {
    json r = run("case/real_time", t, "ms", "floor=floor");
    r["step_start"] = t / 2;
    r["step_verdict"] = 0.01;
    r["other_counter"] = 7;
    doc["benchmarks"].push_back(r);
  }
  for (double t : {1.0, 1.1}) {
    json r = run("floor/real_time", t, "ms");
    r["step_start"] = t / 2;
    doc["benchmarks"].push_back(r);
  }
  std::vector<std::string> errors;
  const auto series = series_from_google_benchmark(doc, "test", errors);
  EXPECT_TRUE(errors.empty());
  const Series* start = nullptr;
  const Series* verdict = nullptr;
  for (const auto& x : series) {
    if (x.name == "case/start") start = &x;
    if (x.name == "case/verdict") verdict = &x;
    EXPECT_NE(x.name, "case/other_counter") << "only step_ counters are steps";
  }
  ASSERT_TRUE(start && verdict);
  EXPECT_EQ(start->unit, "ms");
  EXPECT_EQ(start->samples, (std::vector<double>{1.0, 1.1}));
  EXPECT_EQ(start->label.floor, "floor/start");
  EXPECT_TRUE(verdict->label.floor.empty()) << "the floor has no verdict step";
  const json list = summarize(series, errors);
  EXPECT_TRUE(errors.empty());
  for (const auto& e : list)
    if (e["name"] == "case/start") {
      EXPECT_NEAR(e["ratio"].get<double>(), 1.05 / 0.525, 1e-9);
    }
}

TEST(Summary, AMissingFloorIsAnError) {
  Series s;
  s.name = "v";
  s.unit = "ns";
  s.samples = {1, 2};
  s.label.floor = "nowhere";
  std::vector<std::string> errors;
  const json list = summarize({s}, errors);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("nowhere"), std::string::npos);
  EXPECT_FALSE(list[0].contains("ratio"));
}

TEST(Summary, AThroughputTargetIsALowerBound) {
  Series s;
  s.name = "fuzz";
  s.unit = "exec/s";
  s.higher_is_better = true;
  s.samples = {19000, 21000, 22000};
  s.label.target = 20000;
  std::vector<std::string> errors;
  const json e = summarize({s}, errors)[0];
  EXPECT_EQ(e["better"], "higher");
  EXPECT_EQ(e["met"], true);
  s.samples = {15000, 16000, 21000};
  EXPECT_EQ(summarize({s}, errors)[0]["met"], false);
}

TEST(Summary, CanonicalOrderPutsEachVerbBeforeItsFloorBySize) {
  std::vector<Series> v;
  for (const char* n : {"ref/floor/mem_open/64MiB", "ref/mem_close/4KiB", "ref/mem_open/64MiB", "ref/floor/mem_open/4KiB",
                        "ref/mem_open/4KiB", "ref/mem_get/2MiB"}) {
    Series s;
    s.name = n;
    s.source = "ipc";
    v.push_back(s);
  }
  Series h;
  h.name = "harness/two_role_case";
  h.source = "harness";
  v.insert(v.begin(), h);
  canonical_order(v);
  std::vector<std::string> names;
  for (const auto& s : v) names.push_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"harness/two_role_case", "ref/mem_get/2MiB", "ref/mem_open/4KiB",
                                             "ref/floor/mem_open/4KiB", "ref/mem_open/64MiB", "ref/floor/mem_open/64MiB",
                                             "ref/mem_close/4KiB"}));
}

TEST(Summary, ErrorsOfGoogleBenchmarkRunsAreNamed) {
  json doc = {{"benchmarks", {{{"name", "x"}, {"run_name", "x"}, {"error_occurred", true}, {"error_message", "boom"}}}}};
  std::vector<std::string> errors;
  EXPECT_TRUE(series_from_google_benchmark(doc, "test", errors).empty());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "x: boom");
}

TEST(Summary, TheMediansIntervalIsOrderStatisticsOfTheBinomial) {
  // n = 10 at 95%: P(B <= 1) = 11/1024 <= 0.025 < P(B <= 2): the 2nd and 9th of the sorted samples.
  const Interval i = median_interval({10, 1, 9, 2, 8, 3, 7, 4, 6, 5});
  EXPECT_EQ(i.low, 2);
  EXPECT_EQ(i.high, 9);
  // n = 5: even the whole range covers only 1 - 2/32: the range is given.
  const Interval r = median_interval({5, 1, 4, 2, 3});
  EXPECT_EQ(r.low, 1);
  EXPECT_EQ(r.high, 5);
  EXPECT_EQ(median_interval({}).high, 0);
}

TEST(Summary, TheRatiosIntervalIsTheMediansOverTheFloors) {
  const Interval r = ratio_interval({10, 11, 12, 13, 14}, {5, 5, 5, 10, 10});
  EXPECT_DOUBLE_EQ(r.low, 1.0);   // 10 / 10
  EXPECT_DOUBLE_EQ(r.high, 2.8);  // 14 / 5
}

TEST(Summary, EveryEntryGivesItsIntervalsAndARatiosInterval) {
  std::vector<Series> v(2);
  v[0].name = "ref/mem_open_close/4KiB";
  v[0].unit = "ns";
  v[0].samples = {120, 130, 125, 128, 122, 126};
  v[0].label.floor = "ref/floor/mem_open_close/4KiB";
  v[1].name = "ref/floor/mem_open_close/4KiB";
  v[1].unit = "ns";
  v[1].samples = {100, 101, 99, 100, 102, 98};
  std::vector<std::string> errors;
  const json list = summarize(v, errors);
  ASSERT_TRUE(errors.empty());
  EXPECT_EQ(list[0]["low"], 120);
  EXPECT_EQ(list[0]["high"], 130);
  EXPECT_NEAR(list[0]["ratio_low"].get<double>(), 120.0 / 102, 1e-3);  // 4 significant digits
  EXPECT_NEAR(list[0]["ratio_high"].get<double>(), 130.0 / 98, 1e-3);
}

TEST(Goals, TheCompiledTableParsesAndMatchesFigures) {
  const auto& g = goals();
  ASSERT_FALSE(g.empty());
  const Goal* open = goal_for("ref/mem_open_close/64MiB");
  ASSERT_NE(open, nullptr);
  EXPECT_EQ(open->measure, "ratio");
  EXPECT_TRUE(open->gated);
  EXPECT_EQ(goal_for("ref/floor/mem_open_close/64MiB"), nullptr) << "a floor is not the figure";
  EXPECT_EQ(goal_for("ref/catalog_wall_j2/filter=memory.roundtrip.*"), nullptr) << "a filtered catalog is another figure";
  const Goal* overhead = goal_for("harness/two_role_case_overhead");
  ASSERT_NE(overhead, nullptr);
  EXPECT_EQ(overhead->measure, "ms");
  EXPECT_NE(goals_table().find("| figure | measure | goal | gated | why |"), std::string::npos);
}

// A goal not met yet is gated at a bound of its own (a known shortfall), on the far side of
// the goal; anything else in the gated cell is refused, naming what to write.
TEST(Goals, TheGateConfirmsAFailureInASecondRound) {
  EXPECT_FALSE(gate_may_stop(1, 0, 1)) << "one round's processes alone do not fail a figure";
  EXPECT_TRUE(gate_may_stop(2, 0, 1));
  EXPECT_TRUE(gate_may_stop(1, 0, 0)) << "every figure within its goal after one round: done";
  EXPECT_FALSE(gate_may_stop(3, 1, 0)) << "a figure straddling its goal wants another round";
  EXPECT_FALSE(gate_may_stop(3, 1, 1));
}

TEST(Goals, AKnownShortfallIsGatedAtItsOwnBound) {
  const std::string head = "| figure | measure | goal | gated | why |\n|---|---|---|---|---|\n";
  const auto held = parse_goals(head + "| `x/y` | ratio | <= 1.25 | <= 1.9 | not yet |\n| `x/z` | exec/s | >= 100 | >= 50 | r |\n");
  ASSERT_EQ(held.size(), 2u);
  EXPECT_TRUE(held[0].gated);
  ASSERT_TRUE(held[0].shortfall_bound.has_value());
  EXPECT_DOUBLE_EQ(*held[0].shortfall_bound, 1.9);
  EXPECT_DOUBLE_EQ(*held[1].shortfall_bound, 50);
  for (const char* bad : {"<= 1.1", "<= 1.25", ">= 1.9", "<=1.9", "<= 1.9x", "<= -2"}) {
    try {
      parse_goals(head + "| `x/y` | ratio | <= 1.25 | " + bad + " | not yet |\n");
      ADD_FAILURE() << "took gated '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("write yes, no, or '<= N' with N above the goal"), std::string::npos)
          << e.what();
    }
  }
  const Goal* open = goal_for("ref/mem_open_close/4KiB");
  ASSERT_NE(open, nullptr);
  if (open->shortfall_bound) {
    EXPECT_GT(*open->shortfall_bound, open->bound);
  }
}

TEST(Goals, ABadRowIsRefusedNamingItsLineAndCell) {
  const std::string head = "| figure | measure | goal | gated | why |\n|---|---|---|---|---|\n";
  try {
    parse_goals(head + "| `x/y` | ratio | < 1.25 | yes | because |\n");
    FAIL() << "a goal without <= or >= was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'< 1.25'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_goals(head + "| `x/y` | furlongs | <= 1 | yes | because |\n"), std::invalid_argument);
  EXPECT_THROW(parse_goals(head + "| `x/y` | ratio | <= 1 | maybe | because |\n"), std::invalid_argument);
  EXPECT_THROW(parse_goals(head), std::invalid_argument);
  const auto ok = parse_goals(head + "| `a/*/c` | exec/s | >= 20000 | no | rate |\n");
  ASSERT_EQ(ok.size(), 1u);
  EXPECT_FALSE(ok[0].at_most);
  EXPECT_TRUE(figure_matches("a/*/c", "a/bb/c"));
  EXPECT_FALSE(figure_matches("a/*/c", "a/b/b/c"));
}

}  // namespace
}  // namespace ipcheck::bench

// ---------------------------------------------------------------- the count gate's table

namespace {
ipcheck::bench::MeasuredCounts counted(double instructions, double syscalls, double faults) {
  ipcheck::bench::MeasuredCounts m;
  m.counts = {{"instructions", instructions}, {"syscalls", syscalls}, {"faults", faults}};
  return m;
}
}  // namespace

TEST(Counts, TheCompiledTableParses) {
  using namespace ipcheck::bench;
  const auto& rows = count_rows();
  ASSERT_FALSE(rows.empty());
  EXPECT_TRUE(std::any_of(rows.begin(), rows.end(), [](const CountRow& r) {
    return r.figure == "ref/mem_open_close/*" && r.count == "syscalls" && r.over_floor;
  }));
  EXPECT_EQ(floor_of("ref/mem_open_close/4KiB"), "ref/floor/mem_open_close/4KiB");
  EXPECT_EQ(floor_of("ref/floor/mem_open_close/4KiB"), "");
  EXPECT_EQ(floor_of("harness/two_role_case"), "harness/floor/two_role_case");
}

TEST(Counts, AFigureIsJudgedOverItsFloorWithItsTolerance) {
  using namespace ipcheck::bench;
  const auto rows = parse_count_rows(
      "| figure | count | expected | tolerance | why |\n|---|---|---|---|---|\n"
      "| `ref/mem_open_close/*` | syscalls | +2 | 0 | x |\n"
      "| `ref/mem_open_close/*` | instructions | +1000 | 10% | x |\n"
      "| `ref/floor/mem_open_close/*` | syscalls | 6 | 0 | x |\n");
  std::map<std::string, MeasuredCounts> m{{"ref/mem_open_close/4KiB", counted(1290, 8, 0)},
                                          {"ref/floor/mem_open_close/4KiB", counted(200, 6, 0)}};
  auto v = judge_counts(rows, m);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].verdict, "pass");
  EXPECT_EQ(*v[0].value, 2);
  EXPECT_EQ(v[1].verdict, "pass");  // 1090 is within 10% of 1000
  EXPECT_EQ(v[2].verdict, "pass");
  m["ref/mem_open_close/4KiB"] = counted(1290, 9, 0);  // one system call more: a sleep, say
  m["ref/mem_open_close/4KiB"].calls = {{230, 1}, {310, 1}};
  m["ref/floor/mem_open_close/4KiB"].calls = {{310, 1}};
  v = judge_counts(rows, m);
  EXPECT_EQ(v[0].verdict, "fail");
  EXPECT_EQ(call_difference(m["ref/mem_open_close/4KiB"], m["ref/floor/mem_open_close/4KiB"]), "+1 clock_nanosleep");
  m["ref/mem_open_close/4KiB"] = counted(1310, 8, 0);  // 1110 is beyond 10% of 1000
  EXPECT_EQ(judge_counts(rows, m)[1].verdict, "fail");
}

TEST(Counts, AnUnmeasuredRowFigureOrFloorIsUnmeasured) {
  using namespace ipcheck::bench;
  const auto rows = parse_count_rows(
      "| figure | count | expected | tolerance | why |\n|---|---|---|---|---|\n"
      "| `ref/mem_open_close/*` | syscalls | +2 | 0 | x |\n"
      "| `ref/phys_open_map/*` | syscalls | +2 | 0 | x |\n"
      "| `harness/two_role_case` | instructions | +5 | 0 | x |\n");
  std::map<std::string, MeasuredCounts> m{{"ref/mem_open_close/4KiB", counted(1290, 8, 0)}};  // no floor
  MeasuredCounts harness;
  harness.counts = {{"syscalls", 500}};
  harness.unmeasured = "no instructions here";
  m["harness/two_role_case"] = harness;
  m["harness/floor/two_role_case"] = harness;
  const auto v = judge_counts(rows, m);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].verdict, "unmeasured");
  EXPECT_NE(v[0].why.find("its floor ref/floor/mem_open_close/4KiB was not measured"), std::string::npos);
  EXPECT_EQ(v[1].verdict, "unmeasured");  // renamed or failed: nothing matches the row
  EXPECT_NE(v[1].why.find("no measured figure matches ref/phys_open_map/*"), std::string::npos);
  EXPECT_EQ(v[2].verdict, "unmeasured");
  EXPECT_NE(v[2].why.find("no instructions here"), std::string::npos);
}

TEST(Counts, ABadRowIsRefusedNamingItsLineAndCell) {
  using ipcheck::bench::parse_count_rows;
  const std::string head = "| figure | count | expected | tolerance | why |\n|---|---|---|---|---|\n";
  auto refused = [&](const std::string& row, const std::string& says) {
    try {
      parse_count_rows(head + row);
      ADD_FAILURE() << "accepted: " << row;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused("| `ref/x` | cycles | 1 | 0 | x |\n", "line 3: count 'cycles' is none of instructions, syscalls, faults");
  refused("| `ref/x` | syscalls | -1 | 0 | x |\n", "expected '-1' is not a number");
  refused("| `ref/x` | syscalls | 1 | lots | x |\n", "tolerance 'lots'");
  refused("| `nofloor` | syscalls | +1 | 0 | x |\n", "has none");
  refused("| ref/x | syscalls | 1 | 0 | x |\n", "not a name in backquotes");
}
