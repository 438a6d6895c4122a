// `ipcheck bench`: the benchmarks of one adapter, each against its floor, summarised into
// the `bench` section of results.json (reports/SCHEMA.md). Like the runner, this process
// never loads a GPU runtime: every figure comes from programs it starts by fork + exec.
//
//   ipc       ipcheck-bench-ipc, twice (producer and consumer, joined by a socket on fd 3)
//   harness   ipcheck-bench-harness (the runner on a trivial case vs fork + exec + handshake)
//   catalog   `ipcheck run -j 2` of the whole catalog, timed
//   fuzz      `ipcheck fuzz -j N`, executions per second per worker and in total, each beside
//             the floor of one direct open + close (ipc's floor/mem_open_close/4KiB)
#include <signal.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "ipcheck/bench/counts.hpp"
#include "ipcheck/bench/gate_defects.hpp"
#include "ipcheck/bench/goals.hpp"
#include "ipcheck/bench/summary.hpp"
#include "ipcheck/channel.hpp"
#include "ipcheck/cli.hpp"
#include "ipcheck/install_layout.hpp"
#include "ipcheck/reports/files.hpp"
#include "ipcheck/reports/report_set.hpp"
#include "ipcheck/runner.hpp"
#include "ipcheck/spawn.hpp"
#include "ipcref/defects.hpp"

#include "ipcheck_version.h"

namespace ipcheck::bench {
namespace {

namespace fs = std::filesystem;
using cli::kFailed;
using cli::kOk;
using cli::UsageError;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kSkipped = 77;  // a bench program's status when its adapter cannot run here

std::vector<double> load_average() {
  std::ifstream in("/proc/loadavg");
  double a = 0, b = 0, c = 0;
  in >> a >> b >> c;
  return {a, b, c};
}

// The last non-empty line of a log file.
std::string last_line_of_file(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;
}

// A bench program started by the supervisor (harness/src/spawn.cpp): fork + exec in its own
// process group, its output in a log file, descriptor 3 the given socket (if any). Killed
// with its group if it outlives its RoleProcess; wait_for kills it past its limit.
// `role`: the program is a role (least privilege, SpawnSpec::role); false for a whole
// ipcheck run or fuzz campaign, which starts its own roles that way.
RoleProcess start_program(const std::string& exe, const std::vector<std::string>& args, const std::string& log,
                          int channel = -1, bool role = true) {
  SpawnSpec spec;
  spec.executable = exe;
  spec.args = args;
  spec.output_file = log;
  spec.channel_fd = channel;
  spec.role = role;
  return RoleProcess::spawn(spec);
}

std::atomic<bool> g_interrupted{false};

struct Settings {
  std::string adapter;
  std::string transport;
  std::map<std::string, std::string> adapter_options;
  std::string out;
  int repetitions = 10;
  double min_time = 0.1;
  bool brief = false;
  std::string filter;
  std::vector<std::string> parts;  // ipc, harness, catalog, fuzz
  int catalog_runs = 0;
  int catalog_jobs = 2;
  std::vector<std::string> catalog_filters;
  int fuzz_runs = 0;
  double fuzz_time = 5;
  int fuzz_jobs = 1;
  double timeout_s = 1200;
  // The private temporary folder (mode 0700, made by mkdtemp inside `out`) where the bench
  // programs write their raw Google Benchmark files and logs; every file in it is moved
  // into `out` through the atomic writer at the end (PrivateFolder).
  std::string work;
  bool gate = false;        // --gate MODE
  // counts: instructions, system calls and page faults against bench/counts.md; wall: the
  // timed figures in rounds until every gated goal of goals.md is decided, or gate_time_s.
  std::string gate_mode;
  double gate_time_s = 240;
};

// Where a bench program writes `name` (the private folder), and where it ends up.
std::string work_file(const Settings& s, const std::string& name) { return (fs::path(s.work) / name).string(); }
std::string out_file(const Settings& s, const std::string& name) { return (fs::path(s.out) / name).string(); }

bool interrupted() { return g_interrupted.load(); }
std::chrono::milliseconds limit_of(double seconds) { return std::chrono::milliseconds(static_cast<long long>(seconds * 1000)); }

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


// What the steps found, gathered into the bench section.
struct Gathered {
  std::vector<Series> series;
  std::vector<std::string> errors;
  json skipped = json::array();
  json floors = json::object();
  json programs = json::object();  // per program: Google Benchmark's context, log, raw output
  json fuzz_runs = json::array();  // per fuzz campaign: its findings, recovery and time breakdown
  std::vector<std::string> pending;
  json gate;  // --gate: the verdict, the rounds, each gated figure against its goal
};

bool wants(const Settings& s, const std::string& part) {
  return std::find(s.parts.begin(), s.parts.end(), part) != s.parts.end();
}

std::vector<std::string> google_benchmark_flags(const Settings& s, const std::string& out_json, double min_time) {
  std::vector<std::string> f{"--benchmark_out=" + out_json, "--benchmark_out_format=json",
                             "--benchmark_repetitions=" + std::to_string(s.repetitions),
                             "--benchmark_enable_random_interleaving=true"};
  std::ostringstream t;
  t << "--benchmark_min_time=" << min_time;
  f.push_back(t.str());
  if (!s.filter.empty()) f.push_back("--benchmark_filter=" + s.filter);
  return f;
}

// Reads one program's Google Benchmark output into `g`; false when there is none.
bool take_google_benchmark(Gathered& g, const std::string& program, const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    g.errors.push_back(program + ": it wrote no " + fs::path(path).filename().string());
    return false;
  }
  json doc;
  try {
    doc = json::parse(in);
  } catch (const std::exception& e) {
    g.errors.push_back(program + ": its " + fs::path(path).filename().string() + " is not JSON: " + e.what());
    return false;
  }
  auto s = series_from_google_benchmark(doc, program, g.errors);
  g.series.insert(g.series.end(), s.begin(), s.end());
  json ctx = doc.value("context", json::object());
  for (auto it = ctx.begin(); it != ctx.end(); ++it) {
    const std::string key = it.key();
    if (key.rfind("floor:", 0) == 0 && it->is_string()) g.floors[key.substr(6)] = *it;
    if (key.rfind("skipped:", 0) == 0 && it->is_string()) g.skipped.push_back({{"name", key.substr(8)}, {"reason", *it}});
  }
  json kept = json::object();
  for (const char* k : {"date", "host_name", "num_cpus", "mhz_per_cpu", "cpu_scaling_enabled", "load_avg",
                        "library_build_type", "ipcheck.adapter", "ipcheck.driver", "ipcheck.transport"})
    if (ctx.contains(k)) kept[k] = ctx[k];
  kept["output"] = fs::path(path).filename().string();
  g.programs[program] = kept;
  return true;
}

// A bench program: beside ipcheck in the build folder, in <prefix>/lib/ipcheck installed
// (ipcheck/install_layout.hpp). "" with the reason in `why` when it is in neither.
std::string bench_program(const std::string& name, std::string& why) {
  std::string found = find_helper_program(name);
  if (found.empty()) {
    why = name + " is in neither";
    const char* sep = " ";
    for (const auto& p : helper_program_places(name)) {
      why += sep + p.parent_path().string() + "/";
      sep = " nor ";
    }
    why += "; build the bench targets (cmake --build build), or install the whole ipcheck package";
  }
  return found;
}

// ipcheck-defects (linked with the defect-seeded ipcref) starts the IPC program built the
// same way, so that a seeded defect (IPCREF_DEFECT, inherited) reaches the figures.
std::string ipc_program_name() {
  return ipcref::defects::compiled_in() ? "ipcheck-bench-ipc-defects" : "ipcheck-bench-ipc";
}

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

json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) return nullptr;
  try {
    return json::parse(in);
  } catch (const std::exception&) {
    return nullptr;
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

std::string figure(double v) {
  char b[32];
  if (v != 0 && (std::fabs(v) >= 1e6 || std::fabs(v) < 1e-2)) std::snprintf(b, sizeof b, "%.3g", v);
  else std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

// ---------------------------------------------------------------- the gate (--gate)

// A glob of goals.md as a regular expression ('*': any run of characters but '/').
std::string glob_regex(const std::string& glob) {
  std::string r;
  for (char c : glob) {
    if (c == '*') r += "[^/]*";
    else if (std::strchr(".^$|()[]{}+?\\", c)) r += std::string("\\") + c;
    else r += c;
  }
  return r;
}

// The Google Benchmark filter of the gated IPC figures of this adapter and their floors.
std::string gate_ipc_filter(const std::string& adapter) {
  std::string alt;
  const std::string prefix = adapter + "/";
  for (const auto& goal : goals()) {
    if (!goal.gated || goal.measure != "ratio" || goal.figure.rfind(prefix, 0) != 0) continue;
    const std::string rest = goal.figure.substr(prefix.size());
    for (const std::string& name : {goal.figure, prefix + "floor/" + rest})
      alt += (alt.empty() ? "" : "|") + glob_regex(name);
  }
  return alt.empty() ? std::string() : "^(" + alt + ")(/|$)";
}

bool gate_wants_harness() {
  return std::any_of(goals().begin(), goals().end(),
                     [](const Goal& g) { return g.gated && g.figure.rfind("harness/", 0) == 0; });
}

// One gated figure's bench entry against its goal. The interval is the median's (or the
// ratio's) confidence interval: `fail` only when all of it is beyond the goal, `pass` when
// all of it is within, `undecided` while the noise straddles the goal. A goal with a
// shortfall bound (a known shortfall, goals.md) not met is judged against that bound:
// `short` within it (passes, named), `fail` beyond it, `undecided` across it.
json judge_figure(const json& b, const Goal& goal) {
  json f = {{"name", b.value("name", "")}, {"goal", (goal.at_most ? "<= " : ">= ") + figure(goal.bound)},
            {"measure", goal.measure}};
  double value = 0, low = 0, high = 0;
  if (goal.measure == "ratio") {
    if (!b.contains("ratio") || !b.contains("ratio_low") || !b.contains("ratio_high")) {
      f["verdict"] = "unmeasured";
      return f;
    }
    value = b["ratio"].get<double>();
    low = b["ratio_low"].get<double>();
    high = b["ratio_high"].get<double>();
  } else {
    const std::string unit = b.value("unit", "");
    double k = 1;
    if (unit != goal.measure) {
      if (seconds_per(unit) <= 0 || seconds_per(goal.measure) <= 0) {
        f["verdict"] = "unmeasured";
        return f;
      }
      k = seconds_per(unit) / seconds_per(goal.measure);
    }
    value = b.value("median", 0.0) * k;
    low = b.value("low", 0.0) * k;
    high = b.value("high", 0.0) * k;
  }
  f["value"] = value;
  f["low"] = low;
  f["high"] = high;
  f["repetitions"] = b.value("repetitions", 0);
  auto judge = [&](double bound) {
    const bool beyond = goal.at_most ? low > bound : high < bound;
    const bool within = goal.at_most ? high <= bound : low >= bound;
    return std::string(beyond ? "fail" : within ? "pass" : "undecided");
  };
  std::string verdict = judge(goal.bound);
  if (verdict != "pass" && goal.shortfall_bound) {
    // A known shortfall: held to its own bound until the goal is met.
    f["shortfall_bound"] = (goal.at_most ? "<= " : ">= ") + figure(*goal.shortfall_bound);
    const std::string held = judge(*goal.shortfall_bound);
    verdict = held == "pass" ? "short" : held;
  }
  f["verdict"] = verdict;
  return f;
}

// Every gated goal's figures in `list` (a bench section's benchmarks), judged; a gated goal
// of this adapter (or the harness's) that no figure in `list` matches is `unmeasured` (a
// renamed or failed benchmark, a filter that left it out), which fails the gate.
json judge_gate(const json& list, const std::string& adapter) {
  json out = json::array();
  for (const auto& b : list)
    if (const Goal* goal = goal_for(b.value("name", "")); goal && goal->gated) out.push_back(judge_figure(b, *goal));
  for (const auto& goal : goals()) {
    if (!goal.gated || (goal.figure.rfind(adapter + "/", 0) != 0 && goal.figure.rfind("harness/", 0) != 0)) continue;
    const bool seen = std::any_of(list.begin(), list.end(), [&](const json& b) {
      return goal_for(b.value("name", "")) == &goal;
    });
    if (!seen && !gate_defect("gate_passes_unmeasured"))
      out.push_back({{"name", goal.figure}, {"goal", (goal.at_most ? "<= " : ">= ") + figure(goal.bound)},
                     {"measure", goal.measure}, {"verdict", "unmeasured"}});
  }
  return out;
}

void append_samples(std::vector<Series>& all, std::vector<Series>&& round) {
  for (auto& x : round) {
    auto it = std::find_if(all.begin(), all.end(), [&](const Series& y) { return y.name == x.name; });
    if (it == all.end()) all.push_back(std::move(x));
    else it->samples.insert(it->samples.end(), x.samples.begin(), x.samples.end());
  }
}

// The short bench in rounds: each round runs the gated IPC figures and the harness case
// (fresh processes, `repetitions` each); the samples of all rounds are pooled, and rounds go
// on while a gated figure's interval straddles its goal, up to the time cap. A figure fails
// only when its whole interval is beyond the goal, in the samples of at least two rounds
// (gate_may_stop): a loaded machine widens the intervals (more rounds, then "undecided",
// which passes) rather than failing the gate.
void run_gate(const Settings& s, Gathered& g) {
  Settings r = s;
  r.filter = s.filter.empty() ? gate_ipc_filter(s.adapter) : s.filter;
  const bool ipc = !r.filter.empty() && wants(s, "ipc"), harness = gate_wants_harness() && wants(s, "harness");
  const auto t0 = Clock::now();
  std::vector<Series> all;
  json figures = json::array();
  int round = 0;
  std::string stop;
  for (;;) {
    ++round;
    r.out = (fs::path(s.out) / ("round-" + std::to_string(round))).string();
    fs::create_directories(r.out);
    // Each round's programs write the same raw files and logs into the private folder, which
    // creates them exclusively: the last round's are read already, so they go first.
    if (round > 1 && !r.work.empty())
      for (const auto& e : fs::directory_iterator(r.work)) fs::remove_all(e.path());
    Gathered gr;
    if (ipc) run_ipc(r, gr);
    if (harness) {
      Settings h = r;
      h.filter = "^harness/(floor/)?two_role_case(/|$)";  // the IPC figures' filter would leave it nothing
      run_harness(h, gr);
    }
    for (const auto& e : gr.errors) g.errors.push_back("round " + std::to_string(round) + ": " + e);
    for (auto& [k, v] : gr.floors.items()) g.floors[k] = v;
    for (const auto& k : gr.skipped) g.skipped.push_back(k);
    g.programs = gr.programs;
    append_samples(all, std::move(gr.series));
    std::vector<Series> judged = all;
    apply_goals(judged);
    std::vector<std::string> ignored;
    figures = judge_gate(summarize(judged, ignored), s.adapter);
    int undecided = 0, failed = 0;
    for (const auto& f : figures) {
      undecided += f["verdict"] == "undecided";
      failed += f["verdict"] == "fail";
    }
    const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    std::printf("gate: round %d (%.0f s): %zu figures, %d beyond their goal, %d undecided\n", round, elapsed,
                figures.size(), failed, undecided);
    std::fflush(stdout);
    if (!gr.errors.empty()) {
      stop = "a bench program failed";
      break;
    }
    if (gate_may_stop(round, undecided, failed)) {
      stop = "every gated figure decided";
      break;
    }
    // Another round costs about what the last one did: stop before the cap, not past it.
    if (elapsed * (round + 1) / round > s.gate_time_s) {
      stop = "the time cap (--gate-time " + figure(s.gate_time_s) + " s)";
      break;
    }
  }
  g.series = std::move(all);
  bool fail = false;
  for (const auto& f : figures) fail = fail || f["verdict"] == "fail" || f["verdict"] == "unmeasured";
  if (figures.empty()) fail = true;
  g.gate = {{"verdict", fail ? "fail" : "pass"}, {"rounds", round}, {"stopped", stop},
            {"time_s", std::chrono::duration<double>(Clock::now() - t0).count()}, {"confidence", 0.95},
            {"figures", figures}};
}

// ---------------------------------------------------------------- the count gate (--gate counts)

// The rows of bench/counts.md this adapter's gate judges: its own figures and the harness's.
bool count_row_applies(const CountRow& row, const std::string& adapter) {
  return row.figure.rfind(adapter + "/", 0) == 0 || row.figure.rfind("harness/", 0) == 0;
}

// The consumer's --counts-filter: every counted figure of the adapter and the floor of each.
std::string count_ipc_filter(const std::string& adapter) {
  std::string alt;
  for (const auto& row : count_rows()) {
    if (row.figure.rfind(adapter + "/", 0) != 0) continue;
    std::vector<std::string> names{row.figure};
    if (!floor_of(row.figure).empty()) names.push_back(floor_of(row.figure));
    for (const auto& n : names) alt += (alt.empty() ? "" : "|") + glob_regex(n);
  }
  return alt.empty() ? std::string() : "^(" + alt + ")$";
}

// The tracer's regions (id -> counts summed over the regions of that id), and the consumer's
// names, into one MeasuredCounts per figure: the median of each count over its runs.
void take_ipc_counts(const json& names, const json& trace, std::map<std::string, MeasuredCounts>& out) {
  struct Sum {
    double instructions = 0, syscalls = 0, faults = 0;
    std::map<int, double> calls;
  };
  std::map<std::uint64_t, Sum> by_id;
  for (const auto& r : trace.value("regions", json::array())) {
    Sum& x = by_id[r.value("id", std::uint64_t{0})];
    x.instructions += r.value("instructions", 0.0);
    x.syscalls += r.value("syscalls", 0.0);
    x.faults += r.value("minflt", 0.0) + r.value("majflt", 0.0);
    const json calls = r.value("calls", json::object());
    for (const auto& [nr, n] : calls.items()) x.calls[std::stoi(nr)] += n.get<double>();
  }
  for (const auto& f : names.value("figures", json::array())) {
    const std::uint64_t id = f.value("id", std::uint64_t{0});
    const int runs = f.value("runs", 0);
    std::vector<double> ins, sys, flt;
    std::map<int, std::vector<double>> calls;
    for (int run = 1; run <= runs; ++run) {
      const auto it = by_id.find(id + static_cast<std::uint64_t>(run));
      if (it == by_id.end()) continue;
      ins.push_back(it->second.instructions);
      sys.push_back(it->second.syscalls);
      flt.push_back(it->second.faults);
      for (const auto& [nr, n] : it->second.calls) calls[nr].push_back(n);
    }
    MeasuredCounts m;
    if (ins.size() != static_cast<std::size_t>(runs) || runs == 0) {
      m.unmeasured = "the tracer counted " + std::to_string(ins.size()) + " of its " + std::to_string(runs) + " runs";
    } else {
      m.counts = {{"instructions", median_of(ins)}, {"syscalls", median_of(sys)}, {"faults", median_of(flt)}};
      for (auto& [nr, v] : calls) {
        v.resize(static_cast<std::size_t>(runs), 0.0);  // a run without that call made it 0 times
        m.calls[nr] = median_of(v);
      }
    }
    out[f.value("name", "")] = m;
  }
}

void count_ipc(const Settings& s, Gathered& g, std::map<std::string, MeasuredCounts>& measured) {
  std::string why;
  const std::string exe = bench_program(ipc_program_name(), why);
  const std::string tracer = exe.empty() ? std::string() : bench_program("ipcheck-bench-count", why);
  if (exe.empty() || tracer.empty()) {
    g.errors.push_back("counts: " + why);
    return;
  }
  std::vector<std::string> common{"--adapter", s.adapter, "--transport", s.transport};
  for (const auto& [k, v] : s.adapter_options) common.insert(common.end(), {"--adapter-opt", k + "=" + v});
  const std::string names_file = work_file(s, "counts-names.json"), trace_file = work_file(s, "counts-trace.json");
  std::vector<std::string> consumer_args{"--out", trace_file, "--", exe, "--role", "consumer"};
  consumer_args.insert(consumer_args.end(), common.begin(), common.end());
  const std::string filter = s.filter.empty() ? count_ipc_filter(s.adapter) : s.filter;
  consumer_args.insert(consumer_args.end(), {"--counts", names_file, "--counts-filter", filter});
  std::vector<std::string> producer_args{"--role", "producer"};
  producer_args.insert(producer_args.end(), common.begin(), common.end());
  std::printf("counts: %s verbs and their floors under ipcheck-bench-count (log: %s/counts-*.log)\n", s.adapter.c_str(),
              s.out.c_str());
  std::fflush(stdout);
  auto [producer_end, consumer_end] = make_channel_pair();
  const std::string plog = work_file(s, "counts-producer.log"), clog = work_file(s, "counts-consumer.log");
  RoleProcess producer = start_program(exe, producer_args, plog, producer_end.get());
  RoleProcess consumer = start_program(tracer, consumer_args, clog, consumer_end.get());
  producer_end.reset();
  consumer_end.reset();
  const auto done = consumer.wait_for(limit_of(s.timeout_s), &g_interrupted);
  const auto pdone = producer.wait_for(std::chrono::seconds(10), &g_interrupted);
  if (interrupted()) return;
  if (!done) {
    g.errors.push_back("counts: the traced consumer ran past " + std::to_string(static_cast<int>(s.timeout_s)) +
                       " s and was killed; see " + out_file(s, "counts-consumer.log"));
    return;
  }
  if (done->exited && done->code == kSkipped) {
    g.skipped.push_back({{"name", s.adapter + "/*"}, {"reason", last_line_of_file(clog)}});
    return;
  }
  if (!done->exited || done->code != 0)
    g.errors.push_back("counts: the traced consumer ended with " + done->describe() + ": " + last_line_of_file(clog));
  if (!pdone || !pdone->exited || pdone->code != 0)
    g.errors.push_back("counts: the producer ended with " + (pdone ? pdone->describe() : std::string("a timeout")) +
                       ": " + last_line_of_file(plog));
  const json names = read_json(names_file), trace = read_json(trace_file);
  if (!names.is_object() || !trace.is_object()) {
    g.errors.push_back("counts: the consumer or its tracer wrote no readable counts (" + last_line_of_file(clog) + ")");
    return;
  }
  take_ipc_counts(names, trace, measured);
}

void count_harness(const Settings& s, Gathered& g, std::map<std::string, MeasuredCounts>& measured) {
  std::string why;
  const std::string exe = bench_program("ipcheck-bench-harness", why);
  const std::string peer = exe.empty() ? std::string() : bench_program("ipcheck-bench-peer", why);
  if (exe.empty() || peer.empty()) {
    g.errors.push_back("counts: " + why);
    return;
  }
  const std::string file = work_file(s, "counts-harness.json"), log = work_file(s, "counts-harness.log");
  std::printf("counts: the two-role case and its floor (log: %s)\n", out_file(s, "counts-harness.log").c_str());
  std::fflush(stdout);
  RoleProcess c = start_program(exe, {"--ipcheck", role_executable(), "--peer", peer, "--counts", file}, log, -1, false);
  const auto st = c.wait_for(limit_of(s.timeout_s), &g_interrupted);
  if (interrupted()) return;
  if (!st || !st->exited || st->code != 0) {
    g.errors.push_back("counts: ipcheck-bench-harness ended with " + (st ? st->describe() : std::string("a timeout")) +
                       ": " + last_line_of_file(log));
    return;
  }
  const json doc = read_json(file);
  if (!doc.is_object()) {
    g.errors.push_back("counts: ipcheck-bench-harness wrote no readable " + file);
    return;
  }
  if (doc.contains("unmeasured")) {
    for (const char* name : {"harness/two_role_case", "harness/floor/two_role_case"})
      measured[name].unmeasured = doc.value("unmeasured", "");
    return;
  }
  for (const auto& f : doc.value("figures", json::array())) {
    MeasuredCounts m;
    for (const char* k : {"syscalls", "faults"}) {
      std::vector<double> v;
      for (const auto& x : f.value(k, json::array())) v.push_back(x.get<double>());
      if (!v.empty()) m.counts[k] = median_of(v);
    }
    m.unmeasured = "instructions: the runner forks, clones and runs threads, which single-stepping cannot follow "
                   "at a cost the gate can pay, and valgrind 3.19 has no pidfd_open";
    measured[f.value("name", "")] = m;
  }
}

void run_count_gate(const Settings& s, Gathered& g) {
  const auto t0 = Clock::now();
  std::map<std::string, MeasuredCounts> measured;
  const bool ipc = wants(s, "ipc") && !count_ipc_filter(s.adapter).empty();
  const bool harness = wants(s, "harness") && std::any_of(count_rows().begin(), count_rows().end(), [](const CountRow& r) {
                         return r.figure.rfind("harness/", 0) == 0;
                       });
  if (ipc) count_ipc(s, g, measured);
  if (harness && !interrupted()) count_harness(s, g, measured);
  std::vector<CountRow> rows;
  for (const auto& r : count_rows())
    if (count_row_applies(r, s.adapter)) rows.push_back(r);
  json figures = json::array();
  bool fail = rows.empty();
  for (const auto& v : judge_counts(rows, measured)) {
    json f = {{"name", v.figure.empty() ? v.row_figure : v.figure}, {"count", v.count}, {"expected", v.expected},
              {"allowed", v.allowed}, {"over_floor", v.over_floor}, {"verdict", v.verdict}};
    if (v.value) f["value"] = *v.value;
    if (!v.why.empty()) f["why"] = v.why;
    if (v.count == "syscalls" && v.over_floor && !v.figure.empty()) {
      const auto m = measured.find(v.figure), fl = measured.find(floor_of(v.figure));
      if (m != measured.end() && fl != measured.end()) f["calls_over_floor"] = call_difference(m->second, fl->second);
    }
    // Seeded defect of the gate itself (ipcheck-defects only): an unmeasured row passes.
    if (v.verdict == "unmeasured" && gate_defect("gate_passes_unmeasured")) f["verdict"] = "pass";
    if (v.count == "syscalls" && v.verdict == "fail" && gate_defect("gate_ignores_syscalls")) f["verdict"] = "pass";
    fail = fail || f["verdict"] != "pass";
    figures.push_back(f);
  }
  // The counts as benchmarks of the section too (one sample each: the median per run).
  for (const auto& [name, m] : measured)
    for (const auto& [count, value] : m.counts) {
      Series x;
      x.name = name + "/" + count;
      x.unit = count;
      x.source = "ipcheck bench --gate counts";
      x.label.note = count + " per run, median of the runs counted";
      x.samples.push_back(value);
      g.series.push_back(std::move(x));
    }
  g.gate = {{"verdict", fail ? "fail" : "pass"}, {"mode", "counts"},
            {"time_s", std::chrono::duration<double>(Clock::now() - t0).count()}, {"figures", figures}};
}

void print_count_gate(const json& gate) {
  std::printf("\ngate (counts per run, against bench/counts.md):\n");
  std::size_t w = 6;
  for (const auto& f : gate["figures"]) w = std::max(w, f.value("name", "").size());
  std::printf("%-*s  %-12s  %10s  %14s  %s\n", static_cast<int>(w), "figure", "count", "measured", "expected",
              "verdict");
  for (const auto& f : gate["figures"]) {
    const bool over = f.value("over_floor", false);
    const std::string measured = f.contains("value") ? (over ? "+" : "") + figure(f["value"].get<double>()) : "-";
    const std::string expected = (over ? "+" : "") + figure(f.value("expected", 0.0)) + " ±" + figure(f.value("allowed", 0.0));
    std::printf("%-*s  %-12s  %10s  %14s  %s", static_cast<int>(w), f.value("name", "").c_str(),
                f.value("count", "").c_str(), measured.c_str(), expected.c_str(), f.value("verdict", "").c_str());
    if (f.contains("why") && f.value("verdict", "") != "pass") std::printf(" (%s)", f.value("why", "").c_str());
    if (f.contains("calls_over_floor") && f.value("verdict", "") != "pass")
      std::printf(" (calls over the floor: %s)", f.value("calls_over_floor", "").c_str());
    std::printf("\n");
  }
  std::printf("gate: %s\n", gate.value("verdict", "") == "pass"
                                 ? "PASS (every count within its tolerance of bench/counts.md)"
                                 : "FAIL (a count beyond its tolerance of bench/counts.md, or unmeasured)");
}

void print_gate(const json& gate) {
  if (!gate.is_object()) return;
  if (gate.value("mode", "") == "counts") return print_count_gate(gate);
  std::printf("\ngate (%d rounds, stopped by %s; intervals at 95%%):\n", gate.value("rounds", 0),
              gate.value("stopped", "").c_str());
  std::size_t w = 6;
  for (const auto& f : gate["figures"]) w = std::max(w, f.value("name", "").size());
  std::printf("%-*s  %10s  %21s  %9s  %9s  %s\n", static_cast<int>(w), "figure", "value", "interval", "goal", "held to",
              "verdict");
  int shortfalls = 0;
  for (const auto& f : gate["figures"]) {
    const std::string iv = f.contains("low") ? "[" + figure(f["low"].get<double>()) + ", " +
                                                   figure(f["high"].get<double>()) + "]"
                                             : "-";
    shortfalls += f.value("verdict", "") == "short";
    std::printf("%-*s  %10s  %21s  %9s  %9s  %s\n", static_cast<int>(w), f.value("name", "").c_str(),
                f.contains("value") ? figure(f["value"].get<double>()).c_str() : "-", iv.c_str(),
                f.value("goal", "").c_str(), f.value("shortfall_bound", "-").c_str(), f.value("verdict", "").c_str());
  }
  if (gate["figures"].empty()) std::printf("no gated figure was measured\n");
  if (shortfalls)
    std::printf("%d figure(s) short of their goal, within the bound goals.md holds a known shortfall to (verdict "
                "'short': not met, not worse)\n",
                shortfalls);
  std::printf("gate: %s\n", gate.value("verdict", "") == "pass"
                                 ? "PASS (no gated figure beyond its goal, or its known shortfall's bound, by more than "
                                   "its noise)"
                                 : "FAIL (a gated figure is beyond its goal, or its known shortfall's bound, by more than "
                                   "its noise, or unmeasured)");
}

void print_table(const json& list) {
  std::size_t w = 9;
  for (const auto& b : list) w = std::max(w, b["name"].get<std::string>().size());
  std::printf("\n%-*s  %12s  %10s  %12s  %7s  %8s  %s\n", static_cast<int>(w), "benchmark", "median", "spread", "floor",
              "ratio", "target", "met");
  for (const auto& b : list) {
    const std::string unit = b.value("unit", "");
    const std::string med = figure(b.value("median", 0.0)) + " " + unit;
    std::string target = "";
    if (b.contains("target_ratio")) target = "x" + figure(b["target_ratio"].get<double>());
    if (b.contains("target"))
      target += std::string(target.empty() ? "" : ",") + (b.value("better", "lower") == "higher" ? ">=" : "<=") +
                figure(b["target"].get<double>());
    std::printf("%-*s  %12s  %10s  %12s  %7s  %8s  %s\n", static_cast<int>(w), b["name"].get<std::string>().c_str(),
                med.c_str(), figure(b.value("spread", 0.0)).c_str(),
                b.contains("floor") ? figure(b["floor"].get<double>()).c_str() : "-",
                b.contains("ratio") ? figure(b["ratio"].get<double>()).c_str() : "-", target.c_str(),
                b.contains("met") ? (b["met"].get<bool>() ? "yes" : "NO") : "");
  }
}

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

// The table, what was skipped, pending or failed, the load, the files written.
void print_bench_end(json& section, const Gathered& g, bool available, const std::vector<double>& load_before,
                     const std::vector<double>& load_after, const std::vector<std::string>& written) {
  if (available) print_table(section["benchmarks"]);
  for (const auto& k : section["skipped"])
    std::printf("skipped %s: %s\n", k.value("name", "").c_str(), k.value("reason", "").c_str());
  for (const auto& p : g.pending) std::printf("pending: %s\n", p.c_str());
  std::printf("load average %.2f %.2f %.2f before, %.2f %.2f %.2f after\n", load_before[0], load_before[1],
              load_before[2], load_after[0], load_after[1], load_after[2]);
  for (const auto& e : g.errors) std::printf("error: %s\n", e.c_str());
  for (const auto& p : written) std::printf("wrote %s\n", p.c_str());
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
}  // namespace ipcheck::bench
