// Signalling and waiting: an event's state is a futex word on its memory (a pool's slot,
// handle_layout.hpp: EventSlot; a counter-based event's CounterEventState), so signals cross
// processes both ways. The operations host calls and command lists share, and the host's
// signal, reset, query and wait entry points. The events themselves are made in events.cpp.
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>

#include "entries.hpp"
#include "ze_ipcheck/defects.hpp"
#include "state.hpp"

namespace zedriver {

std::uint64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

// Shared futexes (no FUTEX_PRIVATE_FLAG): the word may sit on a page mapped by several processes.
void futex_wake_all(std::uint32_t* word) { ::syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0); }

void futex_wait(std::uint32_t* word, std::uint32_t expected, std::uint64_t deadline_ns) {
  if (deadline_ns == 0) {
    ::syscall(SYS_futex, word, FUTEX_WAIT, expected, nullptr, nullptr, 0);
    return;
  }
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(deadline_ns / 1000000000ull);
  ts.tv_nsec = static_cast<long>(deadline_ns % 1000000000ull);
  ::syscall(SYS_futex, word, FUTEX_WAIT_BITSET, expected, &ts, nullptr, FUTEX_BITSET_MATCH_ANY);
}

namespace {

using ze_ipcheck::EventSlot;

// The event's memory, held by the caller for the duration of a wait.
struct Held {
  std::shared_ptr<PoolMemory> mem;
  EventSlot* slot = nullptr;                        // pool events
  ze_ipcheck::CounterEventState* counter = nullptr;  // counter-based events
};

Held hold(ze_event_handle_t h, const char* function) {
  driver();
  Event* e = get<Event>(h, Kind::event, function, "hEvent");
  if (e->counter_based) return {e->mem, nullptr, e->counter()};
  return {e->mem, e->slot(), nullptr};
}

bool counter_complete(const ze_ipcheck::CounterEventState* c, std::uint64_t target) {
  return __atomic_load_n(&c->completed, __ATOMIC_ACQUIRE) >= target;
}

}  // namespace

// ---------------------------------------------------------------- operations

void refuse_counter_based(ze_event_handle_t h, const char* function, const char* what) {
  driver();
  if (get<Event>(h, Kind::event, function, "hEvent")->counter_based)
    fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
         cat(function, ": the event is counter-based; ", what,
             " (only the commands that signal it change its state)"));
}

std::uint64_t arm_signal(ze_event_handle_t h, const char* function) {
  if (!h) return 0;
  Held e = hold(h, function);
  if (!e.counter) return 0;
  return __atomic_add_fetch(&e.counter->armed, 1, __ATOMIC_SEQ_CST);
}

void finish_signal(ze_event_handle_t h, std::uint64_t token, const char* function) {
  if (!h) return;
  Held e = hold(h, function);
  if (!e.counter) {
    signal_event(h, function);
    return;
  }
  // completed only moves forward: a later tracking point may have completed first.
  std::uint64_t seen = __atomic_load_n(&e.counter->completed, __ATOMIC_RELAXED);
  while (seen < token &&
         !__atomic_compare_exchange_n(&e.counter->completed, &seen, token, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
  }
  __atomic_add_fetch(&e.counter->sequence, 1u, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&e.counter->waiters, __ATOMIC_SEQ_CST) != 0) {
    // Seeded defect: the wake goes to the completion word, where nobody sleeps.
    if (ze_ipcheck::defects::is(ze_ipcheck::defects::id::wake_wrong_word))
      futex_wake_all(reinterpret_cast<std::uint32_t*>(&e.counter->completed));
    else
      futex_wake_all(&e.counter->sequence);
  }
}

void signal_event(ze_event_handle_t h, const char* function) {
  Held e = hold(h, function);
  if (e.counter) {
    finish_signal(h, arm_signal(h, function), function);
    return;
  }
  __atomic_fetch_add(&e.slot->signal_count, 1, __ATOMIC_RELAXED);
  __atomic_store_n(&e.slot->signaled, 1u, __ATOMIC_SEQ_CST);
  // Only pay for the wake when someone sleeps (seq_cst pairs with the waiter's increment).
  if (__atomic_load_n(&e.slot->waiters, __ATOMIC_SEQ_CST) != 0)
    futex_wake_all(ze_ipcheck::defects::is(ze_ipcheck::defects::id::wake_wrong_word)  // seeded: nobody sleeps there
                       ? reinterpret_cast<std::uint32_t*>(&e.slot->signal_count)
                       : &e.slot->signaled);
}

void reset_event(ze_event_handle_t h, const char* function) {
  refuse_counter_based(h, function, "it cannot be reset");
  Held e = hold(h, function);
  __atomic_store_n(&e.slot->signaled, 0u, __ATOMIC_SEQ_CST);
}

bool wait_event(ze_event_handle_t h, std::uint64_t timeout_ns, const char* function) {
  Held e = hold(h, function);
  if (e.counter) {
    // Complete when the tracking point seen now is reached (later appends do not extend the wait).
    ze_ipcheck::CounterEventState* c = e.counter;
    const std::uint64_t target = __atomic_load_n(&c->armed, __ATOMIC_SEQ_CST);
    if (counter_complete(c, target)) return true;
    if (timeout_ns == 0) return false;
    const std::uint64_t deadline = timeout_ns == UINT64_MAX ? 0 : monotonic_ns() + timeout_ns;
    __atomic_fetch_add(&c->waiters, 1u, __ATOMIC_SEQ_CST);
    bool done = false;
    for (;;) {
      const std::uint32_t seq = __atomic_load_n(&c->sequence, __ATOMIC_SEQ_CST);
      if (counter_complete(c, target)) {
        done = true;
        break;
      }
      if (deadline != 0 && monotonic_ns() >= deadline) break;
      futex_wait(&c->sequence, seq, deadline);
    }
    __atomic_fetch_sub(&c->waiters, 1u, __ATOMIC_SEQ_CST);
    return done;
  }
  std::uint32_t* word = &e.slot->signaled;
  if (__atomic_load_n(word, __ATOMIC_ACQUIRE) != 0) return true;
  if (timeout_ns == 0) return false;
  const std::uint64_t deadline = timeout_ns == UINT64_MAX ? 0 : monotonic_ns() + timeout_ns;
  __atomic_fetch_add(&e.slot->waiters, 1u, __ATOMIC_SEQ_CST);
  bool signaled = false;
  for (;;) {
    if (__atomic_load_n(word, __ATOMIC_SEQ_CST) != 0) {
      signaled = true;
      break;
    }
    if (deadline != 0 && monotonic_ns() >= deadline) break;
    futex_wait(word, 0, deadline);
  }
  __atomic_fetch_sub(&e.slot->waiters, 1u, __ATOMIC_SEQ_CST);
  return signaled;
}

// ---------------------------------------------------------------- host signals and waits

ze_result_t ZE_APICALL EventHostSignal(ze_event_handle_t hEvent) {
  return entry("zeEventHostSignal", [&] {
    refuse_counter_based(hEvent, "zeEventHostSignal", "the host cannot signal it");
    signal_event(hEvent, "zeEventHostSignal");
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL EventHostSynchronize(ze_event_handle_t hEvent, uint64_t timeout) {
  return entry("zeEventHostSynchronize", [&] {
    return wait_event(hEvent, timeout, "zeEventHostSynchronize") ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY;
  });
}

ze_result_t ZE_APICALL EventQueryStatus(ze_event_handle_t hEvent) {
  return entry("zeEventQueryStatus",
               [&] { return wait_event(hEvent, 0, "zeEventQueryStatus") ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY; });
}

ze_result_t ZE_APICALL EventHostReset(ze_event_handle_t hEvent) {
  return entry("zeEventHostReset", [&] {
    reset_event(hEvent, "zeEventHostReset");
    return ZE_RESULT_SUCCESS;
  });
}

}  // namespace zedriver
