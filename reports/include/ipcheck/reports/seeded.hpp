// Seeded defects of ipcheck's own deciding code: the verdict, expectations, clause coverage,
// reruns, the diff gate, the merge and the store. Each is a deliberate bug a real change could
// make, compiled in only where IPCHECK_SEEDED_DEFECTS is defined (the test-only twins of the
// deciding files, linked into harness_test_defects and reports_test_defects) and switched on,
// one at a time, with IPCHECK_SEEDED_DEFECT=<name>. Each names the test that must catch it:
// CTest's defects:seeded.<name> (label defects) runs that test with the defect on and fails
// when it passes. The default build compiles none of them (is() is constexpr false).
#pragma once

#include <span>
#include <string_view>

#ifdef IPCHECK_SEEDED_DEFECTS
#include <cstdio>
#include <cstdlib>
#include <string>
#endif

namespace ipcheck::seeded {

struct info {
  const char* name;
  const char* where;      // the deciding code it breaks
  const char* caught_by;  // the gtest filter of the test that must catch it
  const char* description;
};

inline constexpr info kCatalog[] = {
    {"sigkill_is_machine", "harness/src/verdict.cpp classify",
     "Verdict.SigkillIsACrashUnlessTheMachinesRecordSaysOtherwise:RunnerVerdicts.ARoleThatKillsItselfWithSigkillIsCrash",
     "a role's death by SIGKILL is judged error (the machine ran out) without the machine's record: a runtime that "
     "kills its own process is excused"},
    {"expectation_ignores_check", "harness/src/verdict_expectations.cpp covers_check",
     "Expectations.AnExpectedFailureNeverHidesANewOne",
     "an expectations line covers a failed check whatever its check= matcher says: a new failure hides behind a "
     "known one"},
    {"coverage_ignores_failed_check", "harness/src/verdict_coverage.cpp fill_clause_coverage",
     "Coverage.AFailedCheckFailsItsClauseOnly",
     "a clause whose check failed in a case is not counted failed there: the clause's coverage says pass"},
    {"rerun_pass_is_pass", "harness/src/verdict.cpp combine_attempts", "Attempts.FailedThenPassedIsFlakyWithEveryAttemptKept",
     "a case that failed, then passed when run again, is pass instead of flaky: the failure is forgotten"},
    {"skip_loses_no_coverage", "reports/src/diff.cpp classify_status_change", "Diff.PassToASkipOfTheRuntimesIsARegression",
     "pass -> a skip of the runtime's (it no longer starts, or lacks a verb) is no regression: coverage lost passes "
     "the gate"},
    {"merge_ignores_selection", "reports/src/merge.cpp cover_of",
     "Merge.ShardsOfALargerSelectionAreNotAWholeRun:Merge.CasesThatAreNotTheSelectionsPlacesAreNotAWholeRun",
     "every shard given makes a whole run, whatever selection the shards came from"},
    {"store_digest_names_file", "reports/src/store.cpp Store::add", "Backends/StoreTest.TheSameRunIsKeptOnce/sqlite",
     "a run's identity in the store includes the file it was read from: the same run added from two files is kept "
     "twice"},
};

inline std::span<const info> catalog() noexcept { return kCatalog; }

#ifdef IPCHECK_SEEDED_DEFECTS
// The defect IPCHECK_SEEDED_DEFECT names in this process ("" for none); an unknown name ends
// the process, naming the catalog.
inline const std::string& active() {
  static const std::string selected = [] {
    const char* v = std::getenv("IPCHECK_SEEDED_DEFECT");
    if (!v || !*v || std::string_view(v) == "none") return std::string();
    for (const auto& d : kCatalog)
      if (std::string_view(d.name) == v) return std::string(v);
    std::fprintf(stderr, "ipcheck: IPCHECK_SEEDED_DEFECT=%s names no defect; see ipcheck::seeded::kCatalog\n", v);
    std::abort();
  }();
  return selected;
}
inline bool is(std::string_view name) { return active() == name; }
#else
constexpr bool is(std::string_view) noexcept { return false; }
#endif

}  // namespace ipcheck::seeded
