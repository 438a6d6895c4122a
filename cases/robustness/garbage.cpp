// rb.open.garbage: zero, random, truncated, extended and field-mutated handle bytes give a
// clean error; an open that succeeds anyway must map exactly the exported object. Some
// 2,500 variants per kind, from a fixed seed (a failure names its variant, reproducibly).
// Clean means the process can go on: a variant after which the process cannot use its
// device (device_lost, or a failed probe read) is a violation named context_lost, one that
// kills the process is one named killed, and the variants after it go to a fresh consumer
// process: each verdict comes from a process whose context was alive. Every byte of the
// handle changed alone is among them (checked); what the runtime answered is observed per
// family (garbage.<kind>.<family>), so a new driver's changes show in the diff. A handle
// that travels with a descriptor is also opened with the real bytes and descriptors that are
// not the export's (closed, out of range, /dev/null, a pipe, a socket, an eventfd, a plain
// memfd, another export's): they reach the runtime's import, not only ipcheck's record checks.
//
// This file holds the case and its producer; garbage_variants.cpp the variants and their
// judge, garbage_consumer.cpp the consumer (garbage_impl.hpp: what they share).
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "forge.hpp"
#include "garbage_impl.hpp"

namespace ipcheck::catalog::robustness_garbage {
namespace {

// The most consumer processes a case may start, one after another: each variant that
// breaks a context or kills a process costs one. Past it the rest go unjudged (a check says
// so). `--param consumers=N` lowers it (a quick run against a driver that loses many).
constexpr int kMostConsumers = 256;

int most_consumers(Role& r) {
  const long v = count_param(r, "consumers", kMostConsumers);
  if (v > kMostConsumers) {
    const std::string why = "--param consumers=" + std::to_string(v) + " is more than the case can start; give at most consumers=" +
                            std::to_string(kMostConsumers);
    r.check(false, "harness.param", why);
    throw RoleAbort{why};
  }
  return static_cast<int>(v);
}

// Consumers working at once, each on its own contiguous share of the variants (a lane);
// `--param lanes=N` changes it (1: one consumer after another, as before). Four keep a GPU's
// contexts busy without crowding it, and lose little on a 2-core machine.
constexpr int kLanes = 4;

// Hands the variants out in lanes: lane l covers [total*l/L, total*(l+1)/L), and consumers
// (on-demand roles consumer0, consumer1, ...) take up a lane where the last one stopped. Once
// a consumer was lost, one more is readied (started, its runtime initialised, the real
// handle opened) while the others work, so a lost context costs a hand-over, not a start.
class Handout {
 public:
  Handout(Role& r, const Target& target, const Target& decoy, const SharedVerdicts& shared, std::size_t total)
      : r_(r), target_(target), decoy_(decoy), shared_(shared), total_(total), most_(most_consumers(r)) {
    const long asked = count_param(r, "lanes", kLanes);
    const std::size_t lanes = std::clamp<std::size_t>(static_cast<std::size_t>(std::max(1L, asked)), 1,
                                                      std::max<std::size_t>(1, std::min<std::size_t>(total_, most_)));
    for (std::size_t l = 0; l < lanes; ++l) lanes_.push_back({total_ * l / lanes, total_ * (l + 1) / lanes, {}});
  }

  void run() {
    for (auto& lane : lanes_)
      if (lane.next < lane.end && readied_ < most_) hand(lane);
    bool lost_one = false;
    while (std::any_of(lanes_.begin(), lanes_.end(), [](const Lane& l) { return !l.consumer.empty(); })) {
      std::vector<std::string> working;
      for (const auto& l : lanes_)
        if (!l.consumer.empty()) working.push_back(l.consumer);
      std::string how;
      const std::string who = r_.wait_exit_any(working, how);
      Lane& lane = *std::find_if(lanes_.begin(), lanes_.end(), [&](const Lane& l) { return l.consumer == who; });
      lane.consumer.clear();
      settle(lane, who, how);
      if (lane.next < lane.end) {
        lost_one = true;
        if (!spare_.empty() || readied_ < most_) hand(lane);
      }
      if (lost_one && spare_.empty() && readied_ < most_ && unfinished()) spare_.push_back(ready());
    }
    // One readied but not needed: it opens the real handle again and ends.
    for (const auto& c : spare_) {
      give(c, total_, total_);
      r_.wait_exit(c);
    }
  }
  int started() const { return readied_; }

 private:
  struct Lane {
    std::size_t next, end;
    std::string consumer;  // working on it now; empty when none
  };
  bool unfinished() const {
    return std::any_of(lanes_.begin(), lanes_.end(), [](const Lane& l) { return l.next < l.end && l.consumer.empty(); }) ||
           std::any_of(lanes_.begin(), lanes_.end(), [](const Lane& l) { return !l.consumer.empty(); });
  }
  // Starts the next consumer: it opens the real handle and waits for its share.
  std::string ready() {
    const std::string c = "consumer" + std::to_string(readied_++);
    send_target(r_, c, "handle", target_);
    send_target(r_, c, "decoy", decoy_);
    return c;
  }
  void hand(Lane& lane) {
    std::string c;
    if (!spare_.empty()) {
      c = spare_.front();
      spare_.erase(spare_.begin());
    } else {
      c = ready();
    }
    lane.consumer = c;
    give(c, lane.next, lane.end);
  }
  void give(const std::string& c, std::size_t from, std::size_t to) {
    const std::string text = std::to_string(from) + " " + std::to_string(to);
    r_.send(c, "verdicts", std::as_bytes(std::span(text)), shared_.fd.get());
  }
  // Where the consumer stopped in its lane: the first variant it never finished. One it died
  // inside is recorded as having killed it.
  void settle(Lane& lane, const std::string& who, const std::string& how) {
    const std::size_t from = lane.next;
    while (lane.next < lane.end && shared_.v[lane.next].state != State::untried &&
           shared_.v[lane.next].state != State::in_flight)
      ++lane.next;
    if (lane.next < lane.end && shared_.v[lane.next].state == State::in_flight) {
      Verdict& v = shared_.v[lane.next];
      put_text(v.detail, sizeof v.detail, who + " ended (" + how + ") inside this open");
      v.state = State::killed;
      ++lane.next;
    }
    r_.note(who + " judged variants " + std::to_string(from) + " to " + std::to_string(lane.next) + " of " +
            std::to_string(total_) + ", then " + how);
  }

  Role& r_;
  const Target& target_;
  const Target& decoy_;
  const SharedVerdicts& shared_;
  std::size_t total_;
  int most_;
  std::vector<Lane> lanes_;
  std::vector<std::string> spare_;  // readied, not yet given work
  int readied_ = 0;
};

void producer(Role& r, HandleKind kind) {
  Target target = export_target(r, kind, kTargetSeed, kClause);
  Target decoy = export_target(r, kind, kDecoySeed, kClause);
  const std::vector<Variant> variants =
      all_variants(r, kind, target.handle.bytes, decoy.handle.bytes, target.handle.fd >= 0, decoy.handle.fd >= 0);
  if (!known_layout(r, kind_name(kind), target.handle.bytes.size()))
    r.note("handle layout '" + r.adapter().info().layout_of(kind_name(kind)) +
           "' is opaque to ipcheck: field-aware mutations skipped, blind ones only");
  SharedVerdicts shared;
  shared.fd.reset(::memfd_create("ipcheck-garbage-verdicts", MFD_CLOEXEC));
  if (!shared.fd || ::ftruncate(shared.fd.get(), static_cast<off_t>(std::max<std::size_t>(1, variants.size()) * sizeof(Verdict))) != 0 ||
      !shared.map(variants.size()))
    r.harness_error(std::string("the shared verdict page: memfd_create/ftruncate/mmap failed: ") + std::strerror(errno));
  Handout handout(r, target, decoy, shared, variants.size());
  handout.run();
  judge(r, kind, variants, shared, handout.started());
  check_every_byte(r, variants, shared, target.handle.bytes);
}

void register_garbage() {
  // The plain case is the warm one: each consumer opens (and closes) the real handle first.
  for (Cache cache : {Cache::warm, Cache::held})
    for (HandleKind kind : {HandleKind::memory, HandleKind::physical, HandleKind::event}) {
      const std::string name = kind_name(kind);
      register_case(Case("robustness.open.garbage." + name + cache_suffix(cache, Cache::warm),
                         "Thousands of zero, random, truncated, extended and mutated " + name +
                             " handles: each refused cleanly or the export itself, judged in a live process" +
                             cache_words(cache, Cache::warm))
                        .clause(kClause)
                        .role("producer", [kind](Role& r) { producer(r, kind); })
                        .on_demand_roles("consumer", kMostConsumers, [kind, cache](Role& r) { consumer(r, kind, cache); })
                        .expendable("consumer")
                        .param("consumers", kMostConsumers)
                        .param("lanes", kMostConsumers)
                        // A driver whose variants kill many processes needs many in turn; a
                        // hang is still caught within the run's inactivity limit.
                        .timeout(300)
                        .def);
    }
}

IPCHECK_CASE(register_garbage);

}  // namespace
}  // namespace ipcheck::catalog::robustness_garbage
