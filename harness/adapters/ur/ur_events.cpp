// The `ur` adapter's event verbs (UR's reusable events with the IPC flag, reference counted by
// UR) and its native calls.
#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <system_error>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "ur_adapter.hpp"

namespace ipcheck::ur_adapter {

Result<ObjectId> UrAdapter::event_create(int device, EventFlags flags) {
  if (!api_.urEventCreateExp) return {api_.lacking("event_create", "urEventCreateExp")};
  ur_device_handle_t dev = nullptr;
  if (Outcome o = device_at(device, dev); !o.ok()) return {o};
  ur_exp_event_desc_t desc{UR_STRUCTURE_TYPE_EXP_EVENT_DESC, nullptr, 0};
  if (flags.ipc) desc.flags |= UR_EXP_EVENT_FLAG_IPC_EXP;
  if (flags.profiling) desc.flags |= UR_EXP_EVENT_FLAG_ENABLE_PROFILING;
  ur_event_handle_t h = nullptr;
  if (Outcome o = call("urEventCreateExp", api_.urEventCreateExp(ctx_, dev, &desc, &h)); !o.ok()) return {o};
  const ObjectId id = new_id();
  events_[id] = Ev{h, device, false, 1};
  return {Outcome::runtime_success("urEventCreateExp"), id};
}

Result<Exported> UrAdapter::event_get(ObjectId ev) {
  if (!api_.urIPCGetEventHandleExp) return {api_.lacking("event_get", "urIPCGetEventHandleExp")};
  Ev* e = event(ev);
  if (!e) return {unknown("event_get", "event", ev)};
  void* data = nullptr;
  std::size_t size = 0;
  if (Outcome o = call("urIPCGetEventHandleExp", api_.urIPCGetEventHandleExp(e->handle, &data, &size)); !o.ok())
    return {o};
  if (!data || size == 0)
    return {Outcome::failure(Errc::other, "urIPCGetEventHandleExp succeeded without handle data", 0,
                             "UR_RESULT_SUCCESS")};
  return {Outcome::runtime_success("urIPCGetEventHandleExp"), keep_export(event_exports_, Export{data}, data, size)};
}

Outcome UrAdapter::event_put(ObjectId id) {
  if (!api_.urIPCPutEventHandleExp) return api_.lacking("event_put", "urIPCPutEventHandleExp");
  return put_export(event_exports_, id, "event_put", /*keep_on_failure=*/false, [&](const Export& x) {
    return call("urIPCPutEventHandleExp", api_.urIPCPutEventHandleExp(ctx_, x.data));
  });
}

Result<ObjectId> UrAdapter::event_open(std::span<const std::byte> bytes, int, int device) {
  if (!api_.urIPCOpenEventHandleExp) return {api_.lacking("event_open", "urIPCOpenEventHandleExp")};
  ur_device_handle_t dev = nullptr;  // UR opens events per context; the device is where signals go
  if (Outcome o = device_at(device, dev); !o.ok()) return {o};
  ur_event_handle_t h = nullptr;
  if (Outcome o = call("urIPCOpenEventHandleExp",
                       api_.urIPCOpenEventHandleExp(ctx_, bytes.empty() ? nullptr : bytes.data(), bytes.size(), &h));
      !o.ok())
    return {o};
  const ObjectId id = new_id();
  events_[id] = Ev{h, device, true, 1};
  return {Outcome::runtime_success("urIPCOpenEventHandleExp"), id};
}

// urEnqueueEventsWaitWithBarrierExt on the device's queue with the event as the one it signals
// (UR's way to signal a reusable event), then urQueueFinish.
Outcome UrAdapter::event_signal(ObjectId ev) {
  Ev* e = event(ev);
  if (!e) return unknown("event_signal", "event", ev);
  ur_queue_handle_t q = nullptr;
  if (Outcome o = queue_for(e->device, q); !o.ok()) return o;
  // A reusable event passed in *phEvent is signaled by the barrier instead of a new event.
  ur_event_handle_t h = e->handle;
  if (Outcome o = call("urEnqueueEventsWaitWithBarrierExt",
                       api_.urEnqueueEventsWaitWithBarrierExt(q, nullptr, 0, nullptr, &h));
      !o.ok())
    return o;
  if (h != e->handle)
    return Outcome::failure(Errc::other, "urEnqueueEventsWaitWithBarrierExt replaced the reusable event " +
                                             hex(reinterpret_cast<std::uint64_t>(e->handle)) + " with " +
                                             hex(reinterpret_cast<std::uint64_t>(h)) + " instead of signaling it",
                            0, "UR_RESULT_SUCCESS");
  return call("urQueueFinish", api_.urQueueFinish(q));
}

// UR has no call that resets an event: not_implemented, naming why.
Outcome UrAdapter::event_reset(ObjectId ev) {
  if (!event(ev)) return unknown("event_reset", "event", ev);
  return Outcome::failure(Errc::not_implemented,
                          "ur: UR has no call that resets an event (a reusable event is signaled by enqueued work "
                          "and has no host reset); nothing was called");
}

Result<bool> UrAdapter::event_query(ObjectId ev) {
  Ev* e = event(ev);
  if (!e) return {unknown("event_query", "event", ev)};
  std::int32_t status = -1;
  const Outcome o = call("urEventGetInfo",
                         api_.urEventGetInfo(e->handle, UR_EVENT_INFO_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                                             nullptr),
                         "UR_EVENT_INFO_COMMAND_EXECUTION_STATUS");
  if (!o.ok()) return {o};
  if (status == UR_EVENT_STATUS_ERROR)
    return {Outcome::runtime_failure("urEventGetInfo", Errc::other,
                                     "urEventGetInfo: the event's status is UR_EVENT_STATUS_ERROR", 0,
                                     "UR_EVENT_STATUS_ERROR")};
  return {o, status == UR_EVENT_STATUS_COMPLETE};
}

// urEventWait has no timeout. A wait of kBlockingWaitFrom or longer (a wait for a signal the
// case expects) is urEventWait itself, on a thread of its own (blocking_wait), so that a runtime
// whose wait wakes late is timed; a shorter one (a check that nothing signaled yet) polls
// UR_EVENT_INFO_COMMAND_EXECUTION_STATUS, leaving no thread blocked behind.
Result<bool> UrAdapter::event_wait(ObjectId ev, std::chrono::nanoseconds timeout) {
  Ev* e = event(ev);
  if (!e) return {unknown("event_wait", "event", ev)};
  const auto deadline = std::chrono::steady_clock::now() + std::max(timeout, std::chrono::nanoseconds(0));
  if (timeout >= kBlockingWaitFrom) {
    auto r = event_query(ev);
    if (!r.ok() || r.value) return r;
    return blocking_wait(*e, deadline);
  }
  // Past the deadline the last query's answer: urEventGetInfo's success, not signaled.
  return toolkit::poll_until(deadline, [&] { return event_query(ev); });
}

// urEventWait on a thread of its own (it has no timeout), the event retained for it: how
// soon the runtime's own wait returns after a signal is what the caller times. Past the
// deadline the thread stays blocked in urEventWait (until the event completes, or the process
// ends) and the wait is a timeout, whatever a query would say now: the runtime's wait did not
// return.
Result<bool> UrAdapter::blocking_wait(Ev& e, std::chrono::steady_clock::time_point deadline) {
  struct Shared {
    std::mutex lock;
    std::condition_variable done_cv;
    bool done = false;
    ur_result_t result = UR_RESULT_SUCCESS;
  };
  if (Outcome o = call("urEventRetain", api_.urEventRetain(e.handle)); !o.ok()) return {o};
  auto shared = std::make_shared<Shared>();
  try {
    std::thread([shared, h = e.handle, wait = api_.urEventWait, release = api_.urEventRelease] {
      const ur_result_t r = wait(1, &h);
      (void)release(h);
      std::lock_guard g(shared->lock);
      shared->result = r;
      shared->done = true;
      shared->done_cv.notify_all();
    }).detach();
  } catch (const std::system_error& x) {
    (void)api_.urEventRelease(e.handle);
    return {Outcome::failure(Errc::exhausted, std::string("ur: event_wait: no thread for urEventWait: ") + x.what())};
  }
  std::unique_lock g(shared->lock);
  if (!shared->done_cv.wait_until(g, deadline, [&] { return shared->done; }))
    return {Outcome::runtime_success("urEventWait"), false};
  const Outcome o = call("urEventWait", shared->result);
  return {o, o.ok()};
}

Outcome UrAdapter::event_retain(ObjectId ev) {
  return on_event("event_retain", ev, [&](Ev& e) {
    return follow_count(events_, ev, call("urEventRetain", api_.urEventRetain(e.handle)), 1);
  });
}

Outcome UrAdapter::event_release(ObjectId ev) {
  return on_event("event_release", ev, [&](Ev& e) {
    return follow_count(events_, ev, call("urEventRelease", api_.urEventRelease(e.handle)), -1);
  });
}

// The ur_event_handle_t or ur_physical_mem_handle_t UR returned for the object.
Result<std::uint64_t> UrAdapter::native_identity(ObjectId id) {
  if (Ev* e = event(id))
    return {Outcome::runtime_success(e->opened ? "urIPCOpenEventHandleExp" : "urEventCreateExp"),
            reinterpret_cast<std::uint64_t>(e->handle)};
  if (Phys* p = phys(id))
    return {Outcome::runtime_success(p->opened ? "urIPCOpenPhysMemHandleExp" : "urPhysicalMemCreate"),
            reinterpret_cast<std::uint64_t>(p->handle)};
  return {unknown("native_identity", "object", id)};
}

Outcome UrAdapter::native(const std::string& what, const std::map<std::string, std::string>& args) {
  if (what != "null_argument") return Adapter::native(what, args);
  // Without UR's parameter validation layer a null argument reaches UR's adapter, which may
  // dereference it: nothing to judge, so nothing is called.
  const char* layers = std::getenv("UR_ENABLE_LAYERS");
  if (!layers || (!std::strstr(layers, "UR_LAYER_PARAMETER_VALIDATION") && !std::strstr(layers, "UR_LAYER_FULL_VALIDATION")))
    return Outcome::failure(Errc::not_implemented,
                            "ur: parameter validation is off: null_argument needs UR_ENABLE_LAYERS="
                            "UR_LAYER_PARAMETER_VALIDATION");
  return null_argument(args.count("verb") ? args.at("verb") : "", args.count("argument") ? args.at("argument") : "");
}

Outcome UrAdapter::null_argument(const std::string& verb, const std::string& arg) {
  auto unknown_combination = [&] {
    return Outcome::failure(Errc::not_implemented,
                            "ur: null_argument: no UR call for verb '" + verb + "' with a null '" + arg +
                                "'; known: mem_get (context, pointer, out), mem_open (context, handle, out), "
                                "mem_close (context, pointer), event_get (handle, out)");
  };
  if (verb == "mem_get" || verb == "mem_close") {
    auto a = alloc(0, 4096, MemKind::device);
    if (!a.ok()) return a.outcome;
    void* data = nullptr;
    std::size_t size = 0;
    Outcome o;
    if (verb == "mem_get" && arg == "context")
      o = call("urIPCGetMemHandleExp", api_.urIPCGetMemHandleExp(nullptr, ptr(a.value), &data, &size));
    else if (verb == "mem_get" && arg == "pointer")
      o = call("urIPCGetMemHandleExp", api_.urIPCGetMemHandleExp(ctx_, nullptr, &data, &size));
    else if (verb == "mem_get" && arg == "out")
      o = call("urIPCGetMemHandleExp", api_.urIPCGetMemHandleExp(ctx_, ptr(a.value), nullptr, nullptr));
    else if (verb == "mem_close" && arg == "context")
      o = call("urIPCCloseMemHandleExp", api_.urIPCCloseMemHandleExp(nullptr, ptr(a.value)));
    else if (verb == "mem_close" && arg == "pointer")
      o = call("urIPCCloseMemHandleExp", api_.urIPCCloseMemHandleExp(ctx_, nullptr));
    else
      o = unknown_combination();
    if (data) api_.urIPCPutMemHandleExp(ctx_, data);
    free(a.value);
    return o;
  }
  if (verb == "mem_open") {
    std::byte h[128] = {};
    void* p = nullptr;
    if (arg == "context") return call("urIPCOpenMemHandleExp", api_.urIPCOpenMemHandleExp(nullptr, devices_[0], h, sizeof h, &p));
    if (arg == "handle") return call("urIPCOpenMemHandleExp", api_.urIPCOpenMemHandleExp(ctx_, devices_[0], nullptr, sizeof h, &p));
    if (arg == "out") return call("urIPCOpenMemHandleExp", api_.urIPCOpenMemHandleExp(ctx_, devices_[0], h, sizeof h, nullptr));
    return unknown_combination();
  }
  if (verb == "event_get") {
    if (!api_.urIPCGetEventHandleExp) return api_.lacking("null_argument event_get", "urIPCGetEventHandleExp");
    void* data = nullptr;
    std::size_t size = 0;
    if (arg == "handle") return call("urIPCGetEventHandleExp", api_.urIPCGetEventHandleExp(nullptr, &data, &size));
    if (arg != "out") return unknown_combination();
    auto ev = event_create(0, {true, false});
    if (!ev.ok()) return ev.outcome;
    const Outcome o = call("urIPCGetEventHandleExp", api_.urIPCGetEventHandleExp(event(ev.value)->handle, nullptr, nullptr));
    event_release(ev.value);
    return o;
  }
  return unknown_combination();
}

}  // namespace ipcheck::ur_adapter
