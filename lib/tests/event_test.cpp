// ipc::event and events in one process: the clauses of SPEC-CLAUSES.md "Events" that
// concern the library's own semantics.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "ipcref/ipcref.hpp"
#include "support/checks.hpp"
#include "support/devices.hpp"
#include "support/owned.hpp"

namespace {

using namespace ipcref;
using namespace ipcref_test;
using namespace std::chrono_literals;
namespace ev = ipcref::ipc::event;
using steady = std::chrono::steady_clock;

struct Event : testing::Test {
  context ctx;
  device dev = ipc_device();
  event_ref create(bool ipc = true, bool profiling = false) {
    return event_ref(event_create(ctx, dev, {ipc, profiling}), ctx);
  }
  event_ref open(const handle& h) { return event_ref(ev::open(h.data(), ctx, dev), ctx); }
};

TEST_F(Event, ur_event_create_profiling_ipc) {
  EXPECT_TRUE(fails_with([&] { create(true, true); }, errc::invalid, {"ur.event.create.profiling_ipc"}));
  // Each alone is fine; profiling records the signal time.
  event_ref ipc_only = create(true, false);
  event_ref prof_only = create(false, true);
  const std::uint64_t before = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now().time_since_epoch()).count());
  event_signal(prof_only.get());
  EXPECT_GE(event_profiling_signal_ns(prof_only.get()), before);
  EXPECT_TRUE(fails_with([&] { event_profiling_signal_ns(ipc_only.get()); }, errc::invalid, {"without profiling"}));
}

TEST_F(Event, ur_event_create_aspect) {
  context bare_ctx({bare_device()});
  EXPECT_TRUE(fails_with([&] { event_ref(event_create(bare_ctx, bare_device(), {true, false}), bare_ctx); },
                         errc::feature_not_supported, {"ipc_event"}));
  // Without IPC the device needs no aspect.
  event_ref plain(event_create(bare_ctx, bare_device(), {false, false}), bare_ctx);
  EXPECT_FALSE(event_query(plain.get()));
  context only_ref1({other_device()});
  EXPECT_TRUE(fails_with([&] { event_ref(event_create(only_ref1, dev, {true, false}), only_ref1); }, errc::invalid,
                         {"not in the context"}));
}

TEST_F(Event, ur_event_get_not_ipc) {
  event_ref e = create(false);
  EXPECT_TRUE(fails_with([&] { ev::get(e.get(), ctx); }, errc::invalid, {"ur.event.get.not_ipc"}));
  RecordProperty("sycl.event.get.not_ipc_code", "invalid");
}

TEST_F(Event, ur_event_get_imported) {
  event_ref e = create();
  handle h = ev::get(e.get(), ctx);
  event_ref opened = open(h);
  EXPECT_TRUE(fails_with([&] { ev::get(opened.get(), ctx); }, errc::invalid, {"ur.event.get.imported"}));
}

TEST_F(Event, ur_event_open_size) {
  event_ref e = create();
  handle h = ev::get(e.get(), ctx);
  const auto b = h.data();
  std::vector<std::byte> longer(b.begin(), b.end());
  longer.push_back(std::byte{0});
  const std::vector<std::byte> huge(1 << 20);
  struct size_case {
    std::span<const std::byte> data;
    const char* count;
  };
  for (const size_case& c : {size_case{{}, "0 bytes"}, size_case{b.first(63), "63 bytes"},
                              size_case{longer, "65 bytes"}, size_case{huge, "1048576 bytes"}}) {
    EXPECT_TRUE(fails_with([&] { event_ref(ev::open(c.data, ctx, dev), ctx); }, errc::invalid,
                           {c.count, "ur.event.open.size"}));
  }
  EXPECT_TRUE(open(h));
}

TEST_F(Event, ur_event_open_aspect) {
  event_ref e = create();
  handle h = ev::get(e.get(), ctx);
  context bare_ctx({bare_device()});
  EXPECT_TRUE(fails_with([&] { event_ref(ev::open(h.data(), bare_ctx, bare_device()), bare_ctx); },
                         errc::feature_not_supported, {"ipc_event"}));
}

TEST_F(Event, ur_event_bidirectional) {
  event_ref e = create();
  handle h = ev::get(e.get(), ctx);
  event_ref opened = open(h);
  EXPECT_FALSE(event_query(e.get()));
  EXPECT_FALSE(event_query(opened.get()));
  // A signal through the opened event is seen through the source...
  event_signal(opened.get());
  EXPECT_TRUE(event_query(e.get()));
  EXPECT_TRUE(event_wait(e.get(), 0ns));
  // ...a reset through the source is seen through the opened event...
  event_reset(e.get());
  EXPECT_FALSE(event_query(opened.get()));
  // ...and a signal through the source too.
  event_signal(e.get());
  EXPECT_TRUE(event_query(opened.get()));
  EXPECT_TRUE(event_wait(opened.get(), 1s));
  event_reset(opened.get());
  EXPECT_FALSE(event_query(e.get()));
}

TEST_F(Event, ur_event_release) {
  event_ref e = create();
  handle h = ev::get(e.get(), ctx);
  event opened = ev::open(h.data(), ctx, dev);
  EXPECT_EQ(event_reference_count(opened), 1u);
  event_retain(opened);
  EXPECT_EQ(event_reference_count(opened), 2u);
  event_release(opened);
  // Still usable after the release that matched the retain.
  event_signal(opened);
  EXPECT_TRUE(event_query(e.get()));
  event_release(opened);
  // Released by the normal path: later uses are errors (no separate close).
  EXPECT_TRUE(fails_with([&] { event_query(opened); }, errc::invalid, {"not a live event"}));
  EXPECT_TRUE(fails_with([&] { event_release(opened); }, errc::invalid, {"not a live event"}));
  // The source is unaffected.
  EXPECT_TRUE(event_query(e.get()));
}

TEST_F(Event, ur_event_open_repeat) {
  event_ref e = create();
  handle h = ev::get(e.get(), ctx);
  std::vector<event_ref> opens;
  for (int i = 0; i < 8; ++i) opens.push_back(open(h));
  for (std::size_t i = 0; i < opens.size(); ++i)
    for (std::size_t j = 0; j < i; ++j) EXPECT_NE(opens[i].get(), opens[j].get());
  const std::size_t events = get_resource_counts().events;
  // Each is released on its own; the others keep working.
  opens[2].reset();
  EXPECT_EQ(get_resource_counts().events, events - 1);
  event_signal(opens[7].get());
  for (std::size_t i = 0; i < opens.size(); ++i)
    if (opens[i]) {
      EXPECT_TRUE(event_query(opens[i].get())) << "open " << i;
    }
}

TEST_F(Event, ur_event_put_producer_alive) {
  event_ref e = create();
  handle h = ev::get(e.get(), ctx);
  event_ref opened = open(h);
  const std::vector<std::byte> copy(h.data().begin(), h.data().end());
  ev::put(h, ctx);
  // The producer's event stays alive and usable, and so does the open one.
  event_signal(e.get());
  EXPECT_TRUE(event_query(opened.get()));
  EXPECT_TRUE(event_wait(e.get(), 0ns));
  EXPECT_EQ(event_reference_count(e.get()), 1u);
  // The put bytes no longer open (rb.put.revokes); a new get does.
  EXPECT_TRUE(fails_with([&] { event_ref(ev::open(copy, ctx, dev), ctx); }, errc::invalid, {"rb.put.revokes"}));
  handle again = ev::get(e.get(), ctx);
  EXPECT_TRUE(open(again));
  EXPECT_TRUE(fails_with([&] { ev::put(h, ctx); }, errc::invalid, {"already put"}));
}

TEST_F(Event, wait_times_out_when_not_signaled) {
  event_ref e = create();
  handle h = ev::get(e.get(), ctx);
  event_ref opened = open(h);
  EXPECT_FALSE(event_wait(opened.get(), 0ns));
  EXPECT_FALSE(event_wait(opened.get(), -5ms));
  const auto start = steady::now();
  EXPECT_FALSE(event_wait(opened.get(), 50ms));
  const auto took = steady::now() - start;
  EXPECT_GE(took, 50ms);
  EXPECT_LT(took, 2s);
}

TEST_F(Event, wait_wakes_on_signal_from_either_side) {
  event_ref e = create();
  handle h = ev::get(e.get(), ctx);
  event_ref opened = open(h);
  struct direction {
    event waiter, signaler;
    const char* name;
  };
  for (const direction d : {direction{e.get(), opened.get(), "source waits"},
                            direction{opened.get(), e.get(), "opened waits"}}) {
    SCOPED_TRACE(d.name);
    event_reset(e.get());
    std::thread signaler([&] {
      std::this_thread::sleep_for(50ms);
      event_signal(d.signaler);
    });
    const auto start = steady::now();
    const bool got = event_wait(d.waiter, 10s);
    const auto took = steady::now() - start;
    signaler.join();
    EXPECT_TRUE(got);
    // Woken by the signal, not by the timeout.
    EXPECT_GE(took, 40ms);
    EXPECT_LT(took, 5s);
  }
}

TEST_F(Event, garbage_event_values_are_errors) {
  int not_an_event = 0;
  auto* bogus = reinterpret_cast<event>(&not_an_event);
  EXPECT_TRUE(fails_with([&] { event_signal(bogus); }, errc::invalid, {"not a live event"}));
  EXPECT_TRUE(fails_with([&] { event_wait(bogus, 1ms); }, errc::invalid));
  EXPECT_TRUE(fails_with([&] { event_retain(nullptr); }, errc::invalid));
  EXPECT_TRUE(fails_with([&] { ev::get(bogus, ctx); }, errc::invalid));
  event_ref e = create();
  context other;
  EXPECT_TRUE(fails_with([&] { ev::get(e.get(), other); }, errc::invalid, {"another context"}));
}

}  // namespace
