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
  double ratio_low = 0, ratio_high = 0;  // the ratio's confidence interval (0: not given)
  bool higher_is_better = false;
};

std::vector<Benchmark> benchmarks(const Results& r);

// A fuzz campaign's totals and what it found (section `fuzz`, schema ipcheck.fuzz/1,
// written by fuzz/; see reports/SCHEMA.md).
struct FuzzFinding {
  std::string outcome;     // the oracle's finding kind: crash | hang | fd_leak | confused_deputy | ...
  std::string clause;      // the clause it breaks
  std::string mutation;    // how the input was made ("fd := producer.alloc[5].fd; checksum resealed")
  std::string fields;      // the mutated fields, comma separated
  std::string reproducer;  // path of the minimised reproducer (ipcheck fuzz --replay runs it)
  std::string detail;
};

struct FuzzSummary {
  bool present = false;
  std::string status;  // completed | skipped | aborted | interrupted
  std::string reason;
  std::string target;
  long long executions = 0;
  double duration_s = 0;
  double exec_per_s = 0;
  long long seed = 0;
  std::vector<std::pair<std::string, long long>> verdicts;     // the oracle's histogram: rejected, mapped, findings
  std::vector<std::pair<std::string, long long>> error_codes;  // what open returned, by error code
  std::vector<FuzzFinding> findings;
  std::vector<std::string> unexported;  // set-up allocations the adapter would not export
  std::vector<std::string> calibration;  // what unchanged handles taught the oracle
};

FuzzSummary fuzz_summary(const Results& r);

}  // namespace ipcheck::reports
