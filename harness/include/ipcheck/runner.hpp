// The runner: picks cases, runs each in fresh role processes (fork + exec), relays their
// messages, watches them (timeouts, crashes, leaks) and classifies every case.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "ipcheck/auditor.hpp"
#include "ipcheck/case.hpp"
#include "ipcheck/run_record.hpp"
#include "ipcheck/spawn.hpp"
#include "ipcheck/reports/results.hpp"
#include "ipcheck/shard.hpp"

namespace ipcheck {

// Where a case's time went, in seconds from its start, for `ipcheck bench` (harness/
// two_role_case/<step>): every role started and greeted (hello), the last role done, every
// role reaped (exited), the verdict made (judged).
struct CaseTimeline {
  double hello = 0, done = 0, exited = 0, judged = 0;
};

struct RunOptions {
  std::string adapter = "ref";
  std::vector<std::string> filters;  // globs over case ids; empty: all listed cases
  bool exact = false;                // filters are exact ids
  int jobs = 1;                      // 0: from the machine (runner_admission.hpp: default_jobs)
  // Roles initialising the adapter at once per device; -1: the adapter's (AdapterDesc::cost),
  // 0: no limit.
  int starts_per_device = -1;
  // Keep the probe's process, its adapter initialised, through the run (AdapterDesc::Cost::
  // hold_runtime); -1: the adapter's choice, 0: no, 1: yes.
  int hold_runtime = -1;
  // A role process that finished a case cleanly serves another case of the same configuration
  // instead of exiting (AdapterDesc::Cost::reuse_roles; docs/gpus.md "Parallel runs on
  // GPUs"); -1: the adapter's choice, 0: no, 1: yes.
  int reuse_roles = -1;
  // A case that ends `timeout` while other cases ran (or the machine was busy) runs again
  // alone before the verdict stands (run_suite); false keeps the first verdict.
  bool rerun_timeouts_alone = true;
  double timeout_s = 60;             // per case (a case may ask for more)
  // --timeout was given: it is the limit of every case, also of those that ask for more (the
  // stress cases' 600 s), so a long --param count can always be cut short.
  bool timeout_caps_cases = false;
  double inactivity_s = 20;          // no message and no output for this long: timeout
  double grace_s = 1;                // SIGTERM to SIGKILL
  std::string transport = "auto";
  std::map<std::string, std::string> adapter_options;
  std::map<std::string, std::string> params;
  std::string expectations_path;     // empty: none
  std::string role_executable;       // default: role_executable() (spawn.hpp)
  bool include_hidden = false;
  std::vector<InjectPoint> inject;   // each case runs once per applicable point
  std::string audit = "proc";        // bpf | proc | off
  // The BPF tracer when audit is bpf (harness/trace); run_suite loads one when it is null,
  // and falls back to proc, saying why in audit_note, when it cannot.
  Auditor* auditor = nullptr;
  std::string audit_note;            // why the method differs from the one asked for
  std::vector<std::string> env;      // extra "KEY=VALUE" for role processes
  // A case that did not pass (verdict::wants_rerun) runs again, in fresh processes, up to
  // this many times; verdict::combine_attempts makes one result of its attempts.
  int rerun_failures = 0;
  // Only this shard of the selection (ipcheck/shard.hpp); recorded in run.options.shard.
  std::optional<Shard> shard;
  // The role environment set from CTest's resource allocation (--ctest-resources), recorded
  // in run.options.resources as given: {gpus: [{id, slots}], env: {VAR: value}}.
  nlohmann::json resources;
  std::atomic<bool>* interrupted = nullptr;
  // When set, run_case fills it in (one case at a time: the bench's).
  CaseTimeline* timeline = nullptr;
  // Called from worker threads (serialised) as each case finishes.
  std::function<void(const reports::CaseResult&, std::size_t done, std::size_t total)> on_case_done;
};

// The probe's role kept alive with its adapter initialised (probe_adapter's `hold`): while
// it lives, the driver keeps its per-device state set up, and each role's start is cheaper
// (CUDA on an H200: cuInit 320 -> 26 ms, a role's start 450 -> 140 ms). Ending it (the last
// copy destroyed) closes its channel; the role then ends, or is killed after 10 s.
struct RuntimeHold;

struct AdapterProbe {
  bool available = false;
  bool broken = false;  // the probe itself failed (crashed, hung): a harness error, not a skip
  std::string reason;   // why not, when not available
  std::string by;       // "runtime_init" when the runtime under test did not start (its own answer)
  reports::RunInfo info;
  // The adapter's own account (its devices and their aspects, the verbs it lacks), which the
  // cases' preconditions are judged by before their roles start; empty when the probe's
  // info could not be read as one (the roles judge them then).
  std::optional<AdapterInfo> adapter_info;
  std::shared_ptr<RuntimeHold> hold;  // set when asked for and the adapter initialised
};

// The cases the options select, in catalog order (expanded by injection points).
std::vector<const CaseDef*> select_cases(const RunOptions& options);
// Throws std::invalid_argument with a message naming the filter when it matches nothing.
void validate_selection(const RunOptions& options);

// The order a run with `jobs` workers starts `cases` in (indices into it): with one worker
// the catalog's; with more, the cases that declare a longer limit than the run's (Case::
// timeout: the variant-heavy garbage cases, the stress cases) first, the rest in catalog
// order, so the longest cases overlap the others instead of ending the run alone (on 2x
// H200 at -j 8, robustness.open.garbage.memory, 48 s, started 59th of 84). Results keep
// the catalog's order whatever the start order.
std::vector<std::size_t> start_order(const std::vector<const CaseDef*>& cases, int jobs);

// Asks a role process for the adapter's driver and devices (the runner never loads one).
// With `hold`, that process stays, its adapter initialised, as long as the probe's hold.
AdapterProbe probe_adapter(const RunOptions& options, bool hold = false);

// Runs one case (with an optional injection point) and classifies it.
reports::CaseResult run_case(const CaseDef& c, const RunOptions& options, const InjectPoint* inject = nullptr);

// Runs the selection and returns the whole results document (not yet written).
reports::Results run_suite(const RunOptions& options);

// For audit "bpf" without an auditor: loads the tracer into `holder` and points
// options.auditor at it, or switches options.audit to "proc" with the reason in
// options.audit_note. Returns false on the fallback.
bool prepare_audit(RunOptions& options, std::unique_ptr<Auditor>& holder);

// The adapter's expectations file that travels with the binary
// (<bin>/../share/ipcheck/expectations/<adapter>.txt); empty when there is none.
std::string default_expectations_file(const std::string& adapter);

}  // namespace ipcheck
