// ur.event.bidirectional as a round trip: the consumer blocks in a wait that the
// producer's signal ends, then the producer blocks in a wait that the consumer's signal
// (through its opened event) ends.
//
// Under `ipcheck run --inject` one role is killed (SIGKILL) at a protocol step, "during a
// wait" included (killed while blocked in event_wait); the survivors are judged by
// rb.consumer.crash (the producer's events keep working and a new consumer completes the
// round trip) and rb.producer.crash / rb.open.exporter_gone.
#include <thread>

#include "../common.hpp"
#include "../robustness/kinds.hpp"

namespace ipcheck::catalog::event_roundtrip {
namespace {

constexpr const char* kClause = "ur.event.bidirectional";
constexpr const char* kPending = kEventPending;  // a wait lasts until the signal
constexpr auto kLetBlock = std::chrono::milliseconds(30);  // let the other side block in its wait

struct ProducerEvents {
  Owned forward, forward_export, backward, backward_export;
  Exported hf, hb;
};

// ---- The producer outlives a consumer killed with both events open (rb.consumer.crash).
void outlive_consumer(Role& r, ProducerEvents& p) {
  await_killed(r, "consumer", kConsumerCrash);
  Adapter& a = r.adapter();
  // The producer's events still signal, wait and query after a waiter died on them.
  if (!query(r, p.forward.get(), kConsumerCrash, "event_query"))
    r.check_ok(a.event_signal(p.forward.get()), kConsumerCrash, "event_signal after the consumer was killed");
  r.check(wait_for(r, p.forward.get(), kLongWait, kConsumerCrash, "event_wait"), kConsumerCrash,
          "the producer's wait on its signaled event returns after the consumer was killed");
  // The dead consumer may have signaled "backward" already: clear it, so that only the
  // successor's signal can end the wait below.
  if (query(r, p.backward.get(), kConsumerCrash, "event_query")) {
    const Outcome reset = a.event_reset(p.backward.get());
    if (reset.code == Errc::not_implemented) {
      r.note("event_reset: " + reset.describe() + "; the successor's signal is not told from the dead consumer's");
    } else {
      r.check_ok(reset, kConsumerCrash, "event_reset of the event the killed consumer signaled");
    }
  }
  // A new consumer opens both handles and completes the round trip.
  r.send_handle("successor", "forward", p.hf);
  r.send_handle("successor", "backward", p.hb);
  const auto t0 = std::chrono::steady_clock::now();
  const Seen woke = wait_for(r, p.backward.get(), kLongWait, kConsumerCrash, "event_wait for the successor's signal");
  r.check(woke, kConsumerCrash, woke ? "the successor's signal ended the producer's wait after " + ms(std::chrono::steady_clock::now() - t0)
                                     : "the successor's signal never reached the producer");
  send_text(r, "successor", "producer-checked", "");
  receive_text(r, "successor-closed");
  end_export(r, p.forward_export, kConsumerCrash, "event_put after the consumer was killed");
  end_export(r, p.backward_export, kConsumerCrash, "event_put after the consumer was killed");
  r.check_ok(p.forward.reset(), kConsumerCrash, "event_release after the consumer was killed");
  r.check_ok(p.backward.reset(), kConsumerCrash, "event_release after the consumer was killed");
}

void producer(Role& r) {
  ProducerEvents p;
  p.forward = create_event(r, {.ipc = true}, kClause);
  p.forward_export = export_event(r, p.forward.get(), p.hf, kClause);
  p.backward = create_event(r, {.ipc = true}, kClause);
  // Where only the process that made an event pending can end it (cuda), the producer ends the
  // new event's pending state and the consumer makes it pending again through its opened event
  // (consumer(), below), so that the consumer's signal is what the producer waits for.
  if (!only_its_maker_ends_pending(r).empty()) r.check_ok(r.adapter().event_signal(p.backward.get()), kClause, "event_signal of the new backward event by its creator");
  p.backward_export = export_event(r, p.backward.get(), p.hb, kClause);
  r.step("after_export");
  r.send_handle("consumer", "forward", p.hf);
  r.send_handle("consumer", "backward", p.hb);
  r.step("after_send");
  if (killed_at(r, "consumer", "after_open")) return outlive_consumer(r, p);
  receive_text(r, "consumer-waiting");
  if (killed_at(r, "consumer", "during_wait")) return outlive_consumer(r, p);  // no signal: it dies waiting
  std::this_thread::sleep_for(kLetBlock);
  r.check_ok(r.adapter().event_signal(p.forward.get()), kClause, "event_signal by the producer");
  send_text(r, "consumer", "producer-waiting", "");
  r.step_into("during_wait");
  const auto t0 = std::chrono::steady_clock::now();
  const Seen woke = wait_for(r, p.backward.get(), kLongWait, kClause, "event_wait in the producer");
  const auto waited = std::chrono::steady_clock::now() - t0;
  r.check(woke, kClause, woke ? "the consumer's signal ended the producer's wait after " + ms(waited)
                              : "the producer's wait timed out: the signal through the consumer's opened event never reached it");
  // The consumer signals only kLetBlock after it heard that this role waits.
  if (woke)
    r.check(waited >= kLetBlock / 2, woke.by, kPending,
            "the producer's wait lasted " + ms(waited) + "; the consumer signaled no sooner than " + ms(kLetBlock) +
                " after it began");
  r.barrier("done");
  if (killed_at(r, "consumer", "before_close")) return outlive_consumer(r, p);
  r.step("before_close");
  end_export(r, p.forward_export, kClause, "event_put");
  end_export(r, p.backward_export, kClause, "event_put");
  r.check_ok(p.forward.reset(), kClause, "event_release");
  r.check_ok(p.backward.reset(), kClause, "event_release");
}

// ---- The consumer outlives a killed producer (rb.producer.crash, rb.open.exporter_gone).
void open_after_producer_death(Role& r, const Received& h) {
  check_open_after_death(r, "consumer: event_open",
                         [&] { return open_target(r, HandleKind::event, h.bytes, h.fd.get()).outcome; });
  r.send(std::string("successor"), "handle", h.bytes, h.fd.get());
}

// What an opened event does once its exporter is gone: "survives" when a signal through it
// completes, or what failed. Recorded, not judged (sycl.event.lifetime leaves it open).
std::string after_death(Role& r, ObjectId ev) {
  Adapter& a = r.adapter();
  if (auto o = a.event_signal(ev); !o.ok()) return "signal_" + outcome_word(o);
  auto w = a.event_wait(ev, kLongWait);
  if (!w.ok()) return "wait_" + outcome_word(w.outcome);
  return w.value ? "survives" : "signal_lost";
}

void outlive_producer(Role& r, const Received& hf, Owned& forward, Owned& backward) {
  await_killed(r, "producer", kProducerCrash);
  r.observe("event.roundtrip.after_producer_kill", after_death(r, backward.get()), kProducerCrash);
  open_after_producer_death(r, hf);
  r.check_ok(forward.reset(), kProducerCrash, "event_release after the producer was killed");
  r.check_ok(backward.reset(), kProducerCrash, "event_release after the producer was killed");
}

void consumer(Role& r) {
  if (killed_at(r, "producer", "after_export")) return await_killed(r, "producer", kProducerCrash);
  Received hf = r.receive("forward");
  Received hb = r.receive("backward");
  if (killed_at(r, "producer", "after_send")) {
    await_killed(r, "producer", kProducerCrash);
    return open_after_producer_death(r, hf);
  }
  Owned forward = open_event(r, hf, kClause, "event_open");
  Owned backward = open_event(r, hb, kClause, "event_open");
  if (const std::string why = only_its_maker_ends_pending(r); !why.empty()) {
    r.note("only the process that made an event pending can end it here (" + why +
           "): the producer signaled the new backward event and the consumer resets it through its opened event");
    r.check(query(r, backward.get(), kClause, "event_query"), kClause, "the opened backward event sees its creator's signal");
    r.check_ok(r.adapter().event_reset(backward.get()), kClause, "event_reset through the opened backward event");
  }
  r.step("after_open");
  r.check(!query(r, forward.get(), kClause, "event_query"), kClause, "the opened event is not signaled before any signal");
  send_text(r, "producer", "consumer-waiting", "");
  r.step_into("during_wait");
  const auto t0 = std::chrono::steady_clock::now();
  const Seen woke = wait_for(r, forward.get(), kLongWait, kClause, "event_wait in the consumer");
  const auto waited = std::chrono::steady_clock::now() - t0;
  r.check(woke, kClause, woke ? "the producer's signal ended the consumer's wait after " + ms(waited)
                              : "the consumer's wait timed out: the producer's signal never reached it");
  // The producer signals only kLetBlock after it heard that this role waits: a wait that
  // ended sooner never waited for that signal (an event that was complete all along).
  if (woke)
    r.check(waited >= kLetBlock / 2, woke.by, kPending,
            "the consumer's wait lasted " + ms(waited) + "; the producer signaled no sooner than " + ms(kLetBlock) +
                " after it began");
  receive_text(r, "producer-waiting");
  if (killed_at(r, "producer", "during_wait")) return outlive_producer(r, hf, forward, backward);
  std::this_thread::sleep_for(kLetBlock);
  r.check_ok(r.adapter().event_signal(backward.get()), kClause, "event_signal through the opened event");
  r.barrier("done");
  if (killed_at(r, "producer", "before_close")) return outlive_producer(r, hf, forward, backward);
  r.step("before_close");
  r.check_ok(forward.reset(), kClause, "event_release of the opened event");
  r.check_ok(backward.reset(), kClause, "event_release of the opened event");
}

// ---- Started only under --inject: the process that comes after the killed one.
void successor(Role& r) {
  if (r.peer_killed("consumer")) {
    Received hf = r.receive("forward");
    Received hb = r.receive("backward");
    Owned forward = open_event(r, hf, kConsumerCrash, "event_open by a new consumer after the kill");
    Owned backward = open_event(r, hb, kConsumerCrash, "event_open by a new consumer after the kill");
    r.check(wait_for(r, forward.get(), kLongWait, kConsumerCrash, "event_wait"), kConsumerCrash,
            "the new consumer sees the producer's signal");
    r.check_ok(r.adapter().event_signal(backward.get()), kConsumerCrash, "event_signal by the new consumer");
    receive_text(r, "producer-checked");
    r.check_ok(forward.reset(), kConsumerCrash, "event_release by the new consumer");
    r.check_ok(backward.reset(), kConsumerCrash, "event_release by the new consumer");
    send_text(r, "producer", "successor-closed", "");
    return;
  }
  await_killed(r, "producer", kProducerCrash);
  if (killed_at(r, "producer", "after_export")) return;  // no handle ever existed outside it
  Received h = r.receive("handle");
  check_open_after_death(r, "successor: event_open",
                         [&] { return open_target(r, HandleKind::event, h.bytes, h.fd.get()).outcome; });
}

IPCHECK_CASE(Case("event.roundtrip",
                  "A signal crosses to a consumer blocked in a wait and back to the producer blocked in its own")
                 .clause(kClause)
                 .clause(kPending)
                 .steps("producer", {"after_export", "after_send", "during_wait", "before_close"})
                 .steps("consumer", {"after_open", "during_wait", "before_close"})
                 .role("producer", producer)
                 .role("consumer", consumer)
                 .injection_role("successor", successor));

}  // namespace
}  // namespace ipcheck::catalog::event_roundtrip
