// `ipcheck bench --gate counts`: each verb's instructions, system calls and page faults per
// run (ipcheck-bench-ipc under ipcheck-bench-count), and the two-role case's system calls
// and faults (ipcheck-bench-harness), each beside its floor's, against bench/counts.md.
#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "ipcheck/bench/counts.hpp"
#include "ipcheck/bench/gate_defects.hpp"
#include "ipcheck/channel.hpp"
#include "cmd_bench_impl.hpp"

namespace ipcheck::bench::cmd_bench_detail {
namespace {

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

}  // namespace

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

}  // namespace ipcheck::bench::cmd_bench_detail
