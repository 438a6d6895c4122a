// An opened event shares state with the exported one: signals, waits and queries cross in
// both directions; opens, retains, releases and put leave the shared state working.
#include <set>
#include <thread>

#include "../common.hpp"

namespace ipcheck::catalog::event_shared_state {
namespace {

using Clock = std::chrono::steady_clock;

// Exports one IPC event to every consumer-like peer named in `to`.
Owned export_event_to(Role& r, std::string_view clause, const std::vector<std::string>& to, Owned& exported) {
  Owned ev = create_event(r, {.ipc = true}, clause);
  Exported h;
  exported = export_event(r, ev.get(), h, clause);
  for (const auto& peer : to) r.send_handle(peer, "handle", h);
  return ev;
}

// --- ur.event.bidirectional: each side blocks in a wait the other side's signal ends.
// Two events, so that neither direction needs a reset (some APIs have none): "forward" is
// signaled by the producer, "backward" through the consumer's opened event.
constexpr const char* kBidi = "ur.event.bidirectional";

// Where only the process that made an event pending can end it (cuda: AdapterInfo::
// any_process_ends_pending_event), the new backward event's pending state is the producer's:
// the producer ends it, and the consumer makes it pending again through its opened event, so
// that the consumer's signal can end it. The producer must see that reset.
void make_backward_the_consumers(Role& r, ObjectId backward, const std::string& why) {
  r.note("only the process that made an event pending can end it here (" + why +
         "): the producer signals the backward event and the consumer resets it through its opened event");
  r.check_ok(r.adapter().event_signal(backward), kBidi, "event_signal of the backward event by its creator");
  send_text(r, "consumer", "backward-signaled", "");
  receive_text(r, "backward-reset");
  check_pending(r, !query(r, backward, kBidi, "event_query"), kBidi,
                "the consumer's reset through its opened event made the producer's event pending");
}

void reset_backward_here(Role& r, ObjectId backward) {
  receive_text(r, "backward-signaled");
  r.check(wait_for(r, backward, kLongWait, kBidi, "event_wait on the backward event"), kBidi,
          "the consumer's opened backward event sees its creator's signal");
  r.check_ok(r.adapter().event_reset(backward), kBidi, "event_reset through the opened backward event");
  send_text(r, "producer", "backward-reset", "");
}

void bidi_producer(Role& r) {
  Owned forward_export, backward_export;
  Owned forward = export_event_to(r, kBidi, {"consumer"}, forward_export);
  Owned backward = create_event(r, {.ipc = true}, kBidi);
  Exported hb;
  backward_export = export_event(r, backward.get(), hb, kBidi);
  r.send_handle("consumer", "backward", hb);
  receive_text(r, "opened");
  check_pending(r, !query(r, forward.get(), kBidi, "event_query"), kBidi, "the producer's event is not signaled before any signal");
  // The producer's signal ends a wait the consumer is blocked in.
  receive_text(r, "consumer-waiting");
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // let the waiter block
  const auto signal_at = Clock::now();
  r.check_ok(r.adapter().event_signal(forward.get()), kBidi, "event_signal by the producer");
  send_signal_time(r, "consumer", "forward-signal-time", signal_at);
  if (const std::string why = only_its_maker_ends_pending(r); !why.empty()) make_backward_the_consumers(r, backward.get(), why);
  // The producer blocks and the signal through the consumer's opened event ends its wait.
  send_text(r, "consumer", "producer-waiting", "");
  const auto t0 = Clock::now();
  const Seen woke = wait_for(r, backward.get(), kLongWait, kBidi, "event_wait in the producer");
  const auto woke_at = Clock::now();
  check_wake_latency(r, woke, woke_at, "backward-signal-time", "the producer's wait on the consumer's signal");
  r.check(woke, kBidi, woke ? "the producer's wait ended by the consumer's signal after " + ms(Clock::now() - t0)
                            : "the producer's wait timed out after " + ms(Clock::now() - t0) +
                                  ": the signal through the consumer's opened event never reached it");
  r.check(query(r, backward.get(), kBidi, "event_query"), kBidi, "the producer's query sees the consumer's signal");
  // A reset through the opened event reaches the source too (where the API has reset).
  if (receive_text(r, "reset") == "ok")
    check_pending(r, !query(r, forward.get(), kBidi, "event_query"), kBidi, "the consumer's reset is seen by the producer");
  r.barrier("done");
}

void bidi_consumer(Role& r) {
  Received hf = r.receive("handle");
  Received hb = r.receive("backward");
  Owned forward = open_event(r, hf, kBidi, "event_open");
  Owned backward = open_event(r, hb, kBidi, "event_open");
  send_text(r, "producer", "opened", "");
  check_pending(r, !query(r, forward.get(), kBidi, "event_query"), kBidi, "the opened event is not signaled before any signal");
  check_pending(r, !wait_for(r, forward.get(), kShortWait, kBidi, "short event_wait"), kBidi,
                "a " + ms(kShortWait) + " wait before any signal times out");
  send_text(r, "producer", "consumer-waiting", "");
  const auto t0 = Clock::now();
  const Seen woke = wait_for(r, forward.get(), kLongWait, kBidi, "event_wait in the consumer");
  const auto woke_at = Clock::now();
  check_wake_latency(r, woke, woke_at, "forward-signal-time", "the consumer's wait on the producer's signal");
  r.check(woke, kBidi, woke ? "the consumer's wait ended by the producer's signal after " + ms(Clock::now() - t0)
                            : "the consumer's wait timed out after " + ms(Clock::now() - t0) +
                                  ": the producer's signal never reached it");
  r.check(query(r, forward.get(), kBidi, "event_query"), kBidi, "the consumer's query sees the producer's signal");
  if (!only_its_maker_ends_pending(r).empty()) reset_backward_here(r, backward.get());
  receive_text(r, "producer-waiting");
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const auto signal_at = Clock::now();
  r.check_ok(r.adapter().event_signal(backward.get()), kBidi, "event_signal through the opened event");
  send_signal_time(r, "producer", "backward-signal-time", signal_at);
  const Outcome reset = r.adapter().event_reset(forward.get());
  if (reset.code == Errc::not_implemented) {
    r.note("event_reset: " + reset.describe() + "; the reset direction is not checked");
    send_text(r, "producer", "reset", "none");
  } else {
    r.check_ok(reset, kBidi, "event_reset through the opened event");
    send_text(r, "producer", "reset", reset.ok() ? "ok" : "failed");
  }
  r.barrier("done");
}

IPCHECK_CASE(Case("event.bidirectional", "Signals cross both ways: each process wakes from a wait on the other's signal")
                 .clauses({kBidi, kEventPending, kWakeLatency})
                 .role("producer", bidi_producer)
                 .role("consumer", bidi_consumer));

// --- ur.event.release: the opened event has the normal release path and reference count.
constexpr const char* kRelease = "ur.event.release";

void release_producer(Role& r) {
  Owned exported;
  Owned ev = export_event_to(r, kRelease, {"consumer"}, exported);
  r.barrier("released");
  // The consumer released its event entirely: the exported one is untouched (still pending,
  // then completed by its own signal).
  check_pending(r, !query(r, ev.get(), kRelease, "event_query"), kRelease,
                "the producer's event is still pending after the consumer's release, before its signal");
  r.check_ok(r.adapter().event_signal(ev.get()), kRelease, "event_signal after the consumer's release");
  r.check(wait_for(r, ev.get(), kLongWait, kRelease, "event_wait"), kRelease,
          "the producer's event completes its own signal after the consumer's release");
}

void release_consumer(Role& r) {
  Received h = r.receive("handle");
  Owned opened = open_event(r, h, kRelease, "event_open");
  const ObjectId ev = opened.get();
  const Outcome retained = r.adapter().event_retain(ev);
  if (retained.code == Errc::not_implemented) {
    r.note("event_retain: " + retained.describe() + "; only the release path is checked");
  } else {
    r.require_ok(retained, kRelease, "event_retain of the opened event");
    Owned retain = Owned::event(r.adapter(), ev);
    r.check_ok(retain.reset(), kRelease, "event_release of the retain");
    // One reference is left (the open's): the event still works.
    r.check_ok(r.adapter().event_query(ev).outcome, kRelease, "event_query after releasing the retain (one reference left)");
  }
  r.check_ok(opened.reset(), kRelease, "event_release of the open (the last reference, no separate close)");
  r.barrier("released");
}

IPCHECK_CASE(Case("event.release", "An opened event is retained and released by the normal path; no separate close")
                 .clauses({kRelease, kEventPending})
                 .role("producer", release_producer)
                 .role("consumer", release_consumer));

// --- ur.event.open.repeat: several opens, distinct objects, each released on its own.
constexpr const char* kRepeat = "ur.event.open.repeat";
constexpr int kOpens = 3;

void repeat_producer(Role& r) {
  Owned exported;
  Owned ev = export_event_to(r, kRepeat, {"consumer"}, exported);
  receive_text(r, "opened");
  r.check_ok(r.adapter().event_signal(ev.get()), kRepeat, "event_signal by the producer");
  send_text(r, "consumer", "signaled", "");
  if (receive_text(r, "reset") == "ok")
    check_pending(r, !query(r, ev.get(), kRepeat, "event_query"), kRepeat, "the reset through open #2 reaches the producer");
  r.barrier("done");
}

void repeat_consumer(Role& r) {
  Received h = r.receive("handle");
  std::vector<Owned> evs;
  for (int i = 0; i < kOpens; ++i) evs.push_back(open_event(r, h, kRepeat, "event_open #" + std::to_string(i + 1)));
  // Distinct by the runtime's own identity of each event; the adapter's ids always differ.
  std::set<std::uint64_t> distinct;
  Evidence by = Evidence::tally();
  for (const auto& e : evs) {
    auto id = r.adapter().native_identity(e.get());
    if (id.outcome.code == Errc::not_implemented) {
      by.with(Evidence::adapter());
      distinct.insert(e.get());
      continue;
    }
    by.with(id.outcome);
    SetupSteps setup(r);
    distinct.insert(r.require(id, kRepeat, "native_identity of an opened event"));
  }
  r.check(distinct.size() == kOpens, by, kRepeat,
          std::to_string(kOpens) + " opens gave " + std::to_string(distinct.size()) + " distinct event objects");
  // Each open shares the export's state: nothing signalled it yet. (An event that reads as
  // signalled before any signal would make "sees the signal" below hold for any event.)
  for (int i = 0; i < kOpens; ++i)
    check_pending(r, !query(r, evs[i].get(), kRepeat, "event_query"), kRepeat,
                  "open #" + std::to_string(i + 1) + " is not signaled before the producer's signal");
  send_text(r, "producer", "opened", "");
  receive_text(r, "signaled");
  for (int i = 0; i < kOpens; ++i)
    r.check(wait_for(r, evs[i].get(), kLongWait, kRepeat, "event_wait"), kRepeat,
            "open #" + std::to_string(i + 1) + " sees the signal");
  r.check_ok(evs[0].reset(), kRepeat, "event_release of open #1");
  const Outcome reset = r.adapter().event_reset(evs[1].get());
  if (reset.code == Errc::not_implemented) {
    r.note("event_reset: " + reset.describe() + "; open #2 and #3 are checked by query only");
    for (int i = 1; i < kOpens; ++i)
      r.check(query(r, evs[i].get(), kRepeat, "event_query"), kRepeat,
              "open #" + std::to_string(i + 1) + " still sees the signal after open #1 was released");
    send_text(r, "producer", "reset", "none");
  } else {
    r.check_ok(reset, kRepeat, "event_reset through open #2 after open #1 was released");
    check_pending(r, !query(r, evs[2].get(), kRepeat, "event_query"), kRepeat, "open #3 sees the reset made through open #2");
    send_text(r, "producer", "reset", "ok");
  }
  // Released once the producer has looked: where a reset is a record of this process (cuda),
  // releasing the event lets that record run, and the producer would see it complete.
  r.barrier("done");
  for (int i = 1; i < kOpens; ++i)
    r.check_ok(evs[i].reset(), kRepeat, "event_release of open #" + std::to_string(i + 1));
}

IPCHECK_CASE(Case("event.open.repeat", "Three opens of one event handle give distinct events sharing state, released one by one")
                 .clauses({kRepeat, kEventPending})
                 .role("producer", repeat_producer)
                 .role("consumer", repeat_consumer));

// --- ur.event.put.producer_alive
constexpr const char* kPut = "ur.event.put.producer_alive";

void put_producer(Role& r) {
  Owned exported;
  Owned ev = export_event_to(r, kPut, {"consumer"}, exported);
  receive_text(r, "opened");
  put_or_skip(r, exported, kPut, "event_put");
  r.check_ok(r.adapter().event_query(ev.get()).outcome, kPut, "event_query after put");
  r.check_ok(r.adapter().event_signal(ev.get()), kPut, "event_signal after put");
  r.check(wait_for(r, ev.get(), kLongWait, kPut, "event_wait after put"), kPut, "the event's own signal ends its wait after put");
  send_text(r, "consumer", "signaled", "");
  r.barrier("done");
}

void put_consumer(Role& r) {
  Received h = r.receive("handle");
  Owned ev = open_event(r, h, kPut, "event_open before put");
  send_text(r, "producer", "opened", "");
  receive_text(r, "signaled");
  r.check(wait_for(r, ev.get(), kLongWait, kPut, "event_wait"), kPut,
          "an event opened before put sees the producer's signal after put");
  r.barrier("done");
}

IPCHECK_CASE(Case("event.put.producer_alive", "After put the producer's event still signals, waits and queries, and is still shared")
                 .clause(kPut)
                 .needs(needs_verb("event_put", "event_put"))
                 .role("producer", put_producer)
                 .role("consumer", put_consumer));

// --- sycl.event.lifetime (observed): the opened event after the producer's release, then exit.
constexpr const char* kLife = "sycl.event.lifetime";

void life_producer(Role& r) {
  Owned exported;
  Owned ev = export_event_to(r, kLife, {"consumer"}, exported);
  receive_text(r, "opened");
  end_export(r, exported, kLife, "event_put");
  r.check_ok(ev.reset(), kLife, "event_release of the producer's only reference");
  send_text(r, "consumer", "released", "");
  receive_text(r, "observed");
  // Ending now: the consumer looks at its event again once this process is gone.
}

// "survives": signal, query, reset and a timed-out wait all behave (those the API has);
// otherwise what broke.
std::string exercise(Role& r, ObjectId ev) {
  Adapter& a = r.adapter();
  if (auto o = a.event_signal(ev); !o.ok()) return "signal_" + outcome_word(o);
  auto q = a.event_wait(ev, kLongWait);  // a signal may complete asynchronously (CUDA records it on a stream)
  if (!q.ok()) return "wait_" + outcome_word(q.outcome);
  if (!q.value) return "signal_lost";
  const Outcome reset = a.event_reset(ev);
  if (reset.code == Errc::not_implemented) return "survives";  // signal and wait are all such an API has
  if (!reset.ok()) return "reset_" + outcome_word(reset);
  auto w = a.event_wait(ev, std::chrono::milliseconds(20));
  if (!w.ok()) return "wait_" + outcome_word(w.outcome);
  return w.value ? "reset_lost" : "survives";
}

void life_consumer(Role& r) {
  Received h = r.receive("handle");
  Owned ev = open_event(r, h, kLife, "event_open");
  send_text(r, "producer", "opened", "");
  receive_text(r, "released");
  r.observe("event.lifetime.after_producer_release", exercise(r, ev.get()), kLife);
  send_text(r, "producer", "observed", "");
  r.note("producer ended: " + r.wait_exit("producer"));
  r.observe("event.lifetime.after_producer_exit", exercise(r, ev.get()), kLife);
  r.note("event_release after the producer's exit: " + outcome_word(ev.reset()));
}

IPCHECK_CASE(Case("event.lifetime", "Observes whether an opened event keeps working after the producer releases it and exits")
                 .clause(kLife)
                 .fresh_process("it observes the event after the producer's process has exited")
                 .role("producer", life_producer)
                 .role("consumer", life_consumer));

}  // namespace
}  // namespace ipcheck::catalog::event_shared_state
