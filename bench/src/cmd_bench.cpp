// `ipcheck bench`: the benchmarks of one adapter, each against its floor, summarised into
// the `bench` section of results.json (reports/SCHEMA.md). Like the runner, this process
// never loads a GPU runtime: every figure comes from programs it starts by fork + exec.
//
//   ipc       ipcheck-bench-ipc, twice (producer and consumer, joined by a socket on fd 3)
//   harness   ipcheck-bench-harness (the runner on a trivial case vs fork + exec + handshake)
//   catalog   `ipcheck run -j 2` of the whole catalog, timed
//   fuzz      `ipcheck fuzz -j N`, executions per second per worker and in total, each beside
//             the floor of one direct open + close (ipc's floor/mem_open_close/4KiB)
//
// The command's options and the order of its steps are here; cmd_bench_impl.hpp names the
// files that hold the rest.
#include <signal.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>

#include "ipcheck/bench/goals.hpp"
#include "ipcheck/cli.hpp"
#include "ipcheck/reports/files.hpp"
#include "ipcheck/reports/report_set.hpp"
#include "ipcheck/runner.hpp"
#include "cmd_bench_impl.hpp"

namespace ipcheck::bench::cmd_bench_detail {
namespace {

using cli::kFailed;
using cli::kOk;
using cli::UsageError;

// The private folder of one bench: made before the first program starts, so nothing planted
// in --out (a link, a FIFO, a file of someone else's) is written through, truncated or
// waited on; moved into --out file by file through reports::write_file_atomic (a full disk
// keeps the previous file whole) and removed on every path out.
class PrivateFolder {
 public:
  explicit PrivateFolder(const std::string& out) {
    std::string templ = (fs::path(out) / ".bench-XXXXXX").string();
    if (!::mkdtemp(templ.data()))
      throw reports::FileError("cannot make a private folder in '" + out + "': " + std::strerror(errno) +
                               "; choose a folder you can write to");
    path_ = templ;
    // The bench programs are roles: under a root run they have a user of their own
    // (ipcheck::role_user), and write their files here, so the folder is theirs.
    if (const RoleUser& u = role_user(); u.drop && ::chown(path_.c_str(), u.uid, u.gid) != 0)
      throw reports::FileError("cannot give the private folder '" + path_ + "' to the roles' user: " +
                               std::strerror(errno));
  }
  ~PrivateFolder() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  PrivateFolder(const PrivateFolder&) = delete;
  PrivateFolder& operator=(const PrivateFolder&) = delete;
  const std::string& path() const { return path_; }
  // Every regular file of the folder into `out`, atomically; the paths written.
  std::vector<std::string> move_into(const std::string& out) const {
    std::vector<std::string> names, written;
    for (const auto& e : fs::directory_iterator(path_))
      if (e.is_regular_file() && !e.is_symlink()) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    for (const auto& n : names) {
      const std::string from = (fs::path(path_) / n).string(), to = (fs::path(out) / n).string();
      reports::write_file_atomic(to, reports::read_regular_file(from, "bench output", reports::kMaxResultsBytes));
      written.push_back(to);
    }
    return written;
  }

 private:
  std::string path_;
};

cli::Options bench_cli_options() {
  cli::Options o("bench", "--adapter NAME [--out DIR] [--results FILE] [--repetitions N] [--brief] [options]",
                 "Measures one adapter's IPC verbs (get, open, first touch, close, put; physical open + map;\n"
                 "event signal-to-wake across processes; at 4 KiB, 2 MiB and 64 MiB), each against its\n"
                 "floor (the same work done the cheapest way: raw syscalls for ref, direct driver calls\n"
                 "for cuda) in the same run; the harness's overhead per two-role case against fork + exec\n"
                 "+ a handshake; the whole catalog's wall time; the fuzzer's executions per second per\n"
                 "worker. Every cross-process figure runs in processes started by fork + exec; this one\n"
                 "loads no GPU runtime. Writes DIR/results.json (section \"bench\": medians, spreads,\n"
                 "floors, ratios) with its renderings, and the raw Google Benchmark output beside it.\n"
                 "Exit status: 0 when every benchmark ran (or the adapter is not available here: skipped),\n"
                 "1 when one failed (or, with --gate, a gated goal failed), 2 usage. Without --gate figures\n"
                 "are reported against their goals, never judged by the exit status.");
  cli::add_adapter_options(o, "adapter to measure");
  o.value("--out", "DIR", "where results go", "ipcheck-results/bench-<adapter>")
      .value("--results", "FILE", "also put the bench section into this results.json (and re-render beside it)")
      .value("--repetitions", "N", "repetitions of each benchmark (median and spread are over them)", "10")
      .value("--min-time", "S", "seconds each repetition runs at least", "0.1")
      .flag("--brief", "a smoke run: 2 repetitions, minimal times, a filtered catalog, short fuzz runs")
      .value("--filter", "REGEX", "only the Google Benchmark benchmarks whose name matches")
      .value("--parts", "LIST", "which parts to run: ipc,harness,catalog,fuzz", "ipc,harness,catalog,fuzz")
      .value("--catalog-runs", "N", "timed runs of the catalog (0: none)", "3 for ref, else 0")
      .value("--catalog-jobs", "N", "-j of the timed catalog runs", "2")
      .multi("--catalog-filter", "GLOB", "time only the cases that match (the benchmark's name says so)")
      .value("--fuzz-runs", "N", "fuzz campaigns to take the rate from (0: none)", "3 for ref, else 0")
      .value("--fuzz-time", "S", "seconds of each fuzz campaign", "5")
      .value("--fuzz-jobs", "N", "workers of each fuzz campaign (more than 1 adds the total rate)", "1")
      .value("--timeout", "S", "seconds a bench program may run", "1200")
      .value("--skip-exit-code", "N", "exit with N when the adapter is not available here (for CTest)")
      .value("--gate", "MODE",
             "counts: count each verb's instructions, system calls and page faults per run, and the\n"
             "two-role case's system calls and faults, each beside its floor's, against bench/counts.md;\n"
             "exit 1 when one is beyond its tolerance or unmeasured (a count does not move with the load).\n"
             "wall: judge the timed goals of bench/goals.md (ipcheck bench --goals) on a quiet machine: the\n"
             "short bench in rounds until each gated figure's 95% interval is within or beyond its goal, or\n"
             "--gate-time; exit 1 when one is beyond its goal by more than its noise, or unmeasured\n"
             "(defaults: ipc,harness, 5 repetitions a round, --min-time 0.05)")
      .value("--gate-time", "S", "the gate's time cap in seconds", "240")
      .flag("--goals", "print the goals table (bench/goals.md, compiled in) and exit");
  return o;
}

// Everything but the adapter: the folder, repetitions and times, the parts and their runs
// (--brief and the adapter choose the defaults), in the order they are checked.
void read_bench_settings(const cli::Options& o, Settings& s) {
  s.out = o.has("--out") ? o.get("--out") : "ipcheck-results/bench-" + s.adapter;
  s.brief = o.has("--brief");
  s.gate = o.has("--gate");
  s.gate_mode = o.get("--gate");
  if (s.gate && s.gate_mode != "counts" && s.gate_mode != "wall")
    throw UsageError("--gate is '" + s.gate_mode + "'; use counts (instructions, system calls, page faults against "
                     "bench/counts.md) or wall (timed ratios against bench/goals.md, on a quiet machine)");
  if (s.gate && s.brief) throw UsageError("--gate and --brief do not go together: the gate picks its own repetitions");
  s.gate_time_s = o.get_double("--gate-time", 10, 3600);
  s.repetitions = o.has("--repetitions") ? o.get_int("--repetitions", 1, 1000) : (s.brief ? 2 : s.gate ? 5 : 10);
  s.min_time = o.has("--min-time") ? o.get_double("--min-time", 0, 60) : (s.brief ? 0.001 : s.gate ? 0.05 : 0.1);
  s.filter = o.get("--filter");
  std::istringstream parts(o.get("--parts"));
  for (std::string p; std::getline(parts, p, ',');) {
    if (p != "ipc" && p != "harness" && p != "catalog" && p != "fuzz")
      throw UsageError("--parts names '" + p + "'; use a list of ipc, harness, catalog, fuzz");
    s.parts.push_back(p);
  }
  const bool ref = s.adapter == "ref";
  s.catalog_jobs = o.get_int("--catalog-jobs", 1, 256);
  s.catalog_filters = o.all("--catalog-filter");
  if (s.brief && s.catalog_filters.empty()) s.catalog_filters = {"memory.roundtrip.*"};
  s.catalog_runs = o.has("--catalog-runs") ? o.get_int("--catalog-runs", 0, 100) : (ref ? (s.brief ? 2 : 3) : 0);
  s.fuzz_runs = o.has("--fuzz-runs") ? o.get_int("--fuzz-runs", 0, 100) : (ref ? (s.brief ? 2 : 3) : 0);
  s.fuzz_time = o.has("--fuzz-time") ? o.get_double("--fuzz-time", 0.1, 3600) : (s.brief ? 0.5 : 5);
  s.fuzz_jobs = o.has("--fuzz-jobs") ? o.get_int("--fuzz-jobs", 1, 256) : 1;
  s.timeout_s = o.get_double("--timeout", 1, 86400);
  if (!wants(s, "catalog") || s.gate) s.catalog_runs = 0;
  if (!wants(s, "fuzz") || s.gate) s.fuzz_runs = 0;
}

// --results FILE, read before any measurement, so a bad file costs nothing ("": none).
reports::Results bench_results_to_merge(const std::string& results_path) {
  if (results_path.empty()) return {};
  try {
    return read_results_to_merge(results_path);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

AdapterProbe probe_bench_adapter(const Settings& s) {
  RunOptions probe_opts;
  probe_opts.adapter = s.adapter;
  probe_opts.transport = s.transport;
  probe_opts.adapter_options = s.adapter_options;
  return probe_adapter(probe_opts);
}

// Runs the parts asked for, when the probe found the adapter: the bench section without its
// context (benchmarks, floors, skipped, errors, pending).
json measure_parts(const Settings& s, const AdapterProbe& probe, const std::vector<double>& load_before, Gathered& g) {
  json section = {{"adapter", s.adapter}};
  if (probe.broken) {
    g.errors.push_back("the adapter probe failed: " + probe.reason);
    section["benchmarks"] = json::array();
  } else if (!probe.available) {
    std::printf("%s: skipped: %s\n", s.adapter.c_str(), probe.reason.c_str());
    section["benchmarks"] = json::array();
    section["skipped"] = json::array({{{"name", s.adapter + "/*"}, {"reason", probe.reason}}});
  } else {
    std::printf("%s: %s %s; load average %.2f %.2f %.2f on %ld CPUs\n", s.adapter.c_str(),
                probe.info.driver_name.c_str(), probe.info.driver_version.c_str(), load_before[0], load_before[1],
                load_before[2], ::sysconf(_SC_NPROCESSORS_ONLN));
    std::fflush(stdout);
    try {
      if (s.gate) {
        if (s.gate_mode == "counts") run_count_gate(s, g);
        else run_gate(s, g);
      } else {
        if (wants(s, "ipc")) run_ipc(s, g);
        if (wants(s, "harness") && !interrupted()) run_harness(s, g);
        if (!interrupted()) run_catalog(s, g);
        if (!interrupted()) run_fuzz(s, g);
      }
    } catch (const std::exception& e) {
      g.errors.push_back(e.what());
    }
    if (interrupted())
      g.errors.push_back("the bench was interrupted by a signal: the figures measured so far are kept; the "
                         "benchmark, run or campaign it cut short and the parts after it are missing");
    apply_goals(g.series);
    canonical_order(g.series);
    section["benchmarks"] = summarize(g.series, g.errors);
    section["floors"] = g.floors;
    section["skipped"] = g.skipped;
  }
  section["errors"] = g.errors;
  section["pending"] = g.pending;
  if (s.gate)
    section["gate"] = g.gate.is_object() ? g.gate : json{{"verdict", "fail"}, {"mode", s.gate_mode}, {"figures", json::array()}};
  return section;
}

// Where and how the bench ran: the machine, its load before and after, the settings, the
// programs' own context.
json bench_context(const Settings& s, const std::string& start, Clock::time_point t0,
                   const std::vector<double>& load_before, const std::vector<double>& load_after, const Gathered& g) {
  utsname u{};
  ::uname(&u);
  return {{"start", start},
          {"duration_s", std::chrono::duration<double>(Clock::now() - t0).count()},
          {"host", u.nodename},
          {"cpus", ::sysconf(_SC_NPROCESSORS_ONLN)},
          {"load_before", load_before},
          {"load_after", load_after},
          {"repetitions", s.repetitions},
          {"min_time_s", s.min_time},
          {"brief", s.brief},
          {"programs", g.programs}, {"fuzz_runs", g.fuzz_runs}};
}

// The run a bench alone writes (no --results): the probe's adapter and driver, the settings.
void stamp_bench_run(reports::Results& results, const Settings& s, const AdapterProbe& probe, const std::string& start,
                     Clock::time_point t0) {
  results.run = probe.info;
  stamp_run(results.run, s.adapter, start);
  results.run.audit = "off";
  results.run.options = {{"bench", {{"repetitions", s.repetitions}, {"min_time_s", s.min_time},
                                    {"brief", s.brief}, {"parts", s.parts}}},
                         {"transport", s.transport},
                         {"adapter_options", s.adapter_options}};
  if (!probe.available) results.run.options["adapter_unavailable"] = probe.reason;
  results.run.duration_s = std::chrono::duration<double>(Clock::now() - t0).count();
  results.summary = reports::summarize(results.cases);
}

int bench(const std::vector<std::string>& args) {
  cli::Options o = bench_cli_options();
  return cli::run_command("bench", [&] {
    if (!o.parse(args)) return kOk;
    if (o.has("--goals")) {
      std::fputs(goals_table().c_str(), stdout);
      return kOk;
    }
    Settings s;
    const cli::AdapterChoice adapter = cli::adapter_choice(o);
    s.adapter = adapter.adapter;
    s.transport = adapter.transport;
    s.adapter_options = adapter.options;
    const std::optional<int> skip_code = cli::skip_exit_code(o);
    read_bench_settings(o, s);
    ::signal(SIGPIPE, SIG_IGN);
    cli::prepare_output_option("--out", s.out);
    const std::string results_path = o.get("--results");
    reports::Results results = bench_results_to_merge(results_path);
    // As `ipcheck run`: SIGINT, SIGTERM and SIGHUP end the bench with what it measured so
    // far written; the program running gets SIGTERM (then SIGKILL), every child is reaped.
    cli::install_interrupt_handlers(&g_interrupted);
    become_subreaper();
    const PrivateFolder work(s.out);
    s.work = work.path();

    const auto t0 = Clock::now();
    const std::string start = iso_now();
    const std::vector<double> load_before = load_average();
    const AdapterProbe probe = probe_bench_adapter(s);
    Gathered g;
    json section = measure_parts(s, probe, load_before, g);
    const std::vector<double> load_after = load_average();
    section["context"] = bench_context(s, start, t0, load_before, load_after, g);
    if (results_path.empty()) stamp_bench_run(results, s, probe, start, t0);
    results.bench = section;
    reap_orphans();
    std::vector<std::string> written = work.move_into(s.out);
    if (!results_path.empty())
      for (const auto& p : write_merged_results(results_path, results)) written.push_back(p);
    for (const auto& p : reports::write_report_set(s.out, results)) written.push_back(p);

    print_bench_end(section, g, probe.available, load_before, load_after, written);
    if (probe.broken || interrupted()) return kFailed;
    if (!probe.available) return skip_code ? *skip_code : kOk;
    if (s.gate) {
      print_gate(section["gate"]);
      if (section["gate"].value("verdict", "") != "pass") return kFailed;
    }
    return g.errors.empty() ? kOk : kFailed;
  });
}

const cli::CommandRegistration registered_bench{{"bench", "measure IPC verbs, the harness and the fuzzer against their floors", bench}};

}  // namespace
}  // namespace ipcheck::bench::cmd_bench_detail
