// Clause coverage over a run (verdict.hpp, fill_clause_coverage): every clause of the
// catalog with its cases, what decided it and its verdict (pass only where the runtime under
// test decided).
#include "ipcheck/verdict.hpp"
#include "ipcheck/reports/seeded.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace ipcheck::verdict {

using reports::Check;
using reports::CheckResult;
using reports::ClauseVerdict;
using reports::Decider;
using reports::Status;

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
