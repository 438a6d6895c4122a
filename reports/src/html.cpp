// The HTML page of one run: self-contained (inline style, script and SVG), readable without
// script; the script adds sorting, filtering and opening a case's details in place.
#include <cctype>
#include <map>

#include "html_page.hpp"
#include "ipcheck/reports/render.hpp"
#include "ipcheck/reports/sections.hpp"
#include "svg.hpp"
#include "text.hpp"

namespace ipcheck::reports {

using html_page::badge;
using text::fmt;
using text::html;

namespace {

// Sorting and filtering of the case table. The address can carry a view:
// report.html#status=crash&q=memory&sort=-time&open=<id> (and #case-<id> opens that case).
constexpr const char* kScript = R"(
(function () {
  const table = document.getElementById('case-table');
  if (!table) return;
  const bodies = Array.from(table.querySelectorAll('tbody.case'));
  const query = document.getElementById('filter');
  const status = document.getElementById('status-filter');
  const shown = document.getElementById('shown');
  let key = '', dir = 1;
  function apply() {
    const text = query.value.trim().toLowerCase();
    const want = status.value;
    let n = 0;
    for (const b of bodies) {
      const ok = (!want || b.dataset.status === want || (want === 'problems' && b.dataset.problem === '1')) &&
                 (!text || b.dataset.search.includes(text));
      b.hidden = !ok;
      if (ok) n++;
    }
    shown.textContent = n + ' of ' + bodies.length + ' cases';
    table.dataset.shown = n;
  }
  function sort(k, d) {
    key = k; dir = d;
    const numeric = k === 'rank' || k === 'time';
    bodies.sort(function (a, b) {
      const x = a.dataset[k] || '', y = b.dataset[k] || '';
      const c = numeric ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
      return c * d || a.dataset.index - b.dataset.index;
    });
    for (const b of bodies) table.appendChild(b);
    for (const th of table.querySelectorAll('th[data-key]'))
      th.setAttribute('aria-sort', th.dataset.key === k ? (d > 0 ? 'ascending' : 'descending') : 'none');
  }
  function save() {
    const p = new URLSearchParams();
    if (query.value) p.set('q', query.value);
    if (status.value) p.set('status', status.value);
    if (key) p.set('sort', (dir < 0 ? '-' : '') + key);
    try { history.replaceState(null, '', p.toString() ? '#' + p : location.pathname + location.search); } catch (e) {}
  }
  table.querySelector('thead').addEventListener('click', function (e) {
    const th = e.target.closest('th[data-key]');
    if (!th) return;
    const k = th.dataset.key;
    sort(k, key === k ? -dir : (k === 'rank' || k === 'time' ? -1 : 1));
    save();
  });
  table.addEventListener('click', function (e) {
    if (e.target.closest('a, pre, table table')) return;
    const row = e.target.closest('tr.row');
    if (row) row.parentNode.classList.toggle('open');
  });
  query.addEventListener('input', function () { apply(); save(); });
  status.addEventListener('change', function () { apply(); save(); });
  const hash = decodeURIComponent(location.hash.slice(1));
  if (hash.includes('=')) {
    const p = new URLSearchParams(hash);
    query.value = p.get('q') || '';
    status.value = p.get('status') || '';
    const s = p.get('sort');
    if (s) sort(s.replace(/^-/, ''), s[0] === '-' ? -1 : 1);
    for (const id of p.getAll('open')) {
      const b = document.getElementById('case-' + id);
      if (b) b.classList.add('open');
    }
  } else if (hash) {
    const b = document.getElementById(hash);
    if (b && b.classList.contains('case')) b.classList.add('open');
  }
  apply();
  table.dataset.ready = '1';
})();
)";

std::string case_anchor(const std::string& id) { return "case-" + id; }

std::string case_link(const std::string& id) {
  return "<a class=\"id\" href=\"#" + html(case_anchor(id)) + "\">" + html(id) + "</a>";
}

void run_header(std::string& s, const Results& r) {
  const RunInfo& run = r.run;
  s += "<header>\n<h1>ipcheck: " + html(run.adapter) + ", " + html(text::driver_of(run)) + "</h1>\n";
  s += "<p class=\"headline\"><strong>" + html(text::counts_line(r.summary)) + "</strong>; " +
       std::to_string(r.summary.unexpected) + " unexpected</p>\n<dl class=\"run\">\n";
  auto row = [&](const char* k, const std::string& v) {
    if (!v.empty()) s += std::string("<dt>") + k + "</dt><dd>" + v + "</dd>\n";
  };
  std::string profiles;
  for (const auto& p : run.profiles) profiles += (profiles.empty() ? "" : ", ") + p;
  row("adapter", "<code>" + html(run.adapter) + "</code>" + (profiles.empty() ? "" : " (profiles " + html(profiles) + ")"));
  row("driver", html(text::driver_of(run)));
  row("devices", html(text::devices_of(run)));
  row("kernel", html(run.kernel));
  row("ipcheck", html(run.ipcheck_version));
  row("started", html(run.start) + " (" + text::duration(run.duration_s) + ")");
  row("audit", html(run.audit) + (run.audit_note.empty() ? "" : ": " + html(run.audit_note)));
  row("transport", html(run.transport));
  s += "</dl>\n</header>\n";
}

void problems(std::string& s, const Results& r, const RenderOptions& o) {
  s += "<section id=\"problems\">\n<h2>Problems</h2>\n";
  bool any = false;
  if (o.baseline) {
    const Diff& d = *o.baseline;
    s += "<h3>Regressions against <code>" + html(d.old_run.label) + "</code> (" + std::to_string(d.regressions.size()) +
         ")</h3>\n";
    if (d.regressions.empty()) {
      s += "<p>None: no case has a worse status than in the baseline.</p>\n";
    } else {
      any = true;
      s += "<table class=\"regressions\"><thead><tr><th>case</th><th>baseline</th><th>now</th><th>reason</th></tr></thead><tbody>\n";
      for (const auto& c : d.regressions)
        s += "<tr><td>" + case_link(c.id) + "</td><td>" + badge(to_string(c.from)) + "</td><td>" + badge(to_string(c.to)) +
             "</td><td>" + html(c.reason) + "</td></tr>\n";
      s += "</tbody></table>\n";
    }
    if (!d.new_failures.empty()) {
      any = true;
      s += "<h3>New failures: not run in the baseline, failing now (" + std::to_string(d.new_failures.size()) + ")</h3>\n";
      s += "<table class=\"regressions\"><thead><tr><th>case</th><th>baseline</th><th>now</th><th>reason</th></tr></thead><tbody>\n";
      for (const auto& f : d.new_failures)
        s += "<tr><td>" + case_link(f.id) + "</td><td>" + (f.from ? badge(to_string(*f.from)) : std::string("(absent)")) +
             "</td><td>" + badge(to_string(f.to)) + "</td><td>" + html(f.reason) + "</td></tr>\n";
      s += "</tbody></table>\n";
    }
  }
  static const std::pair<Status, const char*> groups[] = {{Status::crash, "Crashes"},
                                                          {Status::timeout, "Timeouts"},
                                                          {Status::leak, "Leaks"},
                                                          {Status::fail, "Failures"},
                                                          {Status::error, "Harness errors (not the adapter's)"},
                                                          {Status::incomplete, "Incomplete"}};
  for (const auto& [st, title] : groups) {
    std::string items;
    int n = 0;
    for (const auto& c : r.cases)
      if (c.status == st) {
        ++n;
        items += "<li>" + case_link(c.id) + ": " + html(text::first_line(c.reason)) + "</li>\n";
      }
    if (!n) continue;
    any = true;
    s += fmt("<h3>%s (%d)</h3>\n<ul class=\"problems\">\n", title, n) + items + "</ul>\n";
  }
  if (!any) s += "<p>None: every case passed, was skipped, or failed as its expectation says.</p>\n";
  // Flaky cases fail nothing, but a person must see them.
  std::string flaky;
  int n = 0;
  for (const auto& c : r.cases)
    if (c.status == Status::flaky) {
      ++n;
      flaky += "<li>" + case_link(c.id) + ": " + html(text::first_line(c.reason)) +
               (c.expectation.empty() ? "" : " (expected: " + html(c.expectation) + ")") + "</li>\n";
    }
  if (n) s += fmt("<h3>Flaky: passed on a rerun (%d)</h3>\n<ul class=\"problems\">\n", n) + flaky + "</ul>\n";
  s += "</section>\n";
}

void details(std::string& s, const CaseResult& c) {
  if (!c.description.empty()) s += "<p>" + html(c.description) + "</p>\n";
  if (!c.reason.empty()) s += "<p><strong>" + html(to_string(c.status)) + ":</strong> " + html(c.reason) + "</p>\n";
  if (!c.expectation.empty()) s += "<p>expectation: " + html(c.expectation) + "</p>\n";
  if (!c.injection.empty()) s += "<p>fault injected at <code>" + html(c.injection) + "</code></p>\n";
  for (const auto& w : c.warnings) s += "<p>warning: " + html(w) + "</p>\n";
  if (!c.attempts.empty()) {
    s += "<p>attempts, each in fresh processes:</p>\n<ol>\n";
    for (const auto& a : c.attempts)
      s += "<li>" + badge(to_string(a.status)) + " " + text::duration(a.duration_s) +
           (a.reason.empty() ? "" : ": " + html(text::first_line(a.reason))) + "</li>\n";
    s += "</ol>\n";
  }
  if (!c.clauses.empty()) {
    std::string list;
    for (const auto& k : c.clauses) list += (list.empty() ? "" : ", ") + ("<code>" + html(k) + "</code>");
    s += "<p>clauses: " + list + "</p>\n";
  }
  if (!c.checks.empty()) {
    s += "<h4>Checks</h4>\n<table><thead><tr><th>clause</th><th>level</th><th>result</th><th>decided by</th>"
         "<th>role</th><th>message</th><th>where</th></tr></thead><tbody>\n";
    for (const auto& k : c.checks) {
      std::string result = k.result == CheckResult::fail
                               ? (text::hardening_clause(k.clause) ? "<strong>hardening</strong>" : "<strong>fail</strong>")
                               : html(to_string(k.result));
      if (k.expected) result += " (expected)";
      if (k.setup) result += " <span class=\"muted\">(set-up)</span>";
      s += "<tr><td><code>" + html(k.clause) + "</code></td><td>" + to_string(k.level) + "</td><td>" + result +
           "</td><td>" + html(text::decided_by(k)) + "</td><td>" + html(k.role) + "</td><td>" + html(k.message) +
           "</td><td><code>" + html(k.where) + "</code></td></tr>\n";
    }
    s += "</tbody></table>\n";
  }
  if (!c.observations.empty()) {
    s += "<h4>Observations</h4>\n<table><tbody>\n";
    for (const auto& [k, v] : c.observations) s += "<tr><td><code>" + html(k) + "</code></td><td>" + html(v) + "</td></tr>\n";
    s += "</tbody></table>\n";
  }
  if (!c.native_errors.empty()) {
    s += "<h4>Native errors</h4>\n<table><thead><tr><th>role</th><th>verb</th><th>errc</th><th>native</th><th>message</th>"
         "</tr></thead><tbody>\n";
    for (const auto& e : c.native_errors)
      s += "<tr><td>" + html(e.role) + "</td><td>" + html(e.verb) + "</td><td>" + html(e.errc) + "</td><td><code>" +
           html(e.native_name) + "</code> (" + std::to_string(e.native) + ")</td><td>" + html(e.message) + "</td></tr>\n";
    s += "</tbody></table>\n";
  }
  if (!c.findings.empty()) {
    s += "<h4>Left behind</h4>\n<table><thead><tr><th>role</th><th>kind</th><th>item</th><th>verb</th></tr></thead><tbody>\n";
    for (const auto& f : c.findings)
      s += "<tr><td>" + html(f.role) + "</td><td>" + html(f.kind) + "</td><td><code>" + html(f.item) + "</code>" +
           (f.detail.empty() ? "" : " " + html(f.detail)) + "</td><td>" + html(f.verb) + "</td></tr>\n";
    s += "</tbody></table>\n";
  }
  if (!c.roles.empty()) {
    s += "<h4>Roles</h4>\n";
    for (const auto& r : c.roles) {
      s += "<p><strong>" + html(r.name) + "</strong>: " + html(r.exit) + ", " + text::duration(r.duration_s);
      const auto audit = c.audit.find("roles");
      if (audit != c.audit.end() && audit->is_object() && audit->contains(r.name)) {
        const auto& a = (*audit)[r.name];
        if (a.contains("fds_before") && a.contains("fds_after"))
          s += "; descriptors " + html(a["fds_before"].dump()) + " before, " + html(a["fds_after"].dump()) + " after";
      }
      s += "</p>\n";
      const std::string tail = text::trim_end(text::plain(r.output_tail));
      s += tail.empty() ? "<p class=\"muted\">no output</p>\n" : "<pre>" + html(tail) + "</pre>\n";
    }
  }
}

void case_table(std::string& s, const Results& r) {
  s += "<section id=\"cases\">\n<h2>Cases</h2>\n<div class=\"controls\">\n"
       "<input type=\"search\" id=\"filter\" placeholder=\"filter by case, area or reason\" aria-label=\"filter cases\">\n"
       "<select id=\"status-filter\" aria-label=\"status\"><option value=\"\">all statuses</option>"
       "<option value=\"problems\">problems</option>";
  for (Status st : text::kProblemsFirst) {
    if (r.summary.of(st) > 0)
      s += std::string("<option value=\"") + to_string(st) + "\">" + to_string(st) + "</option>";
  }
  s += "</select>\n" + fmt("<span id=\"shown\" class=\"muted\">%zu of %zu cases</span>\n</div>\n", r.cases.size(), r.cases.size());
  s += "<table id=\"case-table\">\n<thead><tr><th data-key=\"id\">case</th><th data-key=\"area\">area</th>"
       "<th data-key=\"rank\">status</th><th data-key=\"time\">time</th><th>reason</th></tr></thead>\n";
  int index = 0;
  for (const auto& c : r.cases) {
    std::string search = c.id + " " + c.area + " " + to_string(c.status) + " " + c.reason;
    for (auto& ch : search) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    // Rank: worse is larger; skip and incomplete below pass so that a sort puts them apart.
    const int rank = c.status == Status::incomplete ? 6
                     : c.status == Status::error    ? 7
                     : c.status == Status::flaky    ? 1
                                                    : severity(c.status);
    s += "<tbody class=\"case\" id=\"" + html(case_anchor(c.id)) + "\" data-index=\"" + std::to_string(index++) +
         "\" data-id=\"" + html(c.id) + "\" data-area=\"" + html(c.area) + "\" data-status=\"" + to_string(c.status) +
         "\" data-rank=\"" + std::to_string(rank) + "\" data-time=\"" + fmt("%.6f", c.duration_s) + "\" data-problem=\"" +
         (is_problem(c.status) ? "1" : "0") + "\" data-search=\"" + html(search) + "\">\n";
    s += "<tr class=\"row\"><td>" + case_link(c.id) + "</td><td>" + html(c.area) + "</td><td>" + badge(to_string(c.status)) +
         "</td><td class=\"num\">" + text::duration(c.duration_s) + "</td><td>" + html(text::first_line(c.reason)) +
         "</td></tr>\n<tr class=\"details\"><td colspan=\"5\">\n";
    details(s, c);
    s += "</td></tr>\n</tbody>\n";
  }
  s += "</table>\n</section>\n";
}

void clause_section(std::string& s, const Results& r) {
  if (r.clauses.empty()) return;
  const std::string line = text::verdicts_line(r.clauses);
  s += fmt("<section id=\"clauses\">\n<h2>Clause coverage</h2>\n<p>%zu clauses: %s. <em>pass</em>: decided by the "
           "runtime under test; <em>emulated</em>: every passing check was decided by the adapter or by ipcheck.</p>\n",
           r.clauses.size(), line.c_str());
  s += "<table><thead><tr><th>clause</th><th>level</th><th>verdict</th><th>decided by</th><th>statement</th>"
       "<th>cases</th></tr></thead><tbody>\n";
  std::string not_run;
  int n_not_run = 0;
  for (const auto& k : r.clauses) {
    if (k.verdict == ClauseVerdict::not_run) {
      ++n_not_run;
      not_run += "<li><code>" + html(k.id) + "</code>: " + html(k.statement) +
                 (k.cases.empty() ? " <span class=\"muted\">(" +
                                        html(k.uncovered_reason.empty() ? "no case yet" : k.uncovered_reason) + ")</span>"
                                  : "") +
                 "</li>\n";
      continue;
    }
    std::string cases;
    for (const auto& c : k.cases) cases += (cases.empty() ? "" : ", ") + case_link(c);
    s += "<tr><td><code>" + html(k.id) + "</code></td><td>" + to_string(k.level) + "</td><td>" +
         (k.verdict == ClauseVerdict::fail ? "<strong>" + html(text::verdict_word(k)) + "</strong>" : html(text::verdict_word(k))) + "</td><td>" +
         html(text::decided_line(k)) + "</td><td>" + html(k.statement) +
         (k.basis.empty() ? (k.hardening() ? "<br><span class=\"muted\">basis: ipcheck's robustness profile (a hardening request)</span>" : "")
                          : "<br><span class=\"muted\">basis: " + html(k.basis) + "</span>") +
         "</td><td>" + cases + "</td></tr>\n";
  }
  s += "</tbody></table>\n";
  if (n_not_run)
    s += fmt("<details><summary>%d clauses not run</summary>\n<ul>\n", n_not_run) + not_run + "</ul>\n</details>\n";
  s += "</section>\n";
}

}  // namespace

std::string render_html(const Results& r, const RenderOptions& o) {
  std::string s = html_page::begin("ipcheck " + r.run.adapter + ": " + text::driver_of(r.run) + ", " +
                                   std::to_string(r.summary.unexpected) + " unexpected");
  run_header(s, r);
  s += "<main>\n<section id=\"summary\">\n<h2>Summary</h2>\n" + svg::status_bars(r.summary) + "</section>\n";
  problems(s, r, o);
  case_table(s, r);
  clause_section(s, r);

  s += "<section id=\"observations\">\n<h2>Observations</h2>\n";
  std::string rows;
  for (const auto& c : r.cases)
    for (const auto& [k, v] : c.observations)
      rows += "<tr><td>" + case_link(c.id) + "</td><td><code>" + html(k) + "</code></td><td>" + html(v) + "</td></tr>\n";
  s += rows.empty() ? "<p>None recorded.</p>\n"
                    : "<table><thead><tr><th>case</th><th>observation</th><th>value</th></tr></thead><tbody>\n" + rows +
                          "</tbody></table>\n";
  s += "</section>\n";

  const FuzzSummary f = fuzz_summary(r);
  if (f.present) {
    s += "<section id=\"fuzz\">\n<h2>Fuzzing</h2>\n<p>" + html(f.target.empty() ? "campaign" : f.target) +
         fmt(": %lld executions in %s (%.0f per second), seed %lld; %zu findings", f.executions,
             text::duration(f.duration_s).c_str(), f.exec_per_s, f.seed, f.findings.size()) +
         (f.status.empty() || f.status == "completed" ? std::string(".") : "; " + html(f.status) + ": " + html(f.reason)) +
         "</p>\n";
    for (const auto& u : f.unexported) s += "<p>Not exported (kept as a decoy): " + html(u) + "</p>\n";
    for (const auto& c : f.calibration) s += "<p>Calibrated: " + html(c) + "</p>\n";
    if (!f.verdicts.empty()) s += svg::fuzz_histogram(f);
    if (!f.error_codes.empty()) {
      s += "<table><thead><tr><th>open returned</th><th>executions</th></tr></thead><tbody>\n";
      for (const auto& [k, v] : f.error_codes) s += "<tr><td><code>" + html(k) + "</code></td><td>" + fmt("%lld", v) + "</td></tr>\n";
      s += "</tbody></table>\n";
    }
    if (!f.findings.empty()) {
      s += "<table><thead><tr><th>finding</th><th>clause</th><th>mutation</th><th>detail</th><th>reproducer</th></tr>"
           "</thead><tbody>\n";
      for (const auto& x : f.findings)
        s += "<tr><td>" + html(x.outcome) + "</td><td><code>" + html(x.clause) + "</code></td><td>" + html(x.mutation) +
             "</td><td>" + html(x.detail) + "</td><td><code>" + html(x.reproducer) + "</code></td></tr>\n";
      s += "</tbody></table>\n";
    }
    s += "</section>\n";
  }
  const auto bench = benchmarks(r);
  if (!bench.empty()) {
    s += "<section id=\"bench\">\n<h2>Benchmarks</h2>\n" + svg::bench_floors(bench);
    s += "<table><thead><tr><th>benchmark</th><th>median</th><th>spread</th><th>repetitions</th><th>floor</th><th>ratio</th>"
         "</tr></thead><tbody>\n";
    for (const auto& b : bench)
      s += "<tr><td><code>" + html(b.name) + "</code></td><td class=\"num\">" + html(text::number(b.median) + " " + b.unit) +
           "</td><td class=\"num\">" + html(text::number(b.spread) + " (" + b.spread_kind + ")") + "</td><td class=\"num\">" +
           std::to_string(b.repetitions) + "</td><td class=\"num\">" +
           (b.floor > 0 ? html(text::number(b.floor) + " " + b.unit) : "-") + "</td><td class=\"num\">" +
           (b.ratio > 0 ? fmt("%.2fx", b.ratio) : "-") + "</td></tr>\n";
    s += "</tbody></table>\n</section>\n";
  }
  s += "</main>\n";
  return s + html_page::end(kScript);
}

}  // namespace ipcheck::reports
