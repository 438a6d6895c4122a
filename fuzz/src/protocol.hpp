// What the campaign parent and its role processes share: the worker page (a memfd page
// each consumer writes before every open, so that the parent still has the input after a
// crash or a hang), the campaign's fixed set-up, and the JSON of a mutator context.
// The messages they exchange, and in what order: campaign_messages.hpp.
#pragma once

#include <atomic>
#include <cstdint>

#include <nlohmann/json.hpp>

#include <vector>

#include "ipcheck/adapter.hpp"
#include "ipcheck/fuzz/canary.hpp"
#include "ipcheck/fuzz/mutator.hpp"
#include "ipcheck/fuzz/oracle.hpp"

namespace ipcheck::fuzz::detail {

// Version of the campaign's export set-up; reproducers record it.
inline constexpr const char* kSetup = "ipcheck.fuzz-setup/1";

// The allocations of set-up kSetup, in the order each role makes them (roles.cpp builds
// them; `fuzz --export-c` writes the same sequence into a standalone program).
struct AllocSpec {
  std::size_t bytes;
  MemKind kind;
  int device;  // wanted device (the last one when fewer exist)
  bool decoy;
  std::vector<std::uint64_t> exports;  // offsets of live exports
  bool revoked;                        // one export, put before the campaign
};

// Set-up ipcheck.fuzz-setup/1. Decoys sit between exports so that descriptor numbers one
// off an export's name a decoy; they are larger than any export so that an export's range
// fits inside them (a confused deputy is then only stopped by the export proof).
inline const std::vector<AllocSpec>& producer_setup() {
  static const std::vector<AllocSpec> s = {
      {4096, MemKind::device, 0, false, {0, 0}, false},  // two exports of the same bytes
      {65536, MemKind::device, 0, true, {}, false},
      {3 * 4096 + 123, MemKind::device, 0, false, {0}, false},  // not a page multiple
      {65536, MemKind::device, 0, true, {}, false},
      {65536, MemKind::device, 0, false, {4096 + 64}, false},  // an interior pointer
      {65536, MemKind::device, 0, true, {}, false},
      {8192, MemKind::shared, 1, false, {0}, false},
      {4096, MemKind::device, 0, false, {}, true},
  };
  return s;
}

inline const std::vector<AllocSpec>& consumer_setup() {
  static const std::vector<AllocSpec> s = {
      {4096, MemKind::device, 0, false, {0}, false},
      {65536, MemKind::device, 0, true, {}, false},
  };
  return s;
}

// The events of set-up kSetup for --target event. At rest every live export of the producer
// is signaled and every other event (the producer's decoys and put export, all the worker's
// own) is not: an opened event that reads unsignaled is no live export of the producer, and
// the worker finds which of its own it is by signalling each in turn.
struct EventSpec {
  bool decoy;    // created with the IPC property, never exported
  bool revoked;  // exported, and the export put before the campaign
};
// The decoys sit between the exports, as in the memory set-up, so that a neighbouring
// descriptor or slot names one.
inline const std::vector<EventSpec>& producer_event_setup() {
  static const std::vector<EventSpec> s = {
      {false, false}, {true, false}, {false, false}, {true, false}, {false, false}, {false, true},
  };
  return s;
}

inline const std::vector<EventSpec>& consumer_event_setup() {
  static const std::vector<EventSpec> s = {{false, false}, {true, false}, {false, true}};
  return s;
}

// A consumer's exit status when its runtime context is lost (context_lost reported): the
// parent replaces it without calling it a crash.
inline constexpr int kRetired = 5;

struct NativeSlot {
  std::atomic<std::uint64_t> count;
  std::int32_t errc;
  std::int32_t used;
  long long native;
  char name[48];
};

// At most this many demoted input classes (Schedule); later poisoning classes are not demoted.
inline constexpr int kMaxSchedule = 16;
// A demoted class's inputs run once in this many draws; the others are redrawn. Each time an
// input of the class that still ran poisons a worker again, the rate halves, down to once in
// kDemotedKeepOneInMost: a class that keeps killing workers teaches nothing new, and on CUDA
// each lost worker stalls the others (a context's set-up and teardown hold the driver).
inline constexpr std::uint64_t kDemotedKeepOneIn = 32;
inline constexpr std::uint64_t kDemotedKeepOneInMost = 4096;

// Where a slot's time goes, in nanoseconds summed over its workers (Consumer::run_one).
struct TimeSpent {
  std::atomic<std::uint64_t> mutate;   // drawing the input and writing it to the page
  std::atomic<std::uint64_t> open;     // the adapter's open
  std::atomic<std::uint64_t> oracle;   // judging the mapping, the context probe, the descriptor check
  std::atomic<std::uint64_t> close;    // the adapter's close
  std::atomic<std::uint64_t> channel;  // messages to the parent (findings, corpus entries)
};

struct WorkerPage {
  static constexpr std::uint32_t kMagic = 0x5a5a4650;  // "PFZZ"
  std::uint32_t magic;
  std::uint32_t version;
  std::atomic<std::uint64_t> executions;  // inputs finished
  std::atomic<std::uint64_t> in_flight;   // 1 + execution index of the input being opened; 0 between inputs
  std::atomic<std::uint64_t> findings;    // finding hits, before deduplication
  std::atomic<std::uint64_t> outcomes[16];  // by ipcheck::Errc (0 success)
  std::atomic<std::uint64_t> verdicts[16];  // by fuzz::Verdict
  // The input in flight.
  std::uint16_t length;
  std::uint16_t base;
  std::int16_t descriptor;
  std::uint16_t reserved;
  std::byte bytes[kMaxInput];
  NativeSlot natives[24];
  TimeSpent ns;
  std::atomic<std::uint64_t> demoted[kMaxSchedule];  // draws redrawn, per schedule entry
  std::uint64_t map_offset;  // the input in flight's map range (--target physical)
  std::uint64_t map_size;
  std::atomic<std::uint64_t> verdict_ns[16];  // time of whole executions (open to oracle), by fuzz::Verdict
};
static_assert(sizeof(WorkerPage) <= 4096);
static_assert(kVerdictCount <= 16, "WorkerPage counts and times executions in 16 slots by fuzz::Verdict");

nlohmann::json context_to_json(const MutatorContext& ctx);
MutatorContext context_from_json(const nlohmann::json& j);  // throws std::exception on a bad document

nlohmann::json value_to_json(const NamedValue& v);
NamedValue value_from_json(const nlohmann::json& j);

nlohmann::json input_to_json(const MutatorContext& ctx, const Input& in);
Input input_from_json(const MutatorContext& ctx, const nlohmann::json& j);

nlohmann::json table_to_json(const std::vector<CanaryAlloc>& table);
std::vector<CanaryAlloc> table_from_json(const nlohmann::json& j);

}  // namespace ipcheck::fuzz::detail
