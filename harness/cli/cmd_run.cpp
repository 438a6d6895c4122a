// `ipcheck run`: the conformance suite against one adapter.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <optional>
#include <set>

#include "ipcheck/cli.hpp"
#include "ipcheck/expectations.hpp"
#include "ipcheck/reports/render.hpp"
#include "ipcheck/reports/merge.hpp"
#include "ipcheck/reports/report_set.hpp"
#include "ipcheck/resources.hpp"
#include "ipcheck/runner.hpp"

namespace ipcheck::cli {
namespace {

std::atomic<bool> g_interrupted{false};

std::vector<InjectPoint> parse_inject(const std::vector<std::string>& specs) {
  std::vector<InjectPoint> out;
  for (const auto& s : specs) {
    if (s == "all") {
      // Every point some case declares (Case::steps): role and step as that case names them.
      std::set<std::string> seen;
      for (const auto& c : cases())
        for (const auto& st : c.steps)
          if (seen.insert(st).second) out.push_back(*InjectPoint::parse(st));
      continue;
    }
    const auto point = InjectPoint::parse(s);
    if (!point) throw UsageError("--inject is '" + s + "'; write ROLE:STEP (for example producer:after_export) or all");
    out.push_back(*point);
  }
  return out;
}

Options run_cli_options() {
  Options o("run", "--adapter NAME [--filter GLOB]... [-j N] [--out DIR] [options]",
            "Runs the conformance suite: each case in fresh producer and consumer processes\n"
            "(fork + exec), judged against the spec profiles the adapter claims. Writes\n"
            "DIR/results.json and its renderings, and prints where they are.");
  add_adapter_options(o, "adapter to test");
  o.multi("--filter", "GLOB", "only cases whose id matches GLOB (a bare word matches anywhere)")
      .flag("--exact", "filters are exact case ids")
      .value("--jobs", "N",
             "cases run in parallel; auto: from the machine (ref, vk: one per CPU; cuda, ze: the adapter's jobs "
             "per device times the devices, at most one per CPU)",
             "auto")
      .value("--starts-per-device", "N",
             "roles that may initialise the adapter at once on one device (the adapter's own: cuda 2, ze 4, ref "
             "and vk no limit); 0: no limit")
      .value("--hold-runtime", "yes|no",
             "keep one process with the adapter initialised through the run, so each role starts for less (the "
             "adapter's own: cuda and ur yes, others no)")
      .value("--reuse-roles", "yes|no",
             "let a role process that finished a case cleanly serve the next case that allows it, instead of "
             "starting (and making a context) anew; robustness cases, fault injection, failpoints and a case that "
             "asks get fresh processes (default no: on cuda kept roles hid the event pool's leak; docs/gpus.md)")
      .value("--timeout", "S", "seconds a case may take; given, it also limits the cases that ask for more (stress: 600)", "60")
      .value("--inactivity", "S",
             "seconds without any message or output before a case times out, counting only time its roles could "
             "run (a stopped role, or one waiting for a CPU, is not silent)",
             "20")
      .value("--out", "DIR", "where results go", "ipcheck-results/<adapter>")
      .multi("--param", "KEY=VALUE", "case parameter (sizes, iteration counts) that a selected case reads")
      .value("--expectations", "FILE", "known deviations (none: no file)", "share/ipcheck/expectations/<adapter>.txt")
      .multi("--inject", "ROLE:STEP", "kill ROLE at protocol step STEP; 'all' runs every point")
      .value("--audit", "METHOD",
             "bpf (a tracer watches every role from outside; falls back to proc, saying why, when it "
             "cannot load), proc (each role lists its own descriptors and mappings) or off",
             "bpf")
      .value("--shard", "K/N",
             "run only the K-th of N balanced parts of the selection (1-based; docs/fleets.md); "
             "auto: from a CI system's variables; without it, from IPCHECK_SHARD when set")
      .value("--shard-total", "N", "with --shard auto: the number of shards for JOB_COMPLETION_INDEX (Kubernetes "
             "indexed jobs give none)")
      .value("--rerun-failures", "N",
             "run a case that did not pass again, in fresh processes, up to N times; one that then passes is flaky",
             "0")
      .flag("--ctest-resources",
            "give the roles the GPU CTest allocated to this test (CTEST_RESOURCE_GROUP_0_GPUS) as "
            "CUDA_VISIBLE_DEVICES (cuda) or ZE_AFFINITY_MASK (ze); nothing when ctest has no resource spec")
      .flag("--include-hidden", "also run the harness's self-test cases")
      .flag("--quiet", "print only the summary")
      .value("--skip-exit-code", "N", "exit with N when every selected case was skipped (for CTest)");
  return o;
}

// The adapter, the selection and how each case runs, in the order they are checked.
RunOptions read_run_options(const Options& o) {
  RunOptions r;
  const AdapterChoice adapter = adapter_choice(o);
  r.adapter = adapter.adapter;
  r.transport = adapter.transport;
  r.adapter_options = adapter.options;
  r.filters = o.all("--filter");
  r.exact = o.has("--exact");
  if (o.get("--jobs") == "auto") {
    r.jobs = 0;  // run_suite takes it from the machine
  } else {
    try {
      r.jobs = o.get_int("--jobs", 1, 256);
    } catch (const UsageError& e) {
      throw UsageError(std::string(e.what()) + ", or auto (from the machine)");
    }
  }
  if (o.has("--starts-per-device")) r.starts_per_device = o.get_int("--starts-per-device", 0, 256);
  if (o.has("--hold-runtime")) {
    const std::string v = o.get("--hold-runtime");
    if (v != "yes" && v != "no") throw UsageError("--hold-runtime '" + v + "' is neither yes nor no; give --hold-runtime yes or no");
    r.hold_runtime = v == "yes" ? 1 : 0;
  }
  if (o.has("--reuse-roles")) {
    const std::string v = o.get("--reuse-roles");
    if (v != "yes" && v != "no") throw UsageError("--reuse-roles '" + v + "' is neither yes nor no; give --reuse-roles yes or no");
    r.reuse_roles = v == "yes" ? 1 : 0;
  }
  r.timeout_s = o.get_double("--timeout", 0.1, 86400);
  r.timeout_caps_cases = o.has("--timeout");
  r.inactivity_s = o.get_double("--inactivity", 0.1, 86400);
  r.params = o.get_map("--param");
  r.include_hidden = o.has("--include-hidden");
  r.audit = o.get("--audit");
  if (r.audit != "bpf" && r.audit != "proc" && r.audit != "off")
    throw UsageError("--audit is '" + r.audit + "'; use bpf, proc or off");
  r.inject = parse_inject(o.all("--inject"));
  r.rerun_failures = o.get_int("--rerun-failures", 0, 100);
  return r;
}

// --shard, --shard-total (or IPCHECK_SHARD, a CI system's variables) and --ctest-resources.
void read_run_placement(const Options& o, RunOptions& r) {
  std::optional<int> shard_total;
  if (o.has("--shard-total")) shard_total = o.get_int("--shard-total", 1, reports::kMaxShardTotal);
  try {
    const std::string given = o.get("--shard");
    if (o.has("--shard") && given != "auto") {
      r.shard = parse_shard(given);
      if (shard_total) throw UsageError("--shard-total goes with --shard auto, not with --shard " + given);
    } else {
      r.shard = shard_from_environment(given == "auto", shard_total);
      if (shard_total && !(r.shard && r.shard->source.rfind("JOB_COMPLETION_INDEX", 0) == 0))
        throw UsageError("--shard-total " + std::to_string(*shard_total) +
                         " is the total for JOB_COMPLETION_INDEX (a Kubernetes indexed job) with --shard auto; "
                         "elsewhere give --shard K/N");
    }
    if (o.has("--ctest-resources"))
      if (auto res = ctest_gpu_environment(r.adapter)) {
        for (const auto& [k, v] : (*res)["env"].items()) r.env.push_back(k + "=" + v.get<std::string>());
        r.resources = *res;
      }
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

// --expectations FILE (none: no file; default: the adapter's), read now (a folder, a FIFO, a
// malformed line): a bad file costs no case.
void read_run_expectations(const Options& o, RunOptions& r) {
  if (o.has("--expectations")) {
    const std::string e = o.get("--expectations");
    r.expectations_path = e == "none" ? "" : e;
  } else {
    r.expectations_path = default_expectations_file(r.adapter);
  }
  if (!r.expectations_path.empty()) try {
      for (const auto& w : Expectations::load(r.expectations_path).warnings)
        std::fprintf(stderr, "ipcheck: warning: --expectations: %s\n", w.c_str());
    } catch (const std::exception& e) {
      throw UsageError(std::string("--expectations: ") + e.what() + "; fix the file, or give --expectations none");
    }
}

// One line per case as it ends (none under --quiet); on a terminal, a progress bar below it.
std::function<void(const reports::CaseResult&, std::size_t, std::size_t)> case_progress(bool quiet, bool tty) {
  return [quiet, tty](const reports::CaseResult& c, std::size_t done, std::size_t total) {
    if (quiet) return;
    if (tty) std::printf("\r\033[K");
    std::printf("[%3zu/%zu] %-10s %s (%.0f ms)\n", done, total, reports::to_string(c.status), c.id.c_str(),
                c.duration_s * 1000);
    // A reason can hold a role's or a driver's output: shown, never sent to the terminal.
    if (c.status != reports::Status::pass && !c.reason.empty())
      std::printf("           %s\n", reports::terminal_text(c.reason).c_str());
    if (tty && done < total) {
      const int width = 30, filled = static_cast<int>(width * done / total);
      std::printf("[%s%s] %zu/%zu", std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(), done,
                  total);
    }
    std::fflush(stdout);
  };
}

// The counts of the run, its expectations file and the lines of it that went stale.
void print_run_counts(const RunOptions& r, const reports::Results& results, const std::string& out) {
  const auto& s = results.summary;
  std::string counts;
  for (const auto& [k, v] : s.counts)
    if (v) counts += (counts.empty() ? "" : ", ") + std::to_string(v) + " " + k;
  std::printf("\n%s: %d cases: %s; %.1f s (%s %s)\n", r.adapter.c_str(), s.total, counts.c_str(),
              results.run.duration_s, reports::terminal_text(results.run.driver_name).c_str(),
              reports::terminal_text(results.run.driver_version).c_str());
  if (r.expectations_path.size()) {
    std::printf("expectations: %s\n", r.expectations_path.c_str());
    // Lines that matched nothing while a case they name ran: the deviation is gone or changed.
    for (const auto& w : results.run.expectations.value("stale", nlohmann::json::array()))
      std::printf("stale expectation: %s matched nothing in this run; update or remove it "
                  "(ipcheck list --expectations --results %s/results.json)\n",
                  w.get<std::string>().c_str(), out.c_str());
  }
}

// What the counts do not say: harness errors, flaky cases, the shard, why nothing ran.
void print_run_notes(const RunOptions& r, reports::Results& results) {
  const auto& s = results.summary;
  if (s.errors)
    std::printf("%d case%s not judged: harness errors (not the adapter's); see each reason\n", s.errors,
                s.errors == 1 ? "" : "s");
  if (const int flaky = s.of(reports::Status::flaky))
    std::printf("%d case%s flaky: did not pass, then passed on a rerun (not a failure of the run; see each case's "
                "attempts)\n",
                flaky, flaky == 1 ? "" : "s");
  // Each flaky case with what its first attempt was, also under --quiet: a CI log (ci/test
  // collects these lines from CTest's log) names the flake and how it failed.
  for (const auto& c : results.cases) {
    if (c.status != reports::Status::flaky || c.attempts.empty()) continue;
    const auto& first = c.attempts.front();
    std::printf("flaky: %s on %s: attempt 1 of %zu was %s: %s\n", c.id.c_str(), r.adapter.c_str(), c.attempts.size(),
                reports::to_string(first.status),
                first.reason.empty() ? "(no reason recorded)" : reports::terminal_text(first.reason).c_str());
  }
  if (r.shard)
    std::printf("shard %d/%d (from %s): %d of %d selected cases; join the shards with 'ipcheck report merge'\n",
                r.shard->index, r.shard->total, r.shard->source.c_str(), s.total,
                results.run.options["shard"].value("selected", 0));
  // Part of the summary, also under --quiet: why every case skipped (CTest shows it).
  if (const auto& opts = results.run.options; opts.contains("adapter_unavailable"))
    std::printf("skipped: %s\n", reports::terminal_text(opts["adapter_unavailable"].get<std::string>()).c_str());
  if (const auto& opts = results.run.options; opts.contains("harness_error"))
    std::printf("not run: %s\n", reports::terminal_text(opts["harness_error"].get<std::string>()).c_str());
}

int run(const std::vector<std::string>& args) {
  Options o = run_cli_options();
  return run_command("run", [&] {
    if (!o.parse(args)) return kOk;
    RunOptions r = read_run_options(o);
    read_run_placement(o, r);
    read_run_expectations(o, r);
    const std::optional<int> skip_code = skip_exit_code(o);
    try {
      validate_selection(r);
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
    const std::string out = o.has("--out") ? o.get("--out") : "ipcheck-results/" + r.adapter;
    // Before the first case: a run is never lost for a folder that cannot take its results.
    prepare_output_option("--out", out);
    const bool quiet = o.has("--quiet");
    std::unique_ptr<Auditor> tracer;  // loaded once for the whole run
    if (!prepare_audit(r, tracer)) std::fprintf(stderr, "ipcheck run: %s\n", r.audit_note.c_str());
    const bool tty = ::isatty(STDOUT_FILENO);
    r.interrupted = &g_interrupted;
    install_interrupt_handlers(&g_interrupted);
    ::signal(SIGPIPE, SIG_IGN);
    r.on_case_done = case_progress(quiet, tty);
    reports::Results results = run_suite(r);
    const auto paths = reports::write_report_set(out, results);
    print_run_counts(r, results, out);
    print_run_notes(r, results);
    for (const auto& p : paths) std::printf("wrote %s\n", p.c_str());
    const auto& s = results.summary;
    if (g_interrupted) return kFailed;
    // The runtime under test did not start (the probe's init, or every role's, failed by the
    // runtime's own answer): a failed run, never a pass or a skip of the machine's.
    if (s.total > 0 && std::all_of(results.cases.begin(), results.cases.end(), [](const reports::CaseResult& c) {
          return c.status == reports::Status::skip && c.skip_by == "runtime_init";
        })) {
      std::fprintf(stderr, "ipcheck run: adapter '%s' did not start (its runtime's init failed in %s): %s\n",
                   r.adapter.c_str(), results.run.options.contains("adapter_unavailable") ? "the probe" : "every role",
                   reports::terminal_text(results.cases.front().reason).c_str());
      return kFailed;
    }
    if (skip_code && s.total > 0 && s.counts.at("skip") == s.total) return *skip_code;
    return s.unexpected == 0 ? kOk : kFailed;
  });
}

const CommandRegistration registered_run{{"run", "run the conformance suite against an adapter", run}};

}  // namespace
}  // namespace ipcheck::cli
