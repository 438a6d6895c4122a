// The `ur` adapter's memory verbs: USM allocations and their IPC handles (UMF under UR),
// physical memory with its IPC handles, and virtual ranges.
#include <unistd.h>

#include <cstring>

#include "ur_adapter.hpp"

namespace ipcheck::ur_adapter {

// ---------------------------------------------------------------- USM memory

Result<DevPtr> UrAdapter::alloc(int device, std::size_t bytes, MemKind kind) {
  ur_device_handle_t dev = nullptr;
  if (Outcome o = device_at(device, dev); !o.ok()) return {o};
  void* p = nullptr;
  Outcome o;
  switch (kind) {
    case MemKind::device:
      o = call("urUSMDeviceAlloc", api_.urUSMDeviceAlloc(ctx_, dev, nullptr, nullptr, bytes, &p));
      break;
    case MemKind::host: o = call("urUSMHostAlloc", api_.urUSMHostAlloc(ctx_, nullptr, nullptr, bytes, &p)); break;
    case MemKind::shared:
      o = call("urUSMSharedAlloc", api_.urUSMSharedAlloc(ctx_, dev, nullptr, nullptr, bytes, &p));
      break;
  }
  return {o, reinterpret_cast<DevPtr>(p)};
}

Outcome UrAdapter::free(DevPtr p) { return call("urUSMFree", api_.urUSMFree(ctx_, ptr(p))); }

Outcome UrAdapter::queue_for(int device, ur_queue_handle_t& out) {
  ur_device_handle_t dev = nullptr;
  if (Outcome o = device_at(device, dev); !o.ok()) return o;
  auto& q = queues_[static_cast<std::size_t>(device)];
  if (!q) {
    if (Outcome o = call("urQueueCreate", api_.urQueueCreate(ctx_, dev, nullptr, &q)); !o.ok()) return o;
  }
  out = q;
  return Outcome::success();
}

int UrAdapter::device_of(DevPtr p) {
  // The device UR says holds the memory; the first device for host memory, memory UR does not
  // know (an opened mapping on some adapters) or a failed query.
  ur_device_handle_t d = nullptr;
  if (api_.urUSMGetMemAllocInfo(ctx_, ptr(p), UR_USM_ALLOC_INFO_DEVICE, sizeof d, &d, nullptr) == UR_RESULT_SUCCESS &&
      d)
    for (std::size_t i = 0; i < devices_.size(); ++i)
      if (devices_[i] == d) return static_cast<int>(i);
  return 0;
}

Outcome UrAdapter::copy(void* dst, const void* src, std::size_t n, int device, const std::string& what) {
  ur_queue_handle_t q = nullptr;
  if (Outcome o = queue_for(device, q); !o.ok()) return o;
  return call("urEnqueueUSMMemcpy", api_.urEnqueueUSMMemcpy(q, true, dst, src, n, 0, nullptr, nullptr), what);
}

Outcome UrAdapter::write(DevPtr dst, std::span<const std::byte> src) {
  return copy(ptr(dst), src.data(), src.size(), device_of(dst),
              "write " + std::to_string(src.size()) + " bytes to " + hex(dst));
}

Outcome UrAdapter::read(DevPtr src, std::span<std::byte> dst) {
  return copy(dst.data(), ptr(src), dst.size(), device_of(src),
              "read " + std::to_string(dst.size()) + " bytes from " + hex(src));
}

Result<Exported> UrAdapter::mem_get(DevPtr p) {
  void* data = nullptr;
  std::size_t size = 0;
  if (Outcome o = call("urIPCGetMemHandleExp", api_.urIPCGetMemHandleExp(ctx_, ptr(p), &data, &size)); !o.ok())
    return {o};
  if (!data || size == 0)
    return {Outcome::failure(Errc::other, "urIPCGetMemHandleExp succeeded without handle data (data " +
                                              hex(reinterpret_cast<std::uint64_t>(data)) + ", " + std::to_string(size) +
                                              " bytes)", 0, "UR_RESULT_SUCCESS")};
  Exported e;
  e.id = next_id_++;
  const auto* b = static_cast<const std::byte*>(data);
  e.bytes.assign(b, b + size);
  mem_exports_[e.id] = Export{data};
  return {Outcome::runtime_success("urIPCGetMemHandleExp"), std::move(e)};
}

Outcome UrAdapter::mem_put(ObjectId id) {
  auto it = mem_exports_.find(id);
  if (it == mem_exports_.end())
    return Outcome::failure(Errc::invalid, "ur: mem_put: export id " + std::to_string(id) + " is not a live export");
  // UR frees the handle data at a put, whatever it answers: the entry goes either way.
  const Outcome o = call("urIPCPutMemHandleExp", api_.urIPCPutMemHandleExp(ctx_, it->second.data));
  mem_exports_.erase(it);
  return o;
}

Result<DevPtr> UrAdapter::mem_open(std::span<const std::byte> bytes, int, int device, std::uint64_t flags) {
  flags = open_flags(flags, 0);
  if (flags != 0)
    return {Outcome::failure(Errc::not_implemented, "ur: urIPCOpenMemHandleExp has no flags parameter; open flags " +
                                                        hex(flags) + " cannot reach UR (nothing was called)")};
  ur_device_handle_t dev = nullptr;
  if (Outcome o = device_at(device, dev); !o.ok()) return {o};
  // UR takes the data by non-const pointer: a copy of exactly the bytes given.
  std::vector<std::byte>& data = open_copy_;
  data.assign(bytes.begin(), bytes.end());
  void* p = nullptr;
  const Outcome o = call("urIPCOpenMemHandleExp",
                         api_.urIPCOpenMemHandleExp(ctx_, dev, data.empty() ? nullptr : data.data(), data.size(), &p));
  return {o, reinterpret_cast<DevPtr>(p)};
}

Adapter::OpenInput UrAdapter::last_open_input(const std::string& verb, std::span<const std::byte> given) {
  if (verb == "mem_open" || verb == "phys_open") return {"the copy of the handle bytes handed to UR", {}, open_copy_};
  return {{}, {}, given};  // event_open hands UR the caller's bytes themselves
}

Outcome UrAdapter::mem_close(DevPtr p) { return call("urIPCCloseMemHandleExp", api_.urIPCCloseMemHandleExp(ctx_, ptr(p))); }

// ---------------------------------------------------------------- physical memory

std::size_t UrAdapter::phys_granularity(int device) {
  ur_device_handle_t dev = nullptr;
  std::size_t g = 0;
  if (device_at(device, dev).ok() &&
      api_.urVirtualMemGranularityGetInfo(ctx_, dev, 1, UR_VIRTUAL_MEM_GRANULARITY_INFO_MINIMUM, sizeof g, &g,
                                          nullptr) == UR_RESULT_SUCCESS &&
      g)
    return g;
  return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

Result<ObjectId> UrAdapter::phys_create(int device, std::size_t bytes, bool ipc) {
  ur_device_handle_t dev = nullptr;
  if (Outcome o = device_at(device, dev); !o.ok()) return {o};
  ur_physical_mem_properties_t props{UR_STRUCTURE_TYPE_PHYSICAL_MEM_PROPERTIES, nullptr,
                                     ipc ? UR_PHYSICAL_MEM_FLAG_ENABLE_IPC : 0u};
  ur_physical_mem_handle_t h = nullptr;
  if (Outcome o = call("urPhysicalMemCreate", api_.urPhysicalMemCreate(ctx_, dev, bytes, &props, &h)); !o.ok())
    return {o};
  const ObjectId id = next_id_++;
  phys_[id] = Phys{h, false, 1};
  return {Outcome::runtime_success("urPhysicalMemCreate"), id};
}

Result<Exported> UrAdapter::phys_get(ObjectId pm) {
  if (!api_.urIPCGetPhysMemHandleExp) return {api_.lacking("phys_get", "urIPCGetPhysMemHandleExp")};
  Phys* p = phys(pm);
  if (!p) return {unknown("phys_get", "physical memory", pm)};
  void* data = nullptr;
  std::size_t size = 0;
  if (Outcome o = call("urIPCGetPhysMemHandleExp", api_.urIPCGetPhysMemHandleExp(ctx_, p->handle, &data, &size));
      !o.ok())
    return {o};
  if (!data || size == 0)
    return {Outcome::failure(Errc::other, "urIPCGetPhysMemHandleExp succeeded without handle data", 0,
                             "UR_RESULT_SUCCESS")};
  Exported e;
  e.id = next_id_++;
  const auto* b = static_cast<const std::byte*>(data);
  e.bytes.assign(b, b + size);
  phys_exports_[e.id] = Export{data};
  return {Outcome::runtime_success("urIPCGetPhysMemHandleExp"), std::move(e)};
}

Outcome UrAdapter::phys_put(ObjectId id) {
  if (!api_.urIPCPutPhysMemHandleExp) return api_.lacking("phys_put", "urIPCPutPhysMemHandleExp");
  auto it = phys_exports_.find(id);
  if (it == phys_exports_.end())
    return Outcome::failure(Errc::invalid, "ur: phys_put: export id " + std::to_string(id) + " is not a live export");
  const Outcome o = call("urIPCPutPhysMemHandleExp", api_.urIPCPutPhysMemHandleExp(ctx_, it->second.data));
  phys_exports_.erase(it);
  return o;
}

Result<ObjectId> UrAdapter::phys_open(std::span<const std::byte> bytes, int, int device) {
  if (!api_.urIPCOpenPhysMemHandleExp) return {api_.lacking("phys_open", "urIPCOpenPhysMemHandleExp")};
  ur_device_handle_t dev = nullptr;
  if (Outcome o = device_at(device, dev); !o.ok()) return {o};
  std::vector<std::byte>& data = open_copy_;
  data.assign(bytes.begin(), bytes.end());
  ur_physical_mem_handle_t h = nullptr;
  if (Outcome o = call("urIPCOpenPhysMemHandleExp",
                       api_.urIPCOpenPhysMemHandleExp(ctx_, dev, data.empty() ? nullptr : data.data(), data.size(), &h));
      !o.ok())
    return {o};
  const ObjectId id = next_id_++;
  phys_[id] = Phys{h, true, 1};
  return {Outcome::runtime_success("urIPCOpenPhysMemHandleExp"), id};
}

Outcome UrAdapter::phys_close(ObjectId pm) {
  if (!api_.urIPCClosePhysMemHandleExp) return api_.lacking("phys_close", "urIPCClosePhysMemHandleExp");
  Phys* p = phys(pm);
  if (!p) return unknown("phys_close", "physical memory", pm);
  if (!p->opened)
    return Outcome::failure(Errc::invalid, "ur: phys_close: object " + std::to_string(pm) +
                                               " was created here, not opened; release it with phys_release");
  // UR's close releases one reference (v2: urPhysicalMemRelease): an object retained after its
  // open stays live until its last release.
  const Outcome o = call("urIPCClosePhysMemHandleExp", api_.urIPCClosePhysMemHandleExp(ctx_, p->handle));
  if (o.ok() && --p->refs == 0) phys_.erase(pm);
  return o;
}

Outcome UrAdapter::phys_retain(ObjectId pm) {
  Phys* p = phys(pm);
  if (!p) return unknown("phys_retain", "physical memory", pm);
  const Outcome o = call("urPhysicalMemRetain", api_.urPhysicalMemRetain(p->handle));
  if (o.ok()) ++p->refs;
  return o;
}

Outcome UrAdapter::phys_release(ObjectId pm) {
  Phys* p = phys(pm);
  if (!p) return unknown("phys_release", "physical memory", pm);
  const Outcome o = call("urPhysicalMemRelease", api_.urPhysicalMemRelease(p->handle));
  if (o.ok() && --p->refs == 0) phys_.erase(pm);
  return o;
}

Result<std::size_t> UrAdapter::phys_size(ObjectId pm) {
  Phys* p = phys(pm);
  if (!p) return {unknown("phys_size", "physical memory", pm)};
  std::size_t size = 0;
  const Outcome o = call("urPhysicalMemGetInfo",
                         api_.urPhysicalMemGetInfo(p->handle, UR_PHYSICAL_MEM_INFO_SIZE, sizeof size, &size, nullptr),
                         "UR_PHYSICAL_MEM_INFO_SIZE");
  return {o, size};
}

Result<bool> UrAdapter::phys_ipc_enabled(ObjectId pm) {
  Phys* p = phys(pm);
  if (!p) return {unknown("phys_ipc_enabled", "physical memory", pm)};
  ur_physical_mem_properties_t props{};
  const Outcome o = call(
      "urPhysicalMemGetInfo",
      api_.urPhysicalMemGetInfo(p->handle, UR_PHYSICAL_MEM_INFO_PROPERTIES, sizeof props, &props, nullptr),
      "UR_PHYSICAL_MEM_INFO_PROPERTIES");
  return {o, (props.flags & UR_PHYSICAL_MEM_FLAG_ENABLE_IPC) != 0};
}

Result<DevPtr> UrAdapter::vm_reserve(int, std::size_t bytes) {
  void* p = nullptr;
  const Outcome o = call("urVirtualMemReserve", api_.urVirtualMemReserve(ctx_, nullptr, bytes, &p));
  return {o, reinterpret_cast<DevPtr>(p)};
}

Outcome UrAdapter::vm_free(DevPtr p, std::size_t bytes) {
  return call("urVirtualMemFree", api_.urVirtualMemFree(ctx_, ptr(p), bytes));
}

Outcome UrAdapter::vm_map(DevPtr p, std::size_t bytes, ObjectId pm, std::size_t offset) {
  Phys* ph = phys(pm);
  if (!ph) return unknown("vm_map", "physical memory", pm);
  return call("urVirtualMemMap",
              api_.urVirtualMemMap(ctx_, ptr(p), bytes, ph->handle, offset, UR_VIRTUAL_MEM_ACCESS_FLAG_READ_WRITE));
}

Outcome UrAdapter::vm_unmap(DevPtr p, std::size_t bytes) {
  return call("urVirtualMemUnmap", api_.urVirtualMemUnmap(ctx_, ptr(p), bytes));
}

UrAdapter::Phys* UrAdapter::phys(ObjectId id) {
  auto it = phys_.find(id);
  return it == phys_.end() ? nullptr : &it->second;
}

}  // namespace ipcheck::ur_adapter
