// run_suite: the run's jobs (the selection by injection points, the shard), the worker
// threads that run them, and the run's record (options, expectations, the runner's own
// descriptors and orphans).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

#include "ipcheck/audit.hpp"
#include "ipcheck/expectations.hpp"
#include "ipcheck/role_main.hpp"
#include "ipcheck/verdict.hpp"
#include "runner_impl.hpp"

namespace ipcheck {

namespace runner_detail {
namespace {

// What the adapter probe found, or, where the limits leave no room for roles, a broken
// probe naming them.
AdapterProbe probe_or_limits(const RunOptions& o, const std::string& limits, bool hold) {
  AdapterProbe probe;
  if (limits.empty()) {
    probe = probe_adapter(o, hold);
  } else {
    probe.broken = true;
    probe.reason = limits;
    probe.info.adapter = o.adapter;
  }
  return probe;
}

// The run's stamp, its audit method and the options it ran with.
void record_run_options(reports::RunInfo& run, const RunOptions& o) {
  stamp_run(run, o.adapter, iso_now());
  run.audit = o.audit;
  run.audit_note = o.audit_note;
  run.options = {{"jobs", o.jobs},       {"filters", o.filters},   {"timeout_s", o.timeout_s},
                 {"transport", o.transport}, {"params", o.params}, {"adapter_options", o.adapter_options},
                 {"expectations", o.expectations_path}};
  if (o.rerun_failures > 0) run.options["rerun_failures"] = o.rerun_failures;
  if (!o.resources.is_null()) run.options["resources"] = o.resources;
  if (!o.inject.empty()) {
    std::vector<std::string> pts;
    for (const auto& p : o.inject) pts.push_back(p.describe());
    run.options["inject"] = pts;
  }
}

// One run of a case: the case, and the injection point it runs with.
struct SuiteJob {
  const CaseDef* def;
  std::optional<InjectPoint> inject;
};

// Jobs: each selected case, once per injection point that names one of its steps; with a
// shard, only its part (recorded in `options`).
std::vector<SuiteJob> suite_jobs(const RunOptions& o, json& options) {
  std::vector<SuiteJob> jobs;
  for (const CaseDef* c : select_cases(o)) {
    if (o.inject.empty()) {
      jobs.push_back({c, std::nullopt});
      continue;
    }
    for (const auto& p : o.inject)
      if (std::find(c->steps.begin(), c->steps.end(), p.describe()) != c->steps.end()) jobs.push_back({c, p});
  }
  if (o.shard) {
    // Only this shard's part of the selection, by the full id of each run (shard.hpp).
    std::vector<std::string> ids;
    for (const auto& j : jobs) ids.push_back(j.inject ? j.def->id + "@" + j.inject->describe() : j.def->id);
    const auto mine = shard_members(ids, *o.shard);
    options["shard"] = shard_json(*o.shard, ids.size(), mine);
    std::vector<SuiteJob> part;
    for (const std::size_t i : mine) part.push_back(jobs[i]);
    jobs = std::move(part);
  }
  return jobs;
}

// The jobs of a run shared by its worker threads: each worker takes the next job, runs it
// (or says why it did not) and stores its result in the job's place.
class SuiteWorkers {
 public:
  SuiteWorkers(const RunOptions& o, const std::vector<SuiteJob>& jobs, const std::string& limits,
               const AdapterProbe& probe, std::optional<verdict::ExpectationUse>& expected,
               std::vector<CaseResult>& cases, Admission& admission, RolePool* pool)
      : o_(o), jobs_(jobs), limits_(limits), probe_(probe), expected_(expected), cases_(cases), admission_(admission),
        pool_(pool) {}

  // Runs every job on up to `n` workers (this thread one of them); returns why fewer ran, if they did.
  std::string run(int n);

 private:
  void work();
  CaseResult not_run(const SuiteJob& job, Status st, std::string why) const;
  CaseResult run_attempts(const SuiteJob& job);
  // One attempt on the device the admission gives it; `alone`: with no other case running.
  CaseResult attempt(const SuiteJob& job, bool alone);

  const RunOptions& o_;
  const std::vector<SuiteJob>& jobs_;
  const std::string& limits_;
  const AdapterProbe& probe_;
  std::optional<verdict::ExpectationUse>& expected_;
  std::vector<CaseResult>& cases_;
  Admission& admission_;
  RolePool* pool_;  // kept roles (--reuse-roles), or null
  std::vector<std::size_t> order_;  // start_order of jobs_
  std::mutex lock_;
  std::size_t next_ = 0, finished_ = 0;
};

CaseResult SuiteWorkers::not_run(const SuiteJob& job, Status st, std::string why) const {
  CaseResult res;
  res.id = job.def->id;
  res.description = job.def->description;
  res.area = job.def->area();
  res.clauses = job.def->clauses;
  res.status = st;
  res.reason = std::move(why);
  return res;
}

CaseResult SuiteWorkers::attempt(const SuiteJob& job, bool alone) {
  if (alone) admission_.begin_alone();
  else admission_.begin_case();
  const int device = admission_.place(job.def->all_devices);
  CaseResult res;
  try {
    res = CaseRun(*job.def, o_, job.inject ? &*job.inject : nullptr, &admission_, device, pool_).run();
  } catch (const std::exception& e) {
    res = not_run(job, Status::error, std::string("the runner failed running this case: ") + e.what());
  }
  admission_.unplace(device);
  if (alone) admission_.end_alone();
  else admission_.end_case();
  return res;
}

// A timeout the load may have caused: other cases ran beside it, the machine was busier than
// its CPUs, or the roles were held back (stopped, waiting for a CPU or a start slot). Empty
// when none of these: the timeout is the case's own.
std::string load_behind(int others, const MachineLoad& load, const CaseResult& res) {
  std::string why;
  if (others > 0) why = std::to_string(others) + " other case" + (others == 1 ? "" : "s") + " ran beside it";
  if (load.busy()) why += (why.empty() ? "" : ", ") + std::string("the machine was busy (") + load.describe() + ")";
  if (res.audit.contains("held_back_s")) {
    char held[64];
    std::snprintf(held, sizeof held, "the machine held its roles back %.1f s", res.audit.at("held_back_s").get<double>());
    why += (why.empty() ? "" : ", ") + std::string(held);
  }
  return why;
}

// Each attempt in fresh processes, judged with the expectations; one that did not pass
// runs again (--rerun-failures), and the attempts make one result. A timeout while the
// machine was loaded is run again alone before it stands: if that attempt ends otherwise,
// the first is kept as an `error` naming the load, never a timeout of the driver.
// Likewise a fail or a timeout of an attempt during which the runner itself was stopped or
// starved (it relays every message between the roles, so a role's timed wait may run out while
// it cannot run): run again alone, the first kept as an `error` naming the cause.
CaseResult SuiteWorkers::run_attempts(const SuiteJob& job) {
  std::vector<CaseResult> attempts;
  bool alone = false, runner_rerun = false;
  for (bool again = true; again;) {
    const int others_before = admission_.running();
    CaseResult res = attempt(job, alone);
    if (job.inject) res.id += "@" + job.inject->describe();
    if ((res.status == Status::fail || res.status == Status::timeout) && !runner_rerun &&
        res.audit.contains("runner_held_s") && res.audit.at("runner_held_s").get<double>() >= kRunnerHeldS &&
        !(o_.interrupted && o_.interrupted->load())) {
      char held[200];
      std::snprintf(held, sizeof held,
                    "the runner itself was stopped or starved %.1f s during this attempt (not a role: the messages "
                    "between the roles waited on it), so its %s is not the adapter's: run again alone to judge it; ",
                    res.audit.at("runner_held_s").get<double>(), reports::to_string(res.status));
      res.status = Status::error;
      res.reason = held + res.reason;
      attempts.push_back(std::move(res));
      alone = runner_rerun = true;
      continue;
    }
    if (res.status == Status::timeout && !alone && o_.rerun_timeouts_alone && !(o_.interrupted && o_.interrupted->load())) {
      const int others = std::max(others_before, admission_.running());  // this case no longer counts
      const std::string load = load_behind(others, machine_load(), res);
      if (!load.empty()) {
        res.status = Status::error;
        res.reason = "timed out while the machine was loaded (" + load + "): run again alone to judge it; " + res.reason;
        attempts.push_back(std::move(res));
        alone = true;
        continue;
      }
    }
    {
      std::lock_guard g(lock_);
      if (expected_) expected_->apply(res, probe_.info.driver_version);
    }
    // The lone rerun after a loaded timeout is not one of --rerun-failures' attempts.
    again = verdict::wants_rerun(res) && static_cast<int>(attempts.size()) - (alone ? 1 : 0) < o_.rerun_failures &&
            !(o_.interrupted && o_.interrupted->load());
    attempts.push_back(std::move(res));
  }
  return verdict::combine_attempts(std::move(attempts));
}

void SuiteWorkers::work() {
  for (;;) {
    std::size_t i;
    {
      std::lock_guard g(lock_);
      if (next_ >= jobs_.size()) return;
      i = order_[next_++];
    }
    const SuiteJob& job = jobs_[i];
    CaseResult res;
    bool ran = false, judged = false;  // ran: the id has its injection point; judged: expectations applied
    if (!limits_.empty()) {
      res = not_run(job, Status::error, limits_);
    } else if (!probe_.available) {
      // A probe that could not run is the harness's or the machine's fault, not a skip.
      if (probe_.broken) res = not_run(job, Status::error, "the adapter probe failed: " + probe_.reason);
      else {
        res = not_run(job, Status::skip, probe_.reason);
        res.skip_by = probe_.by;
      }
    } else if (o_.interrupted && o_.interrupted->load()) {
      res = not_run(job, Status::incomplete, "the run was interrupted before this case started");
    } else if (bool by_runtime = false;
               auto why = probe_.adapter_info ? job.def->unmet(o_.adapter, *probe_.adapter_info, &by_runtime) : std::nullopt) {
      // Judged from the probe's info: no role starts (each would start the adapter, and say the same).
      res = not_run(job, Status::skip, std::move(*why));
      if (by_runtime) res.skip_by = "runtime";
    } else {
      ran = true;
      res = run_attempts(job);
      judged = res.status != Status::flaky;  // a flaky case meets the expectations' flaky lines below
    }
    if (job.inject && !ran) res.id += "@" + job.inject->describe();
    std::lock_guard g(lock_);
    if (expected_ && !judged) expected_->apply(res, probe_.info.driver_version);
    cases_[i] = std::move(res);
    ++finished_;
    if (o_.on_case_done) o_.on_case_done(cases_[i], finished_, jobs_.size());
  }
}

std::string SuiteWorkers::run(int n) {
  std::vector<const CaseDef*> defs;
  for (const auto& j : jobs_) defs.push_back(j.def);
  order_ = start_order(defs, n);
  std::vector<std::thread> threads;
  std::string fewer_workers;
  for (int t = 1; t < n; ++t) {
    try {
      threads.emplace_back([this] { work(); });
    } catch (const std::system_error& e) {
      // The machine's thread limit: run with the workers there are, and say so.
      fewer_workers = "ran " + std::to_string(threads.size() + 1) + " of " + std::to_string(n) +
                      " workers: a thread could not be started (" + e.what() + ")";
      break;
    }
  }
  work();
  for (auto& t : threads) t.join();
  return fewer_workers;
}

// The expectations' report; a line that matched nothing while a case it names ran: the
// deviation is gone or changed, and each such case says so.
void note_expectations(reports::Results& results, const Expectations& expectations,
                       const verdict::ExpectationUse& expected, const std::string& driver_version) {
  results.run.expectations = expected.report(results.cases, driver_version);
  for (const auto& stale : expected.stale(results.cases, driver_version))
    for (auto& c : results.cases)
      for (const auto& x : expectations.entries())
        if (stale.rfind(x.where + ":", 0) == 0 && verdict::names_case(x, c) && reports::is_judged(c.status))
          c.warnings.push_back("stale expectation " + stale);
}

}  // namespace
}  // namespace runner_detail

std::vector<std::size_t> start_order(const std::vector<const CaseDef*>& cases, int jobs) {
  std::vector<std::size_t> order(cases.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (jobs > 1)
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return cases[a]->timeout_s > cases[b]->timeout_s; });
  return order;
}

reports::Results run_suite(const RunOptions& options) {
  using namespace runner_detail;
  RunOptions o = options;
  std::unique_ptr<Auditor> tracer;
  prepare_audit(o, tracer);
  become_subreaper();
  const std::size_t fds_at_start = count_open_fds();
  reports::Results results;
  const auto t0 = Clock::now();
  // Limits that leave no room for roles: nothing is started, every case is an error naming it.
  const std::string limits = limits_too_low();
  const AdapterDesc* desc = find_adapter(o.adapter);
  const AdapterDesc::Cost cost = desc ? desc->cost : AdapterDesc::Cost{};
  const bool hold = o.hold_runtime < 0 ? cost.hold_runtime : o.hold_runtime > 0;
  AdapterProbe probe = probe_or_limits(o, limits, hold);
  results.run = probe.info;
  record_run_options(results.run, o);
  std::optional<Expectations> expectations;
  if (!o.expectations_path.empty()) expectations = Expectations::load(o.expectations_path);
  std::optional<verdict::ExpectationUse> expected;
  if (expectations) expected.emplace(*expectations);

  const std::vector<SuiteJob> jobs = suite_jobs(o, results.run.options);
  results.cases.resize(jobs.size());
  // The machine's share for each case: devices, start slots, the default -j.
  const int devices = std::max<int>(1, static_cast<int>(probe.info.devices.size()));
  std::string jobs_from = "--jobs";
  if (o.jobs <= 0) o.jobs = default_jobs(devices, cost.jobs_per_device, jobs_from);
  results.run.options["jobs"] = o.jobs;
  const int starts = o.starts_per_device >= 0 ? o.starts_per_device : cost.starts_per_device;
  // A one-device case uses device 0: only devices with device 0's IPC aspects may stand in.
  std::vector<int> placeable;
  for (std::size_t d = 0; d < probe.info.devices.size(); ++d)
    if (probe.info.devices[d].value("aspects", json()) == probe.info.devices[0].value("aspects", json()))
      placeable.push_back(static_cast<int>(d));
  Admission admission(devices, starts, placeable);
  // Kept roles (--reuse-roles): asked for, or the adapter's choice, unless the run rules it out.
  const bool reuse_asked = o.reuse_roles < 0 ? cost.reuse_roles : o.reuse_roles > 0;
  const std::string reuse_blocked = reuse_asked ? run_reuse_blocked(o) : std::string();
  const bool reuse = reuse_asked && reuse_blocked.empty();
  results.run.options["reuse_roles"] = reuse ? "yes" : "no";
  if (!reuse_blocked.empty()) results.run.options["reuse_roles_off"] = reuse_blocked;
  // As many idle roles of one configuration as the cases running at once may want, and a few more.
  std::optional<RolePool> pool;
  if (reuse) pool.emplace(static_cast<std::size_t>(std::max(1, o.jobs)) * 3 + 2);
  SuiteWorkers workers(o, jobs, limits, probe, expected, results.cases, admission, pool ? &*pool : nullptr);
  const std::string fewer_workers = workers.run(std::max(1, std::min<int>(o.jobs, static_cast<int>(jobs.size()))));
  // Idle roles are told to exit and reaped before the orphans and the descriptors are counted.
  const int kept_unclean = pool ? pool->shutdown() : 0;
  const bool held = static_cast<bool>(probe.hold);
  probe.hold.reset();  // before the orphans are reaped and the descriptors counted
  const std::vector<std::string> orphans = reap_orphans();
  results.run.runner = {{"fds_at_start", fds_at_start}, {"fds_at_end", count_open_fds()}, {"orphans_reaped", orphans},
                        // The program the roles ran (its name: the path is the machine's).
                        {"role_program", std::filesystem::path(o.role_executable.empty() ? role_executable_for(o.adapter)
                                                                                        : o.role_executable).filename().string()}};
  const Admission::StartStats st = admission.start_stats();
  results.run.runner["scheduling"] = {{"jobs", o.jobs},
                                      {"jobs_from", jobs_from},
                                      {"devices", devices},
                                      {"starts_per_device", starts},
                                      {"runtime_held", held},
                                      {"adapter_starts", st.starts},
                                      {"adapter_init_s", std::round(st.init_s * 1000) / 1000},
                                      {"adapter_init_max_s", std::round(st.init_max_s * 1000) / 1000},
                                      {"waited_for_start_s", std::round(st.waited_s * 1000) / 1000},
                                      {"reuse_roles", reuse}};
  if (pool) {
    // Role processes started for a case, and role starts served by a kept process instead.
    results.run.runner["scheduling"]["role_starts_fresh"] = pool->fresh();
    results.run.runner["scheduling"]["role_starts_reused"] = pool->reused();
    if (pool->died_idle() > 0) results.run.runner["scheduling"]["kept_roles_died_idle"] = pool->died_idle();
    if (kept_unclean > 0)
      results.run.runner["scheduling"]["kept_roles_unclean_exit"] = kept_unclean;
  }

  if (!fewer_workers.empty()) results.run.runner["note"] = fewer_workers;
  if (expected) note_expectations(results, *expectations, *expected, probe.info.driver_version);
  results.summary = reports::summarize(results.cases);
  results.run.duration_s = seconds_since(t0);
  if (!probe.available) results.run.options[probe.broken ? "harness_error" : "adapter_unavailable"] = probe.reason;
  if (!probe.available && !probe.by.empty()) results.run.options["adapter_unavailable_by"] = probe.by;
  verdict::fill_clause_coverage(results);
  return results;
}

}  // namespace ipcheck
