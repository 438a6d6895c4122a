// Checks and cases (verdict.hpp): the profiles an adapter is judged on, a reported check
// judged by its clause's level and profile, a case's status from what the runner saw
// (classify), and one case from its attempts (--rerun-failures). The expectations are
// verdict_expectations.cpp's, clause coverage verdict_coverage.cpp's.
#include "ipcheck/verdict.hpp"
#include "ipcheck/reports/seeded.hpp"

#include <signal.h>

#include <algorithm>
#include <set>
#include <stdexcept>

#include "ipcheck/spawn.hpp"  // last_line

namespace ipcheck::verdict {

using nlohmann::json;
using reports::CaseResult;
using reports::Check;
using reports::CheckResult;
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

}  // namespace ipcheck::verdict
