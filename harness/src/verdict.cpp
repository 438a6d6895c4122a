#include "ipcheck/verdict.hpp"
#include "ipcheck/reports/seeded.hpp"

#include <signal.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "ipcheck/spawn.hpp"  // last_line

namespace ipcheck::verdict {

using nlohmann::json;
using reports::CaseResult;
using reports::Check;
using reports::CheckResult;
using reports::ClauseVerdict;
using reports::Decider;
using reports::Status;

namespace {
constexpr const char* kUniversal[] = {"harness", "rb"};

std::string profile_of(const std::string& clause) { return clause.substr(0, clause.find('.')); }
}  // namespace

bool judged_on(const std::string& profile, const std::vector<std::string>& claimed) {
  return std::find(std::begin(kUniversal), std::end(kUniversal), profile) != std::end(kUniversal) ||
         std::find(claimed.begin(), claimed.end(), profile) != claimed.end();
}

std::vector<std::string> judged_profiles(const std::vector<std::string>& claimed) {
  std::set<std::string> all(claimed.begin(), claimed.end());
  all.insert(std::begin(kUniversal), std::end(kUniversal));
  all.erase("harness");  // judged everywhere, but not a profile a reader looks for
  return {all.begin(), all.end()};
}

// ---------------------------------------------------------------- checks

CheckReport CheckReport::from(bool ok, const Evidence& e, std::string_view clause, std::string message,
                              std::string where, bool setup) {
  CheckReport r;
  r.clause = std::string(clause);
  r.ok = ok;
  r.message = std::move(message);
  r.where = std::move(where);
  r.by = e.by;
  r.call = e.call;
  r.native = e.native;
  r.native_name = e.native_name;
  r.setup = setup;
  return r;
}

json CheckReport::to_json() const {
  json j = {{"clause", clause}, {"ok", ok}, {"message", message}, {"where", where}, {"by", reports::to_string(by)}};
  if (!call.empty()) j["call"] = call;
  if (native != 0 || !native_name.empty()) {
    j["native"] = native;
    j["native_name"] = native_name;
  }
  if (setup) j["setup"] = true;
  return j;
}

CheckReport CheckReport::from_json(const json& j) {
  if (!j.is_object()) throw std::invalid_argument("a check report is not a JSON object");
  CheckReport r;
  auto text = [&](const char* key, std::string& out, bool required) {
    auto it = j.find(key);
    if (it == j.end()) {
      if (required) throw std::invalid_argument(std::string("a check report has no \"") + key + "\"");
      return;
    }
    if (!it->is_string()) throw std::invalid_argument(std::string("a check report's \"") + key + "\" is not text");
    out = it->get<std::string>();
  };
  text("clause", r.clause, true);
  text("message", r.message, false);
  text("where", r.where, false);
  text("call", r.call, false);
  text("native_name", r.native_name, false);
  if (auto it = j.find("ok"); it == j.end() || !it->is_boolean())
    throw std::invalid_argument("a check report's \"ok\" is missing or not true/false");
  else
    r.ok = it->get<bool>();
  std::string by = "harness";
  text("by", by, false);
  const auto d = reports::parse_decider(by);
  if (!d) throw std::invalid_argument("a check report's \"by\" is \"" + by + "\", not runtime, adapter or harness");
  r.by = *d;
  if (auto it = j.find("native"); it != j.end() && it->is_number_integer()) r.native = it->get<long long>();
  if (auto it = j.find("setup"); it != j.end() && it->is_boolean()) r.setup = it->get<bool>();
  return r;
}

JudgedCheck judge_check(const CheckReport& r, const std::string& role, const std::vector<std::string>& claimed) {
  JudgedCheck out;
  Check& c = out.check;
  c.clause = r.clause;
  c.role = role;
  c.message = r.message;
  c.where = r.where;
  c.decided_by = r.by;
  c.call = r.call;
  c.native = r.native;
  c.native_name = r.native_name;
  c.setup = r.setup;
  const std::string profile = profile_of(r.clause);
  const Clause* clause = find_clause(r.clause);
  if (!clause && profile != "harness")
    out.warning = "check names clause '" + r.clause + "', which the catalog lacks";
  c.level = clause ? clause->level : reports::Level::must;
  // An observe-level clause records what was seen, whichever way it went.
  if (c.level == reports::Level::observe)
    c.result = CheckResult::observed;
  else if (r.ok)
    c.result = CheckResult::pass;
  else if (!judged_on(profile, claimed))
    c.result = CheckResult::observed;
  else if (c.level == reports::Level::should)
    c.result = CheckResult::warn;
  else
    c.result = CheckResult::fail;
  if (c.result == CheckResult::warn) out.warning = r.clause + ": " + r.message;
  return out;
}

reports::Check observation_check(const std::string& role, const std::string& name, const std::string& value,
                                 const std::string& clause) {
  Check c;
  c.clause = clause;
  c.role = role;
  c.level = reports::Level::observe;
  c.result = CheckResult::observed;
  c.decided_by = Decider::harness;
  c.message = name + " = " + value;
  return c;
}

// ---------------------------------------------------------------- cases

void classify(const CaseFacts& f, CaseResult& c) {
  auto set = [&](Status s, std::string reason) {
    c.status = s;
    c.reason = std::move(reason);
  };
  if (f.interrupted) return set(Status::incomplete, "the run was interrupted before this case finished");
  // Faults of the harness or the machine first: whatever the roles did after one is not the adapter's.
  for (const auto& r : f.roles)
    if (!r.started) return set(Status::error, "role " + r.name + " could not be started: " + r.start_error);
  if (!f.harness_errors.empty()) return set(Status::error, f.harness_errors.front());
  if (f.timed_out) return set(Status::timeout, f.termination_reason + " (" + f.waiting_where + ")");
  for (const auto& r : f.roles)
    if (r.exit && !r.exit->exited && !r.expected_death) {
      // The machine's file size limit stopped the role (roles keep SIGXFSZ's default): not
      // the adapter's crash.
      if (r.exit->signal == SIGXFSZ)
        return set(Status::error, r.name + " was stopped by SIGXFSZ: a file grew past the file size limit (ulimit -f); "
                                  "raise it (ulimit -f unlimited) and run again");
      // SIGKILL is the machine's only where its own record says so (the OOM killer); the
      // harness's own kills are expected deaths or timeouts, judged above.
      if (r.exit->signal == SIGKILL && (!r.machine_kill.empty() || seeded::is("sigkill_is_machine")))
        return set(Status::error, r.name + " was killed by SIGKILL, and " + r.machine_kill +
                                  ": the machine's doing, not the adapter's crash");
      std::string why = r.name + " died by " + signal_name(r.exit->signal);
      const std::string last = last_line(r.output_tail);
      if (!last.empty()) why += " (last output: " + last + ")";
      return set(Status::crash, why);
    }
  if (!c.findings.empty()) {
    const auto& x = c.findings.front();
    return set(Status::leak, x.role + " left " + std::to_string(c.findings.size()) + " item(s) behind, first: " + x.kind +
                                 " " + x.item);
  }
  for (const auto& k : c.checks)
    if (k.result == CheckResult::fail)
      return set(Status::fail,
                 "[" + k.role + "] " + k.clause + ": " + k.message + (k.where.empty() ? "" : " (" + k.where + ")"));
  for (const auto& r : f.roles)
    if (r.exit && r.exit->exited && r.exit->code != 0 && !r.expected_death)
      return set(Status::fail, r.name + " exited with code " + std::to_string(r.exit->code) +
                                   (r.done ? "" : " before finishing") + ": " + last_line(r.output_tail));
  for (const auto& r : f.roles)
    if (r.exit && !r.done && !r.expected_death && !r.skipped)
      return set(Status::fail,
                 r.name + " ended (" + r.exit->describe() + ") without finishing its body: " + last_line(r.output_tail));
  if (!f.skip_reason.empty()) {
    c.skip_by = f.skip_by;
    return set(Status::skip, f.skip_reason);
  }
  // A catalog that cannot do what it declares is ipcheck's fault, not the adapter's.
  if (f.inject && !f.injected)
    return set(Status::error, "the injection point " + f.inject->describe() + " was never reached: no " + f.inject->role +
                                  " announced step '" + f.inject->step + "' (see Case::steps and Role::step)");
  if (f.checks == 0 && c.observations.empty())
    return set(Status::error, "the case made no check and no observation; a case must judge something (a catalog bug)");
  set(Status::pass, "");
}

// ---------------------------------------------------------------- attempts

bool wants_rerun(const CaseResult& c) {
  switch (c.status) {
    case Status::fail:
    case Status::leak:
    case Status::timeout:
    case Status::crash:
    case Status::error: return true;
    default: return false;
  }
}

CaseResult combine_attempts(std::vector<CaseResult> attempts) {
  if (attempts.empty()) throw std::invalid_argument("combine_attempts: no attempt");
  if (attempts.size() == 1) return std::move(attempts.front());
  double total_s = 0;
  std::string statuses;
  for (auto& a : attempts) {
    a.attempts.clear();
    total_s += a.duration_s;
    statuses += (statuses.empty() ? "" : ", ") + std::string(reports::to_string(a.status));
  }
  const std::size_t n = attempts.size();
  const std::string of_n = " of " + std::to_string(n);
  CaseResult out;
  if (attempts.back().status == Status::pass) {
    out = attempts.back();
    const auto failed = std::find_if(attempts.begin(), attempts.end() - 1, [](const CaseResult& a) {
      return reports::is_judged(a.status) && !seeded::is("rerun_pass_is_pass");
    });
    if (failed != attempts.end() - 1) {
      out.status = Status::flaky;
      out.reason = "passed on attempt " + std::to_string(n) + of_n + " after attempt " +
                   std::to_string(failed - attempts.begin() + 1) + " was " + reports::to_string(failed->status) + ": " +
                   failed->reason;
    } else {
      // Only harness errors before: they judged nothing, so the pass is the verdict.
      for (std::size_t i = 0; i + 1 < n; ++i)
        out.warnings.push_back("attempt " + std::to_string(i + 1) + of_n + " was a harness error, not judged: " +
                               attempts[i].reason);
    }
  } else {
    const auto judged = std::find_if(attempts.begin(), attempts.end(),
                                     [](const CaseResult& a) { return reports::is_judged(a.status); });
    out = judged != attempts.end() ? *judged : attempts.front();
    out.warnings.push_back("ran " + std::to_string(n) + " times in fresh processes (--rerun-failures), never passed: " +
                           statuses);
  }
  out.duration_s = total_s;
  out.attempts = std::move(attempts);
  return out;
}

// ---------------------------------------------------------------- expectations

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

// ---------------------------------------------------------------- coverage

namespace {

struct Tally {
  int runtime = 0, adapter = 0, harness = 0, unknown = 0;
  int failed = 0, expected_failed = 0, warned = 0, observed = 0;
  std::set<std::string> ran;
};

void count_check(Tally& t, const Check& k) {
  switch (k.result) {
    case CheckResult::fail:
      if (seeded::is("coverage_ignores_failed_check")) break;
      ++t.failed;
      if (k.expected) ++t.expected_failed;
      break;
    case CheckResult::warn: ++t.warned; break;
    case CheckResult::observed: ++t.observed; break;
    case CheckResult::pass:
      if (k.setup) break;  // a step the clause stands on decides nothing about it
      switch (k.decided_by) {
        case Decider::runtime: ++t.runtime; break;
        case Decider::adapter: ++t.adapter; break;
        case Decider::harness: ++t.harness; break;
        case Decider::unknown: ++t.unknown; break;
      }
      break;
  }
}

}  // namespace

std::vector<reports::ClauseInfo> catalog_clauses() {
  std::vector<reports::ClauseInfo> out;
  for (const auto& k : clauses()) {
    reports::ClauseInfo ci;
    ci.id = k.id;
    ci.profile = k.profile();
    ci.level = k.level;
    ci.source = k.source;
    ci.statement = k.statement;
    ci.uncovered_reason = k.uncovered_reason;
    ci.basis_kind = k.basis_kind();
    ci.basis = k.basis;
    for (const auto& c : cases())
      if (!c.hidden && std::find(c.clauses.begin(), c.clauses.end(), k.id) != c.clauses.end()) ci.cases.push_back(c.id);
    out.push_back(std::move(ci));
  }
  return out;
}

void fill_clause_coverage(reports::Results& r) { fill_clause_coverage(r, catalog_clauses()); }

void fill_clause_coverage(reports::Results& r, std::vector<reports::ClauseInfo> catalog) {
  r.clauses.clear();
  std::map<std::string, Tally> tallies;
  for (const auto& c : r.cases) {
    // A skipped, interrupted, errored or flaky case judged nothing, whatever it checked on the way.
    if (!reports::is_judged(c.status)) continue;
    const Status underlying = c.status == Status::xfail && c.expected_status ? *c.expected_status : c.status;
    std::set<std::string> failed_here;
    for (const auto& k : c.checks) {
      Tally& t = tallies[k.clause];
      count_check(t, k);
      t.ran.insert(c.id);
      if (k.result == CheckResult::fail) failed_here.insert(k.clause);
    }
    // A case that crashed, hung, leaked or failed without naming a check fails every clause
    // it checks (which one broke cannot be told); expected when the case is xfail.
    const bool whole_case = underlying == Status::crash || underlying == Status::timeout ||
                            underlying == Status::leak || (underlying == Status::fail && failed_here.empty());
    if (whole_case)
      for (const auto& id : c.clauses) {
        Tally& t = tallies[id];
        ++t.failed;
        if (c.status == Status::xfail) ++t.expected_failed;
        t.ran.insert(c.id);
      }
  }
  for (auto& from : catalog) {
    reports::ClauseInfo ci;
    ci.id = std::move(from.id);
    ci.profile = std::move(from.profile);
    ci.level = from.level;
    ci.source = std::move(from.source);
    ci.statement = std::move(from.statement);
    ci.uncovered_reason = std::move(from.uncovered_reason);
    ci.basis_kind = from.basis_kind;
    ci.basis = std::move(from.basis);
    ci.cases = std::move(from.cases);
    const auto it = tallies.find(ci.id);
    if (it != tallies.end()) {
      const Tally& t = it->second;
      ci.by_runtime = t.runtime;
      ci.by_adapter = t.adapter;
      ci.by_harness = t.harness;
      ci.by_unknown = t.unknown;
      ci.failed = t.failed;
      ci.ran.assign(t.ran.begin(), t.ran.end());
      if (t.failed > t.expected_failed)
        ci.verdict = ClauseVerdict::fail;
      else if (t.failed > 0)
        ci.verdict = ClauseVerdict::xfail;
      else if (t.warned > 0)
        ci.verdict = ClauseVerdict::warn;
      else if (t.runtime > 0)
        ci.verdict = ClauseVerdict::pass;
      else if (t.adapter + t.harness + t.unknown > 0)
        ci.verdict = ClauseVerdict::emulated;
      else if (t.observed > 0)
        ci.verdict = ClauseVerdict::observed;
      else
        ci.verdict = ClauseVerdict::not_run;  // only set-up steps of it ran
    }
    r.clauses.push_back(std::move(ci));
  }
}

}  // namespace ipcheck::verdict
