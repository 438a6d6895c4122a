// The bench's goals: bench/goals.md, the one table (compiled in), read by `ipcheck bench`
// (target, met), its gate (--gate) and rendered into the READMEs (docs:bench-goals).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ipcheck::bench {

struct Goal {
  std::string figure;   // a benchmark name; '*' matches any run of characters but '/'
  std::string measure;  // "ratio", or the unit the bound is in ("ms", "s", "exec/s")
  bool at_most = true;  // "<=" (else ">=")
  double bound = 0;
  bool gated = false;   // judged by `ipcheck bench --gate`
  // A goal not met yet (`gated` written as "<= N" or ">= N"): the gate holds the figure to
  // this bound instead, a known shortfall, so that it cannot get worse unseen; the goal stays
  // the goal (`met` says NO) until the row is changed to `yes`.
  std::optional<double> shortfall_bound;
  std::string why;
  std::string row;      // the table row as written
};

// Parses the table rows of a goals file; a malformed row throws std::invalid_argument naming
// its line, the cell and the value.
std::vector<Goal> parse_goals(std::string_view text);
// The goals compiled into this program (bench/goals.md).
const std::vector<Goal>& goals();
// The table's text as compiled in.
std::string_view goals_text();
// The table (header and rows) as it stands in goals.md: what the READMEs carry.
std::string goals_table();
// The first goal whose figure matches `name`, or none.
const Goal* goal_for(const std::string& name, const std::vector<Goal>& from = goals());
// Whether a figure glob matches a benchmark name.
bool figure_matches(std::string_view glob, std::string_view name);

// Whether the gate's rounds may stop after `rounds` rounds with `undecided` figures still
// straddling their goal and `beyond` figures beyond it: when none straddles, and a figure
// beyond its goal has been seen in at least two rounds' processes. One round's processes share
// their placement on the CPUs and their idle states, which move a figure between rounds more
// than between the repetitions of one round (an event wake measured 1.99 [1.66, 2.49] of a floor
// that ran at 32 us in that round, 50-58 us in others): a second round's samples, pooled with
// the first's, confirm the failure or widen the interval.
bool gate_may_stop(int rounds, int undecided, int beyond);
inline constexpr int kGateRoundsBeforeFail = 2;

}  // namespace ipcheck::bench
