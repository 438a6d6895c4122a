// The `sycl` adapter's event verbs (SYCL's reusable events: make_event with enable_ipc, their
// copies the references) and its native calls.
#include "sycl_adapter.hpp"

namespace ipcheck::sycl_adapter {

Result<ObjectId> SyclAdapter::event_create(int device, EventFlags flags) {
  if (!api_.make_event) return {lacking("event_create", "make_event")};
  if (Outcome o = device_at(device); !o.ok()) return {o};
  std::uint32_t bits = 0;
  if (flags.ipc) bits |= kMakeEventIpc;
  if (flags.profiling) bits |= kMakeEventProfiling;
  alignas(SyclObject) unsigned char storage[sizeof(SyclObject)];
  Outcome o = guarded("make_event", [&] { api_.make_event(reinterpret_cast<SyclObject*>(storage), ctx_, bits); });
  if (!o.ok()) return {o};
  auto* got = reinterpret_cast<SyclObject*>(storage);
  const ObjectId id = new_id();
  events_[id] = Held{{std::move(*got)}, device, false};
  got->~SyclObject();
  return {o, id};
}

Result<Exported> SyclAdapter::event_get(ObjectId ev) {
  if (!api_.ipc_event_get) return {lacking("event_get", "ipc_event_get")};
  Held* e = event(ev);
  if (!e) return {unknown("event_get", "event", ev)};
  IpcHandle h;
  Outcome o = guarded("ipc::event::get", [&] { h = api_.ipc_event_get(&e->copies.front()); });
  if (!o.ok()) return {o};
  return {o, keep_export(event_exports_, h, h.data, h.size)};
}

Outcome SyclAdapter::event_put(ObjectId id) {
  if (!api_.ipc_event_put) return lacking("event_put", "ipc_event_put");
  return put_export(event_exports_, id, "event_put", /*keep_on_failure=*/false, [&](IpcHandle h) {
    return guarded("ipc::event::put", [&] { api_.ipc_event_put(&h, ctx_); });
  });
}

Result<ObjectId> SyclAdapter::event_open(std::span<const std::byte> bytes, int, int device) {
  if (!api_.open_ipc_event) return {lacking("event_open", "open_ipc_event")};
  if (Outcome o = device_at(device); !o.ok()) return {o};
  alignas(SyclObject) unsigned char storage[sizeof(SyclObject)];
  Outcome o = guarded("ipc::event::open", [&] {
    api_.open_ipc_event(reinterpret_cast<SyclObject*>(storage), bytes.empty() ? nullptr : bytes.data(), bytes.size(),
                        ctx_);
  });
  if (!o.ok()) return {o};
  auto* got = reinterpret_cast<SyclObject*>(storage);
  const ObjectId id = new_id();
  events_[id] = Held{{std::move(*got)}, device, true};
  got->~SyclObject();
  return {o, id};
}

// enqueue_signal_event on the device's queue, then the queue's wait.
Outcome SyclAdapter::event_signal(ObjectId ev) {
  if (!api_.signal_event) return lacking("event_signal", "signal_event");
  Held* e = event(ev);
  if (!e) return unknown("event_signal", "event", ev);
  const SyclObject* q = queues_[static_cast<std::size_t>(e->device)];
  Outcome o = guarded("enqueue_signal_event", [&] {
    SyclObject by_value = *q;  // the queue parameter is a copy the caller owns
    api_.signal_event(&by_value, &e->copies.front());
  });
  if (!o.ok()) return o;
  api_.DPCTLQueue_Wait(q);
  return o;
}

// SYCL has no call that resets an event: not_implemented, naming why.
Outcome SyclAdapter::event_reset(ObjectId ev) {
  if (!event(ev)) return unknown("event_reset", "event", ev);
  return Outcome::failure(Errc::not_implemented, "sycl: SYCL has no call that resets an event");
}

Result<bool> SyclAdapter::event_query(ObjectId ev) {
  Held* e = event(ev);
  if (!e) return {unknown("event_query", "event", ev)};
  const int status = api_.DPCTLEvent_GetCommandExecutionStatus(&e->copies.front());
  return {Outcome::runtime_success("event::get_info<command_execution_status>"), status == kDpctlComplete};
}

// SYCL's wait has no timeout: the wait polls the command execution status.
Result<bool> SyclAdapter::event_wait(ObjectId ev, std::chrono::nanoseconds timeout) {
  return toolkit::poll_until(std::chrono::steady_clock::now() + timeout, [&] { return event_query(ev); });
}

Outcome SyclAdapter::event_retain(ObjectId ev) {
  return on_event("event_retain", ev, [](Held& e) {
    e.copies.push_back(e.copies.front());
    return Outcome::runtime_success("event copy");
  });
}

Outcome SyclAdapter::event_release(ObjectId ev) {
  return on_event("event_release", ev, [&](Held& e) {
    e.copies.pop_back();
    if (e.copies.empty()) events_.erase(ev);
    return Outcome::runtime_success("event::~event");
  });
}

// The impl pointer of the SYCL object (physical_mem, event): SYCL's identity.
Result<std::uint64_t> SyclAdapter::native_identity(ObjectId id) {
  if (Held* p = phys(id)) return {Outcome::success(), reinterpret_cast<std::uint64_t>(p->copies.front().impl.get())};
  if (Held* e = event(id)) return {Outcome::success(), reinterpret_cast<std::uint64_t>(e->copies.front().impl.get())};
  return {unknown("native_identity", "physical memory or event", id)};
}

Outcome SyclAdapter::native(const std::string& what, const std::map<std::string, std::string>& args) {
  (void)args;
  return Outcome::failure(Errc::not_implemented, "sycl: no native call '" + what +
                                                     "' (SYCL's API takes references: no null argument can be passed)");
}

}  // namespace ipcheck::sycl_adapter
