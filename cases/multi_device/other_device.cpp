// IPC across devices, checked: for every ordered pair of devices (a, b) with the kind's IPC
// aspect, an object exported on a is opened on b by another process ("far"), and on a by a
// third process ("near"):
//
//   memory    sycl.mem.open.other_device: the far open maps the export (where the API has a
//             peer-access request, CUDA's CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS, with it; the open
//             without it is observed, cuda.mem.open.other_device.no_peer); a write through the
//             far mapping is seen by the exporter and by the near process, a write by the near
//             process and one by the exporter are seen through the far mapping.
//   physical  sycl.phys.map.other_device: the far process opens the object on b and maps it in
//             a range reserved on b (access granted to b only); the same three ways.
//   event     sycl.event.other_device: an event made on a and opened on b: the exporter's
//             signal ends a wait and shows in a query on b; a signal through b's opened event
//             ends waits of the exporter and of the near process on a.
//
// Where a pair is refused cleanly with feature_not_supported (devices that cannot reach each
// other's memory), the pair is skipped with its reason; any other refusal fails the clause.
// Runs where the adapter has two devices with the aspect: ref and our Level Zero driver by
// default (ref0, ref1), CUDA with two GPUs; on more, every ordered pair.
#include <string>
#include <vector>

#include "../common.hpp"

namespace ipcheck::catalog::multi_device {
namespace {

constexpr std::size_t kBytes = 64 * 1024;
constexpr std::uint64_t kExported = 0x3d01, kFar = 0x3d02, kNear = 0x3d03, kExporterAgain = 0x3d04;

// The devices that have `aspect`, in index order.
std::vector<int> devices_with(Role& r, const std::string& aspect) {
  std::vector<int> out;
  const AdapterInfo info = r.adapter().info();
  for (std::size_t i = 0; i < info.devices.size(); ++i) {
    const auto it = info.devices[i].aspects.find(aspect);
    if (it != info.devices[i].aspects.end() && it->second) out.push_back(static_cast<int>(i));
  }
  return out;
}

struct Pair {
  int a, b;
  std::string name() const { return std::to_string(a) + "->" + std::to_string(b); }
};

// Every ordered pair of devices with `aspect`; the role skips where there are fewer than two.
std::vector<Pair> pairs_of(Role& r, const std::string& aspect) {
  const std::vector<int> d = devices_with(r, aspect);
  if (d.size() < 2)
    r.skip("needs two devices with aspect " + aspect + ", and " +
           (d.empty() ? std::string("none has it") : "only device " + std::to_string(d[0]) + " has it"));
  std::vector<Pair> out;
  for (int a : d)
    for (int b : d)
      if (a != b) out.push_back({a, b});
  return out;
}

std::string tag(const char* what, const Pair& p) { return std::string(what) + " " + p.name(); }

// The flag value a case passes for the runtime's peer-access request, where the API has one
// (AdapterInfo::extra "mem_open_peer_flag", "0x1" on cuda and ref).
std::optional<std::uint64_t> peer_flag(Role& r) {
  const AdapterInfo info = r.adapter().info();
  const auto it = info.extra.find("mem_open_peer_flag");
  if (it == info.extra.end() || it->second.empty()) return std::nullopt;
  return std::stoull(it->second, nullptr, 0);
}

// ---- memory and physical memory: one buffer, three processes, writes every way.

enum class Kind { memory, physical };

const char* clause_of(Kind k) { return k == Kind::memory ? "sycl.mem.open.other_device" : "sycl.phys.map.other_device"; }
const char* aspect_of(Kind k) { return k == Kind::memory ? "ipc_memory" : "ipc_physical_memory"; }

// What a process holds of one pair's buffer: the allocation or opened object, and a pointer
// the adapter reads and writes.
struct Buffer {
  Owned object;    // allocation (memory), created or opened object (physical), or opened mapping
  Owned exported;  // the producer's export
  PhysicalView view;
  DevPtr ptr = 0;
  std::size_t bytes = kBytes;
  bool shared = true;  // the producer: exported; far and near: opened
};

// The producer's buffer on device a, filled with kExported and exported to far and near.
// Whether it was exported goes to both: an export refused cleanly with feature_not_supported
// (a device that claims the aspect yet cannot export, seen on UR) skips the pair, saying why,
// rather than the whole case; any other refusal fails the clause.
Buffer export_buffer(Role& r, Kind kind, const Pair& p) {
  const char* clause = clause_of(kind);
  Buffer buf;
  Exported h;
  Result<Exported> got;
  if (kind == Kind::memory) {
    buf.object = alloc_filled(r, buf.bytes, kExported, clause, p.a);
    buf.ptr = buf.object.get();
    got = r.adapter().mem_get(buf.ptr);
  } else {
    buf.bytes = granular(r, kBytes, p.a);
    buf.object = create_physical(r, buf.bytes, true, clause, p.a);
    buf.view = map_physical(r, buf.object.get(), buf.bytes, clause, p.a);
    buf.ptr = buf.view.ptr();
    if (!fill(r, buf.ptr, buf.bytes, kExported, clause, "fill the object on device " + std::to_string(p.a)))
      throw RoleAbort{"fill failed"};
    got = r.adapter().phys_get(buf.object.get());
  }
  const char* get = kind == Kind::memory ? "mem_get" : "phys_get";
  buf.shared = got.ok() || got.outcome.code != Errc::feature_not_supported;
  if (!buf.shared) {
    r.note("pair " + p.name() + ": " + get + " on device " + std::to_string(p.a) + " refused: " + got.outcome.describe());
  } else {
    h = r.require(std::move(got), clause, get);
    buf.exported = kind == Kind::memory ? Owned::mem_export(r.adapter(), h.id) : Owned::phys_export(r.adapter(), h.id);
  }
  for (const char* to : {"far", "near"}) {
    send_text(r, to, tag("exported", p), buf.shared ? "1" : "0");
    if (!buf.shared) continue;
    r.send_handle(to, tag("handle", p), h);
    send_text(r, to, tag("size", p), std::to_string(buf.bytes));
  }
  return buf;
}

// Opens the pair's handle on `device` (memory: with the peer-access request where the API has
// one) and maps it there. Returns false, having said why, when the devices cannot share it.
bool open_buffer(Role& r, Kind kind, const Pair& p, int device, Buffer& buf) {
  const char* clause = clause_of(kind);
  if (receive_text(r, tag("exported", p)) != "1") return false;  // the producer said why
  const Received h = r.receive(tag("handle", p));
  buf.bytes = std::stoull(receive_text(r, tag("size", p)));
  const std::string where = "on device " + std::to_string(device) + " (exported on device " + std::to_string(p.a) + ")";
  if (kind == Kind::memory) {
    const auto peer = device != p.a ? peer_flag(r) : std::nullopt;
    if (peer) {
      // Without the request first: what the runtime does with a plain open on another device.
      auto plain = r.adapter().mem_open(h.bytes, h.fd.get(), device, 0);
      Owned kept = keep_mapping(r, plain);
      if (!plain.ok()) r.native_error("mem_open flags 0 " + where, plain.outcome);
      r.observe("memory.open.other_device.without_peer_flag",
                !plain.ok() ? outcome_word(plain.outcome) + (plain.outcome.native_name.empty() ? "" : " " + plain.outcome.native_name)
                : holds(r, plain.value, buf.bytes, kExported) ? "opens_the_export"
                                                                : "opens_other_data",
                "cuda.mem.open.other_device.no_peer");
    }
    auto res = r.adapter().mem_open(h.bytes, h.fd.get(), device, peer ? *peer : kDefaultOpenFlags);
    buf.object = keep_mapping(r, res);
    if (!res.ok() && res.outcome.code == Errc::feature_not_supported) {
      r.note("pair " + p.name() + ": mem_open " + where + " refused: " + res.outcome.describe());
      return false;
    }
    r.require_ok(res.outcome, clause,
                 "mem_open " + where + (peer ? " with the peer-access request (flags 0x" + hex(*peer).substr(2) + ")" : ""));
    buf.ptr = res.value;
  } else {
    auto res = r.adapter().phys_open(h.bytes, h.fd.get(), device);
    buf.object = keep_opened_physical(r, res);
    if (!res.ok() && res.outcome.code == Errc::feature_not_supported) {
      r.note("pair " + p.name() + ": phys_open " + where + " refused: " + res.outcome.describe());
      return false;
    }
    r.require_ok(res.outcome, clause, "phys_open " + where);
    // Reserved on `device`: the adapter grants access to that device only (cuMemSetAccess).
    buf.view = map_physical(r, buf.object.get(), buf.bytes, clause, device);
    buf.ptr = buf.view.ptr();
  }
  return true;
}

std::size_t half(const Buffer& b) { return b.bytes / 2; }

// Who of far and near opened the pair's buffer: each says so to the others before the
// "opened" barrier, and each role checks only writes made through a mapping that exists (a
// pair one of them was refused cleanly is skipped there, not failed here). Received after
// that barrier, so a role that ended before it breaks the barrier instead of leaving the
// others waiting for its word.
void tell_opened(Role& r, const char* who, const Pair& p, bool opened) {
  for (const char* to : {"producer", "far", "near"})
    if (std::string(to) != who) send_text(r, to, tag(who, p) + " opened", opened ? "1" : "0");
}

bool peer_opened(Role& r, const char* who, const Pair& p) { return receive_text(r, tag(who, p) + " opened") == "1"; }

// One pair in the producer: export, then check what far and near wrote; write for far. The
// "exported" barrier comes before far and near wait for the handle: an export that fails ends
// the producer, which breaks it, instead of leaving the two waiting for a handle that never comes.
void producer_pair(Role& r, Kind kind, const Pair& p) {
  const char* clause = clause_of(kind);
  Buffer buf = export_buffer(r, kind, p);
  r.barrier(tag("exported", p));
  r.barrier(tag("opened", p));
  const bool far_opened = peer_opened(r, "far", p);
  peer_opened(r, "near", p);
  r.barrier(tag("far wrote", p));
  if (buf.shared && far_opened)
    r.check(holds(r, buf.ptr, half(buf), kFar), clause,
            "pair " + p.name() + ": the exporter on device " + std::to_string(p.a) +
                " sees the write made through device " + std::to_string(p.b) + "'s mapping");
  r.barrier(tag("near wrote", p));
  if (buf.shared) fill(r, buf.ptr, half(buf), kExporterAgain, clause, "the exporter's second write");
  r.barrier(tag("exporter wrote", p));
  r.barrier(tag("done", p));
}

void far_pair(Role& r, Kind kind, const Pair& p) {
  const char* clause = clause_of(kind);
  Buffer buf;
  r.barrier(tag("exported", p));
  const bool shared = open_buffer(r, kind, p, p.b, buf);
  if (shared)
    r.check(holds(r, buf.ptr, buf.bytes, kExported), clause,
            "pair " + p.name() + ": the mapping on device " + std::to_string(p.b) + " holds the exported bytes");
  tell_opened(r, "far", p, shared);
  r.barrier(tag("opened", p));
  const bool near_opened = peer_opened(r, "near", p);
  if (shared) fill(r, buf.ptr, half(buf), kFar, clause, "a write through device " + std::to_string(p.b) + "'s mapping");
  r.barrier(tag("far wrote", p));
  r.barrier(tag("near wrote", p));
  if (shared && near_opened)
    r.check(holds(r, buf.ptr + half(buf), buf.bytes - half(buf), kNear), clause,
            "pair " + p.name() + ": device " + std::to_string(p.b) +
                "'s mapping sees a write by a third process on the exporter's device");
  r.barrier(tag("exporter wrote", p));
  if (shared)
    r.check(holds(r, buf.ptr, half(buf), kExporterAgain), clause,
            "pair " + p.name() + ": device " + std::to_string(p.b) + "'s mapping sees the exporter's later write");
  r.barrier(tag("done", p));
}

void near_pair(Role& r, Kind kind, const Pair& p) {
  const char* clause = clause_of(kind);
  Buffer buf;
  r.barrier(tag("exported", p));
  const bool opened = open_buffer(r, kind, p, p.a, buf);
  tell_opened(r, "near", p, opened);
  r.barrier(tag("opened", p));
  const bool far_opened = peer_opened(r, "far", p);
  r.barrier(tag("far wrote", p));
  if (opened) {
    if (far_opened)
      r.check(holds(r, buf.ptr, half(buf), kFar), clause,
              "pair " + p.name() + ": a third process on device " + std::to_string(p.a) +
                  " sees the write made through device " + std::to_string(p.b) + "'s mapping");
    fill(r, buf.ptr + half(buf), buf.bytes - half(buf), kNear, clause, "the third process's write");
  }
  r.barrier(tag("near wrote", p));
  r.barrier(tag("exporter wrote", p));
  r.barrier(tag("done", p));
}

void register_buffers() {
  for (Kind kind : {Kind::memory, Kind::physical}) {
    const std::string name = kind == Kind::memory ? "memory" : "physical";
    auto each_pair = [kind](void (*body)(Role&, Kind, const Pair&)) {
      return [kind, body](Role& r) {
        for (const Pair& p : pairs_of(r, aspect_of(kind))) body(r, kind, p);
      };
    };
    Case c("multi_device." + name + ".other_device",
           "A " + name + " export opened on every other device: writes through each device's mapping are seen by "
           "the exporter, a third process on its device, and back");
    c.clause(clause_of(kind));
    if (kind == Kind::memory) c.clause("cuda.mem.open.other_device.no_peer");
    register_case(c.all_devices()
                      .needs(needs_two_devices_with(aspect_of(kind)))
                      .role("producer", each_pair(producer_pair))
                      .role("far", each_pair(far_pair))
                      .role("near", each_pair(near_pair))
                      .def);
  }
}

IPCHECK_CASE(register_buffers);

// ---- events: made on a, signalled and waited on b, and back.

constexpr const char* kEvent = "sycl.event.other_device";

void event_producer(Role& r) {
  for (const Pair& p : pairs_of(r, "ipc_event")) {
    Exported hf, hb;
    Owned forward = create_event(r, {.ipc = true}, kEvent, p.a);
    Owned forward_export = export_event(r, forward.get(), hf, kEvent);
    Owned backward = create_event(r, {.ipc = true}, kEvent, p.a);
    // Where only the process that made an event pending can end it (cuda), the creator ends
    // the new event's pending state, and far makes it pending again through its opened event
    // (event_far): otherwise far's record waits behind the creator's for ever (measured on 2x
    // H200: a record of an IPC event does not run while another process's record of it is
    // pending, on either device).
    if (!only_its_maker_ends_pending(r).empty())
      r.check_ok(r.adapter().event_signal(backward.get()), kEvent, "event_signal of the new backward event by its creator");
    Owned backward_export = export_event(r, backward.get(), hb, kEvent);
    r.send_handle("far", tag("forward", p), hf);
    r.send_handle("far", tag("backward", p), hb);
    r.send_handle("near", tag("backward", p), hb);
    r.barrier(tag("opened", p));
    r.check_ok(r.adapter().event_signal(forward.get()), kEvent, "event_signal on device " + std::to_string(p.a));
    r.barrier(tag("forward signaled", p));
    r.barrier(tag("backward signaled", p));
    r.check(wait_for(r, backward.get(), kLongWait, kEvent, "event_wait"), kEvent,
            "pair " + p.name() + ": the creator's wait on device " + std::to_string(p.a) +
                " ends by a signal through device " + std::to_string(p.b) + "'s opened event");
    r.check(query(r, backward.get(), kEvent, "event_query"), kEvent,
            "pair " + p.name() + ": the creator's query sees device " + std::to_string(p.b) + "'s signal");
    r.barrier(tag("done", p));
  }
}

void event_far(Role& r) {
  for (const Pair& p : pairs_of(r, "ipc_event")) {
    const Received hf = r.receive(tag("forward", p));
    const Received hb = r.receive(tag("backward", p));
    const std::string on_b = " on device " + std::to_string(p.b);
    Owned forward = open_event(r, hf, kEvent, "event_open" + on_b, p.b);
    Owned backward = open_event(r, hb, kEvent, "event_open" + on_b, p.b);
    check_pending(r, !query(r, forward.get(), kEvent, "event_query"), kEvent,
                  "pair " + p.name() + ": the event opened" + on_b + " is not signaled before any signal");
    // Where only the process that made an event pending can end it, this process makes the
    // backward event pending through its opened event, so that its own signal ends it.
    if (!only_its_maker_ends_pending(r).empty())
      r.check_ok(r.adapter().event_reset(backward.get()), kEvent, "event_reset through the opened event" + on_b);
    r.barrier(tag("opened", p));
    r.barrier(tag("forward signaled", p));
    r.check(wait_for(r, forward.get(), kLongWait, kEvent, "event_wait" + on_b), kEvent,
            "pair " + p.name() + ": a wait" + on_b + " ends by the creator's signal on device " + std::to_string(p.a));
    r.check(query(r, forward.get(), kEvent, "event_query" + on_b), kEvent,
            "pair " + p.name() + ": a query" + on_b + " sees the creator's signal");
    r.check_ok(r.adapter().event_signal(backward.get()), kEvent, "event_signal through the event opened" + on_b);
    r.barrier(tag("backward signaled", p));
    r.barrier(tag("done", p));
  }
}

void event_near(Role& r) {
  for (const Pair& p : pairs_of(r, "ipc_event")) {
    const Received hb = r.receive(tag("backward", p));
    Owned backward = open_event(r, hb, kEvent, "event_open on device " + std::to_string(p.a), p.a);
    r.barrier(tag("opened", p));
    r.barrier(tag("forward signaled", p));
    r.barrier(tag("backward signaled", p));
    r.check(wait_for(r, backward.get(), kLongWait, kEvent, "event_wait"), kEvent,
            "pair " + p.name() + ": a third process on device " + std::to_string(p.a) +
                " sees the signal made through device " + std::to_string(p.b) + "'s opened event");
    r.barrier(tag("done", p));
  }
}

IPCHECK_CASE(Case("multi_device.event.other_device",
                  "An event made on one device, opened on every other: signals, waits and queries cross both ways")
                 .clause(kEvent)
                 .all_devices()
                 .needs(needs_two_devices_with("ipc_event"))
                 .role("producer", event_producer)
                 .role("far", event_far)
                 .role("near", event_near));

}  // namespace
}  // namespace ipcheck::catalog::multi_device
