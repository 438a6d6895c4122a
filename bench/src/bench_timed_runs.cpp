// `ipcheck bench`'s timed parts, each a series of samples for the bench section: ipc (the
// verbs against their floors, ipcheck-bench-ipc), harness (a two-role case against fork +
// exec + handshake), catalog (`ipcheck run`'s wall time), fuzz (executions per second); and
// the goals (bench/goals.md) they are marked with.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "ipcheck/bench/goals.hpp"
#include "ipcheck/channel.hpp"
#include "ipcheck/cli.hpp"
#include "cmd_bench_impl.hpp"

namespace ipcheck::bench::cmd_bench_detail {

void run_ipc(const Settings& s, Gathered& g) {
  std::string why;
  const std::string exe = bench_program(ipc_program_name(), why);
  if (exe.empty()) {
    g.errors.push_back("ipc: " + why);
    return;
  }
  std::vector<std::string> common{"--adapter", s.adapter, "--transport", s.transport};
  for (const auto& [k, v] : s.adapter_options) common.insert(common.end(), {"--adapter-opt", k + "=" + v});
  const std::string raw = work_file(s, "ipc.json");
  std::vector<std::string> consumer_args{"--role", "consumer"};
  consumer_args.insert(consumer_args.end(), common.begin(), common.end());
  for (auto& f : google_benchmark_flags(s, raw, s.min_time)) consumer_args.push_back(f);
  std::vector<std::string> producer_args{"--role", "producer"};
  producer_args.insert(producer_args.end(), common.begin(), common.end());

  std::printf("ipc: %s verbs and their floors, %d repetitions (log: %s/ipc-*.log)\n", s.adapter.c_str(),
              s.repetitions, s.out.c_str());
  std::fflush(stdout);
  auto [producer_end, consumer_end] = make_channel_pair();
  const std::string plog = work_file(s, "ipc-producer.log");
  const std::string clog = work_file(s, "ipc-consumer.log");
  RoleProcess producer = start_program(exe, producer_args, plog, producer_end.get());
  RoleProcess consumer = start_program(exe, consumer_args, clog, consumer_end.get());
  producer_end.reset();
  consumer_end.reset();
  const auto done = consumer.wait_for(limit_of(s.timeout_s), &g_interrupted);
  const auto pdone = producer.wait_for(std::chrono::seconds(10), &g_interrupted);
  if (interrupted()) return;
  if (!done) {
    g.errors.push_back("ipc: the consumer ran past " + std::to_string(static_cast<int>(s.timeout_s)) +
                       " s and was killed; see " + out_file(s, "ipc-consumer.log"));
    return;
  }
  if (done->exited && done->code == kSkipped) {
    g.skipped.push_back({{"name", s.adapter + "/*"}, {"reason", last_line_of_file(clog)}});
    return;
  }
  if (!done->exited || done->code != 0)
    g.errors.push_back("ipc: the consumer ended with " + done->describe() + ": " + last_line_of_file(clog));
  if (!pdone || !pdone->exited || pdone->code != 0)
    g.errors.push_back("ipc: the producer ended with " + (pdone ? pdone->describe() : std::string("a timeout")) +
                       ": " + last_line_of_file(plog));
  take_google_benchmark(g, "ipcheck-bench-ipc", raw);
}

void run_harness(const Settings& s, Gathered& g) {
  std::string why;
  const std::string exe = bench_program("ipcheck-bench-harness", why);
  const std::string peer = exe.empty() ? std::string() : bench_program("ipcheck-bench-peer", why);
  if (exe.empty() || peer.empty()) {
    g.errors.push_back("harness: " + why);
    return;
  }
  const std::string raw = work_file(s, "harness.json");
  const std::string log = work_file(s, "harness.log");
  // The roles are what a run execs: ipcheck's role program (spawn.hpp: role_executable).
  std::vector<std::string> args{"--ipcheck", role_executable(), "--peer", peer};
  for (auto& f : google_benchmark_flags(s, raw, s.brief ? s.min_time : std::max(s.min_time, 0.2))) args.push_back(f);
  std::printf("harness: a two-role case against fork + exec + handshake, %d repetitions (log: %s)\n", s.repetitions,
              out_file(s, "harness.log").c_str());
  std::fflush(stdout);
  RoleProcess c = start_program(exe, args, log, -1, false);
  const auto st = c.wait_for(limit_of(s.timeout_s), &g_interrupted);
  if (interrupted()) return;
  if (!st || !st->exited || st->code != 0) {
    g.errors.push_back("harness: ipcheck-bench-harness ended with " + (st ? st->describe() : std::string("a timeout")) +
                       ": " + last_line_of_file(log));
    if (!st) return;
  }
  // A --filter that names none of the harness's benchmarks leaves it nothing to run: said
  // as skipped, not read as a broken results file.
  if (last_line_of_file(log).rfind("Failed to match any benchmarks", 0) == 0) {
    g.skipped.push_back({{"name", "harness/*"}, {"reason", "--filter matches none of the harness's benchmarks"}});
    return;
  }
  if (!take_google_benchmark(g, "ipcheck-bench-harness", raw)) return;
  // The overhead itself: the case less its floor (medians), noise of both.
  const Series *run = nullptr, *floor = nullptr;
  for (const auto& x : g.series) {
    if (x.name == "harness/two_role_case") run = &x;
    if (x.name == "harness/floor/two_role_case") floor = &x;
  }
  if (run && floor && !run->samples.empty() && !floor->samples.empty() && run->unit == floor->unit) {
    Series d;
    d.name = "harness/two_role_case_overhead";
    d.unit = run->unit;
    d.load_1m = run->load_1m;
    d.source = "ipcheck bench (two_role_case less its floor)";
    d.label.note = "harness/two_role_case less harness/floor/two_role_case, repetition by repetition";
    const std::size_t n = std::min(run->samples.size(), floor->samples.size());
    // Repetitions are interleaved at random; pairing them by index spreads the noise of both.
    for (std::size_t i = 0; i < n; ++i) d.samples.push_back(run->samples[i] - floor->samples[i]);
    g.series.push_back(std::move(d));
  }
}

void run_catalog(const Settings& s, Gathered& g) {
  if (s.catalog_runs <= 0) return;
  Series wall;
  wall.name = s.adapter + "/catalog_wall_j" + std::to_string(s.catalog_jobs);
  for (const auto& f : s.catalog_filters) wall.name += "/filter=" + f;
  wall.unit = "s";
  wall.load_1m = load_average()[0];
  wall.source = "ipcheck run";
  wall.label.note = "ipcheck run --adapter " + s.adapter + " -j " + std::to_string(s.catalog_jobs) +
                    ", wall time from start to exit";
  for (int i = 0; i < s.catalog_runs && !interrupted(); ++i) {
    const std::string dir = out_file(s, "catalog-" + std::to_string(i));
    const std::string log = work_file(s, "catalog-" + std::to_string(i) + ".log");
    std::vector<std::string> args{"run", "--adapter", s.adapter, "-j", std::to_string(s.catalog_jobs), "--quiet",
                                  "--out", dir, "--transport", s.transport};
    for (const auto& [k, v] : s.adapter_options) args.insert(args.end(), {"--adapter-opt", k + "=" + v});
    for (const auto& f : s.catalog_filters) args.insert(args.end(), {"--filter", f});
    std::printf("catalog: run %d of %d: ipcheck run --adapter %s -j %d%s\n", i + 1, s.catalog_runs, s.adapter.c_str(),
                s.catalog_jobs, s.catalog_filters.empty() ? "" : " (filtered)");
    std::fflush(stdout);
    const auto t0 = Clock::now();
    RoleProcess c = start_program(self_executable(), args, log, -1, false);
    const auto st = c.wait_for(limit_of(s.timeout_s), &g_interrupted);
    const double t = std::chrono::duration<double>(Clock::now() - t0).count();
    if (interrupted()) break;  // a cut-short run's time is no sample
    if (!st || !st->exited || st->code > 1) {
      g.errors.push_back("catalog: ipcheck run ended with " + (st ? st->describe() : std::string("a timeout")) + ": " +
                         last_line_of_file(log));
      continue;
    }
    if (st->code == 1) g.errors.push_back("catalog: run " + std::to_string(i + 1) + " had unexpected results (" +
                                          dir + "/report.md); its time still counts");
    wall.samples.push_back(t);
  }
  if (!wall.samples.empty()) g.series.push_back(std::move(wall));
}

void run_fuzz(const Settings& s, Gathered& g) {
  if (s.fuzz_runs <= 0) return;
  if (!cli::commands().count("fuzz")) {
    g.pending.push_back("fuzz: this ipcheck has no fuzz command; executions per second per worker are pending");
    return;
  }
  std::ostringstream secs;
  secs << s.fuzz_time;
  const std::string jobs = std::to_string(s.fuzz_jobs);
  const std::string command = "ipcheck fuzz --adapter " + s.adapter + " -j " + jobs + " --time " + secs.str();
  // The floor: one process opening and closing a 4-KiB export directly (the ipc part's floor),
  // as executions per second. Only when the ipc part measured it in this bench.
  std::string floor = s.adapter + "/floor/mem_open_close/4KiB";
  if (std::none_of(g.series.begin(), g.series.end(), [&](const Series& x) { return x.name == floor; })) floor.clear();
  auto series = [&](const std::string& name, const std::string& what) {
    Series r;
    r.name = s.adapter + "/" + name;
    r.unit = "exec/s";
    r.higher_is_better = true;
    r.load_1m = load_average()[0];
    r.source = "ipcheck fuzz";
    r.label.floor = floor;
    r.label.note = command + ": " + what + (floor.empty() ? "" : "; floor: 1 / the time of one direct open + close");
    return r;
  };
  Series per = series("fuzz_exec_per_s_per_worker", "executions over fuzzing time, per worker");
  Series total = series("fuzz_exec_per_s", "executions over fuzzing time, all " + jobs + " worker(s)");
  json recovery = json::array();
  for (int i = 0; i < s.fuzz_runs && !interrupted(); ++i) {
    const std::string dir = out_file(s, "fuzz-" + std::to_string(i));
    const std::string log = work_file(s, "fuzz-" + std::to_string(i) + ".log");
    std::vector<std::string> args{"fuzz", "--adapter", s.adapter, "-j", jobs, "--time", secs.str(), "--quiet",
                                  "--seed", std::to_string(i + 1), "--out", dir, "--transport", s.transport};
    for (const auto& [k, v] : s.adapter_options) args.insert(args.end(), {"--adapter-opt", k + "=" + v});
    std::printf("fuzz: run %d of %d: %s\n", i + 1, s.fuzz_runs, command.c_str());
    std::fflush(stdout);
    RoleProcess c = start_program(self_executable(), args, log, -1, false);
    const auto st = c.wait_for(limit_of(s.fuzz_time + 120), &g_interrupted);
    if (interrupted()) break;  // a cut-short campaign's rate is no sample
    const json r = read_json(dir + "/results.json");
    const json f = r.is_object() ? r.value("fuzz", json()) : json();
    if (!st || !f.is_object() || !f.contains("exec_per_s_per_worker") || !f["exec_per_s_per_worker"].is_number() ||
        !f.contains("exec_per_s") || !f["exec_per_s"].is_number()) {
      g.errors.push_back("fuzz: run " + std::to_string(i + 1) + " ended with " +
                         (st ? st->describe() : std::string("a timeout")) + " and no exec_per_s_per_worker: " +
                         last_line_of_file(log));
      continue;
    }
    if (f.value("status", "") != "completed")
      g.errors.push_back("fuzz: run " + std::to_string(i + 1) + " " + f.value("status", "") + ": " + f.value("reason", ""));
    // Findings are the campaign's business (a real driver has them); the rate is what bench takes.
    per.samples.push_back(f["exec_per_s_per_worker"].get<double>());
    total.samples.push_back(f["exec_per_s"].get<double>());
    recovery.push_back({{"run", i + 1}, {"findings", f.value("findings", json::array()).size()}, {"results", dir + "/results.json"},
                        {"recovery", f.value("recovery", json::object())},
                        {"time_s", f.value("time_s", json::object())}, {"workers", f.value("workers", json::object())}});
  }
  if (!per.samples.empty()) g.series.push_back(std::move(per));
  if (!total.samples.empty() && s.fuzz_jobs > 1) g.series.push_back(std::move(total));
  g.fuzz_runs = recovery;
}

// Marks each series with its goal (bench/goals.md): a ratio bound, or a bound on the median
// in the series' own unit.
void apply_goals(std::vector<Series>& all) {
  for (auto& x : all) {
    const Goal* goal = goal_for(x.name);
    if (!goal) continue;
    if (goal->measure == "ratio") {
      x.label.target_ratio = goal->bound;
    } else if (goal->measure == x.unit) {
      x.label.target = goal->bound;
    } else if (seconds_per(goal->measure) > 0 && seconds_per(x.unit) > 0) {
      x.label.target = goal->bound * seconds_per(goal->measure) / seconds_per(x.unit);
    }
  }
}

}  // namespace ipcheck::bench::cmd_bench_detail
