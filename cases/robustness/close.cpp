// rb.close.double: closing twice, or closing what open never returned, is an error.
// rb.close.no_leak: many opens, each with its close, leave nothing behind in the opener.
#include "kinds.hpp"

namespace ipcheck::catalog::robustness_close {
namespace {

constexpr std::uint64_t kSeed = 0xc105;  // odd: a signaled event

// --- rb.close.double
constexpr const char* kDouble = "rb.close.double";

void double_consumer(Role& r) {
  Adapter& a = r.adapter();
  Received h = r.receive("handle");
  Owned first = open_received(r, h, kDouble, "mem_open");
  const DevPtr closed = first.get();
  {
    SetupSteps setup(r);
    r.require_ok(first.reset(), kDouble, "the first mem_close");
  }
  const Outcome again = a.mem_close(closed);
  r.check(!again.ok(), Evidence::of(again), kDouble, "a second mem_close of the same pointer gave " + again.describe());

  // Pointers open never returned: this process's own allocation, the inside of a live
  // mapping, an address nothing maps.
  Owned own = alloc_filled(r, kPage, kSeed + 2, kDouble);
  const Outcome on_own = a.mem_close(own.get());
  r.check(!on_own.ok(), Evidence::of(on_own), kDouble, "mem_close of the consumer's own allocation gave " + on_own.describe());
  verify(r, own.get(), kPage, kSeed + 2, kDouble, "the own allocation after the refused close");
  Owned live = open_received(r, h, kDouble, "mem_open");
  const Outcome inside = a.mem_close(live.get() + 64);
  r.check(!inside.ok(), Evidence::of(inside), kDouble, "mem_close of a pointer 64 bytes into a mapping gave " + inside.describe());
  verify(r, live.get(), kPage, kSeed, kDouble, "the mapping after the refused close of its interior");
  const Outcome nowhere = a.mem_close(0x1000);
  r.check(!nowhere.ok(), Evidence::of(nowhere), kDouble, "mem_close of address 0x1000 gave " + nowhere.describe());
  r.check_ok(live.reset(), kDouble, "mem_close of the live mapping after the refusals");
  r.barrier("consumer-done");
}

IPCHECK_CASE(Case("robustness.close.double",
                  "Closing a mapping twice, the opener's own allocation, a mapping's interior or a stray address is an error")
                 .clause(kDouble)
                 .role("producer",
                       [](Role& r) {
                         Target t = export_target(r, HandleKind::memory, kSeed, kDouble);
                         send_target(r, "consumer", "handle", t);
                         r.barrier("consumer-done");
                       })
                 .role("consumer", double_consumer));

// --- rb.close.no_leak, for every kind.
constexpr const char* kLeak = "rb.close.no_leak";

void leak_consumer(Role& r, HandleKind kind, int iterations) {
  ReceivedTarget t = receive_target(r, "handle");
  // Two rounds first: a runtime's one-time set-up (caches, pools) is not a leak per open.
  for (int i = 0; i < 2; ++i) {
    SetupSteps setup(r);
    Opened o = open_target(r, kind, t.handle.bytes, t.handle.fd.get());
    r.skip_if_unsupported(o.outcome, std::string(kind_name(kind)) + " open");
    r.require_ok(o.outcome, kLeak, "warm-up open");
  }
  Evidence by = Evidence::tally();
  const ResourceCount before = count_resources();
  int failures = 0, wrong = 0;
  std::string first;
  for (int i = 0; i < iterations; ++i) {
    Opened o = open_target(r, kind, t.handle.bytes, t.handle.fd.get());
    by.with(o.outcome);
    if (!o.outcome.ok()) {
      if (!failures++) first = "open #" + std::to_string(i) + ": " + o.outcome.describe();
      continue;
    }
    if (i % 16 == 0) {
      const Seen right = is_target(r, kind, o.object.get(), t.bytes, kSeed);
      by.with(right.by);
      if (!right) ++wrong;
    }
    const Outcome c = o.object.reset();
    by.with(c);
    if (!c.ok() && !failures++) first = "close #" + std::to_string(i) + ": " + c.describe();
  }
  r.check(failures == 0, by, kLeak,
          std::to_string(iterations) + " opens and closes, " + std::to_string(failures) + " failed" +
              (first.empty() ? "" : " (first: " + first + ")"));
  r.check(wrong == 0, by, kLeak, std::to_string(wrong) + " sampled opens mapped something other than the export");
  check_no_growth(r, before, count_resources(), kLeak,
                  "after " + std::to_string(iterations) + " " + kind_name(kind) + " opens and closes");
  r.barrier("consumer-done");
}

void register_no_leak() {
  for (HandleKind kind : {HandleKind::memory, HandleKind::physical, HandleKind::event}) {
    const std::string name = kind_name(kind);
    const int iterations = kind == HandleKind::memory ? 500 : 200;
    register_case(Case("robustness.close.no_leak." + name,
                       std::to_string(iterations) + " opens of one " + name +
                           " handle, each closed: no descriptor, mapping or handle left in the opener")
                      .clause(kLeak)
                      .param("iterations", 100000)
                      .role("producer",
                            [kind](Role& r) {
                              Target t = export_target(r, kind, kSeed, kLeak);
                              send_target(r, "consumer", "handle", t);
                              r.barrier("consumer-done");
                            })
                      .role("consumer",
                            [kind, iterations](Role& r) {
                              leak_consumer(r, kind, static_cast<int>(count_param(r, "iterations", iterations)));
                            })
                      .def);
  }
}

IPCHECK_CASE(register_no_leak);

// --- rb.close.double for physical memory and events: closing (or releasing) twice, closing
// what was created rather than opened, and an id never handed out are errors, not crashes;
// the live objects keep working after the refusals.
constexpr ObjectId kNeverHandedOut = 0x7ffe0001;

void double_physical(Role& r) {
  Adapter& a = r.adapter();
  ReceivedTarget t = receive_target(r, "handle");
  Owned first = open_physical(r, t.handle, kDouble, "phys_open");
  const ObjectId closed = first.get();
  {
    SetupSteps setup(r);
    r.require_ok(first.reset(), kDouble, "the first phys_close");
  }
  const Outcome again = a.phys_close(closed);
  r.check(!again.ok(), Evidence::of(again), kDouble, "a second phys_close of the same object gave " + again.describe());
  Owned own = create_physical(r, granular(r, kPage), true, kDouble);
  const Outcome on_own = a.phys_close(own.get());
  r.check(!on_own.ok(), Evidence::of(on_own), kDouble,
          "phys_close of an object this process created (not opened) gave " + on_own.describe());
  const Outcome unknown = a.phys_close(kNeverHandedOut);
  r.check(!unknown.ok(), Evidence::of(unknown), kDouble, "phys_close of an id never handed out gave " + unknown.describe());
  // The live object still opens and maps the export after the refusals.
  Owned live = open_physical(r, t.handle, kDouble, "phys_open after the refusals");
  r.check(is_target(r, HandleKind::physical, live.get(), t.bytes, kSeed), kDouble,
          "an object opened after the refused closes is the export");
  r.check_ok(live.reset(), kDouble, "phys_close of the live object");
  r.barrier("consumer-done");
}

void double_event(Role& r) {
  Adapter& a = r.adapter();
  ReceivedTarget t = receive_target(r, "handle");
  Owned first = open_event(r, t.handle, kDouble, "event_open");
  const ObjectId released = first.get();
  {
    SetupSteps setup(r);
    r.require_ok(first.reset(), kDouble, "the release of the opened event");
  }
  const Outcome again = a.event_release(released);
  r.check(!again.ok(), Evidence::of(again), kDouble, "a second event_release of the same event gave " + again.describe());
  const Outcome unknown = a.event_release(kNeverHandedOut);
  r.check(!unknown.ok(), Evidence::of(unknown), kDouble, "event_release of an id never handed out gave " + unknown.describe());
  Owned live = open_event(r, t.handle, kDouble, "event_open after the refusals");
  r.check(is_target(r, HandleKind::event, live.get(), 0, kSeed), kDouble,
          "an event opened after the refused releases shares the export's state");
  r.check_ok(live.reset(), kDouble, "event_release of the live event");
  r.barrier("consumer-done");
}

void register_double_close() {
  for (HandleKind kind : {HandleKind::physical, HandleKind::event}) {
    const std::string name = kind_name(kind);
    register_case(Case("robustness.close.double." + name,
                       name == "physical"
                           ? "Closing a physical object twice, one the opener created, or an unknown id is an error"
                           : "Releasing an opened event twice, or an unknown id, is an error")
                      .clause(kDouble)
                      .role("producer",
                            [kind](Role& r) {
                              Target t = export_target(r, kind, kSeed, kDouble);
                              send_target(r, "consumer", "handle", t);
                              r.barrier("consumer-done");
                            })
                      .role("consumer", kind == HandleKind::physical ? double_physical : double_event)
                      .def);
  }
}

IPCHECK_CASE(register_double_close);

}  // namespace
}  // namespace ipcheck::catalog::robustness_close
