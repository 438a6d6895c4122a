// What a campaign fuzzes (`ipcheck fuzz --target`): the roles' per-target parts. roles.cpp
// runs the producer and roles_consumer.cpp the consumers; this file holds what differs by
// target: the physical-memory set-up (objects filled with canaries through a mapping,
// exported, decoys, a stale export) and a consumer's execution of one physical input (open,
// map at the input's offset and size, judge, unmap, close); the event set-up (events in a
// known state, exported, decoys, a stale export) and a consumer's execution of one event
// input (open, find which event it is by its state, check that state travels both ways,
// release).
#pragma once

#include <time.h>

#include <atomic>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ipcheck/adapter.hpp"
#include "ipcheck/fuzz/canary.hpp"
#include "ipcheck/fuzz/mutator.hpp"
#include "ipcheck/fuzz/oracle.hpp"
#include "ipcheck/owned.hpp"
#include "protocol.hpp"

namespace ipcheck::fuzz::detail {

// `--target` values: memory (mem_get/mem_open), physical (phys_get/phys_open + vm_map),
// event (event_get/event_open).
inline bool valid_target(const std::string& t) { return t == "memory" || t == "physical" || t == "event"; }
// "memory handles", "physical-memory handles", "event handles"
inline const char* target_noun(const std::string& t) {
  return t == "physical" ? "physical-memory handles" : t == "event" ? "event handles" : "memory handles";
}
// "memory handles (ref)", "physical-memory handles (ref)"
std::string target_title(const std::string& target, const std::string& adapter);

inline std::uint64_t now_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000ull + static_cast<std::uint64_t>(t.tv_nsec);
}
// Adds the time since `from` to `to` and returns now.
inline std::uint64_t spent(std::atomic<std::uint64_t>& to, std::uint64_t from) {
  const std::uint64_t t = now_ns();
  to.fetch_add(t - from, std::memory_order_relaxed);
  return t;
}

std::set<int> open_fds();
nlohmann::json outcome_json(const Outcome& o);

class RoleFailure : public std::runtime_error {
 public:
  RoleFailure(std::string stage, const Outcome& o)
      : std::runtime_error(stage + ": " + o.describe()), stage_(std::move(stage)), outcome_(o) {}
  const std::string& stage() const noexcept { return stage_; }
  const Outcome& outcome() const noexcept { return outcome_; }

 private:
  std::string stage_;
  Outcome outcome_;
};

template <class T>
T need(Result<T> r, const std::string& stage) {
  if (!r.ok()) throw RoleFailure(stage, r.outcome);
  return std::move(r.value);
}
inline void need(const Outcome& o, const std::string& stage) {
  if (!o.ok()) throw RoleFailure(stage, o);
}

// Allocations (or physical objects) of one process's set-up, filled with canaries, with
// their exports.
struct SetupState {
  std::vector<Owned> allocations;
  std::vector<Owned> exports;  // live exports, put before the allocations are freed
  std::vector<CanaryAlloc> table;
  std::vector<Exported> exported;  // live exports' bytes (and descriptors)
  std::vector<std::string> export_names;
  std::vector<Exported> revoked;
  std::vector<std::string> revoked_names;
  // Allocations whose kind the adapter does not export (CUDA: managed memory), kept as
  // decoys: "<name> (<kind>): <why>".
  std::vector<std::string> unexported;
  std::vector<NamedValue> fds;  // descriptors each allocation made, by name

  ~SetupState() {
    exports.clear();
    allocations.clear();
  }
};

// The descriptors an allocation made (those open now and not in `before`), as live values
// "<name>.fd", "<name>.fd2", ... of the set-up.
void name_new_fds(const std::set<int>& before, const std::string& name, SetupState& s);
// The canary of allocation `index` of a set-up (its salt derived from the set-up's seed).
CanaryAlloc canary_for(const std::string& name, std::uint64_t salt_seed, std::size_t index, std::size_t bytes, bool decoy);

// The physical objects of set-up kSetup for --target physical, in granules (phys_granularity).
struct PhysSpec {
  std::size_t granules;
  bool decoy;    // created and filled, never exported
  bool revoked;  // exported, and the export put before the campaign
};
const std::vector<PhysSpec>& producer_phys_setup();
const std::vector<PhysSpec>& consumer_phys_setup();
void build_physical_setup(Adapter& a, const std::vector<PhysSpec>& specs, const std::string& who,
                          std::uint64_t salt_seed, SetupState& s);

struct Executed {
  Verdict verdict = Verdict::rejected;
  Outcome outcome;
  std::string detail;
};

// What a consumer's physical execution needs.
struct PhysicalOracle {
  Adapter* adapter = nullptr;
  const MutatorContext* ctx = nullptr;
  std::span<const CanaryAlloc> table;
  MemoryReader* reader = nullptr;
  std::vector<std::byte>* scratch = nullptr;
  bool host_mappings = true;
  std::uint64_t granularity = 0;
};

// Opens `in` with phys_open, maps the object at the input's map offset and size into a
// reserved range, judges what the mapping shows, then unmaps, frees and closes. The
// descriptor check after the verb stays with the caller.
Executed execute_physical(const PhysicalOracle& o, const Input& in, int fd, TimeSpent& ns);

// `signal_live`: the producer's live exports are signaled once exported (an API without put
// keeps the "revoked" export live, and signaled).
void build_event_setup(Adapter& a, const std::vector<EventSpec>& specs, const std::string& who, bool signal_live,
                       SetupState& s);

// What a consumer's event execution needs. `own` are the worker's events (its set-up's
// allocations, in its table's order, after the producer's entries of `table`).
struct EventOracle {
  Adapter* adapter = nullptr;
  const MutatorContext* ctx = nullptr;
  std::span<const CanaryAlloc> producer;  // the producer's events, by set-up index
  std::span<const CanaryAlloc> own_table;
  std::vector<ObjectId> own;
  // Whether own events can be signalled and reset again (an API without reset): without it the
  // oracle cannot tell which own event an unsignaled open is, and says so at set-up.
  bool toggles = true;
  // Whether only the process that made an event pending can end it (cuda: AdapterInfo::
  // any_process_ends_pending_event false): a signal through an opened event then cannot end
  // the source's pending state, so both ways are judged by a reset and a signal through it.
  bool owner_ends = false;
};

// Opens `in` with event_open, judges the event it gives (its state against the set-up's, and
// for the worker's own events that a signal travels both ways), then releases it.
Executed execute_event(const EventOracle& o, const Input& in, int fd, TimeSpent& ns);

}  // namespace ipcheck::fuzz::detail
