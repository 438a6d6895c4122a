// Judging, in one place. Everything that turns what role processes did into verdicts lives
// here, over typed values: a check's result (its clause's level, the adapter's profiles),
// who decided it, a case's status (from what the runner saw of its roles), expectations
// (known deviations turned into xfail, never hiding a different failure), and clause
// coverage (pass only where the runtime under test decided). The runner gathers facts and
// calls these; nothing else decides a status.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ipcheck/case.hpp"
#include "ipcheck/clause.hpp"
#include "ipcheck/expectations.hpp"
#include "ipcheck/reports/results.hpp"
#include "ipcheck/spawn.hpp"

namespace ipcheck::verdict {

// Profiles judged on every adapter, whatever it claims: robustness (SPEC-CLAUSES.md, "Every
// adapter is judged on it") and the harness's own checks. A clause of an API profile the
// adapter does not claim is observed, never failed.
bool judged_on(const std::string& profile, const std::vector<std::string>& claimed);
// The profiles an adapter is judged on: its claims and the universal ones, sorted.
std::vector<std::string> judged_profiles(const std::vector<std::string>& claimed);

// A check as a role reports it (the payload of the channel's check message).
struct CheckReport {
  std::string clause;
  bool ok = false;
  std::string message;
  std::string where;
  reports::Decider by = reports::Decider::harness;
  std::string call;
  long long native = 0;
  std::string native_name;
  bool setup = false;

  static CheckReport from(bool ok, const Evidence& e, std::string_view clause, std::string message, std::string where,
                          bool setup);
  nlohmann::json to_json() const;
  // Throws std::invalid_argument naming the field when `j` is not a check report.
  static CheckReport from_json(const nlohmann::json& j);
};

struct JudgedCheck {
  reports::Check check;
  std::string warning;  // a clause the catalog lacks, a violated should
};
// Judges one reported check: its level from the catalog, its result from `ok`, the level
// and whether the adapter is judged on the clause's profile.
JudgedCheck judge_check(const CheckReport& r, const std::string& role, const std::vector<std::string>& claimed);

// An observation that names its clause, as a check of that clause (result `observed`).
reports::Check observation_check(const std::string& role, const std::string& name, const std::string& value,
                                 const std::string& clause);

// What the runner saw of one role process.
struct RoleFacts {
  std::string name;
  bool started = false;
  std::string start_error;  // why it could not be started (fork, exec, pipes, limits)
  std::optional<ExitStatus> exit;
  bool done = false;             // finished its body and said so
  bool skipped = false;          // asked to skip the case
  bool expected_death = false;   // killed on request or by injection, or expendable
  std::string output_tail;
  // Killed by SIGKILL, and the machine's own record says the machine did it (the kernel's
  // OOM report, the memory cgroup's OOM count): why. Empty: a SIGKILL nobody else owns is
  // a crash like any other signal.
  std::string machine_kill;
};

// What the runner saw of one case run.
struct CaseFacts {
  std::vector<RoleFacts> roles;
  bool interrupted = false;             // the run was cut short (a signal)
  bool timed_out = false;
  std::string termination_reason;       // "case timeout after 60 s", ...
  std::string waiting_where;            // where the roles were when it ended
  std::string skip_reason;
  std::string skip_by;                  // whose reason the skip is (reports::CaseResult::skip_by)
  std::vector<std::string> harness_errors;  // faults of the harness or the machine, with their cause
  const InjectPoint* inject = nullptr;
  bool injected = false;                // the injection point was reached
  int checks = 0;                       // check and observation messages received
};

// Sets c.status and c.reason from the facts, c.checks and c.findings. Order: incomplete,
// error, timeout, crash, leak, fail, skip; a harness fault is never charged to the adapter.
void classify(const CaseFacts& f, reports::CaseResult& c);

// ---- attempts (ipcheck run --rerun-failures N)

// Whether a case may be run again in fresh processes: it did not pass, and its status is one
// another attempt can change (fail, leak, timeout, crash, error). Never pass, xfail (its
// deviation is known), skip, incomplete (the run was interrupted) or flaky.
bool wants_rerun(const reports::CaseResult& c);

// One case from its attempts, in the order they ran (expectations already applied to each;
// the runner stops at the first that passed). One attempt: that attempt, unchanged. Else,
// with every attempt kept in `attempts` and duration_s their sum:
// - the last passed after a judged failure (fail, leak, timeout, crash): `flaky`, with the
//   last attempt's record and a reason naming the first failure;
// - the last passed after harness errors only: `pass` (an error judged nothing), with a
//   warning naming each error;
// - none passed: the first judged attempt (else the first), as one run would have said it,
//   with a warning listing every attempt's status.
reports::CaseResult combine_attempts(std::vector<reports::CaseResult> attempts);

// How the lines of an expectations file matched over a run.
class ExpectationUse {
 public:
  explicit ExpectationUse(const Expectations& e) : e_(&e), matched_(e.entries().size(), 0) {}
  // Turns a deviation the file lists into xfail, when every failure of the case is covered
  // by a line (status, and what the line says must match); a case with a failure no line
  // covers keeps its status, with the covered failures marked expected. `driver_version`
  // selects lines limited to a driver range. A flaky case named by a `flaky` line stays
  // flaky, marked expected (expectation and expected_status set).
  void apply(reports::CaseResult& c, const std::string& driver_version);
  // {file, lines: [{where, pattern, status, matched, applies}], stale: [where...]}: a line
  // is stale when its driver range applies, a case it names ran, and it matched nothing.
  nlohmann::json report(const std::vector<reports::CaseResult>& cases, const std::string& driver_version) const;
  // The stale lines as "file:line: <pattern> <status>: matched nothing in this run".
  std::vector<std::string> stale(const std::vector<reports::CaseResult>& cases, const std::string& driver_version) const;

 private:
  const Expectations* e_;
  std::vector<int> matched_;
};

// Whether a line names a case that ran (by id, or a clause one of its cases checks).
bool names_case(const Expectation& x, const reports::CaseResult& c);

// Fills results.clauses: every clause of the catalog with its cases, what decided it and
// its verdict over this run (reports::ClauseVerdict).
void fill_clause_coverage(reports::Results& r);
// The same over the clauses given (their id, profile, level, source, statement and cases
// kept, everything else judged again): a merge of shards judges over the catalog its inputs
// were run with, whichever ipcheck merges them.
void fill_clause_coverage(reports::Results& r, std::vector<reports::ClauseInfo> catalog);
// The registered catalog's clauses, not judged yet (verdict not_run), with their cases.
std::vector<reports::ClauseInfo> catalog_clauses();

}  // namespace ipcheck::verdict
