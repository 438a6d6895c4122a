// Stress, ur.event.bidirectional at scale: `cycles` event round trips between two
// processes (--param cycles=N, 100000 by default). Each round trip carries a number
// through shared memory: the producer writes i and signals "forward"; the consumer wakes,
// reads i, writes i + 1 and signals "backward" through its opened event; the producer
// wakes and reads i + 1. Each side resets the event it waited on before the next signal
// can come. Every wait must end by its signal, every number must arrive; nothing grows.
#include <cstring>

#include "stress.hpp"

namespace ipcheck::catalog::stress_event_roundtrips {
namespace {

constexpr const char* kClause = "ur.event.bidirectional";

std::uint64_t read_number(Role& r, DevPtr p, bool& ok) {
  std::byte b[8];
  ok = r.adapter().read(p, b).ok();
  std::uint64_t v;
  std::memcpy(&v, b, sizeof v);
  return v;
}

bool write_number(Role& r, DevPtr p, std::uint64_t v) {
  std::byte b[8];
  std::memcpy(b, &v, sizeof v);
  return r.adapter().write(p, b).ok();
}

// Ends the loop on the first broken round trip: the peer then times out in its own wait.
struct Tally {
  long broken_at = -1;
  std::string why;
  bool fail(long i, std::string what) {
    broken_at = i;
    why = std::move(what);
    return false;
  }
};

void producer(Role& r) {
  const long cycles = count_param(r, "cycles", 100000);
  Adapter& a = r.adapter();
  if (const std::string why = only_its_maker_ends_pending(r); !why.empty())
    r.skip("round trips reset an event in the waiting process and end it by the other process's signal, and here "
           "only the process that made an event pending can end it (" + why + ")");
  Owned forward = create_event(r, {.ipc = true}, kClause);
  Owned backward = create_event(r, {.ipc = true}, kClause);
  const Outcome probe = a.event_reset(backward.get());
  if (probe.code == Errc::not_implemented) r.skip("round trips reuse their events and need event_reset: " + probe.describe());
  r.require_ok(probe, kClause, "event_reset");
  Exported hf, hb, hm;
  Owned forward_export = export_event(r, forward.get(), hf, kClause);
  Owned backward_export = export_event(r, backward.get(), hb, kClause);
  Owned mem = alloc_filled(r, kPage, 0, kClause);
  Owned mem_export = export_memory(r, mem.get(), hm, kClause);
  r.send_handle("consumer", "forward", hf);
  r.send_handle("consumer", "backward", hb);
  r.send_handle("consumer", "number", hm);
  receive_text(r, "ready");
  GrowthWatch watch;
  Tally t;
  Evidence by = Evidence::tally();  // the same verbs every round: the first round's answers tell
  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < cycles; ++i) {
    if (!write_number(r, mem.get(), 2 * i)) { t.fail(i, "write"); break; }
    const Outcome signaled = a.event_signal(forward.get());
    if (i == 0) by.with(signaled);
    if (!signaled.ok()) { t.fail(i, "event_signal forward"); break; }
    auto w = a.event_wait(backward.get(), kLongWait);
    if (i == 0) by.with(w.outcome);
    if (!w.ok() || !w.value) { t.fail(i, w.ok() ? "the wait for backward timed out after " + ms(kLongWait) : "event_wait: " + w.outcome.describe()); break; }
    if (!a.event_reset(backward.get()).ok()) { t.fail(i, "event_reset backward"); break; }
    bool ok = false;
    const std::uint64_t got = read_number(r, mem.get(), ok);
    if (!ok || got != static_cast<std::uint64_t>(2 * i + 1)) {
      t.fail(i, "read " + std::to_string(got) + ", expected the consumer's " + std::to_string(2 * i + 1));
      break;
    }
    if ((i + 1) % 10000 == 0) watch.sample("after round trip " + std::to_string(i + 1));
    progress(r, i + 1, cycles, 20000, "event round trips");
  }
  const auto took = std::chrono::steady_clock::now() - t0;
  r.check(t.broken_at < 0, by, kClause,
          t.broken_at < 0 ? std::to_string(cycles) + " round trips, each number carried both ways, in " + ms(took)
                          : "round trip " + std::to_string(t.broken_at + 1) + " of " + std::to_string(cycles) + " broke: " + t.why);
  if (t.broken_at < 0)
    r.data("stress.event_roundtrips", "{\"cycles\":" + std::to_string(cycles) + ",\"seconds\":" +
                                          std::to_string(std::chrono::duration<double>(took).count()) + "}");
  watch.check(r, kClause, "the producer after the round trips");
  r.barrier("done");
}

void consumer(Role& r) {
  const long cycles = count_param(r, "cycles", 100000);
  Adapter& a = r.adapter();
  Received hf = r.receive("forward");
  Received hb = r.receive("backward");
  Received hm = r.receive("number");
  Owned forward = open_event(r, hf, kClause, "event_open");
  Owned backward = open_event(r, hb, kClause, "event_open");
  Owned mem = open_received(r, hm, kClause, "mem_open");
  GrowthWatch watch;
  send_text(r, "producer", "ready", "");
  Tally t;
  Evidence by = Evidence::tally();
  for (long i = 0; i < cycles; ++i) {
    auto w = a.event_wait(forward.get(), kLongWait);
    if (i == 0) by.with(w.outcome);
    if (!w.ok() || !w.value) { t.fail(i, w.ok() ? "the wait for forward timed out after " + ms(kLongWait) : "event_wait: " + w.outcome.describe()); break; }
    if (!a.event_reset(forward.get()).ok()) { t.fail(i, "event_reset forward"); break; }
    bool ok = false;
    const std::uint64_t got = read_number(r, mem.get(), ok);
    if (!ok || got != static_cast<std::uint64_t>(2 * i)) {
      t.fail(i, "read " + std::to_string(got) + ", expected the producer's " + std::to_string(2 * i));
      break;
    }
    if (!write_number(r, mem.get(), 2 * i + 1)) { t.fail(i, "write"); break; }
    if (!a.event_signal(backward.get()).ok()) { t.fail(i, "event_signal backward"); break; }
    if ((i + 1) % 10000 == 0) watch.sample("after round trip " + std::to_string(i + 1));
  }
  r.check(t.broken_at < 0, by, kClause,
          t.broken_at < 0 ? std::to_string(cycles) + " waits ended by the producer's signal, each number as sent"
                          : "round trip " + std::to_string(t.broken_at + 1) + " of " + std::to_string(cycles) + " broke: " + t.why);
  watch.check(r, kClause, "the consumer after the round trips");
  r.barrier("done");
}

IPCHECK_CASE(Case("stress.event_roundtrips",
                  "100000 event round trips between two processes, a number carried each way (--param cycles=N)")
                 .param("cycles", 10000000)
                 .hidden()
                 .clause(kClause)
                 .timeout(600)
                 .role("producer", producer)
                 .role("consumer", consumer));

}  // namespace
}  // namespace ipcheck::catalog::stress_event_roundtrips
