// The two roles of a fuzz campaign, shared by their files: roles.cpp (`ipcheck fuzz-role`,
// the producer, and the set-up both roles make) and roles_consumer.cpp (a consumer worker:
// its own set-up and calibration, its input stream or the parent's replays, each input
// executed and judged). Private to fuzz/src.
#pragma once

#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "ipcheck/adapter.hpp"
#include "ipcheck/audit.hpp"
#include "ipcheck/channel.hpp"
#include "ipcheck/fuzz/oracle.hpp"
#include "campaign_messages.hpp"
#include "protocol.hpp"
#include "targets.hpp"

namespace ipcheck::fuzz::detail {

// The role's adapter, initialised as the campaign's start document says.
std::unique_ptr<Adapter> make_adapter(const nlohmann::json& start);

// Allocates `specs` (named <who>.alloc[i]), fills each with its canary and exports it as its
// spec says; the allocations, the exports (live and put) with their names, what could not be
// exported, and the canary table go to `s`.
void build_setup(Adapter& a, const std::vector<AllocSpec>& specs, const std::string& who, std::uint64_t salt_seed,
                 SetupState& s);

// Reports a set-up that failed (an adapter's verb, or something fuzz/ cannot hold) and ends
// the role's part.
void fail_setup(Channel& ch, const std::exception& e, const char* stage);

class AdapterReader final : public MemoryReader {
 public:
  explicit AdapterReader(Adapter& a) : a_(a) {}
  bool read(std::uint64_t address, std::span<std::byte> out) override { return a_.read(address, out).ok(); }

 private:
  Adapter& a_;
};

// A consumer worker: sets itself up, calibrates, says ready and waits for a slot; then runs
// its input stream, or replays the inputs the parent sends (roles_consumer.cpp).
class Consumer {
 public:
  Consumer(Channel& ch, const nlohmann::json& start, std::map<std::string, unique_fd> descriptors)
      : ch_(ch), start_(start), descriptors_(std::move(descriptors)) {}

  int run();

 private:
  using Executed = detail::Executed;

  void setup();
  void setup_physical();
  void setup_event();
  Executed execute(const Input& in);
  Executed execute_memory(const Input& in, int fd);
  void record(const Input& in, const Executed& e, std::uint64_t exec);
  void count(const Executed& e);
  Executed run_one(const Input& in, std::uint64_t flight);
  int campaign();
  int replay();
  void load_corpus();
  std::vector<std::string> calibrate();
  bool wait_for_go();
  enum class Parent { go_on, stop, gone };
  Parent read_parent();
  void take_schedule(const std::vector<wire::Demotion>& classes);
  bool demoted(const Input& in, Rng& rng);
  wire::Final final_audit();
  std::optional<Outcome> context_health();

  Channel& ch_;
  nlohmann::json start_;
  wire::Go go_;  // the slot this worker took: its input stream
  unique_fd page_fd_;
  std::map<std::string, unique_fd> descriptors_;
  WorkerPage* page_ = nullptr;
  std::unique_ptr<Adapter> adapter_;
  SetupState own_;
  MutatorContext ctx_;
  std::vector<CanaryAlloc> table_;
  std::vector<int> base_fds_;  // descriptor passed for each base, when descriptors travel
  std::unique_ptr<AdapterReader> reader_;
  std::vector<std::byte> scratch_;
  int fd_floor_ = -1;
  int claimed_size_field_ = -1;
  bool host_mappings_ = true;  // AdapterInfo::opened_memory_is_host_mapping
  bool retire_ = false;        // the context is lost: report, then exit to be replaced
  bool context_check_ = true;  // the adapter answers native("context_check"); else a read checks
  std::string target_ = "memory";  // --target: memory | physical | event
  detail::PhysicalOracle phys_;    // --target physical
  detail::EventOracle events_;     // --target event
  std::string event_identity_;     // why own events cannot be told apart, when they cannot
  std::vector<Input> corpus_;
  std::unordered_set<std::uint64_t> shapes_;
  std::map<std::string, int> finding_keys_;
  int corpus_sent_ = 0;
  int findings_sent_ = 0;
  ProcSnapshot before_;
  std::vector<std::uint64_t> schedule_;  // demoted input classes (changed_fields masks), the parent's order
  std::vector<std::uint64_t> keep_;      // and how rarely each still runs (once in keep_[k] draws)
};

}  // namespace ipcheck::fuzz::detail
