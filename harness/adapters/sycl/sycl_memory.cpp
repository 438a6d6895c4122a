// The `sycl` adapter's memory verbs: USM allocations (through dpctl) and SYCL's ipc::memory,
// physical_mem with ipc::physical_memory, and virtual ranges.
#include <cstring>

#include "ipcheck/adapter_toolkit.hpp"
#include "sycl_adapter.hpp"

namespace ipcheck::sycl_adapter {

using toolkit::hex;

namespace {

constexpr const char* kDpctlNoDetail =
    " (dpctl caught SYCL's exception and returned nothing; DPCTL_VERBOSITY=error prints its message)";

}  // namespace

// ---------------------------------------------------------------- USM memory

Result<DevPtr> SyclAdapter::alloc(int device, std::size_t bytes, MemKind kind) {
  if (Outcome o = device_at(device); !o.ok()) return {o};
  const SyclObject* q = queues_[static_cast<std::size_t>(device)];
  void* p = nullptr;
  const char* call = "sycl::malloc_device";
  switch (kind) {
    case MemKind::device: p = api_.DPCTLmalloc_device(bytes, q); break;
    case MemKind::host:
      call = "sycl::malloc_host";
      p = api_.DPCTLmalloc_host(bytes, q);
      break;
    case MemKind::shared:
      call = "sycl::malloc_shared";
      p = api_.DPCTLmalloc_shared(bytes, q);
      break;
  }
  if (!p)
    return {Outcome::runtime_failure(call, Errc::exhausted,
                                     std::string("sycl: ") + call + "(" + std::to_string(bytes) + ") gave no memory" +
                                         kDpctlNoDetail,
                                     0, "nullptr")};
  allocs_[reinterpret_cast<DevPtr>(p)] = Alloc{device, false};
  return {Outcome::runtime_success(call), reinterpret_cast<DevPtr>(p)};
}

Outcome SyclAdapter::free(DevPtr p) {
  auto it = allocs_.find(p);
  // sycl::free of a pointer SYCL did not allocate here is SYCL's to judge: the first queue's.
  const int device = it == allocs_.end() ? 0 : it->second.device;
  if (it != allocs_.end() && it->second.opened)
    return Outcome::failure(Errc::invalid, "sycl: free: " + hex(p) + " was opened from a handle; close it with mem_close");
  api_.DPCTLfree_with_queue(ptr(p), queues_[static_cast<std::size_t>(device)]);
  if (it != allocs_.end()) allocs_.erase(it);
  return Outcome::runtime_success("sycl::free");
}

int SyclAdapter::device_of(DevPtr p) const {
  // The device an allocation or an opened mapping belongs to; 0 for anything else (a virtual
  // range, an interior pointer).
  auto it = allocs_.upper_bound(p);
  if (it == allocs_.begin()) return 0;
  --it;
  return it->first == p ? it->second.device : 0;
}

Outcome SyclAdapter::copy(void* dst, const void* src, std::size_t n, int device, const char* what) {
  SyclObject* ev = api_.DPCTLQueue_Memcpy(queues_[static_cast<std::size_t>(device)], dst, src, n);
  if (!ev)
    return Outcome::runtime_failure("sycl::queue::memcpy", Errc::other,
                                    std::string("sycl: ") + what + ": queue::memcpy of " + std::to_string(n) +
                                        " bytes failed" + kDpctlNoDetail,
                                    0, "nullptr");
  api_.DPCTLEvent_Wait(ev);
  api_.DPCTLEvent_Delete(ev);
  return Outcome::runtime_success("sycl::queue::memcpy");
}

Outcome SyclAdapter::write(DevPtr dst, std::span<const std::byte> src) {
  return copy(ptr(dst), src.data(), src.size(), device_of(dst), "write");
}

Outcome SyclAdapter::read(DevPtr src, std::span<std::byte> dst) {
  return copy(dst.data(), ptr(src), dst.size(), device_of(src), "read");
}

Result<Exported> SyclAdapter::mem_get(DevPtr p) {
  IpcHandle h;
  const char* call = ipc_namespace_ ? "ipc::memory::get" : "ipc_memory::get";
  Outcome o = guarded(call, [&] { h = (ipc_namespace_ ? api_.ipc_mem_get : api_.ipc_memory_get)(ptr(p), ctx_); });
  if (!o.ok()) return {o};
  if (!h.data || h.size == 0)
    return {Outcome::runtime_failure(call, Errc::other,
                                     std::string("sycl: ") + call + " returned a handle without data (" +
                                         hex(reinterpret_cast<std::uint64_t>(h.data)) + ", " + std::to_string(h.size) +
                                         " bytes)",
                                     0, "empty handle")};
  return {o, keep_export(mem_exports_, h, h.data, h.size)};
}

// Put frees the data whatever it answers: the entry goes either way (every put).
Outcome SyclAdapter::mem_put(ObjectId id) {
  return put_export(mem_exports_, id, "mem_put", /*keep_on_failure=*/false, [&](IpcHandle h) {
    const char* call = ipc_namespace_ ? "ipc::memory::put" : "ipc_memory::put";
    return guarded(call, [&] { (ipc_namespace_ ? api_.ipc_mem_put : api_.ipc_memory_put)(&h, ctx_); });
  });
}

Result<DevPtr> SyclAdapter::mem_open(std::span<const std::byte> bytes, int, int device, std::uint64_t flags) {
  if (Outcome o = device_at(device); !o.ok()) return {o};
  if (open_flags(flags, 0) != 0)
    return {Outcome::failure(Errc::invalid, "sycl: mem_open: flags " + hex(flags) +
                                                ", but ipc::memory::open has no flags parameter")};
  void* p = nullptr;
  Outcome o = guarded("ipc::memory::open", [&] {
    p = api_.open_ipc_mem(bytes.empty() ? nullptr : bytes.data(), bytes.size(), ctx_,
                          devices_[static_cast<std::size_t>(device)]);
  });
  if (!o.ok()) return {o};
  if (!p)
    return {Outcome::runtime_failure("ipc::memory::open", Errc::other,
                                     "sycl: ipc::memory::open returned no pointer and threw nothing", 0, "nullptr")};
  allocs_[reinterpret_cast<DevPtr>(p)] = Alloc{device, true};
  return {o, reinterpret_cast<DevPtr>(p)};
}

Outcome SyclAdapter::mem_close(DevPtr p) {
  const char* call = ipc_namespace_ ? "ipc::memory::close" : "ipc_memory::close";
  Outcome o = guarded(call, [&] { (ipc_namespace_ ? api_.ipc_mem_close : api_.ipc_memory_close)(ptr(p), ctx_); });
  auto it = allocs_.find(p);
  if (o.ok() && it != allocs_.end() && it->second.opened) allocs_.erase(it);
  return o;
}

// ---------------------------------------------------------------- physical memory

std::size_t SyclAdapter::phys_granularity(int device) {
  if (!device_at(device).ok()) return 0;
  std::size_t g = 0;
  if (!guarded("get_mem_granularity", [&] {
         g = api_.granularity(devices_[static_cast<std::size_t>(device)], ctx_, kGranularityRecommended);
       }).ok())
    return 0;
  return g;
}

Result<ObjectId> SyclAdapter::phys_create(int device, std::size_t bytes, bool ipc) {
  if (!api_.phys_create) return {lacking("phys_create", "phys_create")};
  if (Outcome o = device_at(device); !o.ok()) return {o};
  SyclObject pm;  // physical_mem's template constructor: impl empty, then create()
  Outcome o = guarded("physical_mem::physical_mem", [&] {
    api_.phys_create(&pm, devices_[static_cast<std::size_t>(device)], ctx_, bytes, ipc);
  });
  if (!o.ok()) return {o};
  const ObjectId id = new_id();
  phys_[id] = Held{{pm}, device, false};
  return {o, id};
}

Result<Exported> SyclAdapter::phys_get(ObjectId pm) {
  if (!api_.ipc_phys_get) return {lacking("phys_get", "ipc_phys_get")};
  Held* p = phys(pm);
  if (!p) return {unknown("phys_get", "physical memory", pm)};
  IpcHandle h;
  Outcome o = guarded("ipc::physical_memory::get", [&] { h = api_.ipc_phys_get(&p->copies.front()); });
  if (!o.ok()) return {o};
  return {o, keep_export(phys_exports_, h, h.data, h.size)};
}

Outcome SyclAdapter::phys_put(ObjectId id) {
  if (!api_.ipc_phys_put) return lacking("phys_put", "ipc_phys_put");
  return put_export(phys_exports_, id, "phys_put", /*keep_on_failure=*/false, [&](IpcHandle h) {
    return guarded("ipc::physical_memory::put", [&] { api_.ipc_phys_put(&h, ctx_); });
  });
}

Result<ObjectId> SyclAdapter::phys_open(std::span<const std::byte> bytes, int, int device) {
  if (!api_.open_ipc_phys) return {lacking("phys_open", "open_ipc_phys")};
  if (Outcome o = device_at(device); !o.ok()) return {o};
  alignas(SyclObject) unsigned char storage[sizeof(SyclObject)];
  bool made = false;
  Outcome o = guarded("ipc::physical_memory::open", [&] {
    api_.open_ipc_phys(reinterpret_cast<SyclObject*>(storage), bytes.empty() ? nullptr : bytes.data(), bytes.size(),
                       ctx_, devices_[static_cast<std::size_t>(device)]);
    made = true;
  });
  if (!o.ok()) return {o};
  SyclObject* got = reinterpret_cast<SyclObject*>(storage);
  const ObjectId id = new_id();
  phys_[id] = Held{{std::move(*got)}, device, true};
  if (made) got->~SyclObject();
  return {o, id};
}

// SYCL has no close for an opened physical_mem: its last copy going is the close.
Outcome SyclAdapter::phys_close(ObjectId pm) {
  if (Outcome o = closable(pm); !o.ok()) return o;
  return phys_release(pm);
}

// A copy of a physical_mem is a reference to it.
Outcome SyclAdapter::phys_retain(ObjectId pm) {
  return on_phys("phys_retain", pm, [](Held& p) {
    p.copies.push_back(p.copies.front());
    return Outcome::runtime_success("physical_mem copy");
  });
}

Outcome SyclAdapter::phys_release(ObjectId pm) {
  return on_phys("phys_release", pm, [&](Held& p) {
    // ~physical_mem is noexcept(false): the last copy's release may throw SYCL's error.
    Outcome o = guarded("physical_mem::~physical_mem", [&] { p.copies.pop_back(); });
    if (p.copies.empty()) phys_.erase(pm);
    return o;
  });
}

Result<std::size_t> SyclAdapter::phys_size(ObjectId pm) {
  return on_phys("phys_size", pm, [&](Held& p) {
    return Result<std::size_t>{Outcome::runtime_success("physical_mem::size"), api_.phys_size(&p.copies.front())};
  });
}

Result<bool> SyclAdapter::phys_ipc_enabled(ObjectId pm) {
  if (!api_.phys_ipc_enabled) return {lacking("phys_ipc_enabled", "phys_ipc_enabled")};
  Held* p = phys(pm);
  if (!p) return {unknown("phys_ipc_enabled", "physical memory", pm)};
  return {Outcome::runtime_success("physical_mem::ipc_enabled"), api_.phys_ipc_enabled(&p->copies.front())};
}

Result<DevPtr> SyclAdapter::vm_reserve(int device, std::size_t bytes) {
  if (Outcome o = device_at(device); !o.ok()) return {o};
  std::uintptr_t p = 0;
  Outcome o = guarded("reserve_virtual_mem", [&] { p = api_.reserve_vm(0, bytes, ctx_); });
  return {o, static_cast<DevPtr>(p)};
}

Outcome SyclAdapter::vm_free(DevPtr p, std::size_t bytes) {
  return guarded("free_virtual_mem", [&] { api_.free_vm(static_cast<std::uintptr_t>(p), bytes, ctx_); });
}

Outcome SyclAdapter::vm_map(DevPtr p, std::size_t bytes, ObjectId pm, std::size_t offset) {
  Held* h = phys(pm);
  if (!h) return unknown("vm_map", "physical memory", pm);
  void* at = nullptr;
  Outcome o = guarded("physical_mem::map", [&] {
    at = api_.phys_map(&h->copies.front(), static_cast<std::uintptr_t>(p), bytes, kAccessReadWrite, offset);
  });
  if (o.ok() && reinterpret_cast<DevPtr>(at) != p)
    return Outcome::runtime_failure("physical_mem::map", Errc::other,
                                    "sycl: physical_mem::map at " + hex(p) + " returned " +
                                        hex(reinterpret_cast<std::uint64_t>(at)),
                                    0, "moved mapping");
  return o;
}

Outcome SyclAdapter::vm_unmap(DevPtr p, std::size_t bytes) {
  return guarded("unmap", [&] { api_.unmap_vm(ptr(p), bytes, ctx_); });
}

}  // namespace ipcheck::sycl_adapter
