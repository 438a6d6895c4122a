// The `cuda` adapter's physical memory and virtual ranges: cuMemCreate (a POSIX fd handle type
// when ipc), cuMemExportToShareableHandle, the fd moved by SCM_RIGHTS or pidfd_getfd as an
// FdRecord names it, cuMemImportFromShareableHandle, cuMemAddressReserve / cuMemMap /
// cuMemSetAccess / cuMemUnmap / cuMemRelease.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#include "cuda_adapter.hpp"

namespace ipcheck::cuda_adapter {

std::size_t CudaAdapter::phys_granularity(int device) {
  std::size_t g = 0;
  if (!cu_ || !cu_->has_vmm() || device < 0 || static_cast<std::size_t>(device) >= devices_.size())
    return Adapter::phys_granularity(device);
  const CUmemAllocationProp prop = phys_prop(device, true);
  if (cu_->cuMemGetAllocationGranularity(&g, &prop, kMemAllocGranularityMinimum) != CUDA_SUCCESS || g == 0)
    return Adapter::phys_granularity(device);
  return g;
}

Result<ObjectId> CudaAdapter::phys_create(int device, std::size_t bytes, bool ipc) {
  if (auto o = need_vmm("phys_create"); !o.ok()) return {o};
  if (auto o = use(device, "phys_create"); !o.ok()) return {o};
  const CUmemAllocationProp prop = phys_prop(device, ipc);
  CUmemGenericAllocationHandle h = 0;
  if (const CUresult r = cu_->cuMemCreate(&h, bytes, &prop, 0); r != CUDA_SUCCESS)
    return {fail(r, "cuMemCreate(" + std::to_string(bytes) + " bytes, handle type " +
                        (ipc ? "CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR" : "CU_MEM_HANDLE_TYPE_NONE") + ")")};
  const ObjectId id = next_id_++;
  phys_[id] = Phys{h, bytes, device, false, 1};
  return {Outcome::runtime_success("cuMemCreate"), id};
}

Result<Exported> CudaAdapter::phys_get(ObjectId pm) {
  if (auto o = need_vmm("phys_get"); !o.ok()) return {o};
  Phys* p = find_phys(pm);
  if (!p) return {unknown("physical memory object", pm)};
  int fd = -1;
  if (const CUresult r = cu_->cuMemExportToShareableHandle(&fd, p->handle, kMemHandleTypePosixFd, 0); r != CUDA_SUCCESS)
    return {fail(r, "cuMemExportToShareableHandle(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)")};
  unique_fd owned(fd);
  if (auto o = relocate_export_fd(owned); !o.ok()) return {o};
  fd = owned.get();
  FdRecord rec;
  rec.pid = static_cast<std::uint32_t>(::getpid());
  rec.fd = fd;
  rec.start_time = own_start_time();
  rec.size = p->size;
  rec.device = static_cast<std::uint32_t>(devices_[static_cast<std::size_t>(p->device)].handle);
  Exported e;
  e.id = next_id_++;
  e.bytes = rec.encode();
  e.fd = scm_ ? fd : -1;
  phys_exports_[e.id] = std::move(owned);
  return {Outcome::runtime_success("cuMemExportToShareableHandle"), std::move(e)};
}

Outcome CudaAdapter::phys_put(ObjectId export_id) {
  auto it = phys_exports_.find(export_id);
  if (it == phys_exports_.end()) return unknown("physical memory export", export_id);
  phys_exports_.erase(it);
  return Outcome::success();
}

Result<ObjectId> CudaAdapter::phys_open(std::span<const std::byte> bytes, int fd, int device) {
  if (auto o = need_vmm("phys_open"); !o.ok()) return {o};
  std::string why;
  const auto rec = FdRecord::decode(bytes, why);
  if (!rec) return {Outcome::failure(Errc::invalid, "cuda: " + why)};
  if (auto o = use(device, "phys_open"); !o.ok()) return {o};
  unique_fd taken;
  if (fd < 0) {
    auto got = take_fd(*rec);
    if (!got.ok()) return {got.outcome};
    taken.reset(got.value);
    fd = taken.get();
  }
  CUmemGenericAllocationHandle h = 0;
  void* os_handle = reinterpret_cast<void*>(static_cast<std::intptr_t>(fd));
  if (const CUresult r = cu_->cuMemImportFromShareableHandle(&h, os_handle, kMemHandleTypePosixFd); r != CUDA_SUCCESS)
    return {fail(r, "cuMemImportFromShareableHandle(fd " + std::to_string(fd) + " from pid " +
                        std::to_string(rec->pid) + ")")};
  if (Outcome held = hold_to_allocation(h, rec->size, device); !held.ok()) {
    cu_->cuMemRelease(h);
    return {held};
  }
  const ObjectId id = next_id_++;
  // CUDA has no size query on an allocation handle: the size is the one the record carries,
  // held to what CUDA maps of the imported allocation (hold_to_allocation).
  phys_[id] = Phys{h, static_cast<std::size_t>(rec->size), device, true, 1};
  return {Outcome::runtime_success("cuMemImportFromShareableHandle"), id};
}

Outcome CudaAdapter::hold_to_allocation(CUmemGenericAllocationHandle h, std::uint64_t size, int device) {
  const std::size_t g = phys_granularity(device);
  if (size == 0 || g == 0 || size % g != 0 || size > (std::uint64_t{1} << 46))
    return Outcome::failure(Errc::invalid, "cuda: the handle's record claims " + std::to_string(size) +
                                               " bytes, not a whole number of " + std::to_string(g) +
                                               "-byte granules of a physical allocation (a forged record)");
  const std::size_t bytes = static_cast<std::size_t>(size);
  CUdeviceptr va = 0;
  if (const CUresult r = cu_->cuMemAddressReserve(&va, bytes + g, 0, 0, 0); r != CUDA_SUCCESS)
    return fail(r, "cuMemAddressReserve(" + std::to_string(bytes + g) + " bytes) to check the imported allocation's size");
  Outcome out = Outcome::runtime_success("cuMemMap");
  if (const CUresult r = cu_->cuMemMap(va, bytes, 0, h, 0); r != CUDA_SUCCESS) {
    out = Outcome::failure(Errc::invalid, "cuda: the handle's record claims " + std::to_string(bytes) +
                                              " bytes, but cuMemMap of that many bytes of the imported allocation answered " +
                                              cu_->error_name(r) + " (a forged record)");
  } else {
    cu_->cuMemUnmap(va, bytes);
    if (cu_->cuMemMap(va, bytes + g, 0, h, 0) == CUDA_SUCCESS) {
      cu_->cuMemUnmap(va, bytes + g);
      out = Outcome::failure(Errc::invalid, "cuda: the handle's record claims " + std::to_string(bytes) +
                                                " bytes, but the imported allocation maps " + std::to_string(bytes + g) +
                                                " bytes or more (a forged record)");
    }
  }
  cu_->cuMemAddressFree(va, bytes + g);
  return out;
}

Outcome CudaAdapter::phys_close(ObjectId pm) {
  Phys* p = find_phys(pm);
  if (!p) return unknown("physical memory object", pm);
  if (!p->opened)
    return Outcome::failure(Errc::invalid, "cuda: physical memory object " + std::to_string(pm) +
                                               " was created here, not opened: release it instead of closing it");
  return release_phys(pm, "phys_close");
}

// CUDA retains an allocation handle only through an address it is mapped at
// (cuMemRetainAllocationHandle): an existing mapping of the object, or else a temporary one
// made for the call and unmapped after it (the retained reference outlives the mapping).
Outcome CudaAdapter::phys_retain(ObjectId pm) {
  if (auto o = need_vmm("phys_retain"); !o.ok()) return o;
  Phys* p = find_phys(pm);
  if (!p) return unknown("physical memory object", pm);
  CUdeviceptr addr = 0, temporary = 0;
  for (const auto& [at, m] : vm_maps_)
    if (m.pm == pm) {
      addr = at;
      break;
    }
  if (!addr) {
    if (const CUresult r = cu_->cuMemAddressReserve(&temporary, p->size, 0, 0, 0); r != CUDA_SUCCESS)
      return fail(r, "cuMemAddressReserve(" + std::to_string(p->size) + " bytes) for a mapping to retain through");
    if (const CUresult r = cu_->cuMemMap(temporary, p->size, 0, p->handle, 0); r != CUDA_SUCCESS) {
      cu_->cuMemAddressFree(temporary, p->size);
      return fail(r, "cuMemMap of physical memory object " + std::to_string(pm) + " to retain it through the mapping");
    }
    addr = temporary;
  }
  CUmemGenericAllocationHandle h = 0;
  const CUresult r = cu_->cuMemRetainAllocationHandle(&h, reinterpret_cast<void*>(addr));
  if (temporary) {
    cu_->cuMemUnmap(temporary, p->size);
    cu_->cuMemAddressFree(temporary, p->size);
  }
  const std::string call = std::string("cuMemRetainAllocationHandle(") + (temporary ? "a temporary mapping at " : "") +
                           hex(addr) + ")";
  if (r != CUDA_SUCCESS) return fail(r, call);
  if (h != p->handle) {
    cu_->cuMemRelease(h);
    return Outcome::failure(Errc::other, "cuda: " + call + " gave handle " + hex(h) + ", the mapping was made from " +
                                             hex(p->handle));
  }
  ++p->refs;
  return Outcome::runtime_success("cuMemRetainAllocationHandle");
}

Outcome CudaAdapter::phys_release(ObjectId pm) {
  if (!find_phys(pm)) return unknown("physical memory object", pm);
  return release_phys(pm, "phys_release");
}

Result<std::size_t> CudaAdapter::phys_size(ObjectId pm) {
  Phys* p = find_phys(pm);
  if (!p) return {unknown("physical memory object", pm)};
  return {Outcome::success(), p->size};
}

Result<bool> CudaAdapter::phys_ipc_enabled(ObjectId pm) {
  if (auto o = need_vmm("phys_ipc_enabled"); !o.ok()) return {o};
  Phys* p = find_phys(pm);
  if (!p) return {unknown("physical memory object", pm)};
  CUmemAllocationProp prop{};
  if (const CUresult r = cu_->cuMemGetAllocationPropertiesFromHandle(&prop, p->handle); r != CUDA_SUCCESS)
    return {fail(r, "cuMemGetAllocationPropertiesFromHandle")};
  return {Outcome::runtime_success("cuMemGetAllocationPropertiesFromHandle"), (prop.requestedHandleTypes & kMemHandleTypePosixFd) != 0};
}

Result<DevPtr> CudaAdapter::vm_reserve(int device, std::size_t bytes) {
  if (auto o = need_vmm("vm_reserve"); !o.ok()) return {o};
  if (auto o = use(device, "vm_reserve"); !o.ok()) return {o};
  CUdeviceptr p = 0;
  if (const CUresult r = cu_->cuMemAddressReserve(&p, bytes, 0, 0, 0); r != CUDA_SUCCESS)
    return {fail(r, "cuMemAddressReserve(" + std::to_string(bytes) + " bytes)")};
  reservations_[p] = device;
  return {Outcome::runtime_success("cuMemAddressReserve"), p};
}

Outcome CudaAdapter::vm_free(DevPtr p, std::size_t bytes) {
  if (auto o = need_vmm("vm_free"); !o.ok()) return o;
  if (const CUresult r = cu_->cuMemAddressFree(p, bytes); r != CUDA_SUCCESS)
    return fail(r, "cuMemAddressFree(" + hex(p) + ", " + std::to_string(bytes) + " bytes)");
  reservations_.erase(p);
  return Outcome::runtime_success("cuMemAddressFree");
}

Outcome CudaAdapter::vm_map(DevPtr p, std::size_t bytes, ObjectId pm, std::size_t offset) {
  if (auto o = need_vmm("vm_map"); !o.ok()) return o;
  Phys* ph = find_phys(pm);
  if (!ph) return unknown("physical memory object", pm);
  if (const CUresult r = cu_->cuMemMap(p, bytes, offset, ph->handle, 0); r != CUDA_SUCCESS)
    return fail(r, "cuMemMap(" + hex(p) + ", " + std::to_string(bytes) + " bytes, offset " + std::to_string(offset) + ")");
  // Access for the device the range was reserved on (else the object's own device).
  int device = ph->device;
  for (const auto& [base, dev] : reservations_)
    if (base <= p) device = dev;
  CUmemAccessDesc access{};
  access.location.type = kMemLocationTypeDevice;
  access.location.id = devices_[static_cast<std::size_t>(device)].handle;
  access.flags = kMemAccessProtReadWrite;
  if (const CUresult r = cu_->cuMemSetAccess(p, bytes, &access, 1); r != CUDA_SUCCESS) {
    cu_->cuMemUnmap(p, bytes);
    return fail(r, "cuMemSetAccess(" + hex(p) + ", " + std::to_string(bytes) + " bytes, read-write for device " +
                       std::to_string(device) + ")");
  }
  vm_maps_[p] = VmMap{pm, bytes};
  return Outcome::runtime_success("cuMemSetAccess");
}

Outcome CudaAdapter::vm_unmap(DevPtr p, std::size_t bytes) {
  if (auto o = need_vmm("vm_unmap"); !o.ok()) return o;
  if (const CUresult r = cu_->cuMemUnmap(p, bytes); r != CUDA_SUCCESS)
    return fail(r, "cuMemUnmap(" + hex(p) + ", " + std::to_string(bytes) + " bytes)");
  vm_maps_.erase(p);
  return Outcome::runtime_success("cuMemUnmap");
}

Outcome CudaAdapter::need_vmm(const char* verb) const {
  if (cu_->has_vmm()) return Outcome::success();
  return Outcome::failure(Errc::not_implemented, std::string("cuda: ") + verb + ": " + cu_->path() +
                                                     " lacks the virtual memory management functions (cuMemCreate...)");
}

CUmemAllocationProp CudaAdapter::phys_prop(int device, bool ipc) const {
  CUmemAllocationProp prop{};
  prop.type = kMemAllocationTypePinned;
  prop.requestedHandleTypes = ipc ? kMemHandleTypePosixFd : kMemHandleTypeNone;
  prop.location.type = kMemLocationTypeDevice;
  prop.location.id = devices_[static_cast<std::size_t>(device)].handle;
  return prop;
}

Outcome CudaAdapter::release_phys(ObjectId pm, const char* verb) {
  Phys& p = phys_.at(pm);
  if (const CUresult r = cu_->cuMemRelease(p.handle); r != CUDA_SUCCESS)
    return fail(r, std::string("cuMemRelease (") + verb + ")");
  if (--p.refs == 0) phys_.erase(pm);
  return Outcome::runtime_success("cuMemRelease");
}

Result<int> CudaAdapter::take_fd(const FdRecord& rec) {
  unique_fd fd;
  if (Outcome o = toolkit::take_exporter_fd({static_cast<int>(rec.pid), rec.fd, rec.start_time}, "cuda: ", fd);
      !o.ok())
    return {o};
  return {Outcome::success(), fd.release()};
}

std::uint64_t CudaAdapter::own_start_time() { return toolkit::own_start_time(); }

Outcome CudaAdapter::relocate_export_fd(unique_fd& fd) {
  if (const int err = export_numbers_.place(fd); err != 0)
    return Outcome::failure(Errc::exhausted, std::string("cuda: fcntl(F_DUPFD_CLOEXEC) of an exported fd failed: ") +
                                                 std::strerror(err), err, "errno");
  return Outcome::success();
}

}  // namespace ipcheck::cuda_adapter
