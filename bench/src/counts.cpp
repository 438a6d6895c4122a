#include "table_cells.hpp"
#include "ipcheck/bench/counts.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "ipcheck/bench/goals.hpp"
#include "ipcheck_bench_counts.h"  // kCountsText: bench/counts.md, generated at configure time

namespace ipcheck::bench {

namespace {

using table::cells;
using table::trim;

// A finite number >= 0, the whole of `text`.
std::optional<double> nonnegative_number(const std::string& text) {
  char* end = nullptr;
  const double v = text.empty() ? -1 : std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v) || v < 0) return std::nullopt;
  return v;
}

[[noreturn]] void bad_row(int line, const std::string& what) {
  throw std::invalid_argument("bench/counts.md line " + std::to_string(line) + ": " + what);
}

}  // namespace

std::vector<CountRow> parse_count_rows(std::string_view text) {
  std::vector<CountRow> out;
  int n = 0;
  bool header = false;
  while (!text.empty()) {
    const auto eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    ++n;
    if (line.empty() || line.front() != '|') continue;
    if (!header) {
      header = true;
      const auto h = cells(line);
      if (h.size() != 5 || h[0] != "figure" || h[1] != "count" || h[2] != "expected" || h[3] != "tolerance" ||
          h[4] != "why")
        bad_row(n, "the table's header is '" + std::string(line) + "'; write | figure | count | expected | tolerance | why |");
      continue;
    }
    if (line.starts_with("|---")) continue;
    const auto c = cells(line);
    if (c.size() != 5) bad_row(n, "a row has " + std::to_string(c.size()) + " cells; give 5 (figure, count, expected, tolerance, why)");
    CountRow r;
    r.row = std::string(line);
    if (c[0].size() < 3 || c[0].front() != '`' || c[0].back() != '`') bad_row(n, "figure '" + c[0] + "' is not a name in backquotes");
    r.figure = c[0].substr(1, c[0].size() - 2);
    r.count = c[1];
    if (r.count != "instructions" && r.count != "syscalls" && r.count != "faults")
      bad_row(n, "count '" + r.count + "' is none of instructions, syscalls, faults");
    std::string e = c[2];
    r.over_floor = !e.empty() && e.front() == '+';
    if (r.over_floor) e.erase(0, 1);
    const auto v = nonnegative_number(e);
    if (!v) bad_row(n, "expected '" + c[2] + "' is not a number >= 0 (or '+N': the count over the figure's floor)");
    if (r.over_floor && floor_of(r.figure).empty())
      bad_row(n, "expected '" + c[2] + "' is over a floor, and '" + r.figure + "' has none (<adapter>/<verb>...)");
    r.expected = *v;
    std::string t = c[3];
    r.relative = !t.empty() && t.back() == '%';
    if (r.relative) t.pop_back();
    const auto tol = nonnegative_number(t);
    if (!tol) bad_row(n, "tolerance '" + c[3] + "' is not a number >= 0 or a percentage (N%)");
    r.tolerance = *tol;
    r.why = c[4];
    out.push_back(std::move(r));
  }
  if (out.empty()) throw std::invalid_argument("bench/counts.md holds no rows");
  return out;
}

const std::vector<CountRow>& count_rows() {
  static const std::vector<CountRow> rows = parse_count_rows(kCountsText);
  return rows;
}

std::string count_table() { return table::rows_of(kCountsText); }

std::string floor_of(const std::string& figure) {
  const auto slash = figure.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 >= figure.size()) return "";
  if (figure.compare(slash + 1, 6, "floor/") == 0) return "";
  return figure.substr(0, slash) + "/floor/" + figure.substr(slash + 1);
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

std::vector<CountVerdict> judge_counts(const std::vector<CountRow>& rows,
                                       const std::map<std::string, MeasuredCounts>& measured) {
  std::vector<CountVerdict> out;
  for (const auto& row : rows) {
    CountVerdict base;
    base.row_figure = row.figure;
    base.count = row.count;
    base.expected = row.expected;
    base.allowed = row.allowed();
    base.over_floor = row.over_floor;
    bool any = false;
    for (const auto& [name, m] : measured) {
      if (!figure_matches(row.figure, name)) continue;
      any = true;
      CountVerdict v = base;
      v.figure = name;
      auto have = [&](const MeasuredCounts& x, const std::string& who) -> std::optional<double> {
        if (auto it = x.counts.find(row.count); it != x.counts.end()) return it->second;
        v.why = who + " has no " + row.count + " count" + (x.unmeasured.empty() ? "" : ": " + x.unmeasured);
        return std::nullopt;
      };
      std::optional<double> value = have(m, name);
      if (value && row.over_floor) {
        const std::string floor = floor_of(name);
        const auto f = measured.find(floor);
        if (f == measured.end()) {
          v.why = "its floor " + floor + " was not measured";
          value.reset();
        } else if (const auto fv = have(f->second, floor)) {
          *value -= *fv;
        } else {
          value.reset();
        }
      }
      if (!value) {
        v.verdict = "unmeasured";
      } else {
        v.value = value;
        v.verdict = std::fabs(*value - row.expected) <= v.allowed + 1e-9 ? "pass" : "fail";
      }
      out.push_back(std::move(v));
    }
    if (!any) {
      CountVerdict v = base;
      v.verdict = "unmeasured";
      v.why = "no measured figure matches " + row.figure + " (a renamed, filtered or failed benchmark)";
      out.push_back(std::move(v));
    }
  }
  return out;
}

std::string syscall_name(int nr) {
  // x86-64 numbers of the calls these figures make or a slowdown would add.
  static const std::map<int, const char*> names = {
      {0, "read"}, {1, "write"}, {3, "close"}, {4, "stat"}, {5, "fstat"}, {7, "poll"}, {8, "lseek"}, {9, "mmap"},
      {10, "mprotect"}, {11, "munmap"}, {12, "brk"}, {13, "rt_sigaction"}, {14, "rt_sigprocmask"}, {16, "ioctl"},
      {17, "pread64"}, {20, "writev"}, {23, "select"}, {24, "sched_yield"}, {25, "mremap"}, {28, "madvise"},
      {32, "dup"}, {33, "dup2"}, {35, "nanosleep"}, {39, "getpid"}, {41, "socket"}, {44, "sendto"}, {45, "recvfrom"},
      {46, "sendmsg"}, {47, "recvmsg"}, {56, "clone"}, {57, "fork"}, {58, "vfork"}, {59, "execve"}, {60, "exit"},
      {61, "wait4"}, {62, "kill"}, {72, "fcntl"}, {77, "ftruncate"}, {96, "gettimeofday"}, {102, "getuid"},
      {157, "prctl"}, {186, "gettid"}, {200, "tkill"}, {202, "futex"}, {228, "clock_gettime"},
      {230, "clock_nanosleep"}, {231, "exit_group"}, {232, "epoll_wait"}, {234, "tgkill"}, {257, "openat"},
      {262, "newfstatat"}, {270, "pselect6"}, {271, "ppoll"}, {281, "epoll_pwait"}, {292, "dup3"}, {293, "pipe2"},
      {302, "prlimit64"}, {310, "process_vm_readv"}, {318, "getrandom"}, {319, "memfd_create"}, {332, "statx"},
      {424, "pidfd_send_signal"}, {434, "pidfd_open"}, {435, "clone3"}, {438, "pidfd_getfd"}};
  const auto it = names.find(nr);
  return it != names.end() ? it->second : "syscall " + std::to_string(nr);
}

std::string call_difference(const MeasuredCounts& figure, const MeasuredCounts& floor) {
  std::map<int, double> d = figure.calls;
  for (const auto& [nr, n] : floor.calls) d[nr] -= n;
  std::string out;
  for (const auto& [nr, n] : d) {
    if (std::fabs(n) < 1e-9) continue;
    char num[32];
    std::snprintf(num, sizeof num, "%+g", n);
    out += (out.empty() ? "" : ", ") + std::string(num) + " " + syscall_name(nr);
  }
  return out;
}

}  // namespace ipcheck::bench
