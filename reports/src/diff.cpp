// `ipcheck report diff`: what changed between two runs (diff.hpp), case by case, clause by
// clause, benchmark by benchmark, and in the fuzz section. Its renderings are in
// diff_render.cpp.
#include "ipcheck/reports/diff.hpp"
#include "ipcheck/reports/seeded.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "text.hpp"

namespace ipcheck::reports {

using nlohmann::json;

namespace {

RunLabel label_of(const Results& r, const std::string& label) {
  return {label,          r.run.adapter,   r.run.driver_name,  r.run.driver_version,
          r.run.ipcheck_version, r.run.start, r.summary.total, r.summary.unexpected};
}

std::map<std::string, const CaseResult*> by_id(const Results& r) {
  std::map<std::string, const CaseResult*> m;
  for (const auto& c : r.cases) m.emplace(c.id, &c);
  return m;
}

}  // namespace

bool Diff::driver_changed() const {
  return old_run.driver_name != new_run.driver_name || old_run.driver_version != new_run.driver_version;
}

bool Diff::empty() const {
  return regressions.empty() && new_failures.empty() && new_clause_failures.empty() && fixes.empty() && changes.empty() && errors.empty() && flaky.empty() && clauses.empty() &&
         added.empty() && removed.empty() &&
         observations.empty() && bench.empty() && bench_added.empty() && bench_removed.empty() && profiles.empty() &&
         !fuzz.changed();
}

namespace {

// Counters that say what a verb did to the kernel, per call. `syscalls` and `failed` are
// left out: futex and polling traffic makes them noise on multi-threaded drivers.
bool profile_counter(const std::string& name) { return name != "calls" && name != "syscalls" && name != "failed"; }

// The per-role call profiles of a case, when the role itself reported its calls.
std::map<std::string, const json*> role_profiles(const CaseResult& c) {
  std::map<std::string, const json*> out;
  auto roles = c.audit.find("roles");
  if (roles == c.audit.end() || !roles->is_object()) return out;
  for (const auto& [name, role] : roles->items()) {
    if (!role.is_object() || role.value("method", "") != "bpf" || role.value("calls_from", "role") != "role") continue;
    if (auto p = role.find("profile"); p != role.end() && p->is_object()) out[name] = &*p;
  }
  return out;
}

void compare_profiles(const std::string& id, const CaseResult& o, const CaseResult& n, std::vector<ProfileChange>& out) {
  const auto old_roles = role_profiles(o), new_roles = role_profiles(n);
  for (const auto& [role, np] : new_roles) {
    auto it = old_roles.find(role);
    if (it == old_roles.end()) continue;
    const json& op = *it->second;
    for (const auto& [verb, nv] : np->items()) {
      auto ov = op.find(verb);
      if (ov == op.end() || !ov->is_object() || !nv.is_object()) continue;
      const long long oc = ov->value("calls", 0LL), nc = nv.value("calls", 0LL);
      if (oc <= 0 || nc <= 0) continue;
      std::set<std::string> counters;
      for (const auto& [k, v] : ov->items())
        if (profile_counter(k)) counters.insert(k);
      for (const auto& [k, v] : nv.items())
        if (profile_counter(k)) counters.insert(k);
      for (const auto& k : counters) {
        const double from = static_cast<double>(ov->value(k, 0LL)) / static_cast<double>(oc);
        const double to = static_cast<double>(nv.value(k, 0LL)) / static_cast<double>(nc);
        if (std::fabs(to - from) > 1e-9) out.push_back({id, role, verb, k, from, to, oc, nc});
      }
    }
  }
}

}  // namespace

bool beyond_noise(const Benchmark& a, const Benchmark& b) {
  if (a.repetitions < 2 || b.repetitions < 2) return false;
  return std::fabs(b.median - a.median) > std::fabs(a.spread) + std::fabs(b.spread);
}

bool ratio_beyond_noise(const Benchmark& a, const Benchmark& b) {
  if (a.ratio_high <= 0 || b.ratio_high <= 0) return false;  // no intervals (a bench section before them)
  return b.ratio_low > a.ratio_high || b.ratio_high < a.ratio_low;
}

bool beyond_cross_machine_noise(const Benchmark& a, const Benchmark& b) {
  if (a.repetitions < 2 || b.repetitions < 2 || a.ratio <= 0 || b.ratio <= 0 || a.median <= 0 || b.median <= 0) return false;
  const double spread = std::fabs(a.spread) / a.median + std::fabs(b.spread) / b.median;
  const double factor = std::max(b.ratio / a.ratio, a.ratio / b.ratio);
  return factor > kCrossMachineFactor * (1 + spread);
}

namespace {

std::string finding_class(const FuzzFinding& f) { return f.outcome + " (" + f.clause + ")"; }

FuzzDiff diff_fuzz(const Results& a, const Results& b) {
  FuzzDiff d;
  const FuzzSummary x = fuzz_summary(a), y = fuzz_summary(b);
  if (!x.present && !y.present) return d;
  if (!x.present || !y.present) {
    d.note = std::string("fuzz campaigns not compared: the ") + (x.present ? "new" : "old") + " run has none";
    return d;
  }
  d.compared = true;
  d.old_executions = x.executions;
  d.new_executions = y.executions;
  std::map<std::string, std::pair<long long, long long>> counts;
  for (const auto& [k, v] : x.verdicts) counts[k].first = v;
  for (const auto& [k, v] : y.verdicts) counts[k].second = v;
  for (const auto& [k, v] : counts)
    if (v.first != v.second) d.outcomes.emplace_back(k, v.first, v.second);
  std::set<std::string> old_classes, new_classes;
  for (const auto& f : x.findings) old_classes.insert(finding_class(f));
  for (const auto& f : y.findings) new_classes.insert(finding_class(f));
  for (const auto& c : new_classes)
    if (!old_classes.count(c)) d.classes_new.push_back(c);
  for (const auto& c : old_classes)
    if (!new_classes.count(c)) d.classes_gone.push_back(c);
  return d;
}

// Different machines: both runs name their host and the names differ, or both list their
// devices and the lists differ. A run that does not say is taken as the same machine.
bool same_machine(const Results& a, const Results& b) {
  const bool hosts_differ = !a.run.hostname.empty() && !b.run.hostname.empty() && a.run.hostname != b.run.hostname;
  const bool devices_differ = !a.run.devices.empty() && !b.run.devices.empty() && a.run.devices != b.run.devices;
  return !hosts_differ && !devices_differ;
}

// An unexpected status the driver is charged with: what fails a run, harness errors apart.
bool judged_problem(Status s) { return is_judged(s) && is_problem(s); }

// Where a case whose status changed is listed. A harness error judged nothing: never a
// regression or a fix of the driver, listed apart. A flaky case is listed apart too (d.flaky),
// whatever it was before.
void classify_status_change(Diff& d, const std::string& id, const CaseResult& o, const CaseResult& n) {
  if (o.status == n.status) return;
  StatusChange c{id, o.status, n.status, text::first_line(n.reason)};
  const int from = severity(o.status), to = severity(n.status);
  if (n.status == Status::flaky) {
    // listed in d.flaky already
  } else if (is_judged(o.status) && n.status == Status::skip && !n.skip_by.empty() && n.expectation.empty() &&
             !seeded::is("skip_loses_no_coverage")) {
    // Lost coverage: the runtime under test no longer starts, or no longer has what the case
    // needs (skip_by), where the case ran and was judged before (pass, xfail, or a failure it
    // would now hide); an expectations line with status skip names a known one.
    c.reason = "coverage lost (" + n.skip_by + "): " + c.reason;
    d.regressions.push_back(c);
  } else if (!is_judged(o.status) && judged_problem(n.status)) {
    d.new_failures.push_back({id, o.status, n.status, c.reason});
  } else if (n.status == Status::error && o.status != Status::error)
    d.errors.push_back(c);
  else if (from < 0 || to < 0)
    d.changes.push_back(c);
  else if (to > from)
    d.regressions.push_back(c);
  else
    d.fixes.push_back(c);
}

// Observations of one case that differ, by name: a value that changed, appeared or went.
void compare_observations(Diff& d, const std::string& id, const CaseResult& o, const CaseResult& n) {
  std::set<std::string> names;
  for (const auto& [k, v] : o.observations) names.insert(k);
  for (const auto& [k, v] : n.observations) names.insert(k);
  for (const auto& k : names) {
    auto x = o.observations.find(k);
    auto y = n.observations.find(k);
    std::optional<std::string> from, to;
    if (x != o.observations.end()) from = x->second;
    if (y != n.observations.end()) to = y->second;
    if (from != to) d.observations.push_back({id, k, from, to});
  }
}

// Case by case: flaky, new and removed cases, status changes, observations and (both runs
// audited with bpf) call profiles.
void diff_cases(const Results& a, const Results& b, Diff& d) {
  const auto old_cases = by_id(a);
  const auto new_cases = by_id(b);
  for (const auto& [id, n] : new_cases) {
    auto it = old_cases.find(id);
    if (n->status == Status::flaky)
      d.flaky.push_back({id, it == old_cases.end() ? std::nullopt : std::optional<Status>(it->second->status),
                         text::first_line(n->reason), !n->expectation.empty()});
    if (it == old_cases.end()) {
      d.added.push_back({id, n->status, text::first_line(n->reason)});
      if (judged_problem(n->status)) d.new_failures.push_back({id, std::nullopt, n->status, text::first_line(n->reason)});
      continue;
    }
    const CaseResult* o = it->second;
    if (a.run.audit == "bpf" && b.run.audit == "bpf") compare_profiles(id, *o, *n, d.profiles);
    classify_status_change(d, id, *o, *n);
    compare_observations(d, id, *o, *n);
  }
  for (const auto& [id, o] : old_cases)
    if (!new_cases.count(id)) d.removed.push_back({id, o->status, text::first_line(o->reason)});
}

// Clauses of both runs whose coverage verdict differs, in the new run's order.
void diff_clauses(const Results& a, const Results& b, Diff& d) {
  std::map<std::string, ClauseVerdict> old_clauses;
  for (const auto& k : a.clauses) old_clauses[k.id] = k.verdict;
  for (const auto& k : b.clauses)
    if (auto it = old_clauses.find(k.id); it != old_clauses.end() && it->second != k.verdict) {
      d.clauses.push_back({k.id, it->second, k.verdict});
      if (it->second == ClauseVerdict::not_run && k.verdict == ClauseVerdict::fail)
        d.new_clause_failures.push_back({k.id, it->second, k.verdict});
    } else if (it == old_clauses.end() && k.verdict == ClauseVerdict::fail) {
      d.new_clause_failures.push_back({k.id, ClauseVerdict::not_run, k.verdict});
    }
}

// Worst first: regressions by their new status, fixes by their old one, new cases by theirs.
void order_by_severity(Diff& d) {
  std::stable_sort(d.regressions.begin(), d.regressions.end(), [](const StatusChange& x, const StatusChange& y) {
    return severity(x.to) > severity(y.to);
  });
  std::stable_sort(d.new_failures.begin(), d.new_failures.end(), [](const NewFailure& x, const NewFailure& y) {
    return severity(x.to) > severity(y.to);
  });
  std::stable_sort(d.fixes.begin(), d.fixes.end(), [](const StatusChange& x, const StatusChange& y) {
    return severity(x.from) > severity(y.from);
  });
  std::stable_sort(d.added.begin(), d.added.end(), [](const CaseEntry& x, const CaseEntry& y) {
    return severity(x.status) > severity(y.status);
  });
}

// One benchmark of both runs: a change beyond noise, within noise, or not judged.
void compare_benchmark(const Benchmark& x, const Benchmark& y, Diff& d) {
  if (x.repetitions < 2 || y.repetitions < 2) {
    d.bench_unjudged.push_back(y.name);
  } else if (d.bench_across_machines && (x.ratio <= 0 || y.ratio <= 0)) {
    d.bench_no_floor.push_back(y.name);  // absolute figures of two machines say nothing of the driver
  } else if (d.bench_across_machines ? beyond_cross_machine_noise(x, y) : beyond_noise(x, y)) {
    const bool slower = d.bench_across_machines ? y.ratio > x.ratio : y.median > x.median;
    d.bench.push_back({y.name, y.unit, x.median, y.median, x.spread, y.spread, x.repetitions, y.repetitions,
                       x.ratio, y.ratio, y.higher_is_better ? !slower : slower, ratio_beyond_noise(x, y)});
  } else if (ratio_beyond_noise(x, y)) {
    // The median within noise, its ratio to the in-run floor not: the floor moved, or the
    // verb moved against it while the machine's load hid it in the median.
    const bool higher = y.ratio > x.ratio;
    d.bench.push_back({y.name, y.unit, x.median, y.median, x.spread, y.spread, x.repetitions, y.repetitions,
                       x.ratio, y.ratio, y.higher_is_better ? !higher : higher, true});
  } else {
    ++d.bench_within_noise;
  }
}

// Benchmarks by name: changes beyond noise (worse first), within noise, new and removed. On
// different machines only ratios to the in-run floors are compared.
void diff_benchmarks(const Results& a, const Results& b, Diff& d) {
  const auto old_list = benchmarks(a), new_list = benchmarks(b);
  if (old_list.empty() != new_list.empty()) {
    // A run without benchmarks did not run them: nothing to compare, nothing removed.
    d.bench_note = std::string("benchmarks not compared: the ") + (old_list.empty() ? "old" : "new") +
                   " run has none";
    return;
  }
  std::map<std::string, Benchmark> old_bench;
  for (const auto& x : old_list) old_bench.emplace(x.name, x);
  d.bench_across_machines = !old_list.empty() && !same_machine(a, b);
  std::set<std::string> seen;
  for (const auto& y : new_list) {
    seen.insert(y.name);
    if (auto it = old_bench.find(y.name); it != old_bench.end())
      compare_benchmark(it->second, y, d);
    else
      d.bench_added.push_back(y.name);
  }
  for (const auto& [name, x] : old_bench)
    if (!seen.count(name)) d.bench_removed.push_back(name);
  std::stable_sort(d.bench.begin(), d.bench.end(), [](const BenchChange& x, const BenchChange& y) {
    return x.worse && !y.worse;
  });
}

}  // namespace

Diff diff_results(const Results& a, const Results& b, const std::string& old_label, const std::string& new_label) {
  Diff d;
  d.old_run = label_of(a, old_label);
  d.new_run = label_of(b, new_label);
  diff_cases(a, b, d);
  diff_clauses(a, b, d);
  order_by_severity(d);
  if ((a.run.audit == "bpf") != (b.run.audit == "bpf"))
    d.profile_note = std::string("call profiles not compared: the ") + (a.run.audit == "bpf" ? "new" : "old") +
                     " run was audited with '" + (a.run.audit == "bpf" ? b.run.audit : a.run.audit) +
                     "', not bpf";
  d.fuzz = diff_fuzz(a, b);
  diff_benchmarks(a, b, d);
  return d;
}

}  // namespace ipcheck::reports
