// `ipcheck bench`'s bench programs: where they are, how they start (fork + exec, by the
// supervisor), the load and logs around them, and the Google Benchmark output they write.
#include <algorithm>
#include <fstream>
#include <sstream>

#include "ipcheck/install_layout.hpp"
#include "ipcref/defects.hpp"
#include "cmd_bench_impl.hpp"

namespace ipcheck::bench::cmd_bench_detail {

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
                          int channel, bool role) {
  SpawnSpec spec;
  spec.executable = exe;
  spec.args = args;
  spec.output_file = log;
  spec.channel_fd = channel;
  spec.role = role;
  return RoleProcess::spawn(spec);
}

std::atomic<bool> g_interrupted{false};

// Where a bench program writes `name` (the private folder), and where it ends up.
std::string work_file(const Settings& s, const std::string& name) { return (fs::path(s.work) / name).string(); }
std::string out_file(const Settings& s, const std::string& name) { return (fs::path(s.out) / name).string(); }

bool interrupted() { return g_interrupted.load(); }
std::chrono::milliseconds limit_of(double seconds) { return std::chrono::milliseconds(static_cast<long long>(seconds * 1000)); }

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

json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) return nullptr;
  try {
    return json::parse(in);
  } catch (const std::exception&) {
    return nullptr;
  }
}

}  // namespace ipcheck::bench::cmd_bench_detail
