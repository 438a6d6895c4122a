// The `ze` adapter's event verbs (one-event IPC pools, reference counts kept by the
// adapter) and its native calls.
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "ipcheck/adapter_toolkit.hpp"
#include "ze_adapter.hpp"
#include "ze_ipcheck/handle_layout.hpp"

namespace ipcheck::ze {

Result<ObjectId> ZeAdapter::event_create(int device, EventFlags flags) {
  ze_device_handle_t dev = nullptr;
  if (Outcome o = device_at(device, dev); !o.ok()) return {o};
  ze_event_pool_desc_t pd{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1};
  if (flags.ipc) pd.flags |= ZE_EVENT_POOL_FLAG_IPC;
  if (flags.profiling) pd.flags |= ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP;
  Ev e;
  if (Outcome o = call("zeEventPoolCreate", api_.zeEventPoolCreate(ctx_, &pd, 1, &dev, &e.pool)); !o.ok()) return {o};
  if (Outcome o = create_event(e); !o.ok()) {
    api_.zeEventPoolDestroy(e.pool);
    return {o};
  }
  const ObjectId id = new_id();
  events_[id] = e;
  return {Outcome::runtime_success(e.opened ? "zeEventPoolOpenIpcHandle" : "zeEventPoolCreate"), id};
}

Result<Exported> ZeAdapter::event_get(ObjectId ev) {
  Ev* e = event(ev);
  if (!e) return {unknown("event_get", "event", ev)};
  ze_ipc_event_pool_handle_t h{};
  if (Outcome o = call("zeEventPoolGetIpcHandle", api_.zeEventPoolGetIpcHandle(e->pool, &h)); !o.ok()) return {o};
  Exported x = keep_export(event_exports_, h, h.data, sizeof h.data);
  // Event pool handles follow the memory convention (compute-runtime: the pool's dma-buf leads).
  if (fd_first_) x.fd = ze_ipcheck::fd_of(x.bytes);
  return {Outcome::runtime_success("zeEventPoolGetIpcHandle"), std::move(x)};
}

// A put that fails leaves the export live.
Outcome ZeAdapter::event_put(ObjectId id) {
  return put_export(event_exports_, id, "event_put", /*keep_on_failure=*/true, [&](const ze_ipc_event_pool_handle_t& h) {
    if (!api_.zeEventPoolPutIpcHandle) return newer_missing("zeEventPoolPutIpcHandle", "1.6", "event_put");
    auto& f = api_.zeEventPoolPutIpcHandle;
    return call("zeEventPoolPutIpcHandle", f.fn(context_for(f.via_driver), h));
  });
}

Result<ObjectId> ZeAdapter::event_open(std::span<const std::byte> bytes, int fd, int device) {
  ze_device_handle_t dev = nullptr;  // Level Zero 1.4 opens pools per context, not per device
  if (Outcome o = device_at(device, dev); !o.ok()) return {o};
  ze_ipc_event_pool_handle_t h{};
  if (Outcome o = to_handle(bytes, fd, h.data, "zeEventPoolOpenIpcHandle"); !o.ok()) return {o};
  Ev e;
  e.opened = true;
  if (Outcome o = call("zeEventPoolOpenIpcHandle", api_.zeEventPoolOpenIpcHandle(ctx_, h, &e.pool)); !o.ok())
    return {o};
  if (Outcome o = create_event(e); !o.ok()) {
    api_.zeEventPoolCloseIpcHandle(e.pool);
    return {o};
  }
  const ObjectId id = new_id();
  events_[id] = e;
  return {Outcome::runtime_success(e.opened ? "zeEventPoolOpenIpcHandle" : "zeEventPoolCreate"), id};
}

Outcome ZeAdapter::event_signal(ObjectId ev) {
  return on_event("event_signal", ev, [&](Ev& e) { return call("zeEventHostSignal", api_.zeEventHostSignal(e.event)); });
}

Outcome ZeAdapter::event_reset(ObjectId ev) {
  return on_event("event_reset", ev, [&](Ev& e) { return call("zeEventHostReset", api_.zeEventHostReset(e.event)); });
}

Result<bool> ZeAdapter::event_query(ObjectId ev) {
  Ev* e = event(ev);
  if (!e) return {unknown("event_query", "event", ev)};
  const ze_result_t r = api_.zeEventQueryStatus(e->event);
  if (r == ZE_RESULT_NOT_READY) return {Outcome::runtime_success("zeEventQueryStatus"), false};
  return {call("zeEventQueryStatus", r), r == ZE_RESULT_SUCCESS};
}

Result<bool> ZeAdapter::event_wait(ObjectId ev, std::chrono::nanoseconds timeout) {
  Ev* e = event(ev);
  if (!e) return {unknown("event_wait", "event", ev)};
  const auto ns = static_cast<uint64_t>(std::max<std::chrono::nanoseconds::rep>(0, timeout.count()));
  const ze_result_t r = api_.zeEventHostSynchronize(e->event, ns);
  if (r == ZE_RESULT_NOT_READY) return {Outcome::runtime_success("zeEventHostSynchronize"), false};
  return {call("zeEventHostSynchronize", r), r == ZE_RESULT_SUCCESS};
}

Outcome ZeAdapter::event_retain(ObjectId ev) {
  return on_event("event_retain", ev, [](Ev& e) {
    ++e.refs;
    return Outcome::success();
  });
}

Outcome ZeAdapter::event_release(ObjectId ev) {
  if (!event(ev)) return unknown("event_release", "event", ev);
  return drop_reference(events_, ev, [&](Ev& e) { return drop_event(e); });
}

// The ze_event_handle_t or ze_physical_mem_handle_t Level Zero returned for the object.
Result<std::uint64_t> ZeAdapter::native_identity(ObjectId id) {
  if (Ev* e = event(id)) return {Outcome::runtime_success("zeEventCreate"), reinterpret_cast<std::uint64_t>(e->event)};
  if (Phys* p = phys(id)) return {Outcome::runtime_success("zePhysicalMemCreate"), reinterpret_cast<std::uint64_t>(p->handle)};
  return {unknown("native_identity", "object", id)};
}

Outcome ZeAdapter::native(const std::string& what, const std::map<std::string, std::string>& args) {
  if (what != "null_argument") return Adapter::native(what, args);
  const auto verb = args.count("verb") ? args.at("verb") : std::string();
  const auto arg = args.count("argument") ? args.at("argument") : std::string();
  // Without the validation layer's parameter checks a null argument reaches the driver,
  // which may dereference it (Intel's does): nothing to judge, so nothing is called.
  if (!validation_on())
    return Outcome::failure(Errc::not_implemented,
                            "parameter validation is off: null_argument needs ZE_ENABLE_VALIDATION_LAYER=1 and "
                            "ZE_ENABLE_PARAMETER_VALIDATION=1");
  return null_argument(verb, arg);
}

Outcome ZeAdapter::create_event(Ev& e) {
  ze_event_desc_t ed{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, 0, ZE_EVENT_SCOPE_FLAG_HOST, ZE_EVENT_SCOPE_FLAG_HOST};
  return call("zeEventCreate", api_.zeEventCreate(e.pool, &ed, &e.event));
}

Outcome ZeAdapter::drop_event(Ev& e) {
  Outcome o = call("zeEventDestroy", api_.zeEventDestroy(e.event));
  const Outcome p = e.opened ? call("zeEventPoolCloseIpcHandle", api_.zeEventPoolCloseIpcHandle(e.pool))
                             : call("zeEventPoolDestroy", api_.zeEventPoolDestroy(e.pool));
  return o.ok() ? p : o;
}

Outcome ZeAdapter::null_argument(const std::string& verb, const std::string& arg) {
  const std::string known =
      "mem_get (context, pointer, out), mem_open (context, handle = the device, out), mem_close (context, pointer), "
      "event_get (handle = the pool, out)";
  auto unknown_combination = [&] {
    return Outcome::failure(Errc::not_implemented,
                            "null_argument: no Level Zero call for verb '" + verb + "' with a null '" + arg +
                                "'; known: " + known);
  };
  if (verb == "mem_get" || verb == "mem_close") {
    auto a = alloc(0, 4096, MemKind::device);
    if (!a.ok()) return a.outcome;
    void* p = ptr(a.value);
    ze_ipc_mem_handle_t h{};
    Outcome o;
    if (verb == "mem_get" && arg == "context") o = call("zeMemGetIpcHandle", api_.zeMemGetIpcHandle(nullptr, p, &h));
    else if (verb == "mem_get" && arg == "pointer") o = call("zeMemGetIpcHandle", api_.zeMemGetIpcHandle(ctx_, nullptr, &h));
    else if (verb == "mem_get" && arg == "out") o = call("zeMemGetIpcHandle", api_.zeMemGetIpcHandle(ctx_, p, nullptr));
    else if (verb == "mem_close" && arg == "context") o = call("zeMemCloseIpcHandle", api_.zeMemCloseIpcHandle(nullptr, p));
    else if (verb == "mem_close" && arg == "pointer") o = call("zeMemCloseIpcHandle", api_.zeMemCloseIpcHandle(ctx_, nullptr));
    else o = unknown_combination();
    free(a.value);
    return o;
  }
  if (verb == "mem_open") {
    ze_ipc_mem_handle_t h{};
    void* p = nullptr;
    if (arg == "context") return call("zeMemOpenIpcHandle", api_.zeMemOpenIpcHandle(nullptr, devices_[0], h, 0, &p));
    if (arg == "handle") return call("zeMemOpenIpcHandle", api_.zeMemOpenIpcHandle(ctx_, nullptr, h, 0, &p));
    if (arg == "out") return call("zeMemOpenIpcHandle", api_.zeMemOpenIpcHandle(ctx_, devices_[0], h, 0, nullptr));
    return unknown_combination();
  }
  if (verb == "event_get") {
    ze_ipc_event_pool_handle_t h{};
    if (arg == "handle") return call("zeEventPoolGetIpcHandle", api_.zeEventPoolGetIpcHandle(nullptr, &h));
    if (arg != "out") return unknown_combination();
    auto ev = event_create(0, {true, false});
    if (!ev.ok()) return ev.outcome;
    const Outcome o = call("zeEventPoolGetIpcHandle", api_.zeEventPoolGetIpcHandle(event(ev.value)->pool, nullptr));
    event_release(ev.value);
    return o;
  }
  return unknown_combination();
}

}  // namespace ipcheck::ze
