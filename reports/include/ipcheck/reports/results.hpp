// The results model: what one run of ipcheck found, as written to results.json
// (schema ipcheck.results/1, documented in reports/SCHEMA.md). Every report and every
// diff is computed from this model; nothing else is read.
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ipcheck::reports {

// The schema is "ipcheck.results/<version>"; reports/SCHEMA.md says how versions evolve.
// This model writes version 2 and reads versions 1 and 2 (a version-1 file is converted:
// who decided each check is `unknown` there).
inline constexpr std::string_view kSchemaFamily = "ipcheck.results/";
inline constexpr int kSchemaVersion = 2;
inline constexpr int kOldestReadableSchema = 1;
inline constexpr std::string_view kSchema = "ipcheck.results/2";

// Case statuses. Comparison order (worse is larger): pass < xfail < fail < leak < timeout
// < crash; skip never counts as a change; incomplete means the run itself was cut short;
// error means the harness or the machine failed (a role could not start, a limit was hit):
// nothing was judged, and nothing is charged to the adapter; flaky means the case did not
// pass, was run again (--rerun-failures) and then passed: every attempt is kept, it is not
// ranked (never a regression or a fix) and does not fail the run.
enum class Status { pass, xfail, fail, leak, timeout, crash, skip, incomplete, error, flaky };
inline constexpr Status kAllStatuses[] = {Status::pass,  Status::xfail, Status::fail, Status::leak,
                                          Status::timeout, Status::crash, Status::skip, Status::incomplete,
                                          Status::error, Status::flaky};

const char* to_string(Status s) noexcept;
std::optional<Status> parse_status(std::string_view s) noexcept;
// Rank in the comparison order; -1 for skip, incomplete, error and flaky, which are not ranked.
int severity(Status s) noexcept;
// True for the statuses that make a run fail (fail, leak, timeout, crash, incomplete, error).
bool is_problem(Status s) noexcept;
// True for the statuses a driver can be charged with (pass to crash): not skip, incomplete,
// error or flaky (its attempts disagree, so it decides nothing on its own).
bool is_judged(Status s) noexcept;

// A clause's level: a violated must fails its case, a should warns, an observe records.
enum class Level { must, should, observe };
const char* to_string(Level l) noexcept;
std::optional<Level> parse_level(std::string_view s) noexcept;

// What one check found: `observed` for a value recorded without judging (an observe-level
// clause, or a profile the adapter is not judged on).
enum class CheckResult { pass, fail, warn, observed };
const char* to_string(CheckResult r) noexcept;
std::optional<CheckResult> parse_check_result(std::string_view s) noexcept;

// Who decided a check: the runtime under test (a native call answered: its name and code
// are kept), the adapter's own code (an emulation of something the API lacks), or ipcheck
// itself (its own records, ids or bookkeeping). `unknown`: read from a version-1 file.
enum class Decider { runtime, adapter, harness, unknown };
const char* to_string(Decider d) noexcept;
std::optional<Decider> parse_decider(std::string_view s) noexcept;

// A clause's coverage in one run. pass: its deciding checks passed and at least one was
// decided by the runtime; emulated: they passed, but none was decided by the runtime;
// observed: only observations; warn: a should was violated; xfail: violated, as the
// adapter's expectations say; fail: violated; not_run: no case judged it here (every case
// skipped, errored, or made no check of it).
enum class ClauseVerdict { pass, emulated, observed, warn, xfail, fail, not_run };
const char* to_string(ClauseVerdict v) noexcept;
std::optional<ClauseVerdict> parse_clause_verdict(std::string_view s) noexcept;

// One judged statement of a clause inside a case.
struct Check {
  std::string clause;       // "sycl.mem.open.size"
  Level level = Level::must;
  CheckResult result = CheckResult::pass;
  Decider decided_by = Decider::harness;
  // A step the clause's checks stand on (allocate, export, open the real handle) rather
  // than one that decides it: its failure fails the case, its pass decides nothing.
  bool setup = false;
  bool expected = false;    // a failure an expectations line covers
  std::string call;         // the native call whose answer decided it (decided_by runtime)
  long long native = 0;     // that call's code, when it failed
  std::string native_name;
  std::string role;         // which role made the check
  std::string message;
  std::string where;        // file:line of the check
};

struct NativeError {
  std::string role;
  std::string verb;         // "mem_open"
  std::string errc;         // ipcheck's code: invalid, feature_not_supported, ...
  long long native = 0;     // the runtime's own code
  std::string native_name;  // "ZE_RESULT_ERROR_INVALID_ARGUMENT"
  std::string message;
};

struct RoleExit {
  std::string name;
  int pid = 0;
  std::string exit;          // "exit 0", "signal SIGSEGV", "killed after timeout", "could not start: ..."
  int code = 0;
  int signal = 0;
  double duration_s = 0;
  std::string output_tail;
};

struct AuditFinding {
  std::string role;
  std::string kind;    // fd | mapping | process
  std::string item;    // "/memfd:ipcref-memory (deleted)", "7f..-7f.. rw-s /dev/dri/renderD128"
  std::string verb;    // the adapter verb that created it, where known ("mem_open #3")
  std::string detail;
};

// A role that ran under failpoints (IPCHECK_FAILPOINTS, lib/include/ipcref/failpoints.hpp):
// the spec it got and the failed calls its layers reported ("zeMemFree call 1 answered
// ZE_RESULT_ERROR_DEVICE_LOST"), as far as the role's output tail kept them.
struct FailpointUse {
  std::string role;
  std::string spec;
  std::vector<std::string> fired;
};

struct CaseResult {
  std::string id;
  std::string description;
  std::string area;
  Status status = Status::pass;
  std::string reason;                 // one line: why this status (failure, skip reason, crash signal)
  std::string expectation;            // the expectations-file line(s) that made it xfail
  std::optional<Status> expected_status;  // for xfail: the status the expectation covered (fail, leak, ...)
  // For skip: "runtime_init" (the runtime under test did not start: its init, a context or
  // device it could not make), "runtime" (it lacks a verb or feature the case needs), or ""
  // (the machine, the selection, the case's own needs). A skip of the runtime's in a case that
  // passed before is lost coverage: `report diff` counts it a regression.
  std::string skip_by;
  std::vector<std::string> clauses;
  std::vector<Check> checks;
  // Named values where the spec leaves behaviour open. A name seen with several values in
  // one case keeps them all, sorted and joined by " | " (no last-message-wins).
  std::map<std::string, std::string> observations;
  std::vector<NativeError> native_errors;
  std::vector<RoleExit> roles;
  std::vector<std::string> warnings;  // should-level violations, partly expected failures, protocol oddities
  nlohmann::json audit = nlohmann::json::object();  // {method, roles: {...}, findings: [...]}
  std::vector<AuditFinding> findings;
  std::string injection;              // fault injection point ("producer:after_export") or empty
  std::vector<FailpointUse> failpoints;  // the roles that ran under failpoints (empty: none)
  double duration_s = 0;
  // With --rerun-failures, every run of the case in order (the first included), each a
  // whole record without id, description, area and clauses (they are the case's); empty
  // when the case ran once. The case's own fields are those of the attempt that decided
  // its status (verdict::combine_attempts).
  std::vector<CaseResult> attempts;
};

// Records `value` for observation `name`, keeping every distinct value seen.
void add_observation(CaseResult& c, const std::string& name, const std::string& value);

// What a clause's obligation stands on: a published specification or vendor documentation
// (its text quoted in ClauseInfo::basis), ipcheck's robustness profile alone, or the
// harness's own bookkeeping. A failed clause of the profile is rendered as a hardening
// request, never as a violation: no API text requires it.
enum class BasisKind { specification, profile, harness };
const char* to_string(BasisKind b) noexcept;
std::optional<BasisKind> parse_basis_kind(std::string_view s) noexcept;

struct ClauseInfo {
  std::string id;
  std::string profile;
  Level level = Level::must;
  std::string source;
  std::string statement;
  std::string uncovered_reason;
  BasisKind basis_kind = BasisKind::specification;
  std::string basis;  // the quoted normative text (specification), or empty
  // True when a failure of this clause is a hardening request (its basis is ipcheck's profile).
  bool hardening() const noexcept { return basis_kind == BasisKind::profile; }
  std::vector<std::string> cases;  // the catalog's cases that check it
  ClauseVerdict verdict = ClauseVerdict::not_run;
  // The passing deciding checks by who decided them, and the failed ones, over the run.
  int by_runtime = 0, by_adapter = 0, by_harness = 0, by_unknown = 0, failed = 0;
  std::vector<std::string> ran;    // the cases that judged it in this run
};

struct RunInfo {
  std::string adapter;
  std::string driver_name;
  std::string driver_version;
  nlohmann::json devices = nlohmann::json::array();
  std::string kernel;
  std::string ipcheck_version;
  nlohmann::json options = nlohmann::json::object();
  std::vector<std::string> profiles;
  std::string start;        // ISO 8601 UTC
  double duration_s = 0;
  std::string audit;        // bpf | proc | off
  std::string audit_note;   // why the method differs from the one asked for
  std::string transport;    // pidfd | scm | adapter-specific
  std::string hostname;
  // The runner's own hygiene: descriptors it held before and after the run, and any
  // process it had to kill and reap at the end (none in a healthy run).
  nlohmann::json runner = nlohmann::json::object();
  // The expectations file and how each of its lines matched: {file, lines: [...], stale: [...]}.
  nlohmann::json expectations = nlohmann::json::object();
};

struct Summary {
  std::map<std::string, int> counts;  // status name -> number of cases
  int total = 0;
  int unexpected = 0;                 // cases whose status makes the run fail
  int errors = 0;                     // of those, harness errors (not the adapter's)

  // The number of cases with status `s` (0 when counts has no entry for it).
  int of(Status s) const;
};

struct Results {
  std::string schema = std::string(kSchema);
  RunInfo run;
  std::vector<CaseResult> cases;
  Summary summary;
  std::vector<ClauseInfo> clauses;
  nlohmann::json fuzz;   // null when absent
  nlohmann::json bench;  // null when absent
};

// Recomputes summary from cases.
Summary summarize(const std::vector<CaseResult>& cases);

class SchemaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

nlohmann::json to_json(const Results& r);
// Throws SchemaError naming the problem (not a results file, a version it cannot read, a
// missing or malformed field). Fields it does not know are ignored. Version 1 is converted.
Results from_json(const nlohmann::json& j);

void write_results(const std::string& path, const Results& r);
// The reader every command takes (render, diff, merge, baseline, history, store add):
// `text` as read from `path`, parsed (depth-bounded) and checked. Throws SchemaError naming
// the file and the field; nothing else for any input.
Results read_results_text(const std::string& text, const std::string& path);
Results read_results(const std::string& path);

}  // namespace ipcheck::reports
