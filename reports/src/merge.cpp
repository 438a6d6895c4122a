#include "ipcheck/reports/merge.hpp"
#include "ipcheck/reports/seeded.hpp"

#include "ipcheck/reports/files.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace ipcheck::reports {

using nlohmann::json;

namespace {

constexpr const char* kJoin = " | ";

// Values allowed to differ (hosts, kernels) or allowed by --allow-mixed: every distinct value,
// sorted, joined by " | ". A value already joined is split first, so that merging is associative.
std::string joined(const std::vector<std::string>& values) {
  std::set<std::string> all;
  for (const auto& v : values) {
    for (std::size_t at = 0;;) {
      const auto bar = v.find(kJoin, at);
      const std::string part = v.substr(at, bar == std::string::npos ? std::string::npos : bar - at);
      if (!part.empty()) all.insert(part);
      if (bar == std::string::npos) break;
      at = bar + 3;
    }
  }
  std::string s;
  for (const auto& v : all) s += (s.empty() ? "" : kJoin) + v;
  return s;
}

// "2026-11-15T10:00:00Z" -> seconds since the epoch; nullopt when it is not that form.
std::optional<long long> epoch_of(const std::string& iso) {
  std::tm tm{};
  if (iso.size() != 20 || !::strptime(iso.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm)) return std::nullopt;
  return static_cast<long long>(::timegm(&tm));
}

std::string iso_of(long long epoch) {
  const std::time_t t = static_cast<std::time_t>(epoch);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// What a run's cases are of its whole selection: one entry per shard that ran them.
json shard_entries(const Results& r) {
  const json& opt = r.run.options;
  auto entry = [&](const json& shard) {
    json e = {{"index", shard.value("index", 1)},
              {"total", shard.value("total", 1)},
              {"source", shard.value("source", "")},
              {"selected", shard.value("selected", 0)},
              {"hostname", r.run.hostname},
              {"start", r.run.start},
              {"duration_s", r.run.duration_s},
              {"jobs", opt.value("jobs", 0)},
              {"cases", r.cases.size()},
              {"runner", r.run.runner}};
    return e;
  };
  if (auto m = opt.find("merged"); m != opt.end() && m->is_object() && m->contains("shards"))
    return (*m)["shards"];
  if (auto s = opt.find("shard"); s != opt.end() && s->is_object()) return json::array({entry(*s)});
  return json::array({entry(json{{"index", 1}, {"total", 1}, {"source", "unsharded"},
                                  {"selected", r.cases.size()}})});
}

// Each case's position in the run's whole selection (its catalog order), when known.
std::vector<std::optional<std::size_t>> positions_of(const Results& r) {
  const json& opt = r.run.options;
  json list;
  if (auto m = opt.find("merged"); m != opt.end() && m->is_object()) list = m->value("positions", json());
  else if (auto s = opt.find("shard"); s != opt.end() && s->is_object()) list = s->value("positions", json());
  std::vector<std::optional<std::size_t>> out(r.cases.size());
  if (list.is_null()) {
    // Neither a shard nor a merge: the run is its whole selection, in order.
    if (opt.find("merged") == opt.end() && opt.find("shard") == opt.end())
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = i;
    return out;
  }
  if (!list.is_array() || list.size() != r.cases.size()) return out;
  for (std::size_t i = 0; i < out.size(); ++i)
    if (list[i].is_number_unsigned()) out[i] = list[i].get<std::size_t>();
  return out;
}

// The run options that make runs the same selection (jobs and the shard differ by design).
json selection_options(const json& options) {
  json o = options.is_object() ? options : json::object();
  for (const char* k : {"jobs", "shard", "merged", "expectations", "resources", "harness_error", "adapter_unavailable",
                        "adapter_unavailable_by"})
    o.erase(k);
  return o;
}

// The expectations lines as they must agree between shards (paths may differ between machines).
json expectation_lines(const RunInfo& run) {
  json out = json::array();
  for (const auto& l : run.expectations.value("lines", json::array())) {
    json x = l;
    for (const char* k : {"where", "matched", "applies"}) x.erase(k);
    out.push_back(x);
  }
  return out;
}

json catalog_of(const Results& r) {
  json out = json::array();
  for (const auto& k : r.clauses)
    out.push_back({k.id, to_string(k.level), k.source, k.statement, k.uncovered_reason, k.cases});
  return out;
}

json device_names(const RunInfo& run) {
  json out = json::array();
  for (const auto& d : run.devices) out.push_back(d.is_object() ? d.value("name", "") : d.dump());
  return out;
}

std::string shown(const json& v) {
  if (v.is_string()) return "'" + v.get<std::string>() + "'";
  std::string s = v.dump();
  return s.size() > 160 ? s.substr(0, 157) + "..." : s;
}

// A field whose value makes inputs different runs (not the same run's shards).
struct IdentityField {
  const char* name;
  std::function<json(const Results&)> value;
};

// The same run's shards: refuse what makes them different runs, unless told (then a note says it).
void check_same_run(const std::vector<MergeInput>& inputs, bool allow_mixed, std::vector<std::string>& notes) {
  const IdentityField identity[] = {
      {"adapter", [](const Results& r) { return json(r.run.adapter); }},
      {"driver.name", [](const Results& r) { return json(r.run.driver_name); }},
      {"driver.version", [](const Results& r) { return json(r.run.driver_version); }},
      {"ipcheck_version", [](const Results& r) { return json(r.run.ipcheck_version); }},
      {"the catalog (clauses and their cases)", [](const Results& r) { return catalog_of(r); }},
      {"devices (names)", [](const Results& r) { return device_names(r.run); }},
      {"profiles", [](const Results& r) { return json(r.run.profiles); }},
      {"audit", [](const Results& r) { return json(r.run.audit); }},
      {"transport", [](const Results& r) { return json(r.run.transport); }},
      {"options (filters, timeout, parameters, injection, reruns)",
       [](const Results& r) { return selection_options(r.run.options); }},
      {"expectations (the file's lines)", [](const Results& r) { return expectation_lines(r.run); }},
  };
  const Results& first = inputs.front().results;
  std::set<std::string> mixed;
  for (const auto& f : identity) {
    const json want = f.value(first);
    for (std::size_t i = 1; i < inputs.size(); ++i) {
      const json got = f.value(inputs[i].results);
      if (got == want) continue;
      const std::string what = inputs.front().label + " and " + inputs[i].label + " differ in " + f.name + ": " +
                               shown(want) + " and " + shown(got);
      if (!allow_mixed)
        throw MergeError(what + "; merge the shards of one run, or give --allow-mixed to merge them anyway");
      if (mixed.insert(f.name).second) notes.push_back(what + " (merged anyway: --allow-mixed)");
    }
  }
}

// A case of one input and its position in the whole selection, when known.
struct PlacedCase {
  std::optional<std::size_t> position;
  std::string id;
  CaseResult c;
};

// Cases: every input's, each id once, in the selection's order.
std::vector<PlacedCase> place_cases(const std::vector<MergeInput>& inputs) {
  std::vector<PlacedCase> placed;
  std::map<std::string, std::string> seen;  // id -> the input it came from
  for (const auto& in : inputs) {
    const auto pos = positions_of(in.results);
    for (std::size_t i = 0; i < in.results.cases.size(); ++i) {
      const CaseResult& c = in.results.cases[i];
      if (auto [it, fresh] = seen.emplace(c.id, in.label); !fresh)
        throw MergeError("case " + c.id + " is in both " + it->second + " and " + in.label +
                         ": shards of one run share no case; merge each shard once (were two files of the same shard given?)");
      placed.push_back({pos[i], c.id, c});
    }
  }
  std::stable_sort(placed.begin(), placed.end(), [](const PlacedCase& a, const PlacedCase& b) {
    return std::make_tuple(!a.position, a.position.value_or(0), a.id) <
           std::make_tuple(!b.position, b.position.value_or(0), b.id);
  });
  return placed;
}

// Expectations: each line's matches summed; stale when no input matched it and it was stale
// in one (a case it names ran there). `not_stale` gets the lines stale in an input but no longer.
json merge_expectations(const std::vector<MergeInput>& inputs, std::set<std::size_t>& not_stale) {
  json expectations = inputs.front().results.run.expectations;
  if (!expectations.is_object() || !expectations.contains("lines")) return expectations;
  json& lines = expectations["lines"];
  std::vector<long long> matched(lines.size(), 0);
  std::vector<bool> stale_somewhere(lines.size(), false);
  for (const auto& in : inputs) {
    const json& e = in.results.run.expectations;
    const json l = e.value("lines", json::array());
    const json s = e.value("stale", json::array());
    for (std::size_t i = 0; i < l.size() && i < lines.size(); ++i) {
      matched[i] += l[i].value("matched", 0LL);
      if (std::find(s.begin(), s.end(), l[i].value("where", "")) != s.end()) stale_somewhere[i] = true;
    }
  }
  json stale = json::array();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    lines[i]["matched"] = matched[i];
    if (matched[i] == 0 && stale_somewhere[i]) stale.push_back(lines[i].value("where", ""));
    else if (stale_somewhere[i]) not_stale.insert(i);
  }
  expectations["stale"] = stale;
  return expectations;
}

// Warnings of lines no longer stale go. The warning names the line as its own input wrote it (file:line).
void drop_unstale_warnings(const std::vector<MergeInput>& inputs, const std::set<std::size_t>& not_stale,
                           std::vector<PlacedCase>& placed) {
  if (not_stale.empty()) return;
  std::map<std::string, std::size_t> index_of_where;
  for (const auto& in : inputs) {
    const json l = in.results.run.expectations.value("lines", json::array());
    for (std::size_t i = 0; i < l.size(); ++i) index_of_where.emplace(l[i].value("where", ""), i);
  }
  for (auto& p : placed) {
    auto& w = p.c.warnings;
    w.erase(std::remove_if(w.begin(), w.end(),
                           [&](const std::string& x) {
                             if (x.rfind("stale expectation ", 0) != 0) return false;
                             for (const auto& [where, i] : index_of_where)
                               if (not_stale.count(i) && x.rfind("stale expectation " + where + ":", 0) == 0) return true;
                             return false;
                           }),
            w.end());
  }
}

// The fields allowed to differ (or allowed by --allow-mixed): every distinct value joined;
// devices and profiles each once, in the inputs' order.
void join_run_fields(const std::vector<MergeInput>& inputs, RunInfo& run) {
  std::vector<std::string> hosts, kernels, notes, adapters, driver_names, driver_versions, versions, audits, transports;
  json devices = json::array();
  std::vector<std::string> profiles;
  for (const auto& in : inputs) {
    const RunInfo& r = in.results.run;
    hosts.push_back(r.hostname);
    kernels.push_back(r.kernel);
    notes.push_back(r.audit_note);
    adapters.push_back(r.adapter);
    driver_names.push_back(r.driver_name);
    driver_versions.push_back(r.driver_version);
    versions.push_back(r.ipcheck_version);
    audits.push_back(r.audit);
    transports.push_back(r.transport);
    for (const auto& d : r.devices)
      if (std::find(devices.begin(), devices.end(), d) == devices.end()) devices.push_back(d);
    for (const auto& p : r.profiles)
      if (std::find(profiles.begin(), profiles.end(), p) == profiles.end()) profiles.push_back(p);
  }
  run.hostname = joined(hosts);
  run.kernel = joined(kernels);
  run.audit_note = joined(notes);
  run.adapter = joined(adapters);
  run.driver_name = joined(driver_names);
  run.driver_version = joined(driver_versions);
  run.ipcheck_version = joined(versions);
  run.audit = joined(audits);
  run.transport = joined(transports);
  run.devices = devices;
  run.profiles = profiles;
}

// The run spans its shards: from the first start to the last end (shards run side by side).
void span_shards(const std::vector<MergeInput>& inputs, RunInfo& run) {
  std::optional<long long> start, end;
  std::string earliest;
  for (const auto& in : inputs) {
    const RunInfo& r = in.results.run;
    if (!r.start.empty() && (earliest.empty() || r.start < earliest)) earliest = r.start;
    if (const auto s = epoch_of(r.start)) {
      // Milliseconds, so that the span of a merge merged again is the same number.
      const long long s_ms = *s * 1000, e_ms = s_ms + std::llround(r.duration_s * 1000);
      start = start ? std::min(*start, s_ms) : s_ms;
      end = end ? std::max(*end, e_ms) : e_ms;
    }
  }
  run.start = start ? iso_of(*start / 1000) : earliest;
  run.duration_s = start ? static_cast<double>(*end - *start) / 1000.0 : 0;
}

// The runners' hygiene: the most descriptors any held, every orphan reaped, every note.
json merged_runner(const std::vector<MergeInput>& inputs) {
  json orphans = json::array();
  long long fds_start = 0, fds_end = 0;
  std::vector<std::string> runner_notes;
  for (const auto& in : inputs) {
    const json& runner = in.results.run.runner;
    if (!runner.is_object()) continue;
    fds_start = std::max(fds_start, runner.value("fds_at_start", 0LL));
    fds_end = std::max(fds_end, runner.value("fds_at_end", 0LL));
    for (const auto& x : runner.value("orphans_reaped", json::array())) orphans.push_back(x);
    if (runner.contains("note")) runner_notes.push_back(runner["note"].get<std::string>());
  }
  json out = {{"fds_at_start", fds_start}, {"fds_at_end", fds_end}, {"orphans_reaped", orphans}};
  if (!runner_notes.empty()) out["note"] = joined(runner_notes);
  return out;
}

// Every input's shard entries, ordered by shard count, index, start, host and source.
json all_shards(const std::vector<MergeInput>& inputs) {
  json shards = json::array();
  for (const auto& in : inputs)
    for (const auto& e : shard_entries(in.results)) shards.push_back(e);
  std::sort(shards.begin(), shards.end(), [](const json& a, const json& b) {
    auto key = [](const json& x) {
      return std::make_tuple(x.value("total", 0), x.value("index", 0), x.value("start", ""), x.value("hostname", ""),
                             x.value("source", ""), x.dump());
    };
    return key(a) < key(b);
  });
  return shards;
}

// How the shards given cover the run's selection.
struct ShardCover {
  int total = 0;                 // the shard count, 0 when the inputs disagree on it
  json missing = json::array();  // the indices of shards not given
  std::set<long long> selected;  // the selection's sizes the shards state
  // Where the merged cases' positions in the selection say it is not theirs: a position
  // unknown, past the selection's end or held twice; empty when they are its every place.
  std::string not_the_selection;
  bool complete = false;
};

// Whether the merged cases are the selection the shards state, place for place: each case's
// position known, each from 0 to selected - 1 and each once (a shard of a larger or another
// selection holds cases of places the merged run does not have).
std::string positions_problem(const std::vector<std::optional<std::size_t>>& positions, long long selected) {
  std::vector<bool> held(static_cast<std::size_t>(std::max(0LL, selected)));
  for (const auto& p : positions) {
    if (!p) return "a case's position in the selection is not known (a results file from before positions)";
    if (*p >= held.size())
      return "a case holds place " + std::to_string(*p) + " of a selection of " + std::to_string(selected);
    if (held[*p]) return "two cases hold place " + std::to_string(*p) + " of the selection";
    held[*p] = true;
  }
  return {};
}

ShardCover cover_of(const json& shards, const std::vector<std::optional<std::size_t>>& positions) {
  const std::size_t cases = positions.size();
  ShardCover c;
  std::set<int> totals, indices;
  for (const auto& s : shards) {
    const json total = s.is_object() ? s.value("total", json(0)) : json();
    if (!total.is_number_integer() || total.get<long long>() < 1 || total.get<long long>() > kMaxShardTotal)
      throw MergeError("a shard's field total (run.options.shard.total or merged.shards[].total) is " +
                       dump_json(total) + ", not a shard count from 1 to " + std::to_string(kMaxShardTotal) +
                       "; give results files ipcheck wrote");
    totals.insert(s.value("total", 0));
    indices.insert(s.value("index", 0));
    c.selected.insert(s.value("selected", 0LL));
  }
  c.total = totals.size() == 1 ? *totals.begin() : 0;
  for (int k = 1; k <= c.total; ++k)
    if (!indices.count(k)) c.missing.push_back(k);
  c.complete = c.total > 0 && c.missing.empty() && shards.size() == static_cast<std::size_t>(c.total) &&
               c.selected.size() == 1 &&
               (*c.selected.begin() == static_cast<long long>(cases) || seeded::is("merge_ignores_selection"));
  if (c.complete && !seeded::is("merge_ignores_selection")) {
    c.not_the_selection = positions_problem(positions, *c.selected.begin());
    c.complete = c.not_the_selection.empty();
  }
  return c;
}

// Why the shards given are not a whole run (the cover is not complete).
std::string not_whole_because(const ShardCover& c, std::size_t shard_count, std::size_t cases) {
  if (c.total == 0) return "the inputs come from different shard counts";
  if (!c.missing.empty()) return "shard(s) " + c.missing.dump() + " of " + std::to_string(c.total) + " are missing";
  if (shard_count != static_cast<std::size_t>(c.total)) return "a shard was given more than once";
  if (!c.not_the_selection.empty()) return "its cases are not the shards' selection: " + c.not_the_selection;
  return std::to_string(cases) + " cases, but the selection had " +
         (c.selected.size() == 1 ? std::to_string(*c.selected.begin()) : std::string("different sizes"));
}

// The most jobs any shard ran side by side.
int most_jobs(const std::vector<MergeInput>& inputs) {
  std::set<int> jobs;
  for (const auto& in : inputs) jobs.insert(in.results.run.options.value("jobs", 0));
  return *jobs.rbegin();
}

// What the merged run is of its selection (options.merged): every shard, and whether all of
// them are here; a note when they are not.
void record_selection(const std::vector<MergeInput>& inputs, const std::vector<PlacedCase>& placed, json& options,
                      std::vector<std::string>& notes) {
  const json shards = all_shards(inputs);
  std::vector<std::optional<std::size_t>> places;
  for (const auto& p : placed) places.push_back(p.position);
  const ShardCover cover = cover_of(shards, places);
  json positions = json::array();
  bool all_placed = true;
  for (const auto& p : placed) {
    all_placed = all_placed && p.position.has_value();
    positions.push_back(p.position ? json(*p.position) : json());
  }
  options.erase("shard");
  options.erase("merged");
  options["jobs"] = most_jobs(inputs);
  json merged = {{"shards", shards}, {"total", cover.total}, {"complete", cover.complete}, {"missing", cover.missing}};
  if (cover.selected.size() == 1) merged["selected"] = *cover.selected.begin();
  if (all_placed) merged["positions"] = positions;
  options["merged"] = merged;
  if (!cover.complete)
    notes.push_back("the merged run is not a whole run: " + not_whole_because(cover, shards.size(), placed.size()));
}

// Sections a shard ran on its own: one input may carry each.
void take_own_sections(const std::vector<MergeInput>& inputs, Results& m) {
  for (const char* name : {"fuzz", "bench"}) {
    const json* found = nullptr;
    std::string from;
    for (const auto& in : inputs) {
      const json& v = std::string(name) == "fuzz" ? in.results.fuzz : in.results.bench;
      if (v.is_null()) continue;
      if (found)
        throw MergeError(from + " and " + in.label + " both have a " + name + " section; merge the catalog runs first, " +
                         "then add it (ipcheck " + name + " --results)");
      found = &v;
      from = in.label;
    }
    (std::string(name) == "fuzz" ? m.fuzz : m.bench) = found ? *found : json();
  }
}

// The catalog's clauses (the first input's, then any other's), without verdicts: to be judged again.
std::vector<ClauseInfo> catalog_clauses(const std::vector<MergeInput>& inputs) {
  std::vector<ClauseInfo> out;
  std::set<std::string> have;
  for (const auto& in : inputs)
    for (const auto& k : in.results.clauses)
      if (have.insert(k.id).second) {
        ClauseInfo c;
        c.id = k.id;
        c.profile = k.profile;
        c.level = k.level;
        c.source = k.source;
        c.statement = k.statement;
        c.uncovered_reason = k.uncovered_reason;
        c.basis_kind = k.basis_kind;
        c.basis = k.basis;
        c.cases = k.cases;
        out.push_back(std::move(c));
      }
  return out;
}

// A shard entry (run.options.shard, or one of run.options.merged.shards) as merge reads it:
// the field and its value named when one has the wrong type ("index": "one" was exit 3, json
// type_error 302: an input of fuzz/corpus/readers/results_reader/regression-*).
void check_shard_entry(const json& s, const std::string& where) {
  auto bad = [&](const std::string& what) {
    return MergeError(where + " " + what + "; give results files ipcheck wrote");
  };
  if (!s.is_object()) throw bad(std::string("is ") + s.type_name() + ", not an object");
  for (const char* k : {"index", "total", "selected", "jobs", "cases"})
    if (auto it = s.find(k); it != s.end() && !it->is_number_integer())
      throw bad(std::string("field ") + k + " is " + dump_json(*it) + ", not a whole number");
  for (const char* k : {"source", "hostname", "start"})
    if (auto it = s.find(k); it != s.end() && !it->is_string())
      throw bad(std::string("field ") + k + " is " + it->type_name() + ", not text");
  if (auto it = s.find("duration_s"); it != s.end() && !it->is_number())
    throw bad(std::string("field duration_s is ") + it->type_name() + ", not a number");
}

// What merge reads of one input's run.options, checked before it is read.
void check_merge_input(const MergeInput& in) {
  const json& opt = in.results.run.options;
  const std::string at = in.label + ": run.options";
  if (opt.is_null()) return;
  if (!opt.is_object()) throw MergeError(at + " is " + opt.type_name() + ", not an object; give results files ipcheck wrote");
  if (auto it = opt.find("jobs"); it != opt.end() && !it->is_number_integer())
    throw MergeError(at + ".jobs is " + dump_json(*it) + ", not a whole number; give results files ipcheck wrote");
  if (auto it = opt.find("shard"); it != opt.end()) check_shard_entry(*it, at + ".shard");
  if (auto it = opt.find("merged"); it != opt.end()) {
    if (!it->is_object() || !it->contains("shards") || !(*it)["shards"].is_array())
      throw MergeError(at + ".merged has no array of shards; give results files ipcheck wrote");
    const json& shards = (*it)["shards"];
    for (std::size_t i = 0; i < shards.size(); ++i)
      check_shard_entry(shards[i], at + ".merged.shards[" + std::to_string(i) + "]");
  }
}

Merged merge_checked(const std::vector<MergeInput>& inputs, const MergeOptions& o);

}  // namespace

Merged merge_results(const std::vector<MergeInput>& inputs, const MergeOptions& o) {
  if (inputs.empty()) throw MergeError("merge: no results to merge");
  if (!o.coverage) throw MergeError("merge: no clause coverage judge given");
  for (const auto& in : inputs) check_merge_input(in);
  try {
    return merge_checked(inputs, o);
  } catch (const json::exception& e) {
    // A field of run.expectations or run.runner of another shape than ipcheck writes: exit 2.
    throw MergeError("the inputs hold a field of another type than ipcheck writes (" + std::string(e.what()) +
                     "); give results files ipcheck wrote");
  }
}

namespace {

Merged merge_checked(const std::vector<MergeInput>& inputs, const MergeOptions& o) {
  Merged out;
  Results& m = out.results;
  check_same_run(inputs, o.allow_mixed, out.notes);
  std::vector<PlacedCase> placed = place_cases(inputs);
  std::set<std::size_t> not_stale;
  const json expectations = merge_expectations(inputs, not_stale);
  drop_unstale_warnings(inputs, not_stale, placed);

  RunInfo& run = m.run;
  run = inputs.front().results.run;
  join_run_fields(inputs, run);
  span_shards(inputs, run);
  run.runner = merged_runner(inputs);
  run.expectations = expectations;
  record_selection(inputs, placed, run.options, out.notes);
  take_own_sections(inputs, m);

  for (auto& p : placed) m.cases.push_back(std::move(p.c));
  m.summary = summarize(m.cases);
  m.clauses = catalog_clauses(inputs);  // judged again over every case
  o.coverage(m);
  return out;
}

}  // namespace

}  // namespace ipcheck::reports
