#include "ipcheck/reports/history.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "html_page.hpp"
#include "ipcheck/reports/sections.hpp"
#include "svg.hpp"
#include "text.hpp"

namespace ipcheck::reports {

using text::fmt;

namespace {

// The table every rendering draws: one row per case, one cell per run.
struct Row {
  std::string id;
  std::vector<std::optional<Status>> cells;  // nullopt: the case is not in that run
  bool changed = false;
};

struct Table {
  std::vector<std::string> headers;  // per run: what tells the columns apart
  std::vector<Row> rows;
  std::vector<std::pair<std::string, std::vector<std::optional<std::string>>>> observations;  // "case: name"
  std::vector<std::pair<std::string, std::vector<std::optional<Benchmark>>>> bench;
  std::vector<Status> statuses;  // statuses that some run has
};

Table build(const std::vector<HistoryRun>& runs, const HistoryOptions& o) {
  Table t;
  std::set<std::string> adapters, drivers;
  for (const auto& r : runs) {
    adapters.insert(r.results.run.adapter);
    drivers.insert(r.results.run.driver_name);
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const RunInfo& run = runs[i].results.run;
    std::string h = run.driver_version;
    if (drivers.size() > 1) h = text::driver_of(run);
    if (adapters.size() > 1) h = run.adapter + " " + h;
    if (h.empty()) h = "run " + std::to_string(i + 1);
    t.headers.push_back(h);
  }
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < runs.size(); ++i)
    for (const auto& c : runs[i].results.cases) {
      auto [it, fresh] = index.emplace(c.id, t.rows.size());
      if (fresh) t.rows.push_back({c.id, std::vector<std::optional<Status>>(runs.size()), false});
      t.rows[it->second].cells[i] = c.status;
    }
  for (auto& row : t.rows)
    for (const auto& c : row.cells) row.changed = row.changed || c != row.cells.front();
  if (o.changed_only) t.rows.erase(std::remove_if(t.rows.begin(), t.rows.end(), [](const Row& r) { return !r.changed; }), t.rows.end());

  std::map<std::string, std::size_t> obs_index;
  for (std::size_t i = 0; i < runs.size(); ++i)
    for (const auto& c : runs[i].results.cases)
      for (const auto& [k, v] : c.observations) {
        const std::string key = c.id + ": " + k;
        auto [it, fresh] = obs_index.emplace(key, t.observations.size());
        if (fresh) t.observations.push_back({key, std::vector<std::optional<std::string>>(runs.size())});
        t.observations[it->second].second[i] = v;
      }
  std::map<std::string, std::size_t> bench_index;
  for (std::size_t i = 0; i < runs.size(); ++i)
    for (const auto& b : benchmarks(runs[i].results)) {
      auto [it, fresh] = bench_index.emplace(b.name, t.bench.size());
      if (fresh) t.bench.push_back({b.name, std::vector<std::optional<Benchmark>>(runs.size())});
      t.bench[it->second].second[i] = b;
    }
  for (Status st : text::kProblemsFirst)
    for (const auto& r : runs)
      if (r.results.summary.of(st) > 0) {
        t.statuses.push_back(st);
        break;
      }
  return t;
}

std::string cell(const std::optional<Status>& s) { return s ? to_string(*s) : "-"; }

std::string bench_cell(const std::optional<Benchmark>& b) {
  if (!b) return "-";
  return text::number(b->median) + " " + b->unit + (b->ratio > 0 ? fmt(" (%.2fx)", b->ratio) : "");
}

std::string title_of(const std::vector<HistoryRun>& runs) {
  std::set<std::string> adapters;
  for (const auto& r : runs) adapters.insert(r.results.run.adapter);
  std::string a;
  for (const auto& x : adapters) a += (a.empty() ? "" : ", ") + x;
  return fmt("%zu runs of ", runs.size()) + a;
}

}  // namespace

std::string render_history_text(const std::vector<HistoryRun>& runs, const HistoryOptions& o) {
  const Table t = build(runs, o);
  std::string s = "ipcheck report history: " + title_of(runs) + "\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const RunInfo& run = runs[i].results.run;
    s += fmt("  [%zu] ", i + 1) + text::driver_of(run) + "  " + run.adapter + "  started " +
         (run.start.empty() ? "?" : run.start) + "  " + runs[i].label + "\n";
  }
  std::vector<std::string> heads;
  for (std::size_t i = 0; i < runs.size(); ++i) heads.push_back(fmt("[%zu] ", i + 1) + t.headers[i]);
  // Every row label is indented by two; two spaces more before the first column.
  std::size_t first = 20;
  for (const auto& r : t.rows) first = std::max(first, text::width(r.id) + 4);
  for (const auto& [k, v] : t.observations) first = std::max(first, text::width(k) + 4);
  for (const auto& [k, v] : t.bench) first = std::max(first, text::width(k) + 4);
  std::vector<std::size_t> w;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    std::size_t x = std::max<std::size_t>(10, text::width(heads[i]));
    for (const auto& [k, v] : t.observations) x = std::max(x, text::width(v[i].value_or("-")));
    for (const auto& [k, v] : t.bench) x = std::max(x, text::width(bench_cell(v[i])));
    w.push_back(x + 2);
  }
  auto line = [&](const std::string& head, const std::vector<std::string>& cells) {
    std::string l = text::pad(head, first);
    for (std::size_t i = 0; i < cells.size(); ++i) l += text::pad(cells[i], w[i]);
    s += text::trim_end(l) + "\n";
  };
  s += "\n";
  line("", heads);
  std::vector<std::string> cells;
  for (const auto& r : runs) cells.push_back(std::to_string(r.results.summary.total));
  line("cases", cells);
  cells.clear();
  for (const auto& r : runs) cells.push_back(std::to_string(r.results.summary.unexpected));
  line("unexpected", cells);
  for (Status st : t.statuses) {
    cells.clear();
    for (const auto& r : runs) cells.push_back(std::to_string(r.results.summary.of(st)));
    line(std::string("  ") + to_string(st), cells);
  }
  s += "\n";
  line(o.changed_only ? "case (changed only)" : "case", heads);
  for (const auto& r : t.rows) {
    cells.clear();
    for (const auto& c : r.cells) cells.push_back(cell(c));
    line((r.changed ? "* " : "  ") + r.id, cells);
  }
  if (t.rows.empty()) s += "  (no case changed status)\n";
  s += "* the status is not the same in every run; - the case is not in that run\n";
  if (!t.observations.empty()) {
    s += "\n";
    line("observation", heads);
    for (const auto& [k, v] : t.observations) {
      cells.clear();
      for (const auto& x : v) cells.push_back(x.value_or("-"));
      line("  " + k, cells);
    }
  }
  if (!t.bench.empty()) {
    s += "\n";
    line("benchmark (median)", heads);
    for (const auto& [k, v] : t.bench) {
      cells.clear();
      for (const auto& x : v) cells.push_back(bench_cell(x));
      line("  " + k, cells);
    }
  }
  return text::plain(s);  // the terminal's one escaping: control bytes shown, never sent
}

std::string render_history_markdown(const std::vector<HistoryRun>& runs, const HistoryOptions& o) {
  using text::md;
  using text::md_code;
  const Table t = build(runs, o);
  std::string s = "# ipcheck history: " + md(title_of(runs)) + "\n\n| run | driver | adapter | started | file |\n|---|---|---|---|---|\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const RunInfo& run = runs[i].results.run;
    s += fmt("| %zu | ", i + 1) + md(text::driver_of(run)) + " | " + md_code(run.adapter) + " | " + md(run.start) + " | " +
         md_code(runs[i].label) + " |\n";
  }
  auto header = [&](const std::string& first) {
    std::string h = "| " + first + " |", rule = "|---|";
    for (const auto& x : t.headers) {
      h += " " + md(x) + " |";
      rule += "---|";
    }
    s += h + "\n" + rule + "\n";
  };
  s += "\n## Counts\n\n";
  header("status");
  auto row = [&](const std::string& head, const std::vector<std::string>& cells) {
    s += "| " + head + " |";
    for (const auto& c : cells) s += " " + c + " |";
    s += "\n";
  };
  std::vector<std::string> cells;
  for (const auto& r : runs) cells.push_back(std::to_string(r.results.summary.total));
  row("cases", cells);
  cells.clear();
  for (const auto& r : runs) cells.push_back(std::to_string(r.results.summary.unexpected));
  row("unexpected", cells);
  for (Status st : t.statuses) {
    cells.clear();
    for (const auto& r : runs) cells.push_back(std::to_string(r.results.summary.of(st)));
    row(to_string(st), cells);
  }
  s += o.changed_only ? "\n## Cases whose status changed\n\n" : "\n## Cases\n\nChanged rows are in bold; - means the case is not in that run.\n\n";
  header("case");
  for (const auto& r : t.rows) {
    cells.clear();
    for (const auto& c : r.cells) cells.push_back(c && is_problem(*c) ? "**" + cell(c) + "**" : cell(c));
    row(r.changed ? "**" + md_code(r.id) + "**" : md_code(r.id), cells);
  }
  if (!t.observations.empty()) {
    s += "\n## Observations\n\n";
    header("case: observation");
    for (const auto& [k, v] : t.observations) {
      cells.clear();
      for (const auto& x : v) cells.push_back(md(x.value_or("-")));
      row(md_code(k), cells);
    }
  }
  if (!t.bench.empty()) {
    s += "\n## Benchmark medians\n\n";
    header("benchmark");
    for (const auto& [k, v] : t.bench) {
      cells.clear();
      for (const auto& x : v) cells.push_back(md(bench_cell(x)));
      row(md_code(k), cells);
    }
  }
  return s;
}

std::string render_history_html(const std::vector<HistoryRun>& runs, const HistoryOptions& o) {
  using text::html;
  const Table t = build(runs, o);
  std::string s = html_page::begin("ipcheck history: " + title_of(runs));
  s += "<header>\n<h1>ipcheck history: " + html(title_of(runs)) + "</h1>\n</header>\n<main>\n";
  s += "<section id=\"runs\">\n<h2>Runs</h2>\n<table><thead><tr><th>run</th><th>driver</th><th>adapter</th><th>started</th>"
       "<th>cases</th><th>file</th></tr></thead><tbody>\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const RunInfo& run = runs[i].results.run;
    s += fmt("<tr><td>%zu</td><td>", i + 1) + html(text::driver_of(run)) + "</td><td><code>" + html(run.adapter) +
         "</code></td><td>" + html(run.start) + "</td><td>" + html(text::counts_line(runs[i].results.summary)) +
         "</td><td><code>" + html(runs[i].label) + "</code></td></tr>\n";
  }
  s += "</tbody></table>\n</section>\n<section id=\"trend\">\n<h2>Trend</h2>\n";
  std::vector<svg::TrendColumn> cols;
  for (std::size_t i = 0; i < runs.size(); ++i) cols.push_back({t.headers[i], runs[i].results.summary});
  s += svg::status_trend(cols) + "</section>\n";

  auto head = [&](const std::string& first) {
    std::string h = "<thead><tr><th>" + first + "</th>";
    for (const auto& x : t.headers) h += "<th>" + html(x) + "</th>";
    return h + "</tr></thead>\n";
  };
  s += std::string("<section id=\"cases\">\n<h2>") + (o.changed_only ? "Cases whose status changed" : "Cases") +
       "</h2>\n<p class=\"muted\">A framed cell differs from the run before it; - means the case is not in that run.</p>\n"
       "<table id=\"history-table\">\n" + head("case") + "<tbody>\n";
  for (const auto& r : t.rows) {
    s += "<tr" + std::string(r.changed ? " class=\"changed\"" : "") + "><td class=\"id\">" + html(r.id) + "</td>";
    for (std::size_t i = 0; i < r.cells.size(); ++i) {
      const bool differs = i > 0 && r.cells[i] != r.cells[i - 1];
      s += std::string("<td") + (differs ? " class=\"changed\"" : "") + ">" +
           (r.cells[i] ? html_page::badge(to_string(*r.cells[i])) : "-") + "</td>";
    }
    s += "</tr>\n";
  }
  s += "</tbody></table>\n</section>\n";
  if (!t.observations.empty()) {
    s += "<section id=\"observations\">\n<h2>Observations</h2>\n<table>\n" + head("case: observation") + "<tbody>\n";
    for (const auto& [k, v] : t.observations) {
      s += "<tr><td><code>" + html(k) + "</code></td>";
      for (std::size_t i = 0; i < v.size(); ++i)
        s += std::string("<td") + (i > 0 && v[i] != v[i - 1] ? " class=\"changed\"" : "") + ">" + html(v[i].value_or("-")) +
             "</td>";
      s += "</tr>\n";
    }
    s += "</tbody></table>\n</section>\n";
  }
  if (!t.bench.empty()) {
    s += "<section id=\"bench\">\n<h2>Benchmark medians</h2>\n<table>\n" + head("benchmark") + "<tbody>\n";
    for (const auto& [k, v] : t.bench) {
      s += "<tr><td><code>" + html(k) + "</code></td>";
      for (const auto& x : v) s += "<td class=\"num\">" + html(bench_cell(x)) + "</td>";
      s += "</tr>\n";
    }
    s += "</tbody></table>\n</section>\n";
  }
  s += "</main>\n";
  return s + html_page::end();
}

}  // namespace ipcheck::reports
