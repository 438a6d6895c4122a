// Joins the results.json files of one run's shards (ipcheck run --shard K/N on several
// machines) into one run: cases in the selection's order, summary and clause coverage
// recomputed, the expectations' use summed, each case's audit unchanged. Refuses to mix
// runs of different adapters, drivers, catalogs, options or GPU models unless told, and
// always refuses a case in two inputs. Merging is associative: merge(merge(a, b), c) and
// merge(a, merge(b, c)) write the same bytes. reports/SCHEMA.md (run.options.merged) says
// what each run-level field becomes.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ipcheck/reports/results.hpp"

namespace ipcheck::reports {

struct MergeInput {
  std::string label;  // the path given, named in messages
  Results results;
};

struct MergeOptions {
  // Merge anyway when inputs differ in adapter, driver, ipcheck version, catalog, devices,
  // audit method, transport or run options (the merged field joins the values with " | ").
  bool allow_mixed = false;
  // Fills the verdicts of r.clauses (the inputs' catalog, verdicts cleared) from r.cases:
  // ipcheck passes verdict::fill_clause_coverage, the one place that judges coverage.
  std::function<void(Results&)> coverage;
};

// The most shards one run may be split into (--shard K/N, a CI system's total, a results
// file's run.options.shard.total): a shard count sizes loops and lists, so it is bounded
// where it is read.
inline constexpr int kMaxShardTotal = 10000;

// A refusal: the message names the inputs, the field, both values and the fix.
class MergeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Merged {
  Results results;
  std::vector<std::string> notes;  // what a person should know: missing shards, values allowed to differ
};

Merged merge_results(const std::vector<MergeInput>& inputs, const MergeOptions& options);

}  // namespace ipcheck::reports
