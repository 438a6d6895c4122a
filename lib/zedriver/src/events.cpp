// Event pools and events. A pool's events are slots of one memory region (handle_layout.hpp:
// EventPoolHeader, EventSlot): private memory for ordinary pools, an ipcref device allocation
// for IPC pools, exported and opened with ipcref's memory IPC; a counter-based event is one
// such region of its own. Signalling and waiting on them (a futex word on that shared page,
// so signals cross processes both ways) are in event_signals.cpp.
#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "entries.hpp"
#include "ipcref/record.hpp"
#include "ze_ipcheck/defects.hpp"
#include "state.hpp"

namespace zedriver {

namespace {

using ze_ipcheck::EventPoolHeader;
using ze_ipcheck::EventSlot;

constexpr ze_event_pool_flags_t kKnownPoolFlags =
    ZE_EVENT_POOL_FLAG_HOST_VISIBLE | ZE_EVENT_POOL_FLAG_IPC | ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP;

std::size_t pool_bytes(std::uint32_t count) {
  const std::size_t raw = ze_ipcheck::kEventSlotsOffset + static_cast<std::size_t>(count) * sizeof(EventSlot);
  return (raw + page_size() - 1) / page_size() * page_size();
}

// The memory of a pool of `count` slots (or of one counter-based event): an ipcref device
// allocation of `dev` when the events are shared by IPC, else private anonymous pages.
std::shared_ptr<PoolMemory> pool_memory(Context* c, Device* dev, std::uint32_t count, bool ipc, const char* fn) {
  auto mem = std::make_shared<PoolMemory>();
  mem->bytes = pool_bytes(count);
  mem->ipc_ctx = *c->ctx;
  if (ipc) {
    mem->base = ipcref::malloc_device(mem->bytes, dev->dev, *c->ctx);
    mem->source = PoolMemory::Source::allocation;
    return mem;
  }
  void* p = ::mmap(nullptr, mem->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    fail(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY, cat(fn, ": cannot map ", mem->bytes, " bytes: ", std::strerror(errno)));
  mem->base = p;
  mem->source = PoolMemory::Source::private_map;
  return mem;
}

}  // namespace

PoolMemory::~PoolMemory() {
  if (!base) return;  // creation failed before the memory existed
  try {
    switch (source) {
      case Source::private_map: ::munmap(base, bytes); break;
      case Source::allocation: ipcref::free(base, *ipc_ctx); break;
      case Source::opened: ipcref::ipc::memory::close(base, *ipc_ctx); break;
    }
  } catch (const std::exception& e) {
    report_failure("event pool release", ZE_RESULT_ERROR_UNKNOWN, e.what());
  }
}

// ---------------------------------------------------------------- pools

ze_result_t ZE_APICALL EventPoolCreate(ze_context_handle_t hContext, const ze_event_pool_desc_t* desc,
                                       uint32_t numDevices, ze_device_handle_t* phDevices,
                                       ze_event_pool_handle_t* phEventPool) {
  const char* fn = "zeEventPoolCreate";
  return entry(fn, [&] {
    Context* c = context_of(hContext, fn);
    need_pointer(desc, fn, "desc");
    need_pointer(phEventPool, fn, "phEventPool");
    if (desc->count == 0) fail(ZE_RESULT_ERROR_INVALID_SIZE, cat(fn, ": desc->count is 0"));
    if (desc->flags & ~kKnownPoolFlags)
      fail(ZE_RESULT_ERROR_INVALID_ENUMERATION, cat(fn, ": desc->flags 0x", std::hex, desc->flags, " has unknown bits"));
    const bool ipc = desc->flags & ZE_EVENT_POOL_FLAG_IPC;
    // Level Zero 1.4: "KERNEL_TIMESTAMP ... cannot be combined with ZE_EVENT_POOL_FLAG_IPC".
    if (ipc && (desc->flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP))
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
           cat(fn, ": ZE_EVENT_POOL_FLAG_IPC with ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP; Level Zero 1.4 forbids ",
               "timestamps on IPC pools (clause ze.evpool.timestamp_ipc); drop one of them"));
    std::vector<Device*> devices;
    if (numDevices == 0) {
      devices = c->devices;
    } else {
      need_pointer(phDevices, fn, "phDevices");
      for (uint32_t i = 0; i < numDevices; ++i) {
        Device* d = get<Device>(phDevices[i], Kind::device, fn, "phDevices[i]");
        if (!c->contains(d))
          fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat(fn, ": device '", d->dev.name(), "' is not in the context"));
        devices.push_back(d);
      }
    }
    if (ipc)
      for (auto* d : devices)
        if (!d->dev.has(ipcref::aspect::ipc_event))
          fail(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE,
               cat(fn, ": device '", d->dev.name(), "' lacks aspect ipc_event; it cannot share events"));
    // Shared through ipcref's memory IPC: the pool is a device allocation of its first device.
    auto mem = pool_memory(c, devices.front(), desc->count, ipc, fn);
    EventPoolHeader* h = mem->header();
    h->magic = ze_ipcheck::kEventPoolMagic;
    h->version = ze_ipcheck::kEventPoolVersion;
    h->count = desc->count;
    h->flags = desc->flags;
    auto pool = std::make_unique<EventPool>();
    pool->ctx = c;
    pool->flags = desc->flags;
    pool->count = desc->count;
    pool->mem = std::move(mem);
    ++c->children;
    add_live(pool.get(), Kind::event_pool);
    *phEventPool = reinterpret_cast<ze_event_pool_handle_t>(pool.release());
    return ZE_RESULT_SUCCESS;
  });
}

namespace {

// Destroys a pool and whatever events of it remain (zeEventPoolCloseIpcHandle's contract).
void drop_pool(EventPool* pool) {
  Driver& d = driver();
  std::set<Event*> events;
  {
    std::lock_guard lock(d.lock);
    d.pool_exports.erase(pool);
    events.swap(pool->events);
  }
  for (Event* e : events) {
    remove_live(e);
    delete e;
  }
  remove_live(pool);
  --pool->ctx->children;
  delete pool;
}

}  // namespace

ze_result_t ZE_APICALL EventPoolDestroy(ze_event_pool_handle_t hEventPool) {
  const char* fn = "zeEventPoolDestroy";
  return entry(fn, [&] {
    Driver& d = driver();
    auto* pool = get<EventPool>(hEventPool, Kind::event_pool, fn, "hEventPool");
    if (pool->opened)
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
           cat(fn, ": the pool was opened from an IPC handle; close it with zeEventPoolCloseIpcHandle"));
    {
      std::lock_guard lock(d.lock);
      if (!pool->events.empty())
        fail(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE,
             cat(fn, ": ", pool->events.size(), " events of the pool are alive; destroy them first"));
    }
    drop_pool(pool);
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL EventPoolGetIpcHandle(ze_event_pool_handle_t hEventPool, ze_ipc_event_pool_handle_t* phIpc) {
  const char* fn = "zeEventPoolGetIpcHandle";
  return entry(fn, [&] {
    Driver& d = driver();
    auto* pool = get<EventPool>(hEventPool, Kind::event_pool, fn, "hEventPool");
    need_pointer(phIpc, fn, "phIpc");
    if (pool->opened)
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
           cat(fn, ": the pool was itself opened from an IPC handle; libze_ipcheck does not export it again ",
               "(clause ur.event.get.imported)"));
    if (!(pool->flags & ZE_EVENT_POOL_FLAG_IPC))
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
           cat(fn, ": the pool was created without ZE_EVENT_POOL_FLAG_IPC (clause ze.evpool.ipc_flag); ",
               "create it with that flag to share it"));
    std::lock_guard lock(d.lock);
    auto it = d.pool_exports.find(pool);
    if (it == d.pool_exports.end()) {
      Export e = make_export(ipcref::ipc::memory::get(pool->mem->base, *pool->ctx->ctx), *pool->ctx);
      it = d.pool_exports.emplace(pool, std::move(e)).first;
    }
    ++it->second.refs;
    std::memcpy(phIpc->data, it->second.bytes.data(), sizeof phIpc->data);
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL EventPoolPutIpcHandle(ze_context_handle_t hContext, ze_ipc_event_pool_handle_t hIpc) {
  const char* fn = "zeEventPoolPutIpcHandle";
  return entry(fn, [&] {
    Context* c = context_of(hContext, fn);
    Driver& d = driver();
    std::lock_guard lock(d.lock);
    for (auto it = d.pool_exports.begin(); it != d.pool_exports.end(); ++it) {
      Export& e = it->second;
      if (std::memcmp(e.bytes.data(), hIpc.data, e.bytes.size()) != 0) continue;
      if (e.ctx_id != c->ctx->id()) fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat(fn, ": the pool belongs to another context"));
      if (--e.refs == 0) {
        ipcref::ipc::memory::put(e.handle, *c->ctx);
        d.pool_exports.erase(it);
      }
      return ZE_RESULT_SUCCESS;
    }
    fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
         cat(fn, ": the handle is not a live event pool export of this process (put already, its pool destroyed, ",
             "or never returned by zeEventPoolGetIpcHandle here)"));
  });
}

ze_result_t ZE_APICALL EventPoolOpenIpcHandle(ze_context_handle_t hContext, ze_ipc_event_pool_handle_t hIpc,
                                              ze_event_pool_handle_t* phEventPool) {
  const char* fn = "zeEventPoolOpenIpcHandle";
  return entry(fn, [&] {
    Context* c = context_of(hContext, fn);
    need_pointer(phEventPool, fn, "phEventPool");
    Device* dev = nullptr;
    for (auto* d : c->devices)
      if (!dev && d->dev.has(ipcref::aspect::ipc_event)) dev = d;
    // Seeded defect: no device of the context has event IPC, and the pool opens on the first.
    if (!dev && !c->devices.empty() && ze_ipcheck::defects::is(ze_ipcheck::defects::id::pool_open_without_support))
      dev = c->devices.front();
    if (!dev)
      fail(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE, cat(fn, ": no device of the context has aspect ipc_event"));
    const DecodedHandle h = decode_handle(std::as_bytes(std::span(hIpc.data)), fn);
    const ipcref::record::fields rec = ipcref::record::decode(h.record);
    auto mem = std::make_shared<PoolMemory>();
    mem->base = ipcref::ipc::memory::open(h.record, *c->ctx, dev->dev, {h.descriptor});
    mem->bytes = rec.size;
    mem->source = PoolMemory::Source::opened;
    mem->ipc_ctx = *c->ctx;
    // The pool header is the exporter's: trust none of it beyond what the mapping covers.
    if (mem->bytes < ze_ipcheck::kEventSlotsOffset)
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat(fn, ": the handle names ", mem->bytes, " bytes, too few for an event pool"));
    const EventPoolHeader hdr = *mem->header();
    if (hdr.magic != ze_ipcheck::kEventPoolMagic || hdr.version != ze_ipcheck::kEventPoolVersion)
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
           cat(fn, ": the handle names memory that is not an event pool (a memory IPC handle?)"));
    if (hdr.count == 0 || ze_ipcheck::kEventSlotsOffset + std::size_t{hdr.count} * sizeof(EventSlot) > mem->bytes)
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
           cat(fn, ": the pool header claims ", hdr.count, " events, which do not fit its ", mem->bytes, " bytes"));
    if (!(hdr.flags & ZE_EVENT_POOL_FLAG_IPC))
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat(fn, ": the pool was not created with ZE_EVENT_POOL_FLAG_IPC"));
    auto pool = std::make_unique<EventPool>();
    pool->ctx = c;
    pool->flags = hdr.flags & kKnownPoolFlags;
    pool->count = hdr.count;
    pool->opened = true;
    pool->mem = std::move(mem);
    ++c->children;
    add_live(pool.get(), Kind::event_pool);
    *phEventPool = reinterpret_cast<ze_event_pool_handle_t>(pool.release());
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL EventPoolCloseIpcHandle(ze_event_pool_handle_t hEventPool) {
  const char* fn = "zeEventPoolCloseIpcHandle";
  return entry(fn, [&] {
    driver();
    auto* pool = get<EventPool>(hEventPool, Kind::event_pool, fn, "hEventPool");
    if (!pool->opened)
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
           cat(fn, ": the pool was created in this process; destroy it with zeEventPoolDestroy"));
    drop_pool(pool);
    return ZE_RESULT_SUCCESS;
  });
}

// ---------------------------------------------------------------- events

ze_result_t ZE_APICALL EventCreate(ze_event_pool_handle_t hEventPool, const ze_event_desc_t* desc,
                                   ze_event_handle_t* phEvent) {
  const char* fn = "zeEventCreate";
  return entry(fn, [&] {
    Driver& d = driver();
    auto* pool = get<EventPool>(hEventPool, Kind::event_pool, fn, "hEventPool");
    need_pointer(desc, fn, "desc");
    need_pointer(phEvent, fn, "phEvent");
    const ze_event_scope_flags_t scopes =
        ZE_EVENT_SCOPE_FLAG_SUBDEVICE | ZE_EVENT_SCOPE_FLAG_DEVICE | ZE_EVENT_SCOPE_FLAG_HOST;
    if ((desc->signal & ~scopes) || (desc->wait & ~scopes))
      fail(ZE_RESULT_ERROR_INVALID_ENUMERATION, cat(fn, ": desc->signal or desc->wait has unknown bits"));
    if (desc->index >= pool->count)
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
           cat(fn, ": index ", desc->index, " is outside the pool's ", pool->count, " events"));
    auto e = std::make_unique<Event>();
    e->pool = pool;
    e->mem = pool->mem;
    e->index = desc->index;
    // Creation does not reset the slot: in an opened pool the exporter may have signaled it.
    {
      std::lock_guard lock(d.lock);
      pool->events.insert(e.get());
    }
    add_live(e.get(), Kind::event);
    *phEvent = reinterpret_cast<ze_event_handle_t>(e.release());
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL EventDestroy(ze_event_handle_t hEvent) {
  const char* fn = "zeEventDestroy";
  return entry(fn, [&] {
    Driver& d = driver();
    Event* e = get<Event>(hEvent, Kind::event, fn, "hEvent");
    if (e->opened)
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
           cat(fn, ": the event was opened from an IPC handle; close it with zeEventCounterBasedCloseIpcHandle"));
    {
      std::lock_guard lock(d.lock);
      if (e->pool) e->pool->events.erase(e);
      d.event_exports.erase(e);
    }
    if (e->ctx) --e->ctx->children;
    remove_live(e);
    delete e;
    return ZE_RESULT_SUCCESS;
  });
}

// ---------------------------------------------------------------- counter-based events

namespace {

constexpr std::uint32_t kKnownCounterFlags =
    IPCHECK_ZE_EVENT_COUNTER_BASED_FLAG_IMMEDIATE | IPCHECK_ZE_EVENT_COUNTER_BASED_FLAG_NON_IMMEDIATE |
    IPCHECK_ZE_EVENT_COUNTER_BASED_FLAG_HOST_VISIBLE | IPCHECK_ZE_EVENT_COUNTER_BASED_FLAG_IPC |
    IPCHECK_ZE_EVENT_COUNTER_BASED_FLAG_DEVICE_TIMESTAMP | IPCHECK_ZE_EVENT_COUNTER_BASED_FLAG_HOST_TIMESTAMP;
constexpr std::uint32_t kTimestampFlags =
    IPCHECK_ZE_EVENT_COUNTER_BASED_FLAG_DEVICE_TIMESTAMP | IPCHECK_ZE_EVENT_COUNTER_BASED_FLAG_HOST_TIMESTAMP;
constexpr ze_event_scope_flags_t kScopes =
    ZE_EVENT_SCOPE_FLAG_SUBDEVICE | ZE_EVENT_SCOPE_FLAG_DEVICE | ZE_EVENT_SCOPE_FLAG_HOST;

// `flags` are 1.15 counter-based flags (the zex bits 0..5 carry the same meaning).
ze_result_t create_counter_event(ze_context_handle_t hContext, ze_device_handle_t hDevice, std::uint32_t flags,
                                 ze_event_scope_flags_t signal, ze_event_scope_flags_t wait,
                                 ze_event_handle_t* phEvent, const char* fn) {
  Context* c = context_of(hContext, fn);
  Device* dev = get<Device>(hDevice, Kind::device, fn, "hDevice");
  need_pointer(phEvent, fn, "phEvent");
  if (!c->contains(dev))
    fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat(fn, ": device '", dev->dev.name(), "' is not in the context"));
  if (flags & ~kKnownCounterFlags)
    fail(ZE_RESULT_ERROR_INVALID_ENUMERATION, cat(fn, ": desc->flags 0x", std::hex, flags, " has unknown bits"));
  if ((signal & ~kScopes) || (wait & ~kScopes))
    fail(ZE_RESULT_ERROR_INVALID_ENUMERATION, cat(fn, ": the signal or wait scope has unknown bits"));
  if ((flags & kTimestampFlags) == kTimestampFlags)
    fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat(fn, ": device and host timestamps exclude each other"));
  const bool ipc = flags & IPCHECK_ZE_EVENT_COUNTER_BASED_FLAG_IPC;
  if (ipc && (flags & kTimestampFlags))
    fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
         cat(fn, ": an IPC counter-based event cannot carry timestamps (as IPC event pools cannot); drop one flag"));
  if (ipc && !dev->dev.has(ipcref::aspect::ipc_event))
    fail(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE,
         cat(fn, ": device '", dev->dev.name(), "' lacks aspect ipc_event; it cannot share events"));
  // Shared through ipcref's memory IPC, as IPC pools are.
  auto mem = pool_memory(c, dev, 1, ipc, fn);
  EventPoolHeader* h = mem->header();
  h->magic = ze_ipcheck::kCounterEventMagic;
  h->version = ze_ipcheck::kCounterEventVersion;
  h->count = 1;
  h->flags = flags;
  auto e = std::make_unique<Event>();
  e->mem = std::move(mem);
  e->counter_based = true;
  e->flags = flags;
  e->ctx = c;
  ++c->children;
  add_live(e.get(), Kind::event);
  *phEvent = reinterpret_cast<ze_event_handle_t>(e.release());
  return ZE_RESULT_SUCCESS;
}

Event* counter_event(ze_event_handle_t h, const char* fn) {
  driver();
  Event* e = get<Event>(h, Kind::event, fn, "hEvent");
  if (!e->counter_based)
    fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
         cat(fn, ": the event belongs to an event pool; only counter-based events have these IPC handles ",
             "(share the pool with zeEventPoolGetIpcHandle)"));
  return e;
}

}  // namespace

ze_result_t ZE_APICALL EventCounterBasedCreate(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                               const ipcheck_ze_event_counter_based_desc_t* desc,
                                               ze_event_handle_t* phEvent) {
  const char* fn = "zeEventCounterBasedCreate";
  return entry(fn, [&] {
    need_pointer(desc, fn, "desc");
    if (desc->stype != IPCHECK_ZE_STRUCTURE_TYPE_EVENT_COUNTER_BASED_DESC)
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
           cat(fn, ": desc->stype is 0x", std::hex, desc->stype, ", not ZE_STRUCTURE_TYPE_EVENT_COUNTER_BASED_DESC"));
    return create_counter_event(hContext, hDevice, desc->flags, desc->signal, desc->wait, phEvent, fn);
  });
}

ze_result_t ZE_APICALL ZexCounterBasedEventCreate2(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                                   const ipcheck_zex_counter_based_event_desc_t* desc,
                                                   ze_event_handle_t* phEvent) {
  const char* fn = "zexCounterBasedEventCreate2";
  return entry(fn, [&] {
    need_pointer(desc, fn, "desc");
    if (desc->stype != IPCHECK_ZEX_STRUCTURE_COUNTER_BASED_EVENT_DESC)
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
           cat(fn, ": desc->stype is 0x", std::hex, desc->stype, ", not ZEX_STRUCTURE_COUNTER_BASED_EVENT_DESC"));
    // zex bit 4 (kernel timestamps) and 5 (mapped timestamps) are the 1.15 device and host ones.
    return create_counter_event(hContext, hDevice, desc->flags, desc->signalScope, desc->waitScope, phEvent, fn);
  });
}

ze_result_t ZE_APICALL EventCounterBasedGetIpcHandle(ze_event_handle_t hEvent,
                                                     ipcheck_ze_ipc_event_counter_based_handle_t* phIpc) {
  const char* fn = "zeEventCounterBasedGetIpcHandle";
  return entry(fn, [&] {
    Driver& d = driver();
    Event* e = counter_event(hEvent, fn);
    need_pointer(phIpc, fn, "phIpc");
    if (e->opened)
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
           cat(fn, ": the event was itself opened from an IPC handle; libze_ipcheck does not export it again"));
    if (!(e->flags & IPCHECK_ZE_EVENT_COUNTER_BASED_FLAG_IPC))
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
           cat(fn, ": the event was created without ZE_EVENT_COUNTER_BASED_FLAG_IPC; create it with that flag ",
               "to share it"));
    std::lock_guard lock(d.lock);
    auto it = d.event_exports.find(e);
    if (it == d.event_exports.end()) {
      // Always the record itself (handle_layout.hpp): these handles travel as plain bytes.
      Export x;
      x.handle = ipcref::ipc::memory::get(e->mem->base, *e->ctx->ctx);
      std::memcpy(x.bytes.data(), x.handle.data().data(), x.bytes.size());
      x.ctx_id = e->ctx->ctx->id();
      it = d.event_exports.emplace(e, std::move(x)).first;
    }
    ++it->second.refs;  // no put: the export lives until the event is destroyed
    std::memcpy(phIpc->data, it->second.bytes.data(), sizeof phIpc->data);
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL EventCounterBasedOpenIpcHandle(ze_context_handle_t hContext,
                                                      ipcheck_ze_ipc_event_counter_based_handle_t hIpc,
                                                      ze_event_handle_t* phEvent) {
  const char* fn = "zeEventCounterBasedOpenIpcHandle";
  return entry(fn, [&] {
    Context* c = context_of(hContext, fn);
    need_pointer(phEvent, fn, "phEvent");
    Device* dev = nullptr;
    for (auto* d : c->devices)
      if (!dev && d->dev.has(ipcref::aspect::ipc_event)) dev = d;
    if (!dev && !c->devices.empty() && ze_ipcheck::defects::is(ze_ipcheck::defects::id::pool_open_without_support))
      dev = c->devices.front();
    if (!dev) fail(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE, cat(fn, ": no device of the context has aspect ipc_event"));
    std::array<std::byte, ze_ipcheck::kHandleSize> record{};
    std::memcpy(record.data(), hIpc.data, record.size());
    const ipcref::record::fields rec = ipcref::record::decode(record);
    auto mem = std::make_shared<PoolMemory>();
    mem->base = ipcref::ipc::memory::open(record, *c->ctx, dev->dev, {});
    mem->bytes = rec.size;
    mem->source = PoolMemory::Source::opened;
    mem->ipc_ctx = *c->ctx;
    // The header is the exporter's: check it covers what it claims before trusting it.
    if (mem->bytes < ze_ipcheck::kEventSlotsOffset + sizeof(ze_ipcheck::CounterEventState))
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
           cat(fn, ": the handle names ", mem->bytes, " bytes, too few for a counter-based event"));
    const EventPoolHeader hdr = *mem->header();
    if (hdr.magic != ze_ipcheck::kCounterEventMagic || hdr.version != ze_ipcheck::kCounterEventVersion)
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
           cat(fn, ": the handle names memory that is not a counter-based event (",
               hdr.magic == ze_ipcheck::kEventPoolMagic ? "an event pool: open it with zeEventPoolOpenIpcHandle"
                                                        : "a memory IPC handle?",
               ")"));
    if (!(hdr.flags & IPCHECK_ZE_EVENT_COUNTER_BASED_FLAG_IPC))
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat(fn, ": the event was not created with ZE_EVENT_COUNTER_BASED_FLAG_IPC"));
    auto e = std::make_unique<Event>();
    e->mem = std::move(mem);
    e->counter_based = true;
    e->opened = true;
    e->flags = hdr.flags & kKnownCounterFlags;
    e->ctx = c;
    ++c->children;
    add_live(e.get(), Kind::event);
    *phEvent = reinterpret_cast<ze_event_handle_t>(e.release());
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL EventCounterBasedCloseIpcHandle(ze_event_handle_t hEvent) {
  const char* fn = "zeEventCounterBasedCloseIpcHandle";
  return entry(fn, [&] {
    Event* e = counter_event(hEvent, fn);
    if (!e->opened)
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
           cat(fn, ": the event was created in this process; destroy it with zeEventDestroy"));
    --e->ctx->children;
    remove_live(e);
    delete e;  // the mapping goes when its last holder (a wait in progress) lets go
    return ZE_RESULT_SUCCESS;
  });
}

}  // namespace zedriver
