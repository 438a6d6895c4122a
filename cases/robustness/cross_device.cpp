// rb.open.confused_deputy across devices: a handle exported on device 0 and opened on
// another device of the same adapter is refused cleanly, or opens exactly the export (its
// bytes; for an event, its shared state). Never other memory. Which one is observed.
// Runs where the adapter has two devices with the kind's IPC aspect (ref and our Level
// Zero driver by default; CUDA with two GPUs).
#include "kinds.hpp"

namespace ipcheck::catalog::robustness_cross_device {
namespace {

constexpr const char* kClause = "rb.open.confused_deputy";
constexpr std::uint64_t kSeed = 0xde71;  // odd: a signaled event

const char* aspect_of(HandleKind k) {
  switch (k) {
    case HandleKind::memory: return "ipc_memory";
    case HandleKind::physical: return "ipc_physical_memory";
    case HandleKind::event: return "ipc_event";
  }
  return "";
}

void producer(Role& r, HandleKind kind) {
  need_device_with(r, aspect_of(kind), 0);  // the consumer needs a second device
  Target t = export_target(r, kind, kSeed, kClause);
  send_target(r, "consumer", "handle", t);
  r.barrier("consumer-done");
}

void consumer(Role& r, HandleKind kind) {
  const int other = need_device_with(r, aspect_of(kind), 0);
  ReceivedTarget t = receive_target(r, "handle");
  const std::string what = std::string(kind_name(kind)) + " handle of device 0 opened on device " + std::to_string(other);
  Opened o = open_target(r, kind, t.handle.bytes, t.handle.fd.get(), other);
  r.skip_if_unsupported(o.outcome, std::string(kind_name(kind)) + " open on device " + std::to_string(other));
  std::string value;
  if (!o.outcome.ok()) {
    check_clean_refusal(r, o.outcome, kClause, what);
    value = "refused " + outcome_word(o.outcome);
  } else {
    const Seen same = is_target(r, kind, o.object.get(), t.bytes, kSeed);
    r.check(same, kClause, what + (same ? ": opens exactly the export" : ": opens something other than the export"));
    value = same ? "opens_the_export" : "opens_other";
  }
  r.observe(std::string("robustness.open.cross_device.") + kind_name(kind), value);
  r.barrier("consumer-done");
}

void register_cross_device() {
  for (HandleKind kind : {HandleKind::memory, HandleKind::physical, HandleKind::event}) {
    const std::string name = kind_name(kind);
    register_case(Case("robustness.open.cross_device." + name,
                       "A " + name + " handle exported on device 0 and opened on another device is refused or is the export")
                      .clause(kClause)
                      .all_devices()
                      .needs(needs_device_with(aspect_of(kind), 0))
                      .role("producer", [kind](Role& r) { producer(r, kind); })
                      .role("consumer", [kind](Role& r) { consumer(r, kind); })
                      .def);
  }
}

IPCHECK_CASE(register_cross_device);

}  // namespace
}  // namespace ipcheck::catalog::robustness_cross_device
