// `ipcheck bench --gate wall`: the gated timed figures of bench/goals.md, measured in rounds
// until each one's confidence interval is within or beyond its goal, or the time cap.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "ipcheck/bench/gate_defects.hpp"
#include "ipcheck/bench/goals.hpp"
#include "cmd_bench_impl.hpp"

namespace ipcheck::bench::cmd_bench_detail {

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

namespace {

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

}  // namespace

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

}  // namespace ipcheck::bench::cmd_bench_detail
