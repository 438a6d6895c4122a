// Two runs compared: what regressed, what got fixed, what failed that did not run before, what
// else changed. The diff is what gates a driver team's CI: `fails_gate()` (a regression or a
// new failure) is the exit status of `ipcheck report diff`.
#pragma once

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "ipcheck/reports/results.hpp"
#include "ipcheck/reports/sections.hpp"

namespace ipcheck::reports {

inline constexpr std::string_view kDiffSchema = "ipcheck.diff/1";

// Which run a side of the diff is.
struct RunLabel {
  std::string label;  // what the person gave (a path), shown as is
  std::string adapter, driver_name, driver_version, ipcheck_version, start;
  int total = 0;
  int unexpected = 0;
};

struct StatusChange {
  std::string id;
  Status from = Status::pass;
  Status to = Status::pass;
  std::string reason;  // the new run's reason for its status
};

// A case that is flaky in the new run: it did not pass, then passed on a rerun. Listed
// apart, never a regression (whatever it was in the old run).
struct FlakyCase {
  std::string id;
  std::optional<Status> old_status;  // nullopt: not in the old run
  std::string reason;                // the new run's: which attempts failed, and how
  bool expected = false;             // an expectations line names it flaky
};

// A case that judged nothing in the old run (absent, skip, incomplete, error or flaky) and
// ends with an unexpected judged status in the new one (fail, leak, timeout, crash). Not a
// regression (nothing to regress from), but a new problem: it fails the gate all the same.
struct NewFailure {
  std::string id;
  std::optional<Status> from;  // nullopt: not in the old run
  Status to = Status::fail;
  std::string reason;  // the new run's reason for its status
};

struct CaseEntry {
  std::string id;
  Status status = Status::pass;
  std::string reason;
};

// A clause whose coverage verdict differs (pass -> emulated, not_run -> fail, ...).
struct ClauseChange {
  std::string id;
  ClauseVerdict from = ClauseVerdict::not_run;
  ClauseVerdict to = ClauseVerdict::not_run;
};

struct ObservationChange {
  std::string case_id;
  std::string name;
  std::optional<std::string> from;  // nullopt: not observed in that run
  std::optional<std::string> to;
};

struct BenchChange {
  std::string name;
  std::string unit;
  double old_median = 0, new_median = 0;
  double old_spread = 0, new_spread = 0;
  int old_repetitions = 0, new_repetitions = 0;
  double old_ratio = 0, new_ratio = 0;  // against the floor (0: none)
  bool worse = false;                   // slower (or lower throughput)
  bool ratio_moved = false;             // the ratios' confidence intervals do not overlap
};

// A verb that costs the kernel a different amount per call (bpf audit): how many
// descriptors, mappings, ioctls one call makes, old and new.
struct ProfileChange {
  std::string case_id;
  std::string role;
  std::string verb;     // "mem_open"
  std::string counter;  // "pidfd_getfd", "mmap_shared", "ioctl:/dev/dri/renderD128"
  double from = 0, to = 0;  // per call
  long long old_calls = 0, new_calls = 0;
};

// Two fuzz campaigns side by side: executions, the oracle's outcome counts, and finding
// classes (outcome and clause) that appeared or went.
struct FuzzDiff {
  bool compared = false;
  std::string note;  // why not compared (a run has no campaign)
  long long old_executions = 0, new_executions = 0;
  std::vector<std::tuple<std::string, long long, long long>> outcomes;  // name, old, new (those that differ)
  std::vector<std::string> classes_new, classes_gone;
  bool changed() const { return !outcomes.empty() || !classes_new.empty() || !classes_gone.empty(); }
};

struct Diff {
  RunLabel old_run, new_run;
  std::vector<StatusChange> regressions;  // worst new status first, then by id
  std::vector<NewFailure> new_failures;   // did not run before, fails now: worst first, then by id
  std::vector<ClauseChange> new_clause_failures;  // clauses not run (or absent) before that fail now
  std::vector<StatusChange> fixes;        // best new status first, then by id
  std::vector<StatusChange> changes;      // to or from skip, incomplete or error (never a regression)
  std::vector<StatusChange> errors;       // judged in the old run, a harness error in the new: not judged
  std::vector<FlakyCase> flaky;           // every case flaky in the new run, by id
  std::vector<ClauseChange> clauses;      // coverage verdicts that changed
  std::vector<CaseEntry> added;           // cases only in the new run
  std::vector<CaseEntry> removed;         // cases only in the old run
  std::vector<ObservationChange> observations;
  std::vector<BenchChange> bench;         // changes beyond the noise of both runs
  int bench_within_noise = 0;             // compared, and the difference is noise
  std::vector<std::string> bench_unjudged;  // compared, but a run has fewer than 2 repetitions
  std::vector<std::string> bench_added, bench_removed;
  std::string bench_note;                 // why benchmarks were not compared (a run has none)
  // The runs come from different machines (host name or devices differ): benchmarks are
  // compared only as ratios to their in-run floors, with the cross-machine noise model.
  bool bench_across_machines = false;
  std::vector<std::string> bench_no_floor;  // across machines, a benchmark without a floor: not comparable
  FuzzDiff fuzz;
  std::vector<ProfileChange> profiles;    // call profiles that changed (both runs audited with bpf)
  std::string profile_note;               // why call profiles were not compared

  bool driver_changed() const;
  bool has_regression() const { return !regressions.empty(); }
  bool has_new_failure() const { return !new_failures.empty() || !new_clause_failures.empty(); }
  // What gates a CI: `ipcheck report diff` exits 1 when this is true.
  bool fails_gate() const { return has_regression() || has_new_failure(); }
  bool empty() const;
};

// Labels name the runs in what is shown (usually the paths given on the command line).
Diff diff_results(const Results& old_run, const Results& new_run, const std::string& old_label,
                  const std::string& new_label);

// True when the difference between two medians is beyond the noise of both runs: the
// intervals median ± spread do not overlap. Fewer than 2 repetitions: no measured noise, false.
bool beyond_noise(const Benchmark& a, const Benchmark& b);

// Across machines only the ratio to the in-run floor is compared: beyond noise when it moved
// by more than kCrossMachineFactor, widened by both runs' relative spreads. Calibrated on an
// unchanged driver (580.159.04) run on an H100 and an H200, whose ratios moved by up to 30%.
inline constexpr double kCrossMachineFactor = 1.5;
bool beyond_cross_machine_noise(const Benchmark& a, const Benchmark& b);
// Same machine: the ratios' confidence intervals (ratio_low..ratio_high) do not overlap;
// false where either run gives none.
bool ratio_beyond_noise(const Benchmark& a, const Benchmark& b);

std::string render_diff_text(const Diff& d);
std::string render_diff_markdown(const Diff& d);
nlohmann::json diff_to_json(const Diff& d);

}  // namespace ipcheck::reports
