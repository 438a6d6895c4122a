// rb.driver_failure: what a runtime's free, put, close and context release do when the
// driver call underneath fails. The roles run under failpoints of our Level Zero driver and
// of ipcref (IPCHECK_FAILPOINTS, lib/zedriver/README.md): the named entry point's first call
// answers an error instead of running (on `ref`, ipcref's own; on `ze` and `ur`, the
// driver's: under the driver ipcref's are off). The verb must then answer an error, or
// succeed having done its work some other way; a retry after the failure must work; nothing
// may be left behind, and the process must not abort. Whether the runtime reached the entry
// point at all is in results.json (`failpoints[].fired`): a runtime that pools or caches
// (UR's USM pool, UMF's opened-IPC cache) may never call it in the body.
// rb.capability_missing: a runtime started on a driver without an optional capability
// (regular command queues) starts, or refuses cleanly, and what it starts works; a crash or
// an abort is a verdict, not a harness error.
#include "kinds.hpp"

namespace ipcheck::catalog::robustness_driver_failure {
namespace {

constexpr const char* kFail = "rb.driver_failure";
constexpr const char* kCapability = "rb.capability_missing";
constexpr std::size_t kBytes = 64 * 1024;
constexpr std::uint64_t kSeed = 0xfa11, kSecond = 0xfa12;
// UR's Level Zero adapters pool USM allocations (a free reaches zeMemFree only when the pool
// is torn down): without the pool, UR's free and put reach the driver in the body. Other
// adapters ignore it.
constexpr const char* kNoUrPool = "UR_L0_DISABLE_USM_ALLOCATOR=1";
// UR's Level Zero adapters use immediate command lists on this driver by default: asked for
// regular ones, they meet the withheld capability.
constexpr const char* kUrRegularLists = "UR_L0_USE_IMMEDIATE_COMMANDLISTS=0";

// The first call of `ze` (our driver) and of `ref` (ipcref) fails with a device loss.
std::string first_call_fails(const char* ze, const char* ref) {
  return std::string(ze) + "=ZE_RESULT_ERROR_DEVICE_LOST@1;" + ref + "=device_lost@1";
}

// Runs `verb` once with the driver's failpoint armed and judges it: an error is clean when a
// retry (the failpoint fires once) then succeeds; a success over a driver call that failed
// inside it is a success with the work not done (the runtime swallowed the driver's error);
// a success without the driver's call is recorded (the runtime pooled or cached: the
// failpoint fires later, or never, and results.json says when).
void judge_then_retry(Role& r, const std::string& what, const std::function<Outcome()>& verb,
                      const std::function<Outcome()>& retry) {
  const FailpointsFired before = failpoints_fired();
  const Outcome first = verb();
  const FailpointsFired after = failpoints_fired();
  const bool failed_inside = after.count > before.count;
  if (first.ok()) {
    r.observe("driver_failure." + what, failed_inside ? "success over the driver's failure" : "success, driver not called",
              kFail);
    if (failed_inside)
      r.check(false, Evidence::of(first), kFail,
              what + " answered success although the driver call under it failed (" + after.last +
                  "): the driver's error was dropped and the work was not done");
    else
      r.note(what + " succeeded without the driver call its failpoint names (the runtime pooled, cached or did "
                    "without it; failpoints.fired in results.json says whether it came later)");
    return;
  }
  r.native_error(what + " (driver call failed)", first);
  r.observe("driver_failure." + what, outcome_word(first), kFail);
  if (!failed_inside) r.note(what + " failed although no failpoint fired inside it: " + first.describe());
  r.check_ok(retry(), kFail, "a retried " + what + " after the failed one (the failpoint fires once)");
}

// --- free
void free_producer(Role& r) {
  Adapter& a = r.adapter();
  Owned mem = alloc_filled(r, kBytes, kSeed, kFail);
  const DevPtr p = mem.release();
  judge_then_retry(r, "free", [&] { return a.free(p); }, [&] { return a.free(p); });
  // The process still allocates, writes and frees.
  Owned next = alloc_filled(r, kBytes, kSecond, kFail);
  verify(r, next.get(), kBytes, kSecond, kFail, "an allocation made after the failed free");
  r.check_ok(next.reset(), kFail, "free of the next allocation");
}

IPCHECK_CASE(Case("robustness.driver_fails.free",
                  "The driver's free fails once under the runtime's free: an error or a success that freed, a retry "
                  "that works, nothing left behind")
                 .clause(kFail)
                 .failpoint("producer", first_call_fails("zeMemFree", "ipcref::free"))
                 .environment("producer", kNoUrPool)
                 .role("producer", free_producer));

// --- put
void put_producer(Role& r) {
  Adapter& a = r.adapter();
  Owned mem = alloc_filled(r, kBytes, kSeed, kFail);
  Exported h;
  Owned exported = export_memory(r, mem.get(), h, kFail);
  const ObjectId id = static_cast<ObjectId>(exported.release());
  judge_then_retry(
      r, "mem_put",
      [&] {
        const Outcome o = a.mem_put(id);
        if (o.code == Errc::not_implemented) r.skip("mem_put: " + o.describe());
        return o;
      },
      [&] { return a.mem_put(id); });
  // A new export of the same memory still works, and is put.
  Exported again;
  Owned second = export_memory(r, mem.get(), again, kFail);
  r.check_ok(second.reset(), kFail, "mem_put of a second export after the failed put");
  r.check_ok(mem.reset(), kFail, "free after the puts");
}

IPCHECK_CASE(Case("robustness.driver_fails.put",
                  "The driver's IPC put fails once under the runtime's put: an error or a success that put, a retry "
                  "that works, nothing left behind")
                 .clause(kFail)
                 .needs(needs_verb("mem_put", "mem_put"))
                 .failpoint("producer", first_call_fails("zeMemPutIpcHandle", "ipcref::mem_put"))
                 .environment("producer", kNoUrPool)
                 .role("producer", put_producer));

// --- close
void close_producer(Role& r) {
  Target t = export_target(r, HandleKind::memory, kSeed, kFail);
  send_target(r, "consumer", "handle", t);
  r.barrier("consumer-done");
}

void close_consumer(Role& r) {
  Adapter& a = r.adapter();
  Received h = r.receive("handle");
  Owned mapped = open_received(r, h, kFail, "mem_open");
  const DevPtr p = mapped.release();
  judge_then_retry(r, "mem_close", [&] { return a.mem_close(p); }, [&] { return a.mem_close(p); });
  // A new open still maps the export, and closes.
  Owned again = open_received(r, h, kFail, "mem_open after the failed close");
  verify(r, again.get(), kPage, kSeed, kFail, "the mapping opened after the failed close");
  r.check_ok(again.reset(), kFail, "mem_close of the second mapping");
  r.barrier("consumer-done");
}

IPCHECK_CASE(Case("robustness.driver_fails.close",
                  "The driver's IPC close fails once under the runtime's close: an error or a success that closed, a "
                  "retry that works, no mapping left behind")
                 .clause(kFail)
                 .failpoint("consumer", first_call_fails("zeMemCloseIpcHandle", "ipcref::mem_close"))
                 .role("producer", close_producer)
                 .role("consumer", close_consumer));

// --- context release: the role's adapter tears its context down when the body ends; the
// driver's zeContextDestroy fails every time. The role must still end by itself (the harness
// judges its exit: a crash or an abort is a verdict), and the body's work is as usual. A
// driver failure inside the body's verbs is judged as above.
void release_producer(Role& r) {
  Owned mem = alloc_filled(r, kBytes, kSeed, kFail);
  Exported h;
  Owned exported = export_memory(r, mem.get(), h, kFail);
  end_export(r, exported, kFail, "mem_put");
  r.check_ok(mem.reset(), kFail, "free before the context is released");
  r.note("the adapter releases its context after this body; the driver's zeContextDestroy answers "
         "ZE_RESULT_ERROR_DEVICE_LOST (failpoints.fired says whether it was reached)");
}

IPCHECK_CASE(Case("robustness.driver_fails.context_release",
                  "The driver's context destroy fails under the runtime's context release at the role's end: the "
                  "process still ends by itself, without an abort")
                 .clause(kFail)
                 .failpoint("producer", "zeContextDestroy=ZE_RESULT_ERROR_DEVICE_LOST@*")
                 .role("producer", release_producer));

// --- a driver without regular command queues (immediate command lists only).
void queueless_producer(Role& r) {
  Target t = export_target(r, HandleKind::memory, kSeed, kCapability);
  send_target(r, "consumer", "handle", t);
  r.barrier("consumer-done");
}

void queueless_consumer(Role& r) {
  Received h = r.receive("handle");
  Owned mapped = open_received(r, h, kCapability, "mem_open");
  verify(r, mapped.get(), kPage, kSeed, kCapability, "the export read without regular command queues");
  fill(r, mapped.get(), kPage, kSecond, kCapability, "a write through the mapping without regular command queues");
  r.check_ok(mapped.reset(), kCapability, "mem_close");
  r.barrier("consumer-done");
}

IPCHECK_CASE(Case("robustness.capability.no_regular_queues",
                  "On a driver without regular command queues (zeCommandQueueCreate and zeCommandListCreate refused) "
                  "the runtime starts or refuses cleanly, and memory IPC works")
                 .clause(kCapability)
                 .failpoint("producer", "withhold=regular_queues")
                 .failpoint("consumer", "withhold=regular_queues")
                 .environment("producer", kUrRegularLists)
                 .environment("consumer", kUrRegularLists)
                 .role("producer", queueless_producer)
                 .role("consumer", queueless_consumer));

}  // namespace
}  // namespace ipcheck::catalog::robustness_driver_failure
