// ur.event.open.no_support: an open of real event handle bytes in a process whose context has
// no device with event IPC, which never created an event, answers feature_not_supported
// (UR_RESULT_ERROR_UNSUPPORTED_FEATURE): never success, never a crash. A runtime that checks
// support only in the set-up its first create runs (an event pool made lazily) opens there.
//
// The producer runs as every case does and creates the event on a device with event IPC. The
// consumer runs with event IPC switched off on every device, through the knobs of ipcref and
// our Level Zero driver (IPCHECK_REF_DEVICES: ref, ze and ur over libze_ipcheck) and of the
// identity UR's v2 adapter reads before it offers event IPC (IPCHECK_ZE_IDENTITY=ipcheck); where
// its runtime still reports event IPC on a device (a real GPU, or ref with --adapter-opt
// devices=...), the case skips, saying which.
#include "../common.hpp"

namespace ipcheck::catalog::event_open_no_support {
namespace {

constexpr const char* kClause = "ur.event.open.no_support";
// Every device as ipcref's default platform has them (three), none with event IPC.
constexpr const char* kNoEventIpc = "IPCHECK_REF_DEVICES=ref0=memory,physical_memory;ref1=memory,physical_memory;ref2=none";

void producer(Role& r) {
  const int dev = need_device_with(r, "ipc_event");
  Owned ev = create_event(r, {.ipc = true}, kClause, dev);
  Exported h;
  Owned exported = export_event(r, ev.get(), h, kClause);
  r.send_handle("consumer", "handle", h);
  r.barrier("consumer-done");
}

void consumer(Role& r) {
  // No event is created here before the open: the premise is the context's, as the support
  // queries report it.
  const AdapterInfo info = r.adapter().info();
  if (info.devices.empty()) r.skip("the adapter reports no device");
  for (std::size_t k = 0; k < info.devices.size(); ++k)
    if (const auto a = info.devices[k].aspects.find("ipc_event"); a != info.devices[k].aspects.end() && a->second)
      r.skip("device " + std::to_string(k) + " (" + info.devices[k].name +
             ") of the consumer still reports event IPC: the case switches it off only in ipcref, our Level Zero "
             "driver and UR's v2 identity check (IPCHECK_REF_DEVICES, IPCHECK_ZE_IDENTITY)");
  Received h = r.receive("handle");
  auto res = r.adapter().event_open(h.bytes, h.fd.get(), 0);
  Owned leaked = keep_event(r, res);
  r.check_error(res.outcome, Errc::feature_not_supported, kClause,
                "event_open of a real event handle in a context where no device has event IPC, with no event "
                "created in this process before");
  r.barrier("consumer-done");
}

IPCHECK_CASE(Case("event.open.no_support",
                  "An event open in a context without event IPC, with no event created first, fails with "
                  "feature_not_supported")
                 .clause(kClause)
                 .environment("consumer", kNoEventIpc)
                 .environment("consumer", "IPCHECK_ZE_IDENTITY=ipcheck")
                 .role("producer", producer)
                 .role("consumer", consumer));

}  // namespace
}  // namespace ipcheck::catalog::event_open_no_support
