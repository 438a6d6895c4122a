// The optional `fuzz` and `bench` sections of results.json, read leniently: a renderer or
// the diff shows what is there and skips what is not (reports/SCHEMA.md has their shape).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ipcheck/reports/results.hpp"

namespace ipcheck::reports {

// One benchmark's figures over its repetitions in one run.
struct Benchmark {
  std::string name;         // "mem_open/4KiB"
  std::string unit;         // "ns", "us", "GiB/s"
  double median = 0;
  double spread = 0;        // noise of the repetitions, in `unit` (MAD or IQR: see spread_kind)
  std::string spread_kind;  // mad | iqr
  int repetitions = 0;
  double floor = 0;         // the cost this benchmark is held against (0: none), in `unit`
  double ratio = 0;         // median / floor (0: no floor)
  bool higher_is_better = false;
};

std::vector<Benchmark> benchmarks(const Results& r);

// A fuzz campaign's totals and what it found.
struct FuzzFinding {
  std::string outcome;     // crash | hang | leak | wrong_mapping | ...
  std::string mutator;
  std::string reproducer;  // path of the minimised reproducer
  std::string detail;
};

struct FuzzSummary {
  bool present = false;
  std::string target;
  long long executions = 0;
  double duration_s = 0;
  long long seed = 0;
  std::vector<std::pair<std::string, long long>> outcomes;  // histogram, by outcome name
  std::vector<FuzzFinding> findings;
};

FuzzSummary fuzz_summary(const Results& r);

}  // namespace ipcheck::reports
