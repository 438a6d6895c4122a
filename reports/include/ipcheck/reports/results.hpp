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
inline constexpr std::string_view kSchemaFamily = "ipcheck.results/";
inline constexpr int kSchemaVersion = 1;
inline constexpr std::string_view kSchema = "ipcheck.results/1";

// Case statuses. Comparison order (worse is larger): pass < xfail < fail < leak < timeout
// < crash; skip never counts as a change; incomplete means the run itself was cut short.
enum class Status { pass, xfail, fail, leak, timeout, crash, skip, incomplete };
inline constexpr Status kAllStatuses[] = {Status::pass,  Status::xfail, Status::fail, Status::leak,
                                          Status::timeout, Status::crash, Status::skip, Status::incomplete};

const char* to_string(Status s) noexcept;
std::optional<Status> parse_status(std::string_view s) noexcept;
// Rank in the comparison order; -1 for skip and incomplete, which are not ranked.
int severity(Status s) noexcept;
// True for the statuses that make a run fail (fail, leak, timeout, crash, incomplete).
bool is_problem(Status s) noexcept;

// One judged statement of a clause inside a case.
struct Check {
  std::string clause;       // "sycl.mem.open.size"
  std::string level;        // must | should | observe
  std::string result;       // pass | fail | warn | observed (not judged: profile not claimed or level observe)
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
  std::string exit;          // "exit 0", "signal SIGSEGV", "killed after timeout", "exec failed: ..."
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

struct CaseResult {
  std::string id;
  std::string description;
  std::string area;
  Status status = Status::pass;
  std::string reason;                 // one line: why this status (failure, skip reason, crash signal)
  std::string expectation;            // the expectations-file line that made it xfail
  std::vector<std::string> clauses;
  std::vector<Check> checks;
  std::map<std::string, std::string> observations;
  std::vector<NativeError> native_errors;
  std::vector<RoleExit> roles;
  std::vector<std::string> warnings;  // should-level violations, stale expectations
  nlohmann::json audit = nlohmann::json::object();  // {method, roles: {...}, findings: [...]}
  std::vector<AuditFinding> findings;
  std::string injection;              // fault injection point ("producer:after_export") or empty
  double duration_s = 0;
};

struct ClauseInfo {
  std::string id;
  std::string profile;
  std::string level;
  std::string source;
  std::string statement;
  std::string uncovered_reason;
  std::vector<std::string> cases;
  std::string verdict;  // pass | fail | warn | observed | skip | not_run
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
};

struct Summary {
  std::map<std::string, int> counts;  // status name -> number of cases
  int total = 0;
  int unexpected = 0;                 // cases whose status makes the run fail

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
// Throws SchemaError naming the problem (not a results file, an older or a newer schema
// version, a missing or malformed field). Fields it does not know are ignored.
Results from_json(const nlohmann::json& j);

void write_results(const std::string& path, const Results& r);
Results read_results(const std::string& path);

}  // namespace ipcheck::reports
