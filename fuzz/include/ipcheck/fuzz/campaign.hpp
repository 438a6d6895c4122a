// A fuzz campaign: the parent side of `ipcheck fuzz`. Like the runner it never loads a GPU
// runtime: it forks and execs one producer and N consumer workers (`ipcheck fuzz-role`),
// watches them (a crashed or hung worker is replaced and the campaign goes on, its input
// read back from the worker's page), minimises and deduplicates the findings with a replay
// worker, and writes results.json with a `fuzz` section (and its renderings) plus one
// reproducer and one description file per finding.
//
// The `fuzz` section of results.json (schema "ipcheck.fuzz/1"; Results::fuzz):
//
//   {
//     "schema": "ipcheck.fuzz/1",
//     "status": "completed" | "skipped" | "aborted" | "interrupted",
//     "reason": "",                        // why not completed (adapter missing, producer died...)
//     "target": "memory handles (ref)",    // what was fuzzed (--target): "memory handles (<adapter>)" or
//                                          // "physical-memory handles (<adapter>)"; a physical input
//                                          // also carries its map range ("map": {"offset", "size"})
//     "adapter": "ref",
//     "driver": {"name": "ipcref", "version": "0.1.0+g1234"},
//     "handle_layout": {"name": "ipcref/1", "knowledge": "exact" | "partial" | "opaque",
//                       "size": 64, "fields": ["magic", "version", ...]},
//     "transport": "pidfd" | "scm" | ...,  // how descriptors moved
//     "setup": "ipcheck.fuzz-setup/1",      // the producer's fixed set of exports and decoys
//     "seed": 1, "jobs": 1,
//     "budget": {"time_s": 60, "runs": 0}, // 0: not bounded by that
//     "duration_s": 60.0,                  // fuzzing time: first worker ready to last stopped
//     "executions": 1234567,               // inputs opened (a crashing or hanging one counts)
//     "exec_per_s": 20576.1,               // executions / duration_s, all workers
//     "exec_per_s_per_worker": 20576.1,
//     "workers": {"started": 1, "replaced": 0, "retired": 0},
//     "per_worker": [{"worker": 0, "executions": 1234567, "exec_per_s": 20576.1,
//                     "generations": 1, "recovery_s": 0.0}],
//     "time_s": {"mutate": 1.2, "open": 30.1, "oracle": 20.3, "close": 5.0, "channel": 0.1,
//                "recovery": 0.0, "startup": 0.2},
//                                          // worker-seconds by where they went: drawing inputs,
//                                          // the adapter's open and close, the oracle (mapping
//                                          // check, context probe, descriptor check), messages,
//                                          // slots without a worker after a loss, and the
//                                          // set-up before the first worker ran
//     "time_by_verdict": {"mapped": {"time_s": 12.1, "mean_us": 150.2}, "rejected": {...}},
//                                          // worker-seconds of whole executions (open, oracle,
//                                          // close, checks) by verdict, and the mean of one
//     "recovery": {"standby": 1, "hand_overs": 3, "from_standby": 3, "median_wait_ms": 0.4,
//                  "max_wait_ms": 1.1, "init_median_s": 0.31, "consumers_started": 5},
//                                          // replacing workers: standby consumers kept ready,
//                                          // hand-overs after a loss, how many found a standby
//                                          // ready, the wait per hand-over, and what setting up
//                                          // a consumer costs
//     "schedule": {"demote": true, "keep_one_in": 32, "keep_one_in_most": 4096,
//                  "classes": [{"class": "offset", "verdict": "context_lost", "since_s": 1.2,
//                               "demoted": 3456, "poisonings": 3, "keep_one_in": 128}]},
//                                          // input classes (fields changed) that poisoned a
//                                          // worker, how often they did, the rate each runs at
//                                          // now, and how many later draws were redrawn
//     "outcomes": {"success": 31000, "invalid": 1200000, "exporter_gone": 12, ...},
//                                          // what open returned, by ipcheck Errc name (every
//                                          // execution once; a crash or hang is in "verdicts")
//     "native_outcomes": {"ipcref::errc::invalid": 1200000, ...},  // by native code name
//     "verdicts": {"rejected": n, "mapped": n, "confused_deputy": n, "crash": n, ...},
//                                          // the oracle's verdict on every execution
//     "finding_hits": 12,                  // executions that were findings, before deduplication
//     "corpus": {"dir": "", "loaded": 0, "added": 0},
//     "findings": [                        // minimised and deduplicated: one per outcome and field set
//       {"id": "confused_deputy-fd",
//        "outcome": "confused_deputy",     // the finding: a Verdict name (oracle.hpp; map_refused only
//                                          // for --target physical)
//        "clause": "rb.open.confused_deputy",
//        "detail": "open mapped producer.alloc[1] from offset 0, an allocation ... never exported",
//        "result": {"errc": "success", "native": 0, "native_name": "", "message": "",
//                   "exit": ""},           // what open returned; exit: "signal SIGSEGV" (crash),
//                                          // "killed after 2 s without returning" (hang)
//        "fields": ["fd"],                 // what differs from the real export it came from
//        "mutation": "fd := producer.alloc[1].fd (0x8); checksum resealed; from producer.export[0]",
//        "reports": 2,                     // reports merged into this finding
//        "first_exec": 2435, "first_at_s": 0.12, "worker": 0,
//        "minimised": true,                // fields were reduced by replaying
//        "reproduced": true,               // a fresh replay gave the same outcome; false: it did
//                                          // not (flaky); null: not replayed (no input, no time left)
//        "reproducer": "findings/confused_deputy-fd.repro",   // relative to results.json
//        "description": "findings/confused_deputy-fd.json"}
//     ]
//   }
//
// A finding without an input (a leak the worker's final audit saw) has "fields": [],
// "reproducer": null. Files: <out>/findings/<id>.repro (schema "ipcheck.fuzz-repro/1": the
// input relative to the export it came from, replayed by `ipcheck fuzz --replay`) and
// <out>/findings/<id>.json (schema "ipcheck.fuzz-finding/1": the entry above plus the
// adapter, driver, layout, the bytes as tried, and the input before minimisation).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ipcheck/reports/results.hpp"

namespace ipcheck::fuzz {

struct CampaignOptions {
  std::string adapter = "ref";
  std::string target = "memory";  // memory | physical: which handles (and verbs) are fuzzed
  double time_s = 0;         // 0: bounded by runs only
  std::uint64_t runs = 0;    // 0: bounded by time only
  int jobs = 1;
  int standby = -1;          // consumers set up ahead of need; -1: as many as jobs, 2 to 8
  bool demote = true;        // an input class that poisoned a worker runs once in 32 draws afterwards (then 64...)
  std::uint64_t seed = 1;
  std::string corpus_dir;    // read *.repro seeds from it, add new interesting inputs to it
  std::string transport = "auto";
  std::map<std::string, std::string> adapter_options;
  double hang_s = 2;         // an open that takes longer is a hang
  double minimise_s = 30;    // time for minimising all findings
  std::vector<std::string> stop_on;  // finding kinds that end the campaign at once
  std::string executable;    // the ipcheck that runs the roles; default: this one
  bool progress = true;
  std::atomic<bool>* interrupted = nullptr;
};

// Runs the campaign, writes <out>/results.json with its renderings (report.md, report.html,
// junit.xml) and <out>/findings/; returns the results and, in `written`, the report files.
reports::Results run_campaign(const CampaignOptions& o, const std::string& out_dir,
                              std::vector<std::string>* written = nullptr);

struct ReplayReport {
  bool ran = false;         // false: the campaign could not start (reason says why)
  std::string reason;
  std::string expected;     // the kind recorded in the reproducer
  std::string verdict;      // what the replay gave
  std::string detail;
  nlohmann::json outcome;
  std::string input;        // description of the input as resolved
  // Adapter options of the file that were not used, "key=value (why)": any that names a
  // library or a file (AdapterDesc::path_options), and keys the adapter does not take.
  std::vector<std::string> ignored_options;
};

// Replays one reproducer file in a fresh campaign (producer + replay worker).
ReplayReport replay_reproducer(const std::string& path, const CampaignOptions& o);

}  // namespace ipcheck::fuzz
