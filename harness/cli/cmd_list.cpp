// `ipcheck list`: cases, clauses and adapters. Never starts an adapter.
#include <cstdio>
#include <iostream>

#include "ipcheck/adapter.hpp"
#include "ipcheck/case.hpp"
#include "ipcheck/clause.hpp"
#include "ipcheck/cli.hpp"
#include "ipcheck/runner.hpp"

namespace ipcheck::cli {
namespace {

using nlohmann::json;

json case_json(const CaseDef& c) {
  json roles = json::array();
  for (const auto& r : c.roles) {
    json role = {{"name", r.name}, {"count", r.count}};
    if (r.injection_only) role["injection_only"] = true;
    roles.push_back(role);
  }
  return {{"id", c.id},         {"description", c.description}, {"area", c.area()}, {"clauses", c.clauses},
          {"roles", roles},     {"steps", c.steps},             {"timeout_s", c.timeout_s}};
}

int list(const std::vector<std::string>& args) {
  Options o("list", "[--format text|json] [--clauses | --adapters] [--filter GLOB]...",
            "Lists the cases of the catalog (or its clauses, with the cases that check each, or the adapters).\n"
            "Listing never loads a GPU runtime.");
  o.value("--format", "FORMAT", "text or json", "text")
      .flag("--clauses", "list clauses with their level, source and covering cases")
      .flag("--adapters", "list adapters and the spec profiles they claim")
      .value("--adapter", "NAME", "mark which clauses this adapter is judged on (with --clauses)")
      .multi("--filter", "GLOB", "only case ids matching GLOB")
      .flag("--all", "include the harness's self-test cases");
  return run_command("list", [&] {
    if (!o.parse(args)) return kOk;
    const std::string format = o.get("--format");
    if (format != "text" && format != "json") throw UsageError("--format is '" + format + "'; use text or json");
    const AdapterDesc* adapter = nullptr;
    if (o.has("--adapter") && !(adapter = find_adapter(o.get("--adapter"))))
      throw UsageError("unknown adapter '" + o.get("--adapter") + "'; 'ipcheck list --adapters' shows them");

    if (o.has("--adapters")) {
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

    if (o.has("--clauses")) {
      json out = json::array();
      for (const auto& k : clauses()) {
        json ids = json::array();
        for (const auto& c : cases())
          if (!c.hidden && std::find(c.clauses.begin(), c.clauses.end(), k.id) != c.clauses.end()) ids.push_back(c.id);
        json j = {{"id", k.id}, {"profile", k.profile()}, {"level", level_name(k.level)}, {"source", k.source},
                  {"statement", k.statement}, {"cases", ids}};
        if (!k.uncovered_reason.empty()) j["uncovered_reason"] = k.uncovered_reason;
        if (adapter)
          j["judged"] = std::find(adapter->profiles.begin(), adapter->profiles.end(), k.profile()) != adapter->profiles.end();
        out.push_back(j);
      }
      if (format == "json") {
        std::cout << out.dump(2) << "\n";
        return kOk;
      }
      for (const auto& j : out) {
        std::printf("%-34s %-7s %s\n", j["id"].get<std::string>().c_str(), j["level"].get<std::string>().c_str(),
                    j["statement"].get<std::string>().c_str());
        if (j["cases"].empty())
          std::printf("    no case: %s\n", j.value("uncovered_reason", std::string("(no reason given: a catalog bug)")).c_str());
        for (const auto& id : j["cases"]) std::printf("    %s\n", id.get<std::string>().c_str());
      }
      return kOk;
    }

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
  });
}

const CommandRegistration reg{{"list", "list cases, clauses and adapters", list}};

}  // namespace
}  // namespace ipcheck::cli
