// The whole catalog against each seeded defect, compared with a defect-free run of the same
// build, on two adapters:
//   ref: ipcheck-defects with IPCREF_DEFECT=<name> (ipcref's defects);
//   ze:  our Level Zero driver's defect build, libze_ipcheck_defects.so.1, through the system
//        loader, with IPCHECK_ZE_DEFECT=<name> (the driver's own defects) or IPCREF_DEFECT
//        (ipcref's, under the driver).
// For every defect: a case of the clause it breaks must not pass (the defect is caught), and
// no other case may change, except those declared below as the defect's collateral, each
// with why. Prints the score (caught / seeded) as a table.
#include <algorithm>
#include <cstdio>
#include <map>
#include <cstdlib>
#include <set>

#include <gtest/gtest.h>

#include "ipcheck/case.hpp"
#include "ipcheck/expectations.hpp"
#include "ipcheck/runner.hpp"
#include "ipcref/defects.hpp"
#include "ze_ipcheck/defects.hpp"

namespace ipcheck {
namespace {

using reports::CaseResult;
using reports::Status;

// Cases outside a defect's clause that the defect changes as well, because they exercise
// the broken behaviour on the way to what they check. Globs over case ids; `on_ze` lists
// what changes only through our Level Zero driver (whose event pools are ipcref memory).
struct Collateral {
  std::vector<std::string> cases;
  const char* why;
  std::vector<std::string> on_ze = {};
};

// Every case whose roles open and close memory: the role audit finds what each close left.
const std::vector<std::string> kOpenMemory = {
    "memory.open.*", "robustness.driver_fails.close", "robustness.capability.no_regular_queues", "memory.get.non_device", "memory.get.interior", "memory.put.keeps_open", "memory.roundtrip.*",
    "robustness.close.double", "robustness.concurrent.open", "robustness.consumer.crash", "robustness.producer.crash",
    "robustness.open.confused_deputy*", "robustness.open.pid_reuse", "robustness.open.garbage.memory*",
    "robustness.realloc.fresh", "robustness.open.after_free.*", "robustness.open.exporter_gone.memory.*",
    "robustness.put.revokes.memory*", "robustness.open.cross_device.memory",
    "robustness.open.cross_kind*", "robustness.open.forged_range.memory*", "robustness.put.one_export.memory",
    "robustness.revoke.tamper.memory", "multi_device.memory.other_device", "robustness.open.input_unchanged.memory"};
// On ze an event is an event pool: an ipcref memory allocation the driver opens and maps.
const std::vector<std::string> kOpenPoolsOnZe = {"event.*", "robustness.close.double.event",
                                                 "robustness.open.cross_device.event", "robustness.open.garbage.event*",
                                                 "robustness.open.exporter_gone.event.*", "robustness.open.cross_kind.*",
                                                 "robustness.put.revokes.event*", "robustness.put.one_export.event", "robustness.revoke.tamper.event",
                                                 "robustness.close.no_leak.event", "multi_device.event.other_device",
                                                 "robustness.open.input_unchanged.event"};
// Every case that opens a physical object and maps or identifies it by its size.
const std::vector<std::string> kOpenPhysical = {
    "physical.*", "robustness.close.no_leak.physical", "robustness.open.garbage.physical*",
    "robustness.put.revokes.physical*", "robustness.open.exporter_gone.physical.*", "robustness.close.double.physical",
    "robustness.open.cross_device.physical",
    "robustness.open.forged_range.physical*", "robustness.put.one_export.physical", "robustness.open.cross_kind*",
    "robustness.revoke.tamper.physical", "robustness.producer.crash.physical", "multi_device.physical.other_device",
    "robustness.open.input_unchanged.physical"};

// The cases that need a device with the physical-memory IPC aspect.
const std::vector<std::string> kPhysicalAspect = {"physical.*", "robustness.*physical*", "robustness.open.cross_kind*",
                                                  "multi_device.physical.*"};

// A pattern list and more patterns.
std::vector<std::string> with(std::vector<std::string> v, std::initializer_list<const char*> more) {
  v.insert(v.end(), more.begin(), more.end());
  return v;
}

const std::map<std::string, Collateral>& collateral() {
  static const std::map<std::string, Collateral> c = {
      {"open_same_mapping",
       {{}, "a repeated open returns the first mapping", {"event.open.repeat"}}},  // three opens of one pool: one mapping
      {"close_keeps_mapping",
       {kOpenMemory, "every case that closes an opened mapping keeps it: its role audit finds it", kOpenPoolsOnZe}},
      {"open_writes_handle",
       {with(kOpenMemory, {"robustness.close.no_leak.memory"}), "the open clears the record's descriptor field in the caller's bytes, so any later open of those "
                     "bytes (a repeated, concurrent, warm or after-close open, a successor's) fails ipcref's checksum"}},
      {"leak_fd_per_open",
       {kOpenMemory, "every case that opens memory leaks a descriptor: its role audit finds it", kOpenPoolsOnZe}},
      {"skip_token_check",
       {{"robustness.put.revokes.*", "physical.open.stale", "robustness.open.garbage.*",
         "robustness.open.forged_range.*", "robustness.open.after_free*", "robustness.revoke.tamper.*"},
        "put, forged-field and range refusal rest on the token proof (the range is checked with it): put handles, "
        "resealed field variants and forged ranges open again"}},
      {"skip_size_check",
       {{"physical.open.size", "event.open.size"}, "ipcref checks the handle size in one place for every kind"}},
      {"put_keeps_export",
       {{"physical.open.stale", "robustness.revoke.tamper.*"},
        "ur.phys.open.stale is the same statement for physical memory; rb.revoke.tamper's cases open the put "
        "handle after writing back what they hold, and a put that revokes nothing leaves it open"}},
      {"opened_phys_size_zero",
       {kOpenPhysical, "cases that map or identify an opened physical object use its size: a 0-byte object maps nothing"}},
      {"crash_on_truncated",
       {{"memory.open.size", "physical.open.size", "event.open.size"}, "the size cases open a handle one byte short"}},
      {"hang_exporter_gone",
       {{"robustness.open.garbage.*"}, "garbage variants name a pid that has exited: their opens now spin"}},
      {"double_close_ok", {{"memory.null_arguments"}, "a null pointer is a pointer never opened: the same unchecked close"}},
      {"lose_context_on_garbage",
       {{"memory.open.size", "physical.open.size", "event.open.size", "robustness.open.cross_kind*",
         "robustness.open.forged_range.*"},
        "the size, cross-kind and forged-range cases open malformed handles: garbage, which this defect answers by "
        "losing the context"}},
      {"stale_mapping_cache",
       {{"memory.open.repeat", "robustness.open.confused_deputy*"},
        "a cache keyed by exporter pid and descriptor serves a repeated open the first mapping: with the export held "
        "open, a record naming another descriptor of the exporter is served what that descriptor's export mapped",
        {"event.open.repeat"}}},
      {"put_revokes_all",
       {{"robustness.consumer.crash"}, "the case exports twice and puts both: the first put revokes the second export"}},
      {"put_ignores_refcount",
       {{"robustness.consumer.crash"}, "the case exports twice and puts both: the first put revokes the second export"}},
      {"event_signal_private",
       {{"multi_device.event.other_device"},
        "the multi-device event case signals through an opened event too (sycl.event.other_device): the creator never "
        "sees it"}},
      {"other_device_mem_copy",
       {{}, "through our Level Zero driver an event pool is ipcref memory opened on the opener's device: its copy "
            "holds the pool's event states, so signals stop crossing devices",
        {"multi_device.event.other_device"}}},
      {"reopen_replaces_live_mapping",
       {{"robustness.open.garbage.memory.held", "robustness.open.confused_deputy.held"},
        "the held variants keep a mapping of the real export open while later opens of the same exporter's "
        "exports (forged, garbage) map: each remaps the held one onto itself, and its role audit finds the mapping "
        "changed; through our Level Zero driver an event pool is ipcref memory: a later pool's open remaps the "
        "earlier pool's mapping onto it, so a signal lands in the wrong pool",
        {"event.roundtrip", "event.bidirectional", "multi_device.event.other_device"}}},
      {"open_replaces_earlier_mapping",
       {{"robustness.open.confused_deputy.held"},
        "the held variant keeps a mapping of the real export open while the forged opens of the same exporter map: "
        "each remaps the held one onto itself, and its role audit finds the mapping changed"}},
      {"aspect_query_fails",
       {kPhysicalAspect, "every physical-memory case reads the physical IPC aspect: a query without a value leaves "
                         "every device without it"}},
      {"ipc_properties_fail",
       {kPhysicalAspect, "every physical-memory case reads the physical IPC aspect: a query without a value leaves "
                         "every device without it"}},
      {"phys_import_trusts_size",
       {{"robustness.open.garbage.physical*"}, "garbage that changes the record's size field now imports"}},
      {"wake_wrong_word",
       {{"event.roundtrip", "multi_device.event.other_device"},
        "these cases wait, with a deadline of their own, for a signal made through an opened event: when the wait "
        "sleeps before the signal lands, a wake on the wrong word leaves it asleep to that deadline (whether it "
        "sleeps first depends on which process runs first: event.roundtrip failed so in the ci/test of "
        "2026-12-07, not before)"}},
      {"fast_witness_only",
       {{"robustness.open.confused_deputy*", "robustness.open.forged_range.*", "robustness.open.garbage.*",
         "robustness.revoke.tamper.*"},
        "a remembered export proven by its witness alone opens any record that names its descriptor once the real "
        "handle was opened: resealed tokens, slots and ranges open as well as put ones"}},
  };
  return c;
}

// A seeded defect and the variable that switches it on.
struct Seeded {
  std::string name, clause, description;
  std::string variable;  // IPCREF_DEFECT or IPCHECK_ZE_DEFECT
};

// How one adapter is scored: which defects, and how a run is made.
struct Scoring {
  std::string adapter;
  std::vector<Seeded> defects;
  // Defects the adapter's path never reaches, with why (not scored there).
  std::map<std::string, const char*> unreachable;
};

// ipcref's defects seen through our Level Zero driver: the ze adapter or the driver stops
// these inputs before ipcref sees them.
const std::map<std::string, const char*>& unreachable_on_ze() {
  static const std::map<std::string, const char*> u = {
      {"skip_size_check", "a ze_ipc_mem_handle_t is 64 bytes by type: the ze adapter refuses other byte counts itself"},
      {"crash_on_truncated", "a ze_ipc_mem_handle_t is 64 bytes by type: no truncated handle reaches ipcref"},
      {"lose_context_on_garbage", "the ze adapter refuses wrong byte counts before the driver, and the driver's "
                                  "decode refuses garbage before ipcref's import"},
      {"allow_profiling_ipc", "the driver refuses IPC with kernel timestamps itself (ZE_EVENT_POOL_FLAG_IPC with "
                              "KERNEL_TIMESTAMP) before ipcref is asked"},
      {"skip_pid_guard", "the fd-first handle carries its descriptor: no pid names the exporter on this path"},
      {"aspect_query_fails", "libze_ipcheck answers zeDeviceGetExternalMemoryProperties from its own table, not "
                             "from ipcref's query (ipc_properties_fail scores ur.device.support_query on ze)"},
      {"close_ignores_refcount", "the ze adapter keeps the reference count Level Zero lacks: ipcref's physical "
                                 "close is called once, after the last release"},
      {"open_writes_handle", "a ze_ipc_mem_handle_t reaches the driver by value: ipcref's open writes into the "
                             "driver's own copy of the record, which nothing reads again (phys_import_writes_fd "
                             "scores rb.open.input_unchanged on ze)"},
      {"event_open_unchecked_before_create", "libze_ipcheck's events are slots of an event pool in ipcref memory, "
                                             "and the driver refuses a context without event IPC before ipcref is "
                                             "asked (pool_open_without_support scores ur.event.open.no_support on ze)"},
      {"open_ignores_kind", "the driver's handle codec carries its own kind and refuses another kind's handle "
                            "before ipcref's import (pool_opens_as_memory scores rb.open.cross_kind on ze)"},
      {"put_revokes_all", "the driver counts gets per exported pointer: the case's two exports of one allocation "
                          "are one driver export, and ipcref's put runs once, at its last put "
                          "(put_ignores_refcount scores rb.put.one_export on ze)"},
      {"event_signal_private", "libze_ipcheck's events are slots of an event pool in memory the driver maps, not "
                               "ipcref events"},
      {"other_device_event_private", "libze_ipcheck's events are slots of an event pool in memory the driver maps, "
                                     "not ipcref events; a pool opens for its context, with no device"},
      {"slow_wake", "libze_ipcheck's events are slots of an event pool in memory the driver maps, not ipcref events"},
      {"fast_token_only", "the fd-first memory handle carries its descriptor (no fast path, which fetches the "
                          "exporter's); a physical handle's range is the driver's to check before ipcref imports it"},
      {"fast_no_identity", "the fd-first memory handle carries its descriptor: no open fetches the exporter's, so "
                           "none can meet a descriptor the exporter replaced"},
      {"fast_no_kind", "the fd-first memory handle carries its descriptor (no fast path), and the driver's codec "
                       "refuses a physical handle relabelled as another kind before ipcref's import"},
  };
  return u;
}

Scoring ref_scoring() {
  Scoring s{"ref", {}, {}};
  for (const auto& d : ipcref::defects::catalog()) s.defects.push_back({d.name, d.clause, d.description, "IPCREF_DEFECT"});
  return s;
}

Scoring ze_scoring() {
  Scoring s{"ze", {}, unreachable_on_ze()};
  for (const auto& d : ipcref::defects::catalog()) s.defects.push_back({d.name, d.clause, d.description, "IPCREF_DEFECT"});
  for (const auto& d : ze_ipcheck::defects::catalog())
    s.defects.push_back({d.name, d.clause, d.description, "IPCHECK_ZE_DEFECT"});
  return s;
}

// Cases run side by side in each scoring run: they mostly wait (on peers, signals and the
// seeded hangs' timeouts), so more than the machine's cores. IPCHECK_SCORE_JOBS overrides.
int score_jobs() {
  if (const char* e = std::getenv("IPCHECK_SCORE_JOBS"); e && std::atoi(e) > 0) return std::atoi(e);
  return 4;
}

RunOptions options_for(const Scoring& sc, const Seeded* defect) {
  RunOptions o;
  o.adapter = sc.adapter;
  if (sc.adapter == "ref") {
    o.role_executable = IPCHECK_DEFECTS_EXE;
  } else {
#ifdef ZE_DEFECTS_DRIVER
    o.role_executable = IPCHECK_EXE;
    o.env = {std::string("ZE_ENABLE_ALT_DRIVERS=") + ZE_DEFECTS_DRIVER};
#endif
  }
  if (defect) o.env.push_back(defect->variable + "=" + defect->name);
  o.jobs = score_jobs();
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
Status rerun(const Scoring& sc, const Seeded* defect, const std::string& id) {
  RunOptions o = options_for(sc, defect);
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
bool warned(const CaseResult& c, const std::string& clause) {
  return std::any_of(c.checks.begin(), c.checks.end(), [&](const auto& k) {
    return k.result == reports::CheckResult::warn && k.clause == clause;
  });
}

std::string evidence(const CaseResult& c, const std::string& clause) {
  auto shorter = [](std::string s) { return s.size() > 110 ? s.substr(0, 107) + "..." : s; };
  for (const auto& k : c.checks)
    if ((k.result == reports::CheckResult::fail || k.result == reports::CheckResult::warn) && k.clause == clause)
      return c.id + " (" + reports::to_string(c.status) + (k.result == reports::CheckResult::warn ? ", warning" : "") +
             ": " + shorter(k.message) + ")";
  if (c.status == Status::timeout || c.status == Status::crash || c.status == Status::leak)
    return c.id + " (" + reports::to_string(c.status) + ": " + shorter(c.reason) + ")";
  return {};
}

bool covers(const CaseDef* def, const std::string& clause) {
  return def && std::find(def->clauses.begin(), def->clauses.end(), clause) != def->clauses.end();
}

bool declared(const std::string& adapter, const std::string& defect, const std::string& id) {
  auto it = collateral().find(defect);
  if (it == collateral().end()) return false;
  auto hit = [&](const std::vector<std::string>& globs) {
    return std::any_of(globs.begin(), globs.end(), [&](const std::string& g) { return glob_match(g, id); });
  };
  return hit(it->second.cases) || (adapter == "ze" && hit(it->second.on_ze));
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

void score(const Scoring& sc) {
  // Without a defect, on the same build: the reference every defect run is compared with.
  std::map<std::string, Status> baseline;
  for (const auto& c : run_suite(options_for(sc, nullptr)).cases) {
    Status s = c.status;
    if (!passes(s)) s = rerun(sc, nullptr, c.id);
    EXPECT_TRUE(passes(s)) << "without a defect the catalog must pass on the defects build: " << describe(c);
    baseline[c.id] = s;
  }
  ASSERT_FALSE(baseline.empty());

  std::vector<Row> rows;
  std::vector<std::string> skipped;
  for (const auto& dd : sc.defects) {
    const Seeded* d = &dd;
    if (auto u = sc.unreachable.find(d->name); u != sc.unreachable.end()) {
      skipped.push_back(d->name + ": " + u->second);
      continue;
    }
    if (d->clause.rfind("run:", 0) == 0) {  // the runtime does not start: no case runs, the run fails
      skipped.push_back(d->name + ": no runtime over the driver starts, so no case runs; the run and the diff "
                        "against the baseline must fail (CTest defects:ur-l0v2.context_create_fails)");
      continue;
    }
    if (d->clause.rfind("bench:", 0) == 0) {  // a performance defect: no case's clause, the bench gate's figure
      skipped.push_back(d->name + ": slows " + d->clause.substr(6) + "; the bench gate catches it "
                        "(CTest bench:gate.catches_slow_open)");
      continue;
    }
    Row row{d->name, d->clause, {}, {}, {}, {}};
    bool has_cases = false;
    for (const auto& c : run_suite(options_for(sc, d)).cases) {
      const CaseDef* def = find_case(c.id);
      const bool own = covers(def, d->clause);
      has_cases |= own;
      // A should clause's violation is a warning: the case still passes, the check says warn.
      if (own && (!passes(c.status) || warned(c, d->clause))) {
        if (const std::string e = evidence(c, d->clause); !e.empty()) row.caught_by.push_back(e);
        continue;
      }
      if (c.status == baseline[c.id] || own) continue;
      if (declared(sc.adapter, d->name, c.id)) {
        row.collateral.push_back(c.id + " (" + reports::to_string(c.status) + ")");
        continue;
      }
      const Status again = rerun(sc, d, c.id);
      (again == baseline[c.id] ? row.flaky : row.unexpected).push_back(describe(c));
    }
    EXPECT_TRUE(has_cases) << "no case checks clause " << d->clause << ", which defect " << d->name << " breaks";
    EXPECT_FALSE(row.caught_by.empty()) << sc.adapter << ": defect " << d->name << " (" << d->description
                                        << ") breaks " << d->clause << ", yet no case of that clause failed it";
    EXPECT_TRUE(row.unexpected.empty()) << sc.adapter << ": defect " << d->name << " changed cases outside clause "
                                        << d->clause << " and its declared collateral:\n  " << join(row.unexpected, "\n  ");
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
  for (const auto& s : skipped) std::printf("not scored on %s: %s\n", sc.adapter.c_str(), s.c_str());
  std::printf("score on %s: %d/%zu seeded defects caught\n", sc.adapter.c_str(), caught, rows.size());
}

TEST(DefectScore, RefCatchesEveryIpcrefDefectAndChangesNothingElse) { score(ref_scoring()); }

TEST(DefectScore, ZeCatchesEveryDriverAndIpcrefDefectAndChangesNothingElse) {
#ifdef ZE_DEFECTS_DRIVER
  score(ze_scoring());
#else
  GTEST_SKIP() << "libze_ipcheck is not built here (no Level Zero headers)";
#endif
}

}  // namespace
}  // namespace ipcheck
