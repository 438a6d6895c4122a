// The `ur` adapter's memory verbs: USM allocations and their IPC handles (UMF under UR), and
// physical memory with its IPC handles (virtual ranges: the toolkit's LevelZeroRanges, over
// urVirtualMem*).
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
  return {Outcome::runtime_success("urIPCGetMemHandleExp"), keep_export(mem_exports_, Export{data}, data, size)};
}

// UR frees the handle data at a put, whatever it answers: the entry goes either way (every put).
Outcome UrAdapter::mem_put(ObjectId id) {
  return put_export(mem_exports_, id, "mem_put", /*keep_on_failure=*/false, [&](const Export& x) {
    return call("urIPCPutMemHandleExp", api_.urIPCPutMemHandleExp(ctx_, x.data));
  });
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
  const ObjectId id = new_id();
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
  return {Outcome::runtime_success("urIPCGetPhysMemHandleExp"), keep_export(phys_exports_, Export{data}, data, size)};
}

Outcome UrAdapter::phys_put(ObjectId id) {
  if (!api_.urIPCPutPhysMemHandleExp) return api_.lacking("phys_put", "urIPCPutPhysMemHandleExp");
  return put_export(phys_exports_, id, "phys_put", /*keep_on_failure=*/false, [&](const Export& x) {
    return call("urIPCPutPhysMemHandleExp", api_.urIPCPutPhysMemHandleExp(ctx_, x.data));
  });
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
  const ObjectId id = new_id();
  phys_[id] = Phys{h, true, 1};
  return {Outcome::runtime_success("urIPCOpenPhysMemHandleExp"), id};
}

Outcome UrAdapter::phys_close(ObjectId pm) {
  if (!api_.urIPCClosePhysMemHandleExp) return api_.lacking("phys_close", "urIPCClosePhysMemHandleExp");
  if (Outcome o = closable(pm); !o.ok()) return o;
  // UR's close releases one reference (v2: urPhysicalMemRelease): an object retained after its
  // open stays live until its last release.
  const Outcome o = call("urIPCClosePhysMemHandleExp", api_.urIPCClosePhysMemHandleExp(ctx_, phys(pm)->handle));
  return follow_count(phys_, pm, o, -1);
}

Outcome UrAdapter::phys_retain(ObjectId pm) {
  return on_phys("phys_retain", pm, [&](Phys& p) {
    return follow_count(phys_, pm, call("urPhysicalMemRetain", api_.urPhysicalMemRetain(p.handle)), 1);
  });
}

Outcome UrAdapter::phys_release(ObjectId pm) {
  return on_phys("phys_release", pm, [&](Phys& p) {
    return follow_count(phys_, pm, call("urPhysicalMemRelease", api_.urPhysicalMemRelease(p.handle)), -1);
  });
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

}  // namespace ipcheck::ur_adapter
