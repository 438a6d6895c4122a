// Creating and exporting events: IPC with profiling is refused; get refuses events that are
// not IPC (with its error code observed) and events that were themselves opened.
#include "../common.hpp"

namespace ipcheck::catalog::event_create_get {
namespace {

// ur.event.create.profiling_ipc, ze.evpool.timestamp_ipc
void profiling_ipc(Role& r) {
  Owned ipc = create_event(r, {.ipc = true, .profiling = false}, "ur.event.create.profiling_ipc");
  Owned timed = create_event(r, {.ipc = false, .profiling = true}, "ur.event.create.profiling_ipc");
  auto both = r.adapter().event_create(0, {.ipc = true, .profiling = true});
  Owned leaked = keep_event(r, both);
  r.check_error(both.outcome, Errc::invalid, "ur.event.create.profiling_ipc",
                "event_create with IPC and profiling together");
  r.observe("event.create.profiling_ipc", both.ok() ? "created" : "refused_" + outcome_word(both.outcome),
            "ze.evpool.timestamp_ipc");
}

IPCHECK_CASE(Case("event.create.profiling_ipc", "Creating an event with both IPC and profiling fails with invalid; each alone works")
                 .clauses({"ur.event.create.profiling_ipc", "ze.evpool.timestamp_ipc"})
                 .role("producer", profiling_ipc));

// ur.event.get.not_ipc, ze.evpool.ipc_flag, sycl.event.get.not_ipc_code
void not_ipc(Role& r) {
  Owned plain = create_event(r, {.ipc = false, .profiling = false}, "ur.event.get.not_ipc");
  auto res = r.adapter().event_get(plain.get());
  if (res.outcome.code == Errc::not_implemented) r.skip("event_get: " + res.outcome.describe());
  Owned leaked = keep_event_export(r, res);
  const std::string what = "event_get on an event created without the IPC flag gave " +
                           (res.ok() ? std::string("a handle") : res.outcome.describe());
  if (!res.ok()) r.native_error("event_get on a non-IPC event", res.outcome);
  r.check(!res.ok(), Evidence::of(res.outcome), "ur.event.get.not_ipc", what);
  // Level Zero states it for the pool: an event pool without the IPC flag has no IPC handle.
  r.check(!res.ok(), Evidence::of(res.outcome), "ze.evpool.ipc_flag", what);
  r.observe("event.get.not_ipc", outcome_word(res.outcome), "sycl.event.get.not_ipc_code");
  // The refusal leaves the event usable.
  r.check_ok(r.adapter().event_signal(plain.get()), "ur.event.get.not_ipc", "event_signal after the refused get");
  const Seen done = wait_for(r, plain.get(), kLongWait, "ur.event.get.not_ipc", "event_wait");
  r.check(done, "ur.event.get.not_ipc", "the event completes its signal after the refused get");
}

IPCHECK_CASE(Case("event.get.not_ipc", "event_get on an event created without the IPC flag fails; its error code is observed")
                 .clauses({"ur.event.get.not_ipc", "ze.evpool.ipc_flag", "sycl.event.get.not_ipc_code"})
                 .role("producer", not_ipc));

// ur.event.get.imported
void imported_producer(Role& r) {
  Owned ev = create_event(r, {.ipc = true}, "ur.event.get.imported");
  Exported h;
  Owned exported = export_event(r, ev.get(), h, "ur.event.get.imported");
  r.send_handle("consumer", "handle", h);
  r.barrier("consumer-done");
}

void imported_consumer(Role& r) {
  Received h = r.receive("handle");
  Owned ev = open_event(r, h, "ur.event.get.imported", "event_open");
  auto res = r.adapter().event_get(ev.get());
  Owned leaked = keep_event_export(r, res);
  if (!res.ok()) r.native_error("event_get on an opened event", res.outcome);
  r.check(!res.ok(), Evidence::of(res.outcome), "ur.event.get.imported",
          "event_get on an event opened from a handle gave " + (res.ok() ? std::string("a handle") : res.outcome.describe()));
  r.barrier("consumer-done");
}

IPCHECK_CASE(Case("event.get.imported", "event_get on an event that was itself opened from a handle fails")
                 .clause("ur.event.get.imported")
                 .role("producer", imported_producer)
                 .role("consumer", imported_consumer));

// ur.event.open.size
void size_consumer(Role& r) {
  Received h = r.receive("handle");
  const std::vector<std::byte>& good = h.bytes;
  std::vector<std::pair<std::string, std::vector<std::byte>>> variants{
      {"empty", {}}, {"one byte short", {good.begin(), good.end() - 1}}, {"one byte long", good}, {"huge (1 MiB)", good}};
  variants[2].second.push_back(std::byte{0});
  variants[3].second.resize(1 << 20, std::byte{0x5a});
  for (const auto& [name, bytes] : variants) {
    auto res = r.adapter().event_open(bytes, h.fd.get(), 0);
    if (res.outcome.code == Errc::not_implemented) r.skip("event_open: " + res.outcome.describe());
    Owned leaked = keep_event(r, res);
    r.check_error(res.outcome, Errc::invalid, "ur.event.open.size",
                  "event_open with " + name + " (" + std::to_string(bytes.size()) + " bytes)");
  }
  Owned ok = open_event(r, h, "ur.event.open.size", "event_open with the exact bytes after the bad ones");
  r.barrier("consumer-done");
}

IPCHECK_CASE(Case("event.open.size", "event_open with empty, one short, one long and huge byte counts fails with invalid")
                 .clause("ur.event.open.size")
                 .role("producer",
                       [](Role& r) {
                         Owned ev = create_event(r, {.ipc = true}, "ur.event.open.size");
                         Exported h;
                         Owned exported = export_event(r, ev.get(), h, "ur.event.open.size");
                         r.send_handle("consumer", "handle", h);
                         r.barrier("consumer-done");
                       })
                 .role("consumer", size_consumer));

}  // namespace
}  // namespace ipcheck::catalog::event_create_get
