// The Markdown report: summary counts, then problems first, then the cases by area, clause
// coverage and observations. Reads well as plain text and in a merge request.
#include <algorithm>
#include <map>

#include "ipcheck/reports/render.hpp"
#include "ipcheck/reports/sections.hpp"
#include "text.hpp"

namespace ipcheck::reports {

using text::fmt;
using text::md;
using text::md_code;

namespace {

const char* problem_title(Status s) {
  switch (s) {
    case Status::crash: return "Crashes";
    case Status::timeout: return "Timeouts";
    case Status::leak: return "Leaks";
    case Status::fail: return "Failures";
    case Status::incomplete: return "Incomplete";
    case Status::error: return "Harness errors (nothing judged; not the adapter's)";
    default: return "";
  }
}

void run_table(std::string& s, const Results& r) {
  const RunInfo& run = r.run;
  std::string profiles;
  for (const auto& p : run.profiles) profiles += (profiles.empty() ? "" : ", ") + p;
  s += "| run | |\n|---|---|\n";
  s += "| adapter | " + md_code(run.adapter) + (profiles.empty() ? "" : " (profiles " + md(profiles) + ")") + " |\n";
  s += "| driver | " + md(text::driver_of(run)) + " |\n";
  if (!text::devices_of(run).empty()) s += "| devices | " + md(text::devices_of(run)) + " |\n";
  if (!run.kernel.empty()) s += "| kernel | " + md(run.kernel) + " |\n";
  s += "| ipcheck | " + md(run.ipcheck_version) + " |\n";
  s += "| started | " + md(run.start) + " (" + text::duration(run.duration_s) + ") |\n";
  s += "| audit | " + md(run.audit) + (run.audit_note.empty() ? "" : ": " + md(run.audit_note)) + " |\n";
  if (!run.transport.empty()) s += "| transport | " + md(run.transport) + " |\n";
}

// What a person needs to start on a problem: the failed checks, the roles' ends, leaks, output.
void problem_details(std::string& s, const CaseResult& c) {
  for (const auto& k : c.checks)
    if (k.result == CheckResult::fail)
      s += std::string("  - ") + text::failed_word(k) + " " + md_code(k.clause) + (k.expected ? " (expected)" : "") + " (" + md(k.role) + ", decided by " +
           md(text::decided_by(k)) + "): " + md(k.message) + (k.where.empty() ? "" : " at " + md_code(k.where)) + "\n";
  for (const auto& f : c.findings)
    s += "  - left behind by " + md(f.role) + ": " + md(f.kind) + " " + md_code(f.item) +
         (f.verb.empty() ? "" : " from " + md(f.verb)) + (f.detail.empty() ? "" : " (" + md(f.detail) + ")") + "\n";
  if (!c.roles.empty()) {
    std::string ends;
    for (const auto& r : c.roles) ends += (ends.empty() ? "" : "; ") + r.name + ": " + r.exit;
    s += "  - roles: " + md(ends) + "\n";
  }
  for (const auto& r : c.roles) {
    const std::string tail = text::trim_end(text::plain(r.output_tail));
    if (tail.empty()) continue;
    s += "  - " + md(r.name) + " output (tail):\n\n";
    std::string fence = text::md_fence(tail);
    std::string indented;
    std::size_t start = 0;
    while (start < fence.size()) {
      const auto nl = fence.find('\n', start);
      indented += "    " + fence.substr(start, nl - start + 1);
      start = nl + 1;
    }
    s += indented;
  }
}

// The number of cases of each status, problems first.
void markdown_summary(std::string& s, const Results& r) {
  s += "\n## Summary\n\n| status | cases |\n|---|---:|\n";
  for (Status st : text::kProblemsFirst) {
    if (const int n = r.summary.of(st)) s += std::string("| ") + to_string(st) + " | " + std::to_string(n) + " |\n";
  }
  s += fmt("| **total** | **%d** |\n", r.summary.total);
}

// The regressions against the baseline; true when there is one.
bool markdown_regressions(std::string& s, const Diff& d) {
  s += "\n### Regressions against " + md_code(d.old_run.label) + " (" + std::to_string(d.regressions.size()) + ")\n\n";
  if (d.regressions.empty()) {
    s += "None: no case has a worse status than in the baseline (" +
         md(d.old_run.driver_name + " " + d.old_run.driver_version) + ").\n";
    return false;
  }
  s += "| case | baseline | now | reason |\n|---|---|---|---|\n";
  for (const auto& c : d.regressions)
    s += "| " + md_code(c.id) + " | " + to_string(c.from) + " | **" + to_string(c.to) + "** | " + md(c.reason) + " |\n";
  return true;
}

// Cases that did not run in the baseline and fail now; true when there is one.
bool markdown_new_failures(std::string& s, const Diff& d) {
  if (d.new_failures.empty()) return false;
  s += "\n### New failures: not run in the baseline, failing now (" + std::to_string(d.new_failures.size()) + ")\n\n";
  s += "| case | baseline | now | reason |\n|---|---|---|---|\n";
  for (const auto& f : d.new_failures)
    s += "| " + md_code(f.id) + " | " + (f.from ? to_string(*f.from) : "(absent)") + " | **" + to_string(f.to) + "** | " +
         md(f.reason) + " |\n";
  return true;
}

// Regressions against the baseline (when given), then the cases of each problem status.
void markdown_problems(std::string& s, const Results& r, const RenderOptions& o) {
  s += "\n## Problems\n";
  bool any = false;
  if (o.baseline) {
    any = markdown_regressions(s, *o.baseline);
    any = markdown_new_failures(s, *o.baseline) || any;
  }
  for (Status st : {Status::crash, Status::timeout, Status::leak, Status::fail, Status::error, Status::incomplete}) {
    std::vector<const CaseResult*> list;
    for (const auto& c : r.cases)
      if (c.status == st) list.push_back(&c);
    if (list.empty()) continue;
    any = true;
    s += fmt("\n### %s (%zu)\n\n", problem_title(st), list.size());
    for (const CaseResult* c : list) {
      s += "- " + md_code(c->id) + ": " + md(text::first_line(c->reason)) + "\n";
      problem_details(s, *c);
    }
  }
  if (!any) s += "\nNone: every case passed, was skipped, or failed as its expectation says.\n";
}

// Flaky cases, each with its attempts.
void markdown_flaky(std::string& s, const std::vector<const CaseResult*>& flaky) {
  if (flaky.empty()) return;
  s += fmt("\n## Flaky: passed on a rerun (%zu)\n\nNot a failure of the run, and never a regression; each attempt ran in "
           "fresh processes.\n\n",
           flaky.size());
  for (const CaseResult* c : flaky) {
    s += "- " + md_code(c->id) + ": " + md(text::first_line(c->reason)) +
         (c->expectation.empty() ? "" : "; expected: " + md(c->expectation)) + "\n";
    for (std::size_t i = 0; i < c->attempts.size(); ++i)
      s += fmt("  - attempt %zu: ", i + 1) + to_string(c->attempts[i].status) +
           (c->attempts[i].reason.empty() ? "" : ": " + md(text::first_line(c->attempts[i].reason))) + "\n";
  }
}

// What is not a problem but worth a look: expected failures, flaky and skipped cases, warnings.
void markdown_not_problems(std::string& s, const Results& r) {
  std::vector<const CaseResult*> xfails, flaky, skips, warned;
  for (const auto& c : r.cases) {
    if (c.status == Status::xfail) xfails.push_back(&c);
    if (c.status == Status::flaky) flaky.push_back(&c);
    if (c.status == Status::skip) skips.push_back(&c);
    if (!c.warnings.empty()) warned.push_back(&c);
  }
  if (!xfails.empty()) {
    s += fmt("\n## Expected failures (%zu)\n\n", xfails.size());
    for (const CaseResult* c : xfails)
      s += "- " + md_code(c->id) + ": " + md(text::first_line(c->reason)) +
           (c->expectation.empty() ? "" : "; expectation: " + md(c->expectation)) + "\n";
  }
  markdown_flaky(s, flaky);
  if (!skips.empty()) {
    s += fmt("\n## Skipped (%zu)\n\n", skips.size());
    for (const CaseResult* c : skips) s += "- " + md_code(c->id) + ": " + md(text::first_line(c->reason)) + "\n";
  }
  if (!warned.empty()) {
    s += "\n## Warnings\n\n";
    for (const CaseResult* c : warned)
      for (const auto& w : c->warnings) s += "- " + md_code(c->id) + ": " + md(w) + "\n";
  }
}

// Every case, one table per area.
void markdown_areas(std::string& s, const Results& r) {
  s += "\n## Cases by area\n";
  std::map<std::string, std::vector<const CaseResult*>> areas;
  for (const auto& c : r.cases) areas[c.area.empty() ? "(no area)" : c.area].push_back(&c);
  for (const auto& [area, list] : areas) {
    int ok = 0;
    for (const CaseResult* c : list) ok += is_problem(c->status) ? 0 : 1;
    s += "\n### " + md(area) + " (" + text::plural(static_cast<long long>(list.size()), "case", "cases") +
         fmt(", %d without problems)\n\n", ok);
    s += "| case | status | time | reason |\n|---|---|---:|---|\n";
    for (const CaseResult* c : list)
      s += "| " + md_code(c->id) + " | " + (is_problem(c->status) ? "**" + std::string(to_string(c->status)) + "**"
                                                                  : std::string(to_string(c->status))) +
           " | " + text::duration(c->duration_s) + " | " + md(text::first_line(c->reason)) + " |\n";
  }
}

// The clauses no case judged in this run, on one line.
void markdown_not_run(std::string& s, const std::vector<const ClauseInfo*>& not_run) {
  if (not_run.empty()) return;
  s += fmt("\nNot run in this run (%zu): ", not_run.size());
  std::string list;
  for (const ClauseInfo* k : not_run)
    list += (list.empty() ? "" : ", ") + md_code(k->id) +
            (k->cases.empty() ? (k->uncovered_reason.empty() ? " (no case yet)" : " (" + md(k->uncovered_reason) + ")")
                              : "");
  s += list + ".\n";
}

// Each clause's verdict and who decided its passing checks; the clauses not run after.
void markdown_clauses(std::string& s, const Results& r) {
  if (r.clauses.empty()) return;
  const std::string line = text::verdicts_line(r.clauses);
  s += fmt("\n## Clause coverage\n\n%zu clauses: %s. `pass`: decided by the runtime under test; "
           "`emulated`: every passing check was decided by the adapter or by ipcheck, not by the runtime.\n\n",
           r.clauses.size(), line.c_str());
  s += "| clause | level | verdict | passing checks decided by | cases |\n|---|---|---|---|---|\n";
  std::vector<const ClauseInfo*> not_run;
  for (const auto& k : r.clauses) {
    if (k.verdict == ClauseVerdict::not_run) {
      not_run.push_back(&k);
      continue;
    }
    std::string cases;
    for (const auto& c : k.cases) cases += (cases.empty() ? "" : ", ") + md_code(c);
    const bool bad = k.verdict == ClauseVerdict::fail;
    s += "| " + md_code(k.id) + " | " + to_string(k.level) + " | " +
         (bad ? "**" + text::verdict_word(k) + "**" : text::verdict_word(k)) + " | " + md(text::decided_line(k)) + " | " + cases +
         " |\n";
  }
  markdown_not_run(s, not_run);
}

void markdown_observations(std::string& s, const Results& r) {
  s += "\n## Observations\n\n";
  bool observed = false;
  for (const auto& c : r.cases)
    for (const auto& [k, v] : c.observations) {
      if (!observed) s += "| case | observation | value |\n|---|---|---|\n";
      observed = true;
      s += "| " + md_code(c.id) + " | " + md_code(k) + " | " + md(v) + " |\n";
    }
  if (!observed) s += "None recorded.\n";
}

// The fuzz campaign, when the run has one: its figures, the oracle's counts and its findings.
void markdown_fuzzing(std::string& s, const Results& r) {
  const FuzzSummary f = fuzz_summary(r);
  if (!f.present) return;
  s += "\n## Fuzzing\n\n" + md(f.target.empty() ? "campaign" : f.target) +
       fmt(": %lld executions in %s (%.0f per second), seed %lld", f.executions, text::duration(f.duration_s).c_str(),
           f.exec_per_s, f.seed) +
       (f.status.empty() || f.status == "completed" ? std::string(".") : "; " + md(f.status) + ": " + md(f.reason)) +
       "\n\n";
  for (const auto& u : f.unexported) s += "Not exported (kept as a decoy): " + md(u) + "\n\n";
  for (const auto& c : f.calibration) s += "Calibrated: " + md(c) + "\n\n";
  if (!f.verdicts.empty()) {
    s += "| verdict | executions |\n|---|---:|\n";
    for (const auto& [k, v] : f.verdicts) s += "| " + md(k) + fmt(" | %lld |\n", v);
  }
  if (!f.error_codes.empty()) {
    s += "\n| open returned | executions |\n|---|---:|\n";
    for (const auto& [k, v] : f.error_codes) s += "| " + md_code(k) + fmt(" | %lld |\n", v);
  }
  s += fmt("\nFindings: %zu.\n", f.findings.size());
  for (const auto& x : f.findings)
    s += "- " + md(x.outcome) + (x.clause.empty() ? "" : " (" + md_code(x.clause) + ")") + " from " +
         md(x.mutation) + ": " + md(x.detail) + " (reproducer " + md_code(x.reproducer) + ")\n";
}

void markdown_benchmarks(std::string& s, const Results& r) {
  const auto bench = benchmarks(r);
  if (bench.empty()) return;
  s += "\n## Benchmarks\n\n| benchmark | median | spread | repetitions | floor | ratio |\n|---|---:|---:|---:|---:|---:|\n";
  for (const auto& b : bench)
    s += "| " + md_code(b.name) + " | " + text::number(b.median) + " " + md(b.unit) + " | " + text::number(b.spread) +
         " (" + md(b.spread_kind) + ") | " + std::to_string(b.repetitions) + " | " +
         (b.floor > 0 ? text::number(b.floor) + " " + md(b.unit) : "-") + " | " +
         (b.ratio > 0 ? fmt("%.2fx", b.ratio) : "-") + " |\n";
}

}  // namespace

std::string render_markdown(const Results& r, const RenderOptions& o) {
  std::string s = "# ipcheck results: " + md(r.run.adapter) + ", " + md(text::driver_of(r.run)) + "\n\n";
  s += "**" + md(text::counts_line(r.summary)) + fmt("; %d unexpected**", r.summary.unexpected) + "\n\n";
  run_table(s, r);
  markdown_summary(s, r);
  markdown_problems(s, r, o);
  markdown_not_problems(s, r);
  markdown_areas(s, r);
  markdown_clauses(s, r);
  markdown_observations(s, r);
  markdown_fuzzing(s, r);
  markdown_benchmarks(s, r);
  return s;
}

}  // namespace ipcheck::reports
