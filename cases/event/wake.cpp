// rb.event.wake_latency on fresh and cached events: a consumer blocked in the runtime's wait on
// an opened IPC event must wake soon after the producer's signal, on an event the runtime made
// new and on one it handed out again (created after another IPC event was put and released,
// opened after the consumer opened and released another: what a runtime's event cache, UR's
// event pools, serves). Every adapter times the runtime's own wait (ur: urEventWait), so a
// driver whose signal wakes the wrong word (waiters wake only at their deadline) is seen here.
#include <thread>

#include "../common.hpp"

namespace ipcheck::catalog::event_wake {
namespace {

constexpr const char* kBidi = "ur.event.bidirectional";
constexpr auto kLetBlock = std::chrono::milliseconds(30);  // let the consumer block in its wait
constexpr const char* kRounds[] = {"fresh", "cached"};

void producer(Role& r) {
  for (const std::string round : kRounds) {
    if (round == "cached") {
      // An IPC event put and released first: the next one may be the runtime's cached event.
      Exported first;
      Owned ev = create_event(r, {.ipc = true}, kWakeLatency);
      Owned exported = export_event(r, ev.get(), first, kWakeLatency);
      r.send_handle("consumer", "first", first);
      receive_text(r, "first-released");
      end_export(r, exported, kWakeLatency, "event_put of the first event");
      r.check_ok(ev.reset(), kWakeLatency, "event_release of the first event");
    }
    Exported h;
    Owned ev = create_event(r, {.ipc = true}, kWakeLatency);
    Owned exported = export_event(r, ev.get(), h, kWakeLatency);
    r.send_handle("consumer", round, h);
    receive_text(r, round + "-waiting");
    std::this_thread::sleep_for(kLetBlock);
    const auto signal_at = std::chrono::steady_clock::now();
    r.check_ok(r.adapter().event_signal(ev.get()), kBidi, "event_signal of the " + round + " event");
    send_signal_time(r, "consumer", round + "-signal-time", signal_at);
    receive_text(r, round + "-done");
  }
}

void consumer(Role& r) {
  for (const std::string round : kRounds) {
    if (round == "cached") {
      Received first = r.receive("first");
      Owned opened = open_event(r, first, kWakeLatency, "event_open of the first event");
      r.check_ok(opened.reset(), kWakeLatency, "event_release of the first opened event");
      send_text(r, "producer", "first-released", "");
    }
    Received h = r.receive(round);
    Owned ev = open_event(r, h, kBidi, "event_open of the " + round + " event");
    send_text(r, "producer", round + "-waiting", "");
    const Seen woke = wait_for(r, ev.get(), kLongWait, kBidi, "event_wait on the " + round + " event");
    const auto woke_at = std::chrono::steady_clock::now();
    r.check(woke, kBidi, woke ? "the wait on the " + round + " event returned after the producer's signal"
                              : "the wait on the " + round + " event did not return within " + ms(kLongWait) +
                                    " of the producer's signal");
    if (woke) {
      // A wait that returned at its deadline was not woken by the signal (a wake lost, or sent
      // to the wrong word): the signal did not end it.
      const std::string sent = receive_text(r, round + "-signal-time");
      const auto signaled_at = std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(std::stoll(sent)));
      const auto waited = woke_at - signaled_at;
      r.check(waited < kLongWait * 9 / 10, woke.by, kBidi,
              "the wait on the " + round + " event returned " + ms(waited) + " after the signal, against a " +
                  ms(kLongWait) + " timeout" + (waited < kLongWait * 9 / 10 ? "" : ": at its deadline, not woken by the signal"));
      // rb.event.wake_latency's rule, as check_wake_latency judges it.
      r.check(waited <= kWakeLatencyLimit, woke.by, kWakeLatency,
              "the wait on the " + round + " event woke " + ms(waited) + " after the signal call began (limit " +
                  ms(kWakeLatencyLimit) + ")");
    } else {
      receive_text(r, round + "-signal-time");
    }
    r.check_ok(ev.reset(), kBidi, "event_release of the " + round + " opened event");
    send_text(r, "producer", round + "-done", "");
  }
}

IPCHECK_CASE(Case("event.wake.fresh_and_cached",
                  "A wait on an opened IPC event wakes soon after the signal, on a fresh event and on a cached one")
                 .clause(kWakeLatency)
                 .clause(kBidi)
                 .role("producer", producer)
                 .role("consumer", consumer));

}  // namespace
}  // namespace ipcheck::catalog::event_wake
