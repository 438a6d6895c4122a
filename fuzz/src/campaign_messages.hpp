// The fuzz campaign's own messages, between the campaign parent and its fuzz-role processes:
// one struct each, travelling as a data message (ipcheck/messages.hpp: msg::Data) whose key
// names the message and whose JSON document carries its members, encoded and decoded in one
// place (campaign_messages.cpp). Decoding throws ChannelError naming the message, the member
// and what was found.
//
// The exchange (the parent relays nothing between roles):
//   parent -> role      hello is answered with start {config} (msg::Start)
//   producer -> parent  Setup, after msg::Send {"consumer", export name, no bytes} + descriptor,
//                       one per export, when descriptors travel
//   parent -> consumer  msg::Deliver {"producer", export name, no bytes} + descriptor, then start
//   consumer -> parent  Ready once it is set up (runtime initialised, own exports made, handles
//                       calibrated); a standby consumer then waits
//   parent -> consumer  Go + the slot's page memfd: the consumer takes over a slot (or
//                       msg::Release "stop": it was never needed)
//   consumer -> parent  Finding, Corpus, ExecVerdict (replay), Final, Error; msg::Done;
//                       after a context_lost finding: Retire, msg::Done, then exit kRetired
//                       (the parent hands its slot over on Retire)
//   parent -> consumer  Schedule (demoted input classes, read every 256 inputs), Exec (replay);
//                       msg::Release "stop"
//   producer -> parent  Error when its set-up failed; msg::Done
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "ipcheck/audit.hpp"
#include "ipcheck/fuzz/mutator.hpp"
#include "ipcheck/fuzz/oracle.hpp"
#include "ipcheck/messages.hpp"

namespace ipcheck::fuzz::wire {

// The campaign's set-up (detail::kSetup): info, exports, revoked, unexported, allocs, values.
// Reproducers and the results section keep the record as it came.
struct Setup {
  static constexpr const char* key = "setup";
  nlohmann::json record;
};

struct Ready {
  static constexpr const char* key = "ready";
  MutatorContext context;
  int pid = 0;
  std::vector<std::string> calibration;  // what the unchanged handles taught it
};

// A demoted input class (changed-field names) and how rarely its inputs still run.
struct Demotion {
  std::string cls;
  std::uint64_t keep_one_in = 0;
};

struct Go {
  static constexpr const char* key = "go";
  bool replay = false;  // "replay" | "campaign" on the wire
  std::uint64_t seed = 0;
  std::uint64_t first_exec = 0;
  std::uint64_t quota = 0;  // 0: until told to stop
  std::vector<Demotion> schedule;  // demoted classes, the parent's order
  CarriedFd page;                     // the slot's worker page (required)
};

struct Finding {
  static constexpr const char* key = "finding";
  std::uint64_t exec = 0;
  Verdict verdict = Verdict::crash;
  std::string detail;
  Input input;
  nlohmann::json outcome;  // detail::outcome_json
};

struct Corpus {
  static constexpr const char* key = "corpus";
  Input input;
  Verdict verdict = Verdict::rejected;
  nlohmann::json outcome;
};

// The answer to one Exec.
struct ExecVerdict {
  static constexpr const char* key = "verdict";
  int id = 0;
  Verdict verdict = Verdict::rejected;
  std::string detail;
  nlohmann::json outcome;
};

// What the worker's own audit found at its end. A runtime that keeps every opened mapping
// (UMF's IPC cache) leaves thousands, more than one packet holds: the message carries the
// first kFinalItemsPerKind items of each kind and the totals (decoded into fds, mappings).
struct Final {
  static constexpr const char* key = "final";
  static constexpr std::size_t kFinalItemsPerKind = 16;
  std::vector<LeakItem> leaks;
  std::uint64_t executions = 0;
  std::uint64_t fds = 0;       // decoded: descriptors left in all (leaks may list fewer)
  std::uint64_t mappings = 0;  // decoded: mappings left in all
};

// A set-up that failed: where, why, and the errc that decides between skip and failure.
struct Error {
  static constexpr const char* key = "error";
  std::string stage;
  std::string what;
  std::string errc;
};

struct Retire {
  static constexpr const char* key = "retire";
  std::uint64_t next_exec = 0;
};

struct Schedule {
  static constexpr const char* key = "schedule";
  std::vector<Demotion> classes;
};

struct Exec {
  static constexpr const char* key = "exec";
  int id = 0;
  Input input;
};

using Any = std::variant<Setup, Ready, Go, Finding, Corpus, ExecVerdict, Final, Error, Retire, Schedule, Exec>;

Message encode(const Setup& m);
Message encode(const Ready& m);
Message encode(const Go& m);  // lends the page descriptor
Message encode(const ExecVerdict& m);
Message encode(const Final& m);
Message encode(const Error& m);
Message encode(const Retire& m);
Message encode(const Schedule& m);
// An input travels relative to the worker's context (its bases by name).
Message encode(const Finding& m, const MutatorContext& ctx);
Message encode(const Corpus& m, const MutatorContext& ctx);
Message encode(const Exec& m, const MutatorContext& ctx);

// The campaign message in data message `m`; `ctx` (the worker's context) reads the input of a
// Finding, a Corpus or an Exec, and must not be null for those. A descriptor moves from `m`.
Any decode(Message& m, const MutatorContext* ctx);

}  // namespace ipcheck::fuzz::wire
