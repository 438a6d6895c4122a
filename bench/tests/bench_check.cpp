// Checks that a results.json written by `ipcheck bench` has a well-formed bench section
// (reports/SCHEMA.md, "bench"). It never judges a figure: only shapes, units, the floor
// each benchmark names, and the arithmetic that ties median, floor and ratio together.
//
//   bench_check RESULTS.json [--expect-skip] [--expect NAME]...
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "ipcheck/reports/results.hpp"

using nlohmann::json;

namespace {

int problems = 0;

void problem(const std::string& what) {
  std::fprintf(stderr, "bench_check: %s\n", what.c_str());
  ++problems;
}

bool number(const json& b, const char* key) { return b.contains(key) && b[key].is_number() && std::isfinite(b[key].get<double>()); }

// One benchmark's shape: unit, median and spread, repetitions, direction, its floor and ratio.
void check_benchmark(const json& b, const std::set<std::string>& names) {
  static const std::set<std::string> units = {"ns", "us", "ms", "s", "exec/s"};
  const std::string name = b.value("name", "");
  const std::string at = "benchmark '" + name + "': ";
  if (name.empty()) problem("a benchmark has no name");
  if (!units.count(b.value("unit", ""))) problem(at + "unit '" + b.value("unit", "") + "' is not one of ns us ms s exec/s");
  if (!number(b, "median")) problem(at + "no median");
  if (!number(b, "spread") || b["spread"].get<double>() < 0) problem(at + "no spread, or a negative one");
  if (b.value("spread_kind", "") != "mad") problem(at + "spread_kind is not mad");
  if (!b.contains("repetitions") || !b["repetitions"].is_number_integer() || b["repetitions"].get<int>() < 2)
    problem(at + "fewer than 2 repetitions");
  const std::string better = b.value("better", "");
  if (better != "lower" && better != "higher") problem(at + "better is '" + better + "'");
  if (b.value("unit", "") != "exec/s" && better != "lower") problem(at + "a time where higher is better");
  if (b.contains("floor_name")) {
    const std::string f = b["floor_name"].get<std::string>();
    if (!names.count(f)) problem(at + "its floor '" + f + "' is not in the list");
    if (!number(b, "floor") || b["floor"].get<double>() <= 0) problem(at + "names a floor but has no positive floor");
    if (!number(b, "ratio")) {
      problem(at + "has a floor but no ratio");
    } else if (number(b, "median") && number(b, "floor")) {
      const double want = b["median"].get<double>() / b["floor"].get<double>();
      if (std::fabs(b["ratio"].get<double>() - want) > 2e-3 * want)
        problem(at + "ratio " + b["ratio"].dump() + " is not median / floor (" + std::to_string(want) + ")");
    }
  } else if (b.contains("ratio") || b.contains("floor")) {
    problem(at + "a floor or a ratio without floor_name");
  }
  if (b.contains("met") && !b.contains("target") && !b.contains("target_ratio")) problem(at + "met without a target");
  if (!number(b, "load_1m") || b["load_1m"].get<double>() < 0) problem(at + "no load average");
}

// The raw Google Benchmark output each program wrote lies beside results.json.
void check_programs(const json& ctx, const std::string& path) {
  const auto dir = std::filesystem::path(path).parent_path();
  const json programs = ctx.contains("programs") ? ctx["programs"] : json::object();
  for (auto it = programs.begin(); it != programs.end(); ++it) {
    const std::string program = it.key();
    const json& info = *it;
    const std::string out = info.value("output", "");
    if (out.empty() || !std::filesystem::exists(dir / out)) problem(program + ": its raw output '" + out + "' is not beside " + path);
    if (!info.contains("load_avg")) problem(program + ": Google Benchmark's context has no load_avg");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_check RESULTS.json [--expect-skip] [--expect NAME]...\n");
    return 2;
  }
  const std::string path = argv[1];
  bool expect_skip = false;
  std::vector<std::string> expected;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--expect-skip") expect_skip = true;
    else if (a == "--expect" && i + 1 < argc) expected.push_back(argv[++i]);
    else {
      std::fprintf(stderr, "bench_check: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  ipcheck::reports::Results r;
  try {
    r = ipcheck::reports::read_results(path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_check: %s\n", e.what());
    return 1;
  }
  const json& bench = r.bench;
  if (!bench.is_object()) {
    problem(path + " has no bench section");
    return 1;
  }
  for (const char* key : {"benchmarks", "skipped", "errors", "pending"})
    if (!bench.contains(key) || !bench[key].is_array()) problem(std::string("bench.") + key + " is not a list");
  if (problems) return 1;
  for (const auto& e : bench["errors"]) problem("the run reported an error: " + e.get<std::string>());
  const json ctx = bench.contains("context") ? bench["context"] : json::object();
  for (const char* key : {"load_before", "load_after"})
    if (!ctx.contains(key) || !ctx[key].is_array() || ctx[key].size() != 3)
      problem(std::string("bench.context.") + key + " is not the three load averages");
  const json& list = bench["benchmarks"];
  if (expect_skip) {
    if (!list.empty()) problem("the adapter should have been skipped, yet benchmarks ran");
    if (bench["skipped"].empty() || bench["skipped"][0].value("reason", "").empty())
      problem("the skip names no reason");
    return problems ? 1 : 0;
  }
  if (list.empty()) problem("no benchmark in the section");
  std::set<std::string> names;
  for (const auto& b : list) names.insert(b.value("name", ""));
  for (const auto& b : list) check_benchmark(b, names);
  for (const auto& e : expected)
    if (!names.count(e)) problem("benchmark '" + e + "' is missing");
  check_programs(ctx, path);
  if (problems) {
    std::fprintf(stderr, "bench_check: %d problem(s) in %s\n", problems, path.c_str());
    return 1;
  }
  std::printf("bench_check: %zu benchmarks well formed in %s\n", list.size(), path.c_str());
  return 0;
}
