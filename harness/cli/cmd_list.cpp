// `ipcheck list`: cases, clauses and adapters. Never starts an adapter.
#include <cstdio>
#include <iostream>

#include "ipcheck/adapter.hpp"
#include "ipcheck/case.hpp"
#include "ipcheck/clause.hpp"
#include "ipcheck/cli.hpp"
#include "ipcheck/expectations.hpp"
#include "ipcheck/reports/results.hpp"
#include "ipcheck/runner.hpp"
#include "ipcheck/verdict.hpp"

namespace ipcheck::cli {
namespace {

using nlohmann::json;

json case_json(const CaseDef& c) {
  json roles = json::array();
  for (const auto& r : c.roles) {
    json role = {{"name", r.name}, {"count", r.count}};
    if (r.injection_only) role["injection_only"] = true;
    if (r.on_demand) role["on_demand"] = true;
    roles.push_back(role);
  }
  return {{"id", c.id},         {"description", c.description}, {"area", c.area()}, {"clauses", c.clauses},
          {"roles", roles},     {"steps", c.steps},             {"timeout_s", c.timeout_s}};
}

// --expectations: each line of an adapter's file, what it matches, and whether it is stale:
// statically (its pattern names no case or clause of the catalog), or, given --results,
// because it matched nothing in that run while a case it names ran.
int list_expectations(Options& o, const std::string& format) {
  if (!o.has("--adapter") && !o.has("--file"))
    throw UsageError("--expectations needs --adapter NAME (its file in share/ipcheck/expectations) or --file FILE");
  const std::string path = o.has("--file") ? o.get("--file") : default_expectations_file(o.get("--adapter"));
  if (path.empty())
    throw UsageError("adapter '" + o.get("--adapter") + "' has no expectations file next to this ipcheck; give --file FILE");
  Expectations e;
  try {
    e = Expectations::load(path);
  } catch (const std::runtime_error& x) {
    throw UsageError(x.what());
  }
  for (const auto& w : e.warnings) std::fprintf(stderr, "ipcheck: warning: %s\n", w.c_str());
  std::optional<reports::Results> run;
  if (o.has("--results")) {
    try {
      run = reports::read_results(o.get("--results"));
    } catch (const reports::SchemaError& x) {
      throw UsageError(x.what());
    }
  }
  json lines = run ? run->run.expectations.value("lines", json::array()) : json::array();
  auto matched_in_run = [&](const std::string& where) -> std::optional<int> {
    for (const auto& l : lines)
      if (l.value("where", "") == where) return l.value("matched", 0);
    return std::nullopt;
  };
  json out = json::array();
  int stale = 0;
  for (const auto& x : e.entries()) {
    const bool names_something =
        std::any_of(cases().begin(), cases().end(), [&](const CaseDef& c) { return glob_match(x.pattern, c.id); }) ||
        std::any_of(clauses().begin(), clauses().end(), [&](const Clause& k) { return glob_match(x.pattern, k.id); });
    json j = {{"where", x.where}, {"pattern", x.pattern}, {"status", reports::to_string(x.status)},
              {"reason", x.reason}};
    if (!x.link.empty()) j["link"] = x.link;
    if (!x.match.empty()) j["match"] = x.match.describe();
    if (!x.driver.empty()) j["driver"] = x.driver;
    if (!x.block.empty()) j["block"] = x.block;
    std::string why;
    if (!names_something) why = "its pattern names no case or clause of this catalog";
    if (run) {
      const auto m = matched_in_run(x.where);
      const bool ran = std::any_of(run->cases.begin(), run->cases.end(), [&](const reports::CaseResult& c) {
        return reports::is_judged(c.status) && verdict::names_case(x, c);
      });
      j["matched"] = m ? json(*m) : json();
      if (why.empty() && ran && version_in_range(run->run.driver_version, x.driver) && m && *m == 0)
        why = "it matched nothing in " + o.get("--results") + ", where a case it names ran";
    }
    if (!why.empty()) {
      j["stale"] = why;
      ++stale;
    }
    out.push_back(j);
  }
  if (format == "json") {
    std::cout << json{{"file", path}, {"lines", out}, {"stale", stale}}.dump(2) << "\n";
  } else {
    std::printf("%s: %zu lines\n", path.c_str(), out.size());
    for (const auto& j : out) {
      std::printf("%-34s %-8s %s\n", j["pattern"].get<std::string>().c_str(), j["status"].get<std::string>().c_str(),
                  j.value("match", "(any)").c_str());
      std::printf("    %s%s%s\n", j["where"].get<std::string>().c_str(),
                  j.contains("driver") ? (", driver " + j["driver"].get<std::string>()).c_str() : "",
                  j.contains("matched") && !j["matched"].is_null()
                      ? (", matched " + std::to_string(j["matched"].get<int>()) + " in the run").c_str()
                      : "");
      if (j.contains("stale")) std::printf("    STALE: %s\n", j["stale"].get<std::string>().c_str());
    }
    std::printf("%d stale\n", stale);
  }
  return stale ? kFailed : kOk;
}

// --adapters: each adapter with the spec profiles it claims.
int list_adapters(const std::string& format) {
  json out = json::array();
  for (const auto& a : adapters()) out.push_back({{"name", a.name}, {"description", a.description}, {"profiles", a.profiles}});
  if (format == "json") {
    std::cout << out.dump(2) << "\n";
  } else {
    for (const auto& a : adapters()) {
      std::string p;
      for (const auto& x : a.profiles) p += (p.empty() ? "" : ",") + x;
      std::printf("%-6s %-28s %s\n", a.name.c_str(), p.c_str(), a.description.c_str());
    }
  }
  return kOk;
}

// --clauses: each clause with its level, source and the cases that check it (and, with
// --adapter, whether that adapter is judged on it).
int list_clauses(const std::string& format, const AdapterDesc* adapter) {
  json out = json::array();
  for (const auto& k : clauses()) {
    json ids = json::array();
    for (const auto& c : cases())
      if (!c.hidden && std::find(c.clauses.begin(), c.clauses.end(), k.id) != c.clauses.end()) ids.push_back(c.id);
    json j = {{"id", k.id}, {"profile", k.profile()}, {"level", level_name(k.level)}, {"source", k.source},
              {"statement", k.statement}, {"basis_kind", reports::to_string(k.basis_kind())}, {"basis", k.basis},
              {"cases", ids}};
    if (!k.uncovered_reason.empty()) j["uncovered_reason"] = k.uncovered_reason;
    if (adapter) j["judged"] = verdict::judged_on(k.profile(), adapter->profiles);
    out.push_back(j);
  }
  if (format == "json") {
    std::cout << out.dump(2) << "\n";
    return kOk;
  }
  for (const auto& j : out) {
    std::printf("%-34s %-7s %s\n", j["id"].get<std::string>().c_str(), j["level"].get<std::string>().c_str(),
                j["statement"].get<std::string>().c_str());
    if (j["basis_kind"] == "profile")
      std::printf("    basis: ipcheck's robustness profile alone: a failure is a hardening request\n");
    else if (!j["basis"].get<std::string>().empty())
      std::printf("    basis: %s\n", j["basis"].get<std::string>().c_str());
    if (j["cases"].empty())
      std::printf("    no case: %s\n", j.value("uncovered_reason", std::string("(no reason given: a catalog bug)")).c_str());
    for (const auto& id : j["cases"]) std::printf("    %s\n", id.get<std::string>().c_str());
  }
  return kOk;
}

// The selected cases with their clauses and injection points.
int list_cases(const std::string& format, const std::vector<const CaseDef*>& selected) {
  if (format == "json") {
    json out = json::array();
    for (const CaseDef* c : selected) out.push_back(case_json(*c));
    std::cout << out.dump(2) << "\n";
    return kOk;
  }
  for (const CaseDef* c : selected) {
    std::string cl;
    for (const auto& x : c->clauses) cl += (cl.empty() ? "" : ",") + x;
    std::printf("%-44s %s\n    clauses: %s\n", c->id.c_str(), c->description.c_str(), cl.c_str());
    std::string points;
    for (const auto& x : c->steps) points += (points.empty() ? "" : ",") + x;
    if (!points.empty()) std::printf("    injection points (--inject): %s\n", points.c_str());
  }
  std::printf("%zu cases\n", selected.size());
  return kOk;
}

int list(const std::vector<std::string>& args) {
  Options o("list", "[--format text|json] [--clauses | --adapters] [--filter GLOB]...",
            "Lists the cases of the catalog (or its clauses, with the cases that check each, or the adapters).\n"
            "Listing never loads a GPU runtime.");
  o.value("--format", "FORMAT", "text or json", "text")
      .flag("--clauses", "list clauses with their level, source and covering cases")
      .flag("--adapters", "list adapters and the spec profiles they claim")
      .value("--adapter", "NAME", "mark which clauses this adapter is judged on (with --clauses); the adapter "
                                  "whose expectations file --expectations lists")
      .flag("--expectations", "list the adapter's expectations file, line by line, and the stale lines")
      .value("--file", "FILE", "the expectations file (with --expectations; default: the adapter's)")
      .value("--results", "FILE", "with --expectations: say which lines matched in that run")
      .multi("--filter", "GLOB", "only case ids matching GLOB")
      .flag("--all", "include the harness's self-test cases");
  return run_command("list", [&] {
    if (!o.parse(args)) return kOk;
    const std::string format = o.get("--format");
    if (format != "text" && format != "json") throw UsageError("--format is '" + format + "'; use text or json");
    const AdapterDesc* adapter = nullptr;
    if (o.has("--adapter") && !(adapter = find_adapter(o.get("--adapter"))))
      throw UsageError("unknown adapter '" + o.get("--adapter") + "'; 'ipcheck list --adapters' shows them");

    if (o.has("--expectations")) return list_expectations(o, format);
    if (o.has("--adapters")) return list_adapters(format);

    RunOptions sel;
    sel.filters = o.all("--filter");
    sel.include_hidden = o.has("--all");
    if (!sel.filters.empty()) {
      try {
        validate_selection(sel);
      } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
      }
    }
    const auto selected = select_cases(sel);
    if (o.has("--clauses")) return list_clauses(format, adapter);
    return list_cases(format, selected);
  });
}

const CommandRegistration registered_list{{"list", "list cases, clauses and adapters", list}};

}  // namespace
}  // namespace ipcheck::cli
