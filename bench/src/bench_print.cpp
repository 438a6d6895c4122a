// What `ipcheck bench` shows on the terminal: the benchmarks' table, the gate's verdicts
// (wall or counts), and the end (skipped, pending, errors, the load, the files written).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cmd_bench_impl.hpp"

namespace ipcheck::bench::cmd_bench_detail {

std::string figure(double v) {
  char b[32];
  if (v != 0 && (std::fabs(v) >= 1e6 || std::fabs(v) < 1e-2)) std::snprintf(b, sizeof b, "%.3g", v);
  else std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

namespace {

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

}  // namespace

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

}  // namespace ipcheck::bench::cmd_bench_detail
