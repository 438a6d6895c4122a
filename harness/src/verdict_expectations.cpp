// Expectations over a run (verdict.hpp, ExpectationUse): a deviation the expectations file
// lists turns into xfail only when a line covers every problem of the case; a flaky line marks
// a flake expected and keeps it flaky; the lines no case matched are stale.
#include "ipcheck/verdict.hpp"
#include "ipcheck/reports/seeded.hpp"

#include <algorithm>
#include <set>

#include "ipcheck/spawn.hpp"  // signal_name

namespace ipcheck::verdict {

using nlohmann::json;
using reports::CaseResult;
using reports::Check;
using reports::CheckResult;
using reports::Status;

namespace {

bool optional_glob(const std::string& pattern, const std::string& text) {
  return pattern.empty() || glob_match(pattern, text);
}

// The line names this case: by its id, or by a clause the case checks.
bool line_names(const Expectation& x, const CaseResult& c) {
  if (glob_match(x.pattern, c.id)) return true;
  // Injected runs ("<case>@role:step") are named by the case id too.
  if (auto at = c.id.find('@'); at != std::string::npos && glob_match(x.pattern, c.id.substr(0, at))) return true;
  return std::any_of(c.clauses.begin(), c.clauses.end(), [&](const std::string& k) { return glob_match(x.pattern, k); });
}

bool covers_check(const Expectation& x, const CaseResult& c, const Check& k) {
  const bool by_case = glob_match(x.pattern, c.id) ||
                       (c.id.find('@') != std::string::npos && glob_match(x.pattern, c.id.substr(0, c.id.find('@'))));
  if (!by_case && !glob_match(x.pattern, k.clause)) return false;
  return (optional_glob(x.match.check, k.message) || seeded::is("expectation_ignores_check")) &&
         optional_glob(x.match.clause, k.clause) &&
         optional_glob(x.match.native, k.native_name) && optional_glob(x.match.role, k.role) &&
         optional_glob(x.match.reason, c.reason);
}

std::string crash_signal(const CaseResult& c, std::string* role) {
  for (const auto& r : c.roles)
    if (r.signal != 0 && r.exit.find("(expected)") == std::string::npos) {
      if (role) *role = r.name;
      return signal_name(r.signal);
    }
  return {};
}

// A flaky case named by flaky lines (reason= matches its failing attempt): still flaky,
// never hidden, marked expected.
void apply_flaky_lines(const std::vector<Expectation>& lines, std::vector<int>& matched, CaseResult& c,
                       const std::string& driver_version) {
  const auto failed = std::find_if(c.attempts.begin(), c.attempts.end(),
                                   [](const CaseResult& a) { return reports::is_judged(a.status) && a.status != Status::pass; });
  const std::string failure = failed == c.attempts.end() ? c.reason : failed->reason;
  std::string why, where;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto& x = lines[i];
    if (x.status != Status::flaky || !version_in_range(driver_version, x.driver) || !line_names(x, c) ||
        !optional_glob(x.match.reason, failure))
      continue;
    ++matched[i];
    const std::string e = x.explain();
    if (why.find(e) == std::string::npos) why += (why.empty() ? "" : "; ") + e;
    where += (where.empty() ? "" : ", ") + x.where;
  }
  if (!where.empty()) {
    c.expectation = why + " (" + where + ")";
    c.expected_status = Status::flaky;
  }
}

// How the candidate lines covered a case's problems: each problem by a line of its own kind.
struct ProblemCoverage {
  const std::vector<Expectation>& lines;
  std::vector<std::size_t> candidates;  // lines naming the case whose driver range holds
  std::set<std::size_t> used;           // the lines that covered a problem
  std::size_t covered = 0, total = 0;
  const Check* new_check = nullptr;     // the first failed check no line covers
  bool leaks_covered = true;

  // One problem of kind `kind`, covered by every candidate of that status that `matches`.
  template <class Matches>
  bool cover(Status kind, const Matches& matches) {
    ++total;
    bool hit = false;
    for (std::size_t i : candidates)
      if (lines[i].status == kind && matches(lines[i])) {
        used.insert(i);
        hit = true;
      }
    covered += hit;
    return hit;
  }
};

// Every problem of the case: failed checks by fail lines, leak findings by leak lines, a
// crash or a timeout by such a line, a failure without a failed check by a line naming the
// case and its reason. Marks each failed check covered or not.
void cover_problems(ProblemCoverage& p, CaseResult& c) {
  bool any_failed_check = false;
  for (auto& k : c.checks) {
    if (k.result != CheckResult::fail) continue;
    any_failed_check = true;
    k.expected = p.cover(Status::fail, [&](const Expectation& x) { return covers_check(x, c, k); });
    if (!k.expected && !p.new_check) p.new_check = &k;
  }
  for (const auto& f : c.findings)
    p.leaks_covered &= p.cover(Status::leak, [&](const Expectation& x) {
      return optional_glob(x.match.leak, f.item) && optional_glob(x.match.role, f.role);
    });
  if (c.status == Status::crash || c.status == Status::timeout) {
    std::string role;
    const std::string sig = crash_signal(c, &role);
    p.cover(c.status, [&](const Expectation& x) {
      return optional_glob(x.match.reason, c.reason) &&
             (c.status != Status::crash || (optional_glob(x.match.signal, sig) && optional_glob(x.match.role, role)));
    });
  } else if (c.status == Status::fail && !any_failed_check) {
    // A failure without a failed check (a role's exit code): a line naming the case and its reason.
    p.cover(Status::fail, [&](const Expectation& x) {
      return glob_match(x.pattern, c.id) && x.match.check.empty() && x.match.clause.empty() && x.match.native.empty() &&
             optional_glob(x.match.reason, c.reason);
    });
  }
}

// Some problems covered, others new: a warning naming the lines; the status stays the
// worst problem no line covers.
void note_partial_coverage(const ProblemCoverage& p, CaseResult& c) {
  std::string where;
  for (std::size_t i : p.used) where += (where.empty() ? "" : ", ") + p.lines[i].where;
  c.warnings.push_back("expectations " + where + " cover " + std::to_string(p.covered) + " of " +
                       std::to_string(p.total) + " problems of this case; the others are new");
  // The status names the worst problem no line covers: a leak the lines explain, beside a
  // failed check they do not, is a failure (the check's), not a leak.
  if (c.status == Status::leak && p.leaks_covered && p.new_check) {
    c.status = Status::fail;
    // The lines by file name and number (a reason goes into baselines; the folder is the machine's).
    std::string lines_named;
    for (std::size_t i : p.used) {
      const std::string& w = p.lines[i].where;
      lines_named += (lines_named.empty() ? "" : ", ") + w.substr(w.rfind('/') == std::string::npos ? 0 : w.rfind('/') + 1);
    }
    const Check& k = *p.new_check;
    c.reason = "[" + k.role + "] " + k.clause + ": " + k.message + (k.where.empty() ? "" : " (" + k.where + ")") +
               "; the leak beside it is expected (" + lines_named + ")";
  }
}

// Every problem covered: xfail, with the lines' reasons and where they are.
void mark_expected(const ProblemCoverage& p, CaseResult& c) {
  std::string why, where;
  for (std::size_t i : p.used) {
    const std::string e = p.lines[i].explain();
    if (why.find(e) == std::string::npos) why += (why.empty() ? "" : "; ") + e;
    where += (where.empty() ? "" : ", ") + p.lines[i].where;
  }
  c.expectation = why + " (" + where + ")";
  c.reason = "expected " + std::string(reports::to_string(c.status)) + ": " + c.reason;
  c.expected_status = c.status;
  c.status = Status::xfail;
}

}  // namespace

bool names_case(const Expectation& x, const CaseResult& c) { return line_names(x, c); }

void ExpectationUse::apply(CaseResult& c, const std::string& driver_version) {
  const auto& lines = e_->entries();
  if (c.status == Status::flaky) {
    // A known flake: still flaky (never hidden), marked expected. reason= matches the failure.
    apply_flaky_lines(lines, matched_, c, driver_version);
    return;
  }
  if (c.status == Status::skip && !c.skip_by.empty()) {
    // Lost coverage that is known: the case stays skip, its expectation named (report diff).
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const Expectation& x = lines[i];
      if (x.status != Status::skip || !version_in_range(driver_version, x.driver) || !line_names(x, c) ||
          !optional_glob(x.match.reason, c.reason))
        continue;
      ++matched_[i];
      c.expectation = x.explain() + " (" + x.where + ")";
      return;
    }
    return;
  }
  if (!reports::is_judged(c.status) || c.status == Status::pass || c.status == Status::xfail) return;
  // Lines naming the case (by id, or a clause it checks) whose driver range holds.
  ProblemCoverage p{lines, {}, {}, 0, 0, nullptr, true};
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (version_in_range(driver_version, lines[i].driver) && line_names(lines[i], c)) p.candidates.push_back(i);
  if (p.candidates.empty()) return;
  // Every problem of the case must be covered, each by a line of its own kind. A case with a
  // leak and a failed check needs both covered; what no line covers stays.
  cover_problems(p, c);
  for (std::size_t i : p.used) ++matched_[i];
  if (p.used.empty()) return;
  if (p.covered < p.total) {
    note_partial_coverage(p, c);
    return;
  }
  mark_expected(p, c);
}

json ExpectationUse::report(const std::vector<CaseResult>& cases, const std::string& driver_version) const {
  json lines = json::array();
  json stale_list = json::array();
  const auto& entries = e_->entries();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& x = entries[i];
    const bool applies = version_in_range(driver_version, x.driver);
    const bool ran = std::any_of(cases.begin(), cases.end(), [&](const CaseResult& c) {
      return reports::is_judged(c.status) && line_names(x, c);
    });
    json l = {{"where", x.where}, {"pattern", x.pattern}, {"status", reports::to_string(x.status)},
              {"matched", matched_[i]}, {"applies", applies}};
    if (!x.match.empty()) l["match"] = x.match.describe();
    if (!x.driver.empty()) l["driver"] = x.driver;
    if (!x.block.empty()) l["block"] = x.block;
    lines.push_back(l);
    // A flaky line is never stale: a flake passes on most runs.
    if (applies && ran && matched_[i] == 0 && x.status != Status::flaky) stale_list.push_back(x.where);
  }
  return {{"file", e_->path}, {"lines", lines}, {"stale", stale_list}};
}

std::vector<std::string> ExpectationUse::stale(const std::vector<CaseResult>& cases,
                                               const std::string& driver_version) const {
  std::vector<std::string> out;
  const auto& entries = e_->entries();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& x = entries[i];
    if (matched_[i] || x.status == Status::flaky || !version_in_range(driver_version, x.driver)) continue;
    const bool ran = std::any_of(cases.begin(), cases.end(), [&](const CaseResult& c) {
      return reports::is_judged(c.status) && line_names(x, c);
    });
    if (ran)
      out.push_back(x.where + ": " + x.pattern + " " + reports::to_string(x.status) +
                    (x.match.empty() ? "" : " " + x.match.describe()) +
                    ": matched nothing in this run (the deviation is gone or changed: update or remove the line)");
  }
  return out;
}

}  // namespace ipcheck::verdict
