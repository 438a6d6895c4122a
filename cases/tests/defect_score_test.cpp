// The whole catalog against each defect seeded in ipcref (ipcheck-defects with
// IPCREF_DEFECT=<name>), compared with a defect-free run of the same build. For every
// defect: a case of the clause it breaks must not pass (the defect is caught), and no other
// case may change, except those declared below as the defect's collateral, each with why.
// Prints the score (caught / seeded) as a table.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "ipcheck/case.hpp"
#include "ipcheck/expectations.hpp"
#include "ipcheck/runner.hpp"
#include "ipcref/defects.hpp"

namespace ipcheck {
namespace {

using reports::CaseResult;
using reports::Status;

// Cases outside a defect's clause that the defect changes as well, because they exercise
// the broken behaviour on the way to what they check. Globs over case ids.
struct Collateral {
  std::vector<std::string> cases;
  const char* why;
};

// Every case whose roles open and close memory: the role audit finds what each close left.
const std::vector<std::string> kOpenMemory = {
    "memory.open.*", "memory.get.non_device", "memory.get.interior", "memory.put.keeps_open", "memory.roundtrip.*",
    "robustness.close.double", "robustness.concurrent.open", "robustness.consumer.crash", "robustness.producer.crash",
    "robustness.open.confused_deputy", "robustness.open.pid_reuse", "robustness.open.garbage.memory",
    "robustness.realloc.fresh", "robustness.put.revokes.memory", "robustness.revoke.tamper.memory"};

const std::map<std::string, Collateral>& collateral() {
  static const std::map<std::string, Collateral> c = {
      {"close_keeps_mapping", {kOpenMemory, "every case that closes an opened mapping keeps it: its role audit finds it"}},
      {"leak_fd_per_open", {kOpenMemory, "every case that opens memory leaks a descriptor: its role audit finds it"}},
      {"skip_token_check",
       {{"robustness.put.revokes.*", "physical.open.stale", "robustness.open.garbage.*", "robustness.revoke.tamper.*"},
        "put and forged-field refusal rest on the token: put handles and resealed field variants open again"}},
      {"skip_size_check",
       {{"physical.open.size", "event.open.size"}, "ipcref checks the handle size in one place for every kind"}},
      {"put_keeps_export",
       {{"physical.open.stale", "robustness.revoke.tamper.*"},
        "ur.phys.open.stale is the same statement for physical memory; rb.revoke.tamper's cases open the put "
        "handle after writing back what they hold, and a put that revokes nothing leaves it open"}},
      {"opened_phys_size_zero",
       {{"physical.close.refcount", "physical.roundtrip.*", "robustness.close.no_leak.physical",
         "robustness.open.garbage.physical", "robustness.put.revokes.physical", "robustness.revoke.tamper.physical"},
        "cases that map or identify an opened physical object use its size: a 0-byte object maps nothing"}},
      {"crash_on_truncated",
       {{"memory.open.size", "physical.open.size", "event.open.size"}, "the size cases open a handle one byte short"}},
      {"hang_exporter_gone",
       {{"robustness.open.garbage.*"}, "garbage variants name a pid that has exited: their opens now spin"}},
      {"double_close_ok", {{"memory.null_arguments"}, "a null pointer is a pointer never opened: the same unchecked close"}},
      {"lose_context_on_garbage",
       {{"memory.open.size", "physical.open.size", "event.open.size"},
        "the size cases open handles of the wrong length: garbage, which this defect answers by losing the context"}},
      {"stale_mapping_cache",
       {{"memory.open.repeat"}, "a cache keyed by exporter pid and descriptor serves a repeated open the first mapping"}},
  };
  return c;
}

RunOptions options_for(const std::string& defect) {
  RunOptions o;
  o.adapter = "ref";
  o.role_executable = IPCHECK_DEFECTS_EXE;
  o.env = {"IPCREF_DEFECT=" + defect};
  o.jobs = 2;
  o.timeout_s = 10;  // a seeded hang is caught as a timeout, not waited out
  o.inactivity_s = 10;
  o.grace_s = 0.5;
  return o;
}

std::string describe(const CaseResult& c) {
  return c.id + " (" + reports::to_string(c.status) + (c.reason.empty() ? "" : ": " + c.reason) + ")";
}

bool passes(Status s) { return s == Status::pass || s == Status::skip; }

// Reruns one case alone; a change that does not come back was the machine, not the defect.
Status rerun(const std::string& defect, const std::string& id) {
  RunOptions o = options_for(defect);
  o.filters = {id};
  o.exact = true;
  const auto r = run_suite(o);
  return r.cases.empty() ? Status::incomplete : r.cases.front().status;
}

struct Row {
  std::string defect, clause;
  std::vector<std::string> caught_by;  // cases of the clause that did not pass, with the evidence
  std::vector<std::string> collateral;  // declared collateral cases that changed
  std::vector<std::string> unexpected;  // other changes that came back on a rerun
  std::vector<std::string> flaky;       // other changes that did not
};

// How a case of the clause shows the defect: a failed check of that clause, or a verdict
// of the whole case (timeout, crash, leak). Empty when it shows something else.
std::string evidence(const CaseResult& c, const std::string& clause) {
  auto shorter = [](std::string s) { return s.size() > 110 ? s.substr(0, 107) + "..." : s; };
  for (const auto& k : c.checks)
    if (k.result == "fail" && k.clause == clause)
      return c.id + " (" + reports::to_string(c.status) + ": " + shorter(k.message) + ")";
  if (c.status == Status::timeout || c.status == Status::crash || c.status == Status::leak)
    return c.id + " (" + reports::to_string(c.status) + ": " + shorter(c.reason) + ")";
  return {};
}

bool covers(const CaseDef* def, const std::string& clause) {
  return def && std::find(def->clauses.begin(), def->clauses.end(), clause) != def->clauses.end();
}

bool declared(const std::string& defect, const std::string& id) {
  auto it = collateral().find(defect);
  if (it == collateral().end()) return false;
  return std::any_of(it->second.cases.begin(), it->second.cases.end(), [&](const std::string& g) { return glob_match(g, id); });
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

TEST(DefectScore, WholeCatalogOncePerDefectCatchesItAndChangesNothingElse) {
  // Without a defect, on the same build: the reference every defect run is compared with.
  std::map<std::string, Status> baseline;
  for (const auto& c : run_suite(options_for("none")).cases) {
    Status s = c.status;
    if (!passes(s)) s = rerun("none", c.id);
    EXPECT_TRUE(passes(s)) << "without a defect the catalog must pass on the defects build: " << describe(c);
    baseline[c.id] = s;
  }
  ASSERT_FALSE(baseline.empty());

  std::vector<Row> rows;
  for (const auto& d : ipcref::defects::catalog()) {
    Row row{d.name, d.clause, {}, {}, {}, {}};
    bool has_cases = false;
    for (const auto& c : run_suite(options_for(d.name)).cases) {
      const CaseDef* def = find_case(c.id);
      const bool own = covers(def, d.clause);
      has_cases |= own;
      if (own && !passes(c.status)) {
        if (const std::string e = evidence(c, d.clause); !e.empty()) row.caught_by.push_back(e);
        continue;
      }
      if (c.status == baseline[c.id] || own) continue;
      if (declared(d.name, c.id)) {
        row.collateral.push_back(c.id + " (" + reports::to_string(c.status) + ")");
        continue;
      }
      const Status again = rerun(d.name, c.id);
      (again == baseline[c.id] ? row.flaky : row.unexpected).push_back(describe(c));
    }
    EXPECT_TRUE(has_cases) << "no case checks clause " << d.clause << ", which defect " << d.name << " breaks";
    EXPECT_FALSE(row.caught_by.empty()) << "defect " << d.name << " (" << d.description << ") breaks " << d.clause
                                        << ", yet no case of that clause failed it";
    EXPECT_TRUE(row.unexpected.empty()) << "defect " << d.name << " changed cases outside clause " << d.clause
                                        << " and its declared collateral:\n  " << join(row.unexpected, "\n  ");
    rows.push_back(std::move(row));
  }

  // The score.
  int caught = 0;
  std::printf("\n%-24s %-32s %-7s %s\n", "defect", "clause", "caught", "by / other changes");
  for (const auto& r : rows) {
    caught += !r.caught_by.empty();
    std::printf("%-24s %-32s %-7s %s\n", r.defect.c_str(), r.clause.c_str(), r.caught_by.empty() ? "NO" : "yes",
                r.caught_by.empty() ? "-" : r.caught_by.front().c_str());
    for (std::size_t i = 1; i < r.caught_by.size(); ++i) std::printf("%66s %s\n", "", r.caught_by[i].c_str());
    if (!r.collateral.empty()) {
      std::printf("%66s collateral (%s): %s\n", "", collateral().at(r.defect).why, join(r.collateral, ", ").c_str());
    }
    if (!r.unexpected.empty()) std::printf("%66s UNEXPECTED: %s\n", "", join(r.unexpected, "; ").c_str());
    if (!r.flaky.empty()) std::printf("%66s changed once, not on a rerun: %s\n", "", join(r.flaky, "; ").c_str());
  }
  std::printf("score: %d/%zu seeded defects caught\n", caught, rows.size());
}

}  // namespace
}  // namespace ipcheck
