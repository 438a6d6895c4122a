// cuda.event.pending: an IPC event whose signal has not happened yet is pending through
// the exporter's event and through the opened one (cuEventQuery: CUDA_ERROR_NOT_READY), a
// wait on it blocks until the producer signals, and both handles then see it complete.
// The producer signals only after a delay it chose, begun after the consumer said it was
// waiting, so a wait that ends sooner did not wait for the signal.
// cuda.event.unrecorded (observed): what cuEventQuery answers on an IPC event never recorded.
// Runs on every adapter: the cuda.* clauses are CUDA's profile, observed elsewhere.
#include <thread>

#include "../common.hpp"

namespace ipcheck::catalog::event_pending {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kPending = kEventPending;
constexpr auto kDelay = std::chrono::milliseconds(200);  // the producer's delay before its signal

void producer(Role& r) {
  {
    const Outcome o = r.adapter().native("event_unrecorded", {});
    if (o.code == Errc::not_implemented) r.note("event_unrecorded: " + o.describe());
    else if (!o.ok()) r.native_error("event_unrecorded", o);
    else r.observe("event.unrecorded.query", o.native_name.empty() ? "unnamed" : o.native_name, "cuda.event.unrecorded");
  }
  Owned ev = create_event(r, {.ipc = true}, kPending);
  Exported h;
  Owned exported = export_event(r, ev.get(), h, kPending);
  r.send_handle("consumer", "handle", h);
  receive_text(r, "opened");
  r.check(!query(r, ev.get(), kPending, "event_query"), kPending,
          "the exporter's event is pending before its signal (the consumer has opened it)");
  receive_text(r, "waiting");
  std::this_thread::sleep_for(kDelay);
  r.check_ok(r.adapter().event_signal(ev.get()), kPending, "event_signal after " + ms(kDelay));
  r.check(wait_for(r, ev.get(), kLongWait, kPending, "event_wait in the exporter"), kPending,
          "the exporter's event completes after its signal");
  r.barrier("done");
  end_export(r, exported, kPending, "event_put");
  r.check_ok(ev.reset(), kPending, "event_release");
}

void consumer(Role& r) {
  Received h = r.receive("handle");
  Owned ev = open_event(r, h, kPending, "event_open");
  r.check(!query(r, ev.get(), kPending, "event_query"), kPending, "the opened event is pending before the producer's signal");
  r.check(!wait_for(r, ev.get(), kShortWait, kPending, "short event_wait"), kPending,
          "a " + ms(kShortWait) + " wait on the opened event before the signal times out");
  send_text(r, "producer", "opened", "");
  const auto t0 = Clock::now();
  send_text(r, "producer", "waiting", "");
  const Seen woke = wait_for(r, ev.get(), kLongWait, kPending, "event_wait in the consumer");
  const auto took = Clock::now() - t0;
  r.check(woke, kPending, woke ? "the opened event completed " + ms(took) + " after the consumer began waiting"
                               : "the opened event never completed after the producer's signal (" + ms(took) + ")");
  // The wait began before the producer's delay did: a real wait lasts at least that delay.
  r.check(took >= kDelay, woke.by, kPending,
          "the consumer's wait lasted " + ms(took) + ", the producer signaled only after " + ms(kDelay));
  r.check(query(r, ev.get(), kPending, "event_query"), kPending, "the opened event stays complete after the signal");
  r.barrier("done");
  r.check_ok(ev.reset(), kPending, "event_release of the opened event");
}

IPCHECK_CASE(Case("event.pending",
                  "An IPC event is pending through both handles until the producer signals; the consumer's wait spans the delay")
                 .clauses({kPending, "cuda.event.unrecorded"})
                 .role("producer", producer)
                 .role("consumer", consumer));

}  // namespace
}  // namespace ipcheck::catalog::event_pending
