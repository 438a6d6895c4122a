// results.json in and out (schema ipcheck.results/N, reports/SCHEMA.md): every field read
// with its kind and range checked, a wrong one a SchemaError naming it; the file written
// through write_file_atomic. The model's rules: results.cpp.
#include "ipcheck/reports/results.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <type_traits>
#include <utility>

#include "ipcheck/reports/report_set.hpp"
#include "results_names.hpp"

namespace ipcheck::reports {

using nlohmann::json;

using namespace enum_names;

namespace {

// A text field holding one of `names`; a missing field keeps `out`.
template <class E, std::size_t N>
void get_enum(const json& j, const char* key, const char* const (&names)[N], E& out, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  if (!it->is_string())
    throw SchemaError("results: " + where + ": \"" + key + "\" is not text; it is one of " + one_of<E>(names));
  const std::string v = it->get<std::string>();
  auto e = parse_name<E>(names, v);
  if (!e) throw SchemaError("results: " + where + ": \"" + key + "\" is \"" + v + "\", not one of " + one_of<E>(names));
  out = *e;
}

// A field read into `out`; a missing or null field keeps `out`. A value of the wrong kind,
// or a number `out` cannot hold, is a SchemaError naming the field.
template <class T>
void get_to(const json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  if constexpr (std::is_same_v<T, bool>) {
    if (!it->is_boolean()) throw SchemaError(std::string("field \"") + key + "\" is " + it->type_name() + ", not true or false");
  } else if constexpr (std::is_integral_v<T>) {
    bool fits = false;
    if (it->is_number_integer() && !it->is_number_unsigned()) {
      const auto v = it->get<std::int64_t>();
      fits = std::in_range<T>(v);
    } else if (it->is_number_unsigned()) {
      fits = std::in_range<T>(it->get<std::uint64_t>());
    }
    if (!fits)
      throw SchemaError(std::string("field \"") + key + "\" is " + (it->is_number() ? it->dump() : it->type_name()) +
                        ", not a whole number from " + std::to_string(std::numeric_limits<T>::min()) + " to " +
                        std::to_string(std::numeric_limits<T>::max()));
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!it->is_number()) throw SchemaError(std::string("field \"") + key + "\" is " + it->type_name() + ", not a number");
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!it->is_string()) throw SchemaError(std::string("field \"") + key + "\" is " + it->type_name() + ", not text");
  }
  try {
    it->get_to(out);
  } catch (const json::exception& e) {
    throw SchemaError(std::string("field \"") + key + "\" has the wrong shape (" + e.what() + ")");
  }
}

// The array `key` of `j` (empty when missing); anything else there is a SchemaError.
const json& array_field(const json& j, const char* key) {
  static const json empty = json::array();
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return empty;
  if (!it->is_array()) throw SchemaError(std::string("field \"") + key + "\" is " + it->type_name() + ", not an array");
  for (const auto& x : *it)
    if (!x.is_object())
      throw SchemaError(std::string("field \"") + key + "\" holds " + x.type_name() + " items; each must be an object");
  return *it;
}

json check_json(const Check& c) {
  json j = {{"clause", c.clause},   {"level", to_string(c.level)}, {"result", to_string(c.result)},
            {"decided_by", to_string(c.decided_by)}, {"role", c.role}, {"message", c.message}, {"where", c.where}};
  if (c.setup) j["setup"] = true;
  if (c.expected) j["expected"] = true;
  if (!c.call.empty()) j["call"] = c.call;
  if (c.native != 0 || !c.native_name.empty()) {
    j["native"] = c.native;
    j["native_name"] = c.native_name;
  }
  return j;
}

// `version` 1 files have no attribution: who decided each check is unknown there.
Check check_from(const json& j, const std::string& case_id) {
  Check c;
  const std::string where = "case " + case_id + ", a check";
  get_to(j, "clause", c.clause);
  get_enum(j, "level", kLevelNames, c.level, where);
  get_enum(j, "result", kCheckResultNames, c.result, where);
  c.decided_by = Decider::unknown;
  get_enum(j, "decided_by", kDeciderNames, c.decided_by, where);
  get_to(j, "setup", c.setup);
  get_to(j, "expected", c.expected);
  get_to(j, "call", c.call);
  get_to(j, "native", c.native);
  get_to(j, "native_name", c.native_name);
  get_to(j, "role", c.role);
  get_to(j, "message", c.message);
  get_to(j, "where", c.where);
  return c;
}

json case_json(const CaseResult& c, bool attempt = false) {
  json j = {{"status", to_string(c.status)}, {"reason", c.reason}, {"observations", c.observations},
            {"duration_s", c.duration_s}};
  if (!attempt) {
    j["id"] = c.id;
    j["description"] = c.description;
    j["area"] = c.area;
    j["clauses"] = c.clauses;
  }
  if (!c.expectation.empty()) j["expectation"] = c.expectation;
  if (c.expected_status) j["expected_status"] = to_string(*c.expected_status);
  if (!c.skip_by.empty()) j["skip_by"] = c.skip_by;
  if (!c.injection.empty()) j["injection"] = c.injection;
  if (!c.failpoints.empty()) {
    j["failpoints"] = json::array();
    for (const auto& f : c.failpoints) j["failpoints"].push_back({{"role", f.role}, {"spec", f.spec}, {"fired", f.fired}});
  }
  j["checks"] = json::array();
  for (const auto& k : c.checks) j["checks"].push_back(check_json(k));
  j["native_errors"] = json::array();
  for (const auto& e : c.native_errors)
    j["native_errors"].push_back({{"role", e.role}, {"verb", e.verb}, {"errc", e.errc}, {"native", e.native},
                                  {"native_name", e.native_name}, {"message", e.message}});
  j["roles"] = json::array();
  for (const auto& r : c.roles)
    j["roles"].push_back({{"name", r.name}, {"pid", r.pid}, {"exit", r.exit}, {"code", r.code},
                          {"signal", r.signal}, {"duration_s", r.duration_s}, {"output_tail", r.output_tail}});
  j["warnings"] = c.warnings;
  json audit = c.audit.is_object() ? c.audit : json::object();
  audit["findings"] = json::array();
  for (const auto& f : c.findings)
    audit["findings"].push_back(
        {{"role", f.role}, {"kind", f.kind}, {"item", f.item}, {"verb", f.verb}, {"detail", f.detail}});
  j["audit"] = audit;
  if (!c.attempts.empty()) {
    j["attempts"] = json::array();
    for (const auto& a : c.attempts) j["attempts"].push_back(case_json(a, true));
  }
  return j;
}

// An attempt has no id of its own: `parent` is the case it belongs to.
CaseResult case_from(const json& j, const CaseResult* parent = nullptr) {
  CaseResult c;
  if (parent) {
    c.id = parent->id;
    c.description = parent->description;
    c.area = parent->area;
    c.clauses = parent->clauses;
  }
  get_to(j, "id", c.id);
  if (c.id.empty()) throw SchemaError("results: a case has no \"id\"");
  get_to(j, "description", c.description);
  get_to(j, "area", c.area);
  std::string status;
  get_to(j, "status", status);
  auto s = parse_status(status);
  if (!s) throw SchemaError("results: case " + c.id + " has unknown status \"" + status + "\"");
  c.status = *s;
  get_to(j, "reason", c.reason);
  get_to(j, "expectation", c.expectation);
  get_to(j, "skip_by", c.skip_by);
  if (!c.skip_by.empty() && c.skip_by != "runtime" && c.skip_by != "runtime_init")
    throw SchemaError("results: case " + c.id + " has skip_by \"" + c.skip_by + "\"; it is runtime, runtime_init or absent");
  if (auto it = j.find("expected_status"); it != j.end() && it->is_string()) {
    c.expected_status = parse_status(it->get<std::string>());
    if (!c.expected_status)
      throw SchemaError("results: case " + c.id + " has unknown expected_status \"" + it->get<std::string>() + "\"");
  } else if (c.status == Status::xfail && c.reason.rfind("expected ", 0) == 0) {
    // Version 1 kept it only in the reason: "expected leak: ..."
    c.expected_status = parse_status(c.reason.substr(9, c.reason.find(':') - 9));
  }
  get_to(j, "injection", c.injection);
  if (auto fp = j.find("failpoints"); fp != j.end() && fp->is_array())
    for (const auto& f : *fp) {
      FailpointUse u;
      get_to(f, "role", u.role);
      get_to(f, "spec", u.spec);
      get_to(f, "fired", u.fired);
      c.failpoints.push_back(std::move(u));
    }
  get_to(j, "clauses", c.clauses);
  get_to(j, "observations", c.observations);
  get_to(j, "duration_s", c.duration_s);
  get_to(j, "warnings", c.warnings);
  for (const auto& k : array_field(j, "checks")) c.checks.push_back(check_from(k, c.id));
  {
    for (const auto& e : array_field(j, "native_errors")) {
      NativeError n;
      get_to(e, "role", n.role);
      get_to(e, "verb", n.verb);
      get_to(e, "errc", n.errc);
      get_to(e, "native", n.native);
      get_to(e, "native_name", n.native_name);
      get_to(e, "message", n.message);
      c.native_errors.push_back(n);
    }
  }
  {
    for (const auto& r : array_field(j, "roles")) {
      RoleExit x;
      get_to(r, "name", x.name);
      get_to(r, "pid", x.pid);
      get_to(r, "exit", x.exit);
      get_to(r, "code", x.code);
      get_to(r, "signal", x.signal);
      get_to(r, "duration_s", x.duration_s);
      get_to(r, "output_tail", x.output_tail);
      c.roles.push_back(x);
    }
  }
  if (auto it = j.find("audit"); it != j.end() && it->is_object()) {
    c.audit = *it;
    {
      for (const auto& x : array_field(*it, "findings")) {
        AuditFinding a;
        get_to(x, "role", a.role);
        get_to(x, "kind", a.kind);
        get_to(x, "item", a.item);
        get_to(x, "verb", a.verb);
        get_to(x, "detail", a.detail);
        c.findings.push_back(a);
      }
    }
    c.audit.erase("findings");
  }
  if (auto it = j.find("attempts"); it != j.end() && it->is_array() && !parent)
    for (const auto& a : *it) c.attempts.push_back(case_from(a, &c));
  return c;
}

}  // namespace

json to_json(const Results& r) {
  json run = {{"adapter", r.run.adapter},
              {"driver", {{"name", r.run.driver_name}, {"version", r.run.driver_version}}},
              {"devices", r.run.devices},
              {"kernel", r.run.kernel},
              {"hostname", r.run.hostname},
              {"ipcheck_version", r.run.ipcheck_version},
              {"options", r.run.options},
              {"profiles", r.run.profiles},
              {"start", r.run.start},
              {"duration_s", r.run.duration_s},
              {"audit", r.run.audit},
              {"transport", r.run.transport},
              {"runner", r.run.runner}};
  if (!r.run.audit_note.empty()) run["audit_note"] = r.run.audit_note;
  if (!r.run.expectations.empty()) run["expectations"] = r.run.expectations;
  json j = {{"schema", r.schema}, {"run", run}};
  j["cases"] = json::array();
  for (const auto& c : r.cases) j["cases"].push_back(case_json(c));
  j["summary"] = {{"total", r.summary.total},
                  {"unexpected", r.summary.unexpected},
                  {"errors", r.summary.errors},
                  {"counts", r.summary.counts}};
  j["clauses"] = json::array();
  for (const auto& c : r.clauses)
    j["clauses"].push_back({{"id", c.id},
                            {"profile", c.profile},
                            {"level", to_string(c.level)},
                            {"source", c.source},
                            {"statement", c.statement},
                            {"uncovered_reason", c.uncovered_reason},
                            {"basis_kind", to_string(c.basis_kind)},
                            {"basis", c.basis},
                            {"cases", c.cases},
                            {"verdict", to_string(c.verdict)},
                            {"decided", {{"runtime", c.by_runtime},
                                         {"adapter", c.by_adapter},
                                         {"harness", c.by_harness},
                                         {"unknown", c.by_unknown}}},
                            {"failed", c.failed},
                            {"ran", c.ran}});
  if (!r.fuzz.is_null()) j["fuzz"] = r.fuzz;
  if (!r.bench.is_null()) j["bench"] = r.bench;
  return j;
}

namespace {

// "ipcheck.results/<n>" -> n; nullopt for anything else.
std::optional<int> schema_version(const std::string& schema) {
  if (schema.rfind(kSchemaFamily, 0) != 0) return std::nullopt;
  const std::string n = schema.substr(kSchemaFamily.size());
  if (n.empty() || n.size() > 6 || n.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoi(n);
}

void check_schema(const json& j) {
  const auto it = j.find("schema");
  if (it == j.end() || !it->is_string())
    throw SchemaError("results: the document has no \"schema\" string; an ipcheck results file starts with "
                      "\"schema\": \"" + std::string(kSchema) + "\" (is this the results.json that ipcheck run wrote?)");
  const std::string schema = it->get<std::string>();
  const auto version = schema_version(schema);
  if (!version)
    throw SchemaError("results: schema is \"" + schema + "\", expected \"" + std::string(kSchema) +
                      "\": this is not an ipcheck results file");
  if (*version >= kOldestReadableSchema && *version <= kSchemaVersion) return;
  std::string writer = "an ipcheck";
  if (auto run = j.find("run"); run != j.end() && run->is_object())
    if (auto v = run->find("ipcheck_version"); v != run->end() && v->is_string())
      writer = "ipcheck " + v->get<std::string>();
  const std::string here = "this ipcheck reads \"ipcheck.results/" + std::to_string(kOldestReadableSchema) +
                           "\" to \"" + std::string(kSchema) + "\"";
  if (*version > kSchemaVersion)
    throw SchemaError("results: schema \"" + schema + "\" is newer: the file was written by " + writer + ", and " +
                      here + "; read it with that ipcheck or a newer one (reports/SCHEMA.md lists the versions)");
  throw SchemaError("results: schema \"" + schema + "\" is older: the file was written by " + writer + ", and " +
                    here + "; re-run the suite with this ipcheck, or read the file with the ipcheck that wrote it "
                    "(reports/SCHEMA.md lists the versions)");
}

// The run object: who ran what, where, how (a wrong field names "run").
void run_from(const json& run, RunInfo& out) {
  try {
    get_to(run, "adapter", out.adapter);
    if (auto d = run.find("driver"); d != run.end() && d->is_object()) {
      get_to(*d, "name", out.driver_name);
      get_to(*d, "version", out.driver_version);
    }
    get_to(run, "devices", out.devices);
    get_to(run, "kernel", out.kernel);
    get_to(run, "hostname", out.hostname);
    get_to(run, "ipcheck_version", out.ipcheck_version);
    get_to(run, "options", out.options);
    get_to(run, "profiles", out.profiles);
    get_to(run, "start", out.start);
    get_to(run, "duration_s", out.duration_s);
    get_to(run, "audit", out.audit);
    get_to(run, "audit_note", out.audit_note);
    get_to(run, "transport", out.transport);
    get_to(run, "runner", out.runner);
    get_to(run, "expectations", out.expectations);
  } catch (const SchemaError& e) {
    throw SchemaError(std::string("results: run: ") + e.what());
  }
}

// The cases, each id once: with two, a reader would pick one and a regression could hide behind it.
std::vector<CaseResult> cases_from(const json& j) {
  std::vector<CaseResult> out;
  std::map<std::string, std::size_t> seen;
  const json& cases = array_field(j, "cases");
  for (std::size_t i = 0; i < cases.size(); ++i) {
    try {
      out.push_back(case_from(cases[i]));
    } catch (const SchemaError& e) {
      const std::string m = e.what();
      throw SchemaError("results: cases[" + std::to_string(i) + "]: " + (m.rfind("results: ", 0) == 0 ? m.substr(9) : m));
    }
    const auto [at, fresh] = seen.emplace(out.back().id, i);
    if (!fresh)
      throw SchemaError("results: case id \"" + out.back().id + "\" appears twice (cases[" +
                        std::to_string(at->second) + "] and cases[" + std::to_string(i) +
                        "]); a results file holds each case once: merge runs with their own tools, not by hand");
  }
  return out;
}

// One clause of the catalog and its coverage (version 1's verdict "skip" is "not_run").
ClauseInfo clause_from(const json& c) {
  ClauseInfo k;
  get_to(c, "id", k.id);
  const std::string where = "clause " + k.id;
  get_to(c, "profile", k.profile);
  get_enum(c, "level", kLevelNames, k.level, where);
  get_to(c, "source", k.source);
  get_to(c, "statement", k.statement);
  get_to(c, "uncovered_reason", k.uncovered_reason);
  // Files written before clauses carried their basis: the profile tells (rb: ipcheck's
  // robustness profile, harness: the harness's own checks; every other profile an API's).
  k.basis_kind = k.profile == "rb" ? BasisKind::profile : k.profile == "harness" ? BasisKind::harness
                                                                                 : BasisKind::specification;
  get_enum(c, "basis_kind", kBasisNames, k.basis_kind, where);
  get_to(c, "basis", k.basis);
  get_to(c, "cases", k.cases);
  if (auto v = c.find("verdict"); v != c.end() && v->is_string() && *v == "skip")
    k.verdict = ClauseVerdict::not_run;  // version 1: every case of it skipped
  else
    get_enum(c, "verdict", kVerdictNames, k.verdict, where);
  if (auto d = c.find("decided"); d != c.end() && d->is_object()) {
    get_to(*d, "runtime", k.by_runtime);
    get_to(*d, "adapter", k.by_adapter);
    get_to(*d, "harness", k.by_harness);
    get_to(*d, "unknown", k.by_unknown);
  }
  get_to(c, "failed", k.failed);
  get_to(c, "ran", k.ran);
  return k;
}

// The sections other commands add (fuzz, bench): kept as they are, each an object or absent.
void sections_from(const json& j, Results& r) {
  for (const char* section : {"fuzz", "bench"})
    if (auto it = j.find(section); it != j.end() && !it->is_null() && !it->is_object())
      throw SchemaError(std::string("results: field \"") + section + "\" is " + it->type_name() + ", not an object");
  if (auto it = j.find("fuzz"); it != j.end()) r.fuzz = *it;
  if (auto it = j.find("bench"); it != j.end()) r.bench = *it;
}

}  // namespace

Results from_json(const json& j) {
  if (!j.is_object()) throw SchemaError("results: the document is not a JSON object");
  check_schema(j);
  if (!j.contains("run") || !j["run"].is_object())
    throw SchemaError("results: the document has no \"run\" object (adapter, driver, ...); it is incomplete");
  Results r;
  // A file is read into this version's model (version 1: checks' deciders are unknown,
  // clause verdict "skip" is "not_run"); what is written again is this version.
  r.schema = std::string(kSchema);
  run_from(j.at("run"), r.run);
  r.cases = cases_from(j);
  for (const auto& c : array_field(j, "clauses")) r.clauses.push_back(clause_from(c));
  sections_from(j, r);
  r.summary = summarize(r.cases);
  return r;
}

void write_results(const std::string& path, const Results& r) {
  std::vector<std::string> escaped;
  const std::string text = dump_json(to_json(r), 2, &escaped) + '\n';
  if (!escaped.empty()) warn_escaped(path, escaped);
  write_file_atomic(path, text);
}

Results read_results(const std::string& path) {
  std::string text;
  try {
    text = read_regular_file(path, "results file", kMaxResultsBytes);
  } catch (const FileError& e) {
    throw SchemaError(e.what());
  }
  return read_results_text(text, path);
}

Results read_results_text(const std::string& text, const std::string& path) {
  json j;
  try {
    j = parse_json_text(text, path, "results file");
  } catch (const FileError& e) {
    throw SchemaError(e.what());
  }
  try {
    return from_json(j);
  } catch (const SchemaError& e) {
    throw SchemaError(path + ": " + e.what());
  } catch (const json::exception& e) {
    throw SchemaError(path + ": malformed results (" + std::string(e.what()) + ")");
  }
}

}  // namespace ipcheck::reports
