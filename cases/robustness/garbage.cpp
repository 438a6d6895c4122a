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

// Hands the variants out in order to consumer0, consumer1, ... (on-demand roles: only as
// many start as the variants need). After the first lost process, the next consumer is
// readied (started, its runtime initialised, the real handle opened) while the current one
// works, so a lost context costs a hand-over, not a start.
class Handout {
 public:
  Handout(Role& r, const Target& target, const Target& decoy, const SharedVerdicts& shared, std::size_t total)
      : r_(r), target_(target), decoy_(decoy), shared_(shared), total_(total), most_(most_consumers(r)) {}

  void run() {
    ready(0);
    bool overlap = false;
    int c = 0;
    for (; next_ < total_ && c < most_; ++c) {
      give(c, next_);
      if (overlap && c + 1 < most_) ready(c + 1);
      const std::string how = r_.wait_exit(name(c));
      settle(name(c), how);
      overlap = overlap || next_ < total_;
      if (next_ < total_ && c + 1 < most_) ready(c + 1);
    }
    // One readied but not needed: it opens the real handle again and ends.
    if (c < most_ && readied_ > c) {
      give(c, total_);
      r_.wait_exit(name(c));
    }
  }
  int started() const { return readied_; }

 private:
  static std::string name(int c) { return "consumer" + std::to_string(c); }
  void ready(int c) {
    if (readied_ > c) return;
    send_target(r_, name(c), "handle", target_);
    send_target(r_, name(c), "decoy", decoy_);
    readied_ = c + 1;
  }
  void give(int c, std::size_t from) {
    const std::string text = std::to_string(from);
    r_.send(name(c), "verdicts", std::as_bytes(std::span(text)), shared_.fd.get());
  }
  // Where the consumer stopped: the first variant it never finished. One it died inside is
  // recorded as having killed it.
  void settle(const std::string& who, const std::string& how) {
    while (next_ < total_ && shared_.v[next_].state != State::untried && shared_.v[next_].state != State::in_flight) ++next_;
    if (next_ < total_ && shared_.v[next_].state == State::in_flight) {
      Verdict& v = shared_.v[next_];
      put_text(v.detail, sizeof v.detail, who + " ended (" + how + ") inside this open");
      v.state = State::killed;
      ++next_;
    }
    r_.note(who + " judged up to variant " + std::to_string(next_) + " of " + std::to_string(total_) + ", then " + how);
  }

  Role& r_;
  const Target& target_;
  const Target& decoy_;
  const SharedVerdicts& shared_;
  std::size_t total_;
  int most_;
  std::size_t next_ = 0;
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
  for (HandleKind kind : {HandleKind::memory, HandleKind::physical, HandleKind::event}) {
    const std::string name = kind_name(kind);
    register_case(Case("robustness.open.garbage." + name,
                       "Thousands of zero, random, truncated, extended and mutated " + name +
                           " handles: each refused cleanly or the export itself, judged in a live process")
                      .clause(kClause)
                      .role("producer", [kind](Role& r) { producer(r, kind); })
                      .on_demand_roles("consumer", kMostConsumers, [kind](Role& r) { consumer(r, kind); })
                      .expendable("consumer")
                      .param("consumers", kMostConsumers)
                      // A driver whose variants kill many processes needs many in turn; a
                      // hang is still caught within the run's inactivity limit.
                      .timeout(300)
                      .def);
  }
}

IPCHECK_CASE(register_garbage);

}  // namespace
}  // namespace ipcheck::catalog::robustness_garbage
