// Events: a state page with a futex word, shared across processes when IPC is enabled.
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <climits>

#include "ipcref/defects.hpp"
#include "ipcref/failpoints.hpp"
#include "registry.hpp"
#include "text.hpp"

namespace ipcref {

using detail::reg;
using text::cat;

namespace {

event_object& lookup(detail::registry& r, event e, const char* verb) {
  auto it = r.events.find(e);
  if (it == r.events.end())
    sys::fail(errc::invalid, cat(verb, ": ", static_cast<void*>(e), " is not a live event (released already?)"));
  return *it->second;
}

// The state page of a live event; the event stays alive while the caller uses it
// (releasing an event that another thread still waits on is the caller's error).
event_object& live(event e, const char* verb) {
  auto& r = reg();
  std::lock_guard lock(r.lock);
  return lookup(r, e, verb);
}

event insert(std::unique_ptr<event_object> obj) {
  auto& r = reg();
  std::lock_guard lock(r.lock);
  event e = obj.get();
  r.events.emplace(e, std::move(obj));
  return e;
}

// Whether this process has created an event (seeded defect event_open_unchecked_before_create).
std::atomic<bool>& created_an_event() {
  static std::atomic<bool> created{false};
  return created;
}

}  // namespace

event event_create(const context& ctx, const device& dev, event_properties props) {
  detail::require_device_in(ctx, dev, "event_create", "ur.event.create");
  if (props.enable_ipc && props.enable_profiling && !defects::is(defects::id::allow_profiling_ipc))
    sys::fail(errc::invalid, "event_create: IPC and profiling are mutually exclusive "
                             "(clause ur.event.create.profiling_ipc); drop one of them");
  if (props.enable_ipc && !dev.has(aspect::ipc_event))
    sys::fail(errc::feature_not_supported, cat("event_create: device '", dev.name(), "' lacks aspect ipc_event"));
  created_an_event().store(true);
  auto obj = std::make_unique<event_object>();
  obj->ctx = ctx.id();
  obj->device = dev.index();
  obj->props = props;
  if (props.enable_ipc) {
    obj->exported.emplace(record::kind::event, sizeof(event_state), dev.index(), 0u);
    obj->state_map = obj->exported->map_payload();
  } else {
    void* p = ::mmap(nullptr, sys::page_size(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) sys::fail(errc::exhausted, cat("event_create: ", sys::errno_text(errno)));
    obj->state_map = sys::mapping(p, sys::page_size());
  }
  obj->state = static_cast<event_state*>(obj->state_map.get());
  return insert(std::move(obj));
}

void event_signal(event e) {
  event_object& ev = live(e, "event_signal");
  if (ev.imported && defects::is(defects::id::event_signal_private)) {
    ev.private_signal = true;
    return;
  }
  event_state& s = *ev.state;
  if (ev.props.enable_profiling) s.signal_ns.store(sys::monotonic_ns(), std::memory_order_relaxed);
  s.signal_count.fetch_add(1, std::memory_order_relaxed);
  s.signaled.store(1, std::memory_order_seq_cst);
  if (defects::is(defects::id::slow_wake)) return;  // seeded: waiters find out by polling
  // Only pay for the wake syscall when someone sleeps (seq_cst pairs with event_wait).
  if (s.waiters.load(std::memory_order_seq_cst) != 0)
    sys::futex_wake_all(reinterpret_cast<std::uint32_t*>(&s.signaled));
}

void event_reset(event e) {
  event_object& ev = live(e, "event_reset");
  ev.private_signal = false;
  ev.state->signaled.store(0, std::memory_order_seq_cst);
}

bool event_query(event e) {
  event_object& ev = live(e, "event_query");
  return ev.private_signal || ev.state->signaled.load(std::memory_order_acquire) != 0;
}

bool event_wait(event e, std::chrono::nanoseconds timeout) {
  event_object& ev = live(e, "event_wait");
  event_state& s = *ev.state;
  if (ev.private_signal || s.signaled.load(std::memory_order_acquire)) return true;
  if (timeout.count() <= 0) return false;
  const std::uint64_t deadline = sys::monotonic_ns() + static_cast<std::uint64_t>(timeout.count());
  s.waiters.fetch_add(1, std::memory_order_seq_cst);
  bool signaled = false;
  for (;;) {
    if (s.signaled.load(std::memory_order_seq_cst)) {
      signaled = true;
      break;
    }
    // Seeded slow_wake: no signal wakes a waiter, so it sleeps 300 ms at a time and looks.
    const std::uint64_t until =
        defects::is(defects::id::slow_wake) ? std::min<std::uint64_t>(deadline, sys::monotonic_ns() + 300'000'000ull) : deadline;
    if (sys::futex_wait_until(reinterpret_cast<std::uint32_t*>(&s.signaled), 0, until) != 0 && errno == ETIMEDOUT &&
        until == deadline) {
      signaled = s.signaled.load(std::memory_order_seq_cst) != 0;
      break;
    }
  }
  s.waiters.fetch_sub(1, std::memory_order_seq_cst);
  return signaled;
}

void event_retain(event e) {
  auto& r = reg();
  std::lock_guard lock(r.lock);
  ++lookup(r, e, "event_retain").refs;
}

void event_release(event e) {
  failpoints::check("ipcref::event_release");
  auto& r = reg();
  std::lock_guard lock(r.lock);
  if (--lookup(r, e, "event_release").refs == 0) r.events.erase(e);
}

std::uint32_t event_reference_count(event e) {
  auto& r = reg();
  std::lock_guard lock(r.lock);
  return lookup(r, e, "event_reference_count").refs;
}

std::uint64_t event_profiling_signal_ns(event e) {
  event_object& ev = live(e, "event_profiling_signal_ns");
  if (!ev.props.enable_profiling)
    sys::fail(errc::invalid, "event_profiling_signal_ns: event was created without profiling");
  return ev.state->signal_ns.load(std::memory_order_relaxed);
}

namespace ipc::event {

handle get(ipcref::event e, const context& ctx) {
  auto& r = reg();
  std::lock_guard lock(r.lock);
  event_object& ev = lookup(r, e, "event::get");
  if (ev.ctx != ctx.id()) sys::fail(errc::invalid, "event::get: event belongs to another context");
  if (ev.imported)
    sys::fail(errc::invalid, "event::get: event was opened from another process; an imported event cannot be "
                             "exported again (clause ur.event.get.imported)");
  if (!ev.props.enable_ipc)
    sys::fail(errc::invalid, "event::get: event was created without the IPC property "
                             "(clause ur.event.get.not_ipc); create it with enable_ipc");
  return detail::handle_access::make(ev.exported->publish(0, sys::page_size()), *ev.exported);
}

void put(handle& h, const context& ctx) {
  const record::fields f = detail::decode_own_handle(h, record::kind::event, "event::put");
  auto& r = reg();
  std::lock_guard lock(r.lock);
  for (auto& [e, ev] : r.events) {
    if (!ev->exported || !ev->exported->owns(f)) continue;
    if (ev->ctx != ctx.id()) sys::fail(errc::invalid, "event::put: event belongs to another context");
    if (!defects::is(defects::id::put_keeps_export)) ev->exported->revoke(f);
    detail::handle_access::mark_put(h);
    return;
  }
  sys::fail(errc::invalid, "event::put: the handle's export is not live (its event was released)");
}

ipcref::event open(std::span<const std::byte> data, const context& ctx, const device& dev, const open_options& opts) {
  detail::require_device_in(ctx, dev, "event::open", "ur.event.open");
  // Seeded defect: the support check sits in the set-up a first create runs, so a process
  // that never created an event opens handles on a device without event IPC.
  const bool checks = !defects::is(defects::id::event_open_unchecked_before_create) || created_an_event().load();
  if (checks && !dev.has(aspect::ipc_event))
    sys::fail(errc::feature_not_supported, cat("event::open: device '", dev.name(), "' lacks aspect ipc_event"));
  detail::imported_object imp =
      detail::import_object(data, record::kind::event, "event::open", "ur.event.open.size", opts);
  if (imp.rec.offset != 0 || imp.rec.size < sizeof(event_state))
    sys::fail(errc::invalid, "event::open: handle does not cover an event's state page");
  // Seeded defect: an open on another device than the creator's gets a private copy of the state.
  const int share =
      defects::is(defects::id::other_device_event_private) && imp.rec.device != dev.index() ? MAP_PRIVATE : MAP_SHARED;
  void* p = ::mmap(nullptr, sys::page_size(), PROT_READ | PROT_WRITE, share, imp.fd.get(),
                   static_cast<off_t>(detail::payload_file_offset()));
  if (p == MAP_FAILED) sys::fail(errc::exhausted, cat("event::open: cannot map: ", sys::errno_text(errno)));
  auto obj = std::make_unique<event_object>();
  obj->ctx = ctx.id();
  obj->device = dev.index();
  obj->props.enable_ipc = true;
  obj->imported = true;
  obj->state_map = sys::mapping(p, sys::page_size());
  obj->state = static_cast<event_state*>(p);
  return insert(std::move(obj));
}

}  // namespace ipc::event

resource_counts get_resource_counts() {
  auto& r = reg();
  std::lock_guard lock(r.lock);
  resource_counts c;
  c.allocations = r.allocations.size();
  c.open_mappings = r.mappings.size();
  for (auto& [b, a] : r.allocations)
    if (a.object) c.live_exports += a.object->live_exports();
  for (auto& [p, o] : r.physicals)
    if (o->exported) c.live_exports += o->exported->live_exports();
  for (auto& [e, o] : r.events)
    if (o->exported) c.live_exports += o->exported->live_exports();
  c.physical_objects = r.physicals.size();
  c.reservations = r.reservations.size();
  c.events = r.events.size();
  return c;
}

}  // namespace ipcref
