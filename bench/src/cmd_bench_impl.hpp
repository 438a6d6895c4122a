// The `ipcheck bench` command's internals, shared by its files: cmd_bench.cpp (the command:
// its options, the parts it runs, the section and files it writes), bench_programs.cpp (the
// bench programs: where they are, how they start, what they wrote), bench_timed_runs.cpp (the
// timed parts: ipc, harness, catalog, fuzz, and their goals), bench_wall_gate.cpp (--gate
// wall), bench_count_gate.cpp (--gate counts) and bench_print.cpp (what the terminal shows).
// Private to bench/src.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ipcheck/bench/summary.hpp"
#include "ipcheck/spawn.hpp"

namespace ipcheck::bench::cmd_bench_detail {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

inline constexpr int kSkipped = 77;  // a bench program's status when its adapter cannot run here

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

// ---------------------------------------------------------------- bench_programs.cpp

// SIGINT, SIGTERM or SIGHUP came: the program running is stopped, the parts after it skipped.
extern std::atomic<bool> g_interrupted;
bool interrupted();
std::chrono::milliseconds limit_of(double seconds);

std::vector<double> load_average();
// The last non-empty line of a log file.
std::string last_line_of_file(const std::string& path);
// A JSON file's document; null when it is missing or not JSON.
json read_json(const std::string& path);

// Where a bench program writes `name` (the private folder), and where it ends up.
std::string work_file(const Settings& s, const std::string& name);
std::string out_file(const Settings& s, const std::string& name);
bool wants(const Settings& s, const std::string& part);

// A bench program started by fork + exec, its output in `log`, descriptor 3 `channel` (if
// any); `role`: started as a role (least privilege), false for a whole ipcheck run or campaign.
RoleProcess start_program(const std::string& exe, const std::vector<std::string>& args, const std::string& log,
                          int channel = -1, bool role = true);
// A bench program's path; "" with the reason in `why` when it is not there.
std::string bench_program(const std::string& name, std::string& why);
// ipcheck-bench-ipc, or its defect-seeded twin in ipcheck-defects.
std::string ipc_program_name();
std::vector<std::string> google_benchmark_flags(const Settings& s, const std::string& out_json, double min_time);
// Reads one program's Google Benchmark output into `g`; false when there is none.
bool take_google_benchmark(Gathered& g, const std::string& program, const std::string& path);

// ---------------------------------------------------------------- bench_timed_runs.cpp

void run_ipc(const Settings& s, Gathered& g);
void run_harness(const Settings& s, Gathered& g);
void run_catalog(const Settings& s, Gathered& g);
void run_fuzz(const Settings& s, Gathered& g);
// Marks each series with its goal (bench/goals.md).
void apply_goals(std::vector<Series>& all);

// ---------------------------------------------------------------- bench_wall_gate.cpp

// A glob of goals.md or counts.md as a regular expression ('*': any run of characters but '/').
std::string glob_regex(const std::string& glob);
// --gate wall: the short bench in rounds, judged against bench/goals.md.
void run_gate(const Settings& s, Gathered& g);

// ---------------------------------------------------------------- bench_count_gate.cpp

// --gate counts: instructions, system calls and page faults against bench/counts.md.
void run_count_gate(const Settings& s, Gathered& g);

// ---------------------------------------------------------------- bench_print.cpp

// A figure as the tables write it: 4 significant digits, 3 in exponent form.
std::string figure(double v);
void print_gate(const json& gate);
void print_table(const json& list);
// The table, what was skipped, pending or failed, the load, the files written.
void print_bench_end(json& section, const Gathered& g, bool available, const std::vector<double>& load_before,
                     const std::vector<double>& load_after, const std::vector<std::string>& written);

}  // namespace ipcheck::bench::cmd_bench_detail
