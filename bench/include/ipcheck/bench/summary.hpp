// From raw timings to the `bench` section of results.json (reports/SCHEMA.md, "bench"):
// Google Benchmark's JSON (one entry per repetition) or plain samples become one entry
// per benchmark with its median, its spread (median absolute deviation), the median of
// its floor and the ratio between them.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ipcheck::bench {

// What a benchmark's Google Benchmark label says about it: "floor=NAME;target_ratio=1.25".
struct LabelInfo {
  std::string floor;                 // the floor benchmark's name
  std::optional<double> target_ratio;
  std::optional<double> target;      // a bound on the median, in the benchmark's unit
  std::string note;
};
LabelInfo parse_label(const std::string& label);
std::string make_label(const LabelInfo& info);

// Google Benchmark's run name less the suffixes it adds ("/manual_time", "/real_time").
std::string clean_name(const std::string& run_name);

double median(std::vector<double> v);
// Median absolute deviation from the median (unscaled).
double mad(const std::vector<double>& v);

// A distribution-free confidence interval of the median: the order statistics x(k) and
// x(n+1-k) of the sorted samples, k the largest rank for which the binomial chance of fewer
// than k samples below the median is at most (1 - confidence) / 2. With fewer than 6
// samples at 95% that is [min, max] (its coverage then falls below 95%: 1 - 2 / 2^n).
struct Interval {
  double low = 0, high = 0;
};
Interval median_interval(std::vector<double> v, double confidence = 0.95);
// The interval of median(x) / median(floor), from the two medians' intervals (each at
// `confidence`, so the ratio's at least 2 * confidence - 1: conservative on purpose).
Interval ratio_interval(const std::vector<double>& x, const std::vector<double>& floor, double confidence = 0.95);

// One benchmark's repetitions, before floors are attached.
struct Series {
  std::string name;
  std::string unit;  // ns | us | ms | s | exec/s
  std::vector<double> samples;
  bool higher_is_better = false;
  LabelInfo label;
  std::optional<double> load_1m;  // 1-minute load average when the program that measured it started
  std::string source;             // which program or step measured it
};

// Factor from `unit` to seconds (0 for a unit that is not a time).
double seconds_per(const std::string& unit);

// Repetitions ("run_type": "iteration") of every benchmark of one Google Benchmark JSON
// document, in order of first appearance; runs that report an error go to `errors`
// ("name: message"). Times are real (wall) times in the benchmark's own unit. A counter
// named "step_<step>" (milliseconds per iteration: a step of the benchmark) becomes a series
// "<benchmark>/<step>" in ms, held against the same step of the benchmark's floor if it has one.
std::vector<Series> series_from_google_benchmark(const nlohmann::json& doc, const std::string& source,
                                                 std::vector<std::string>& errors);

// Sorts for reading: by the program that measured them, then by verb (get, put, open,
// first touch, close, open + close, physical, events, harness...), then by size, each verb
// just before its floor. Google Benchmark's random interleaving leaves them shuffled.
void canonical_order(std::vector<Series>& all);

// The `benchmarks` list of the bench section: each series summarised, its floor (by the
// label's name, among `all`) converted to its unit (a rate held against a floor measured as
// the time of one operation gets 1 / that time as its floor). A missing floor is an error named in
// `errors`. Fields: name, unit, median, spread, spread_kind, repetitions, better, and when
// known floor, ratio, floor_name, target_ratio, target, met, load_1m, note, source; `low` and
// `high` (the median's 95% interval) and with a floor `ratio_low` and `ratio_high`.
nlohmann::json summarize(const std::vector<Series>& all, std::vector<std::string>& errors);

}  // namespace ipcheck::bench
