#include "table_cells.hpp"
#include "ipcheck/bench/goals.hpp"

#include <cmath>
#include <cstdlib>
#include <optional>
#include <stdexcept>

#include "ipcheck_bench_goals.h"  // kGoalsText: bench/goals.md, generated at configure time

namespace ipcheck::bench {

namespace {

using table::cells;
using table::trim;

// A positive finite number, the whole of `text`; nothing otherwise.
std::optional<double> positive_number(const std::string& text) {
  char* end = nullptr;
  const double v = text.empty() ? 0 : std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v) || v <= 0) return std::nullopt;
  return v;
}

[[noreturn]] void bad(int line, const std::string& what) {
  throw std::invalid_argument("bench/goals.md line " + std::to_string(line) + ": " + what);
}

}  // namespace

bool figure_matches(std::string_view glob, std::string_view name) {
  if (glob.empty()) return name.empty();
  if (glob.front() == '*') {
    for (std::size_t i = 0;; ++i) {
      if (figure_matches(glob.substr(1), name.substr(i))) return true;
      if (i >= name.size() || name[i] == '/') return false;
    }
  }
  return !name.empty() && glob.front() == name.front() && figure_matches(glob.substr(1), name.substr(1));
}

std::vector<Goal> parse_goals(std::string_view text) {
  std::vector<Goal> out;
  int n = 0;
  bool header = false;
  while (!text.empty()) {
    const auto eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    ++n;
    if (line.empty() || line.front() != '|') continue;
    if (!header) {  // "| figure | measure | goal | gated | why |", then "|---|..."
      header = true;
      const auto h = cells(line);
      if (h.size() != 5 || h[0] != "figure" || h[1] != "measure" || h[2] != "goal" || h[3] != "gated" || h[4] != "why")
        bad(n, "the table's header is '" + std::string(line) + "'; write | figure | measure | goal | gated | why |");
      continue;
    }
    if (line.starts_with("|---")) continue;
    const auto c = cells(line);
    if (c.size() != 5) bad(n, "a row has " + std::to_string(c.size()) + " cells; give 5 (figure, measure, goal, gated, why)");
    Goal g;
    g.row = std::string(line);
    if (c[0].size() < 3 || c[0].front() != '`' || c[0].back() != '`')
      bad(n, "figure '" + c[0] + "' is not a name in backquotes");
    g.figure = c[0].substr(1, c[0].size() - 2);
    g.measure = c[1];
    if (g.measure != "ratio" && g.measure != "ns" && g.measure != "us" && g.measure != "ms" && g.measure != "s" &&
        g.measure != "exec/s")
      bad(n, "measure '" + g.measure + "' is none of ratio, ns, us, ms, s, exec/s");
    const std::string& goal = c[2];
    if (goal.rfind("<= ", 0) == 0) g.at_most = true;
    else if (goal.rfind(">= ", 0) == 0) g.at_most = false;
    else bad(n, "goal '" + goal + "' does not start with '<= ' or '>= '");
    const auto bound = positive_number(goal.substr(3));
    if (!bound) bad(n, "goal '" + goal + "' does not end in a positive number");
    g.bound = *bound;
    if (c[3] == "yes" || c[3] == "no") {
      g.gated = c[3] == "yes";
    } else {
      // "<= N" (">= N" for a goal that is a least): gated at N while the goal is not met.
      const std::string want = g.at_most ? "<= " : ">= ";
      const auto held = c[3].rfind(want, 0) == 0 ? positive_number(c[3].substr(3)) : std::nullopt;
      if (!held || (g.at_most ? *held <= g.bound : *held >= g.bound))
        bad(n, "gated is '" + c[3] + "'; write yes, no, or '" + want + "N' with N " +
                   (g.at_most ? "above" : "below") + " the goal (the bound a known shortfall is held to)");
      g.gated = true;
      g.shortfall_bound = held;
    }
    g.why = c[4];
    out.push_back(std::move(g));
  }
  if (out.empty()) throw std::invalid_argument("bench/goals.md holds no goal rows");
  return out;
}

std::string_view goals_text() { return kGoalsText; }

const std::vector<Goal>& goals() {
  static const std::vector<Goal> g = parse_goals(kGoalsText);
  return g;
}

std::string goals_table() { return table::rows_of(kGoalsText); }

const Goal* goal_for(const std::string& name, const std::vector<Goal>& from) {
  for (const auto& g : from)
    if (figure_matches(g.figure, name)) return &g;
  return nullptr;
}

bool gate_may_stop(int rounds, int undecided, int beyond) {
  return undecided == 0 && (beyond == 0 || rounds >= kGateRoundsBeforeFail);
}

}  // namespace ipcheck::bench
