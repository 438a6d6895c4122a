// The count gate's expectations: bench/counts.md, the one table (compiled in), and the pure
// judging of measured counts against it (`ipcheck bench --gate counts`, CTest bench:gate).
// Counts, unlike times, do not move with the machine's load: instructions executed, system
// calls made, page faults taken, per run of a verb, each beside its floor's in the same run.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ipcheck::bench {

struct CountRow {
  std::string figure;     // a benchmark name; '*' matches any run of characters but '/'
  std::string count;      // "instructions", "syscalls" or "faults"
  bool over_floor = false;  // expected written "+N": the figure's count less its floor's
  double expected = 0;
  double tolerance = 0;     // absolute, or a share of `expected` when `relative`
  bool relative = false;    // tolerance written "N%"
  std::string why;
  std::string row;          // the table row as written
  double allowed() const { return relative ? tolerance / 100.0 * (expected < 0 ? -expected : expected) : tolerance; }
};

// One figure's counts per run: the medians over its runs, and the system calls by number
// (medians too). A count absent from the map was not measured (with `unmeasured` saying why).
struct MeasuredCounts {
  std::map<std::string, double> counts;  // instructions, syscalls, faults
  std::map<int, double> calls;           // syscall number -> calls per run
  std::string unmeasured;                // why a count is missing, when one is
};

// Parses the table rows of a counts file; a malformed row throws std::invalid_argument naming
// its line, the cell and the value.
std::vector<CountRow> parse_count_rows(std::string_view text);
// The rows compiled into this program (bench/counts.md).
const std::vector<CountRow>& count_rows();
std::string count_table();  // the table as it stands in counts.md

// "ref/floor/mem_open_close/4KiB" for "ref/mem_open_close/4KiB"; "" for a name with no adapter part.
std::string floor_of(const std::string& figure);

// A row judged against one measured figure (or none: `figure` empty, nothing matched it).
struct CountVerdict {
  std::string row_figure, figure, count;
  std::optional<double> value;     // the figure's count, less its floor's for a "+N" row
  double expected = 0, allowed = 0;
  bool over_floor = false;
  std::string verdict;             // pass, fail, unmeasured
  std::string why;                 // for fail and unmeasured: what was measured or missing
};

// Every row judged: a row whose glob matches no measured figure, or whose figure or floor
// lacks the count, is `unmeasured` (which fails the gate, as a fail does).
std::vector<CountVerdict> judge_counts(const std::vector<CountRow>& rows,
                                       const std::map<std::string, MeasuredCounts>& measured);

// The system calls a figure makes beyond its floor, by name where the name is known:
// "+1 clock_nanosleep, +1 process_vm_readv" ("" when they are the same).
std::string call_difference(const MeasuredCounts& figure, const MeasuredCounts& floor);
std::string syscall_name(int nr);

// The median of `v` (0 for none).
double median_of(std::vector<double> v);

}  // namespace ipcheck::bench
