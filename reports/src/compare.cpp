// `ipcheck report compare` (compare.hpp): two adapters' runs side by side, case by case and
// clause by clause, with the layer that decided each side.
#include "ipcheck/reports/compare.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "text.hpp"

namespace ipcheck::reports {

using nlohmann::json;
using text::fmt;

std::string Decision::text() const {
  if (who.empty()) return "";
  std::string s = who;
  if (!call.empty()) s += " " + call;
  if (!native.empty()) s += " -> " + native;
  return s;
}

std::size_t Comparison::cases_differing() const {
  return static_cast<std::size_t>(std::count_if(cases.begin(), cases.end(), [](const auto& c) { return c.differs(); }));
}

std::size_t Comparison::clauses_differing() const {
  return static_cast<std::size_t>(
      std::count_if(clauses.begin(), clauses.end(), [](const auto& c) { return c.differs(); }));
}

namespace {

Decision decision_of(const Check& k) {
  Decision d;
  switch (k.decided_by) {
    case Decider::runtime: d.who = "runtime"; break;
    case Decider::adapter: d.who = "adapter"; break;
    case Decider::harness: d.who = "ipcheck"; break;
    case Decider::unknown: d.who = "unknown"; break;
  }
  if (k.decided_by == Decider::runtime) {
    d.call = k.call;
    if (k.result == CheckResult::fail) d.native = k.native_name;
  }
  return d;
}

// The check that decided a verdict among `checks` (those `pick` accepts): the first that
// failed, else the first that warned, else the first deciding one that passed.
template <typename Pick>
Decision deciding(const std::vector<const Check*>& checks, Pick pick) {
  for (CheckResult wanted : {CheckResult::fail, CheckResult::warn, CheckResult::pass})
    for (const Check* k : checks)
      if (pick(*k) && k->result == wanted && (wanted != CheckResult::pass || !k->setup)) return decision_of(*k);
  return {};
}

CompareSide side_of(const Results& r, const std::string& label) {
  return {label, r.run.adapter, r.run.driver_name, r.run.driver_version, r.run.hostname, r.summary.total};
}

std::map<std::string, std::vector<const Check*>> checks_by_clause(const Results& r) {
  std::map<std::string, std::vector<const Check*>> m;
  for (const auto& c : r.cases)
    for (const auto& k : c.checks) m[k.clause].push_back(&k);
  return m;
}

std::string status_text(const std::optional<Status>& s) { return s ? to_string(*s) : "(absent)"; }
std::string verdict_text(const std::optional<ClauseVerdict>& v) { return v ? to_string(*v) : "(absent)"; }

std::string machine_note(const Comparison& c) {
  if (c.same_machine) return "";
  return "the runs come from different machines (" + (c.a.hostname.empty() ? "?" : c.a.hostname) + ", " +
         (c.b.hostname.empty() ? "?" : c.b.hostname) + "): a difference may be the machine's, not a layer's";
}

}  // namespace

Comparison compare_results(const Results& a, const Results& b, const std::string& label_a, const std::string& label_b) {
  Comparison c;
  c.a = side_of(a, label_a);
  c.b = side_of(b, label_b);
  const bool hosts_differ = !a.run.hostname.empty() && !b.run.hostname.empty() && a.run.hostname != b.run.hostname;
  c.same_machine = !hosts_differ;

  std::map<std::string, std::size_t> case_index;
  auto add_case = [&](const CaseResult& r, bool first) {
    auto [it, fresh] = case_index.emplace(r.id, c.cases.size());
    if (fresh) c.cases.push_back({r.id, {}, {}, {}, {}, {}, {}});
    CaseComparison& x = c.cases[it->second];
    std::vector<const Check*> checks;
    for (const auto& k : r.checks) checks.push_back(&k);
    const Decision d = deciding(checks, [](const Check&) { return true; });
    if (first) {
      x.a = r.status, x.reason_a = text::first_line(r.reason), x.decided_a = d;
    } else {
      x.b = r.status, x.reason_b = text::first_line(r.reason), x.decided_b = d;
    }
  };
  for (const auto& r : a.cases) add_case(r, true);
  for (const auto& r : b.cases) add_case(r, false);

  const auto checks_a = checks_by_clause(a), checks_b = checks_by_clause(b);
  std::map<std::string, std::size_t> clause_index;
  auto add_clause = [&](const ClauseInfo& k, bool first) {
    auto [it, fresh] = clause_index.emplace(k.id, c.clauses.size());
    if (fresh) c.clauses.push_back({k.id, k.profile, {}, {}, {}, {}});
    ClauseComparison& x = c.clauses[it->second];
    const auto& by_clause = first ? checks_a : checks_b;
    Decision d;
    if (auto found = by_clause.find(k.id); found != by_clause.end())
      d = deciding(found->second, [](const Check&) { return true; });
    if (first) {
      x.a = k.verdict, x.decided_a = d;
    } else {
      x.b = k.verdict, x.decided_b = d;
    }
  };
  for (const auto& k : a.clauses) add_clause(k, true);
  for (const auto& k : b.clauses) add_clause(k, false);
  return c;
}

std::string render_compare_text(const Comparison& c, bool all) {
  std::string s = "ipcheck report compare: " + text::plain(c.a.adapter) + " and " + text::plain(c.b.adapter) + "\n";
  for (const auto* side : {&c.a, &c.b})
    s += "  " + text::plain(side->adapter) + "  " + text::plain(side->label) + "  " +
         text::plain(side->driver_name + " " + side->driver_version) + "  " + std::to_string(side->total) + " cases\n";
  if (!c.same_machine) s += "note: " + text::plain(machine_note(c)) + "\n";
  s += fmt("result: %zu of %zu cases and %zu of %zu clauses differ\n", c.cases_differing(), c.cases.size(),
           c.clauses_differing(), c.clauses.size());
  std::size_t w = 0;
  for (const auto& x : c.cases) w = std::max(w, text::width(x.id));
  for (const auto& x : c.clauses) w = std::max(w, text::width(x.id));
  const std::string ha = text::plain(c.a.adapter), hb = text::plain(c.b.adapter);

  const std::size_t nc = all ? c.cases.size() : c.cases_differing();
  if (nc) {
    s += fmt("\ncases%s (%zu): %s | %s, and who decided each\n", all ? "" : " that differ", nc, ha.c_str(), hb.c_str());
    for (const auto& x : c.cases) {
      if (!all && !x.differs()) continue;
      s += "  " + text::pad(text::plain(x.id), w) + "  " + status_text(x.a) + " | " + status_text(x.b) +
           (x.differs() ? "  *" : "") + "\n";
      if (x.differs()) {
        if (!x.decided_a.who.empty() || !x.reason_a.empty())
          s += "      " + ha + ": " + text::plain(x.decided_a.text()) + (x.reason_a.empty() ? "" : "; " + text::plain(x.reason_a)) + "\n";
        if (!x.decided_b.who.empty() || !x.reason_b.empty())
          s += "      " + hb + ": " + text::plain(x.decided_b.text()) + (x.reason_b.empty() ? "" : "; " + text::plain(x.reason_b)) + "\n";
      }
    }
  }
  const std::size_t nk = all ? c.clauses.size() : c.clauses_differing();
  if (nk) {
    s += fmt("\nclauses%s (%zu): %s | %s, and who decided each\n", all ? "" : " that differ", nk, ha.c_str(), hb.c_str());
    for (const auto& x : c.clauses) {
      if (!all && !x.differs()) continue;
      s += "  " + text::pad(text::plain(x.id), w) + "  " + verdict_text(x.a) + " | " + verdict_text(x.b) +
           (x.differs() ? "  *" : "") + "\n";
      if (x.differs())
        s += "      " + ha + ": " + (x.decided_a.who.empty() ? "no check" : text::plain(x.decided_a.text())) + "; " + hb +
             ": " + (x.decided_b.who.empty() ? "no check" : text::plain(x.decided_b.text())) + "\n";
    }
  }
  return s;
}

std::string render_compare_markdown(const Comparison& c, bool all) {
  using text::md;
  using text::md_code;
  std::string s = "## " + md(c.a.adapter) + " and " + md(c.b.adapter) + " compared\n\n";
  s += "| | adapter | results | driver | cases |\n|---|---|---|---|---|\n";
  int n = 0;
  for (const auto* side : {&c.a, &c.b})
    s += fmt("| %s ", n++ ? "B" : "A") + "| " + md(side->adapter) + " | " + md_code(side->label) + " | " +
         md(side->driver_name + " " + side->driver_version) + " | " + std::to_string(side->total) + " |\n";
  if (!c.same_machine) s += "\n**Note:** " + md(machine_note(c)) + "\n";
  s += fmt("\n%zu of %zu cases and %zu of %zu clauses differ.\n", c.cases_differing(), c.cases.size(),
           c.clauses_differing(), c.clauses.size());
  auto who = [](const Decision& d) { return d.who.empty() ? std::string("no check") : md(d.text()); };
  const std::size_t nc = all ? c.cases.size() : c.cases_differing();
  if (nc) {
    s += fmt("\n### Cases%s (%zu)\n\n", all ? "" : " that differ", nc);
    s += "| case | " + md(c.a.adapter) + " | " + md(c.b.adapter) + " | decided (" + md(c.a.adapter) + ") | decided (" +
         md(c.b.adapter) + ") |\n|---|---|---|---|---|\n";
    for (const auto& x : c.cases) {
      if (!all && !x.differs()) continue;
      s += "| " + md_code(x.id) + " | " + status_text(x.a) + " | " + status_text(x.b) + " | " + who(x.decided_a) +
           (x.reason_a.empty() ? "" : ": " + md(x.reason_a)) + " | " + who(x.decided_b) +
           (x.reason_b.empty() ? "" : ": " + md(x.reason_b)) + " |\n";
    }
  }
  const std::size_t nk = all ? c.clauses.size() : c.clauses_differing();
  if (nk) {
    s += fmt("\n### Clauses%s (%zu)\n\n", all ? "" : " that differ", nk);
    s += "| clause | " + md(c.a.adapter) + " | " + md(c.b.adapter) + " | decided (" + md(c.a.adapter) + ") | decided (" +
         md(c.b.adapter) + ") |\n|---|---|---|---|---|\n";
    for (const auto& x : c.clauses) {
      if (!all && !x.differs()) continue;
      s += "| " + md_code(x.id) + " | " + verdict_text(x.a) + " | " + verdict_text(x.b) + " | " + who(x.decided_a) +
           " | " + who(x.decided_b) + " |\n";
    }
  }
  return s;
}

json compare_to_json(const Comparison& c) {
  auto side = [](const CompareSide& s) {
    return json{{"label", s.label},
                {"adapter", s.adapter},
                {"driver", {{"name", s.driver_name}, {"version", s.driver_version}}},
                {"hostname", s.hostname},
                {"total", s.total}};
  };
  auto decision = [](const Decision& d) {
    if (d.who.empty()) return json();
    return json{{"who", d.who}, {"call", d.call}, {"native", d.native}};
  };
  json cases = json::array();
  for (const auto& x : c.cases)
    cases.push_back({{"id", x.id},
                     {"a", x.a ? json(to_string(*x.a)) : json()},
                     {"b", x.b ? json(to_string(*x.b)) : json()},
                     {"differs", x.differs()},
                     {"reason_a", x.reason_a},
                     {"reason_b", x.reason_b},
                     {"decided_a", decision(x.decided_a)},
                     {"decided_b", decision(x.decided_b)}});
  json clauses = json::array();
  for (const auto& x : c.clauses)
    clauses.push_back({{"id", x.id},
                       {"profile", x.profile},
                       {"a", x.a ? json(to_string(*x.a)) : json()},
                       {"b", x.b ? json(to_string(*x.b)) : json()},
                       {"differs", x.differs()},
                       {"decided_a", decision(x.decided_a)},
                       {"decided_b", decision(x.decided_b)}});
  return {{"schema", kCompareSchema},
          {"a", side(c.a)},
          {"b", side(c.b)},
          {"same_machine", c.same_machine},
          {"cases_differing", c.cases_differing()},
          {"clauses_differing", c.clauses_differing()},
          {"cases", cases},
          {"clauses", clauses}};
}

}  // namespace ipcheck::reports
