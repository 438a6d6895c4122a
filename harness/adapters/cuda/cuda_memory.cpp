// The `cuda` adapter's memory verbs: cuMemAlloc / cuMemAllocHost / cuMemAllocManaged, copies
// through cuMemcpyHtoD and cuMemcpyDtoH, and CUDA's IPC memory handles.
#include <cstddef>
#include <cstring>
#include <iterator>
#include <tuple>
#include <string>
#include <utility>

#include "cuda_adapter.hpp"

namespace ipcheck::cuda_adapter {

Result<DevPtr> CudaAdapter::alloc(int device, std::size_t bytes, MemKind kind) {
  if (auto o = use(device, "alloc"); !o.ok()) return {o};
  if (kind == MemKind::device) {
    CUdeviceptr p = 0;
    if (const CUresult r = cu_->cuMemAlloc_v2(&p, bytes); r != CUDA_SUCCESS)
      return {fail(r, "cuMemAlloc(" + std::to_string(bytes) + " bytes)")};
    allocations_[p] = kind;
    owners_[p] = device;
    return {Outcome::runtime_success("cuMemAlloc"), p};
  }
  if (kind == MemKind::host) {
    void* p = nullptr;
    if (const CUresult r = cu_->cuMemAllocHost_v2(&p, bytes); r != CUDA_SUCCESS)
      return {fail(r, "cuMemAllocHost(" + std::to_string(bytes) + " bytes)")};
    allocations_[reinterpret_cast<DevPtr>(p)] = kind;
    owners_[reinterpret_cast<DevPtr>(p)] = device;
    return {Outcome::runtime_success("cuMemAllocHost"), reinterpret_cast<DevPtr>(p)};
  }
  if (!cu_->cuMemAllocManaged)
    return {Outcome::failure(Errc::not_implemented, "cuda: " + cu_->path() + " has no cuMemAllocManaged")};
  // Oversubscribed managed memory can hang the GPU: stay under half of what is free.
  std::size_t free_bytes = 0, total = 0;
  if (cu_->cuMemGetInfo_v2(&free_bytes, &total) == CUDA_SUCCESS && bytes > free_bytes / 2)
    return {Outcome::failure(Errc::exhausted, "cuda: refusing a managed allocation of " + std::to_string(bytes) +
                                                  " bytes, over half of the device's free " +
                                                  std::to_string(free_bytes) + " (oversubscription can hang the GPU)")};
  CUdeviceptr p = 0;
  if (const CUresult r = cu_->cuMemAllocManaged(&p, bytes, kMemAttachGlobal); r != CUDA_SUCCESS)
    return {fail(r, "cuMemAllocManaged(" + std::to_string(bytes) + " bytes, CU_MEM_ATTACH_GLOBAL)")};
  allocations_[p] = kind;
  owners_[p] = device;
  return {Outcome::runtime_success("cuMemAllocManaged"), p};
}

Outcome CudaAdapter::free(DevPtr p) {
  auto it = allocations_.find(p);
  if (it != allocations_.end() && it->second == MemKind::host) {
    if (const CUresult r = cu_->cuMemFreeHost(reinterpret_cast<void*>(p)); r != CUDA_SUCCESS)
      return fail(r, "cuMemFreeHost(" + hex(p) + ")");
  } else if (const CUresult r = cu_->cuMemFree_v2(p); r != CUDA_SUCCESS) {
    // Pointers this adapter did not allocate go to the driver too: its answer is the datum.
    return fail(r, "cuMemFree(" + hex(p) + ")");
  }
  owners_.erase(p);
  if (it != allocations_.end()) allocations_.erase(it);
  return Outcome::runtime_success(it != allocations_.end() && it->second == MemKind::host ? "cuMemFreeHost" : "cuMemFree");
}

Outcome CudaAdapter::use_owner(DevPtr p, const char* verb) {
  int device = -1;
  DevPtr base = 0;
  if (auto it = owners_.upper_bound(p); it != owners_.begin()) std::tie(base, device) = *std::prev(it);
  if (auto it = reservations_.upper_bound(p); it != reservations_.begin() && std::prev(it)->first >= base)
    device = std::prev(it)->second;
  return device < 0 ? Outcome::success() : use(device, verb);
}

Outcome CudaAdapter::write(DevPtr dst, std::span<const std::byte> src) {
  if (auto o = use_owner(dst, "write"); !o.ok()) return o;
  if (const CUresult r = cu_->cuMemcpyHtoD_v2(dst, src.data(), src.size()); r != CUDA_SUCCESS)
    return fail(r, "cuMemcpyHtoD(" + hex(dst) + ", " + std::to_string(src.size()) + " bytes)");
  // A copy from pageable memory may return before the DMA lands; another process reads next.
  if (const CUresult r = cu_->cuCtxSynchronize(); r != CUDA_SUCCESS)
    return fail(r, "cuCtxSynchronize after cuMemcpyHtoD(" + hex(dst) + ")");
  return Outcome::runtime_success("cuCtxSynchronize");
}

Outcome CudaAdapter::read(DevPtr src, std::span<std::byte> dst) {
  if (auto o = use_owner(src, "read"); !o.ok()) return o;
  if (const CUresult r = cu_->cuMemcpyDtoH_v2(dst.data(), src, dst.size()); r != CUDA_SUCCESS)
    return fail(r, "cuMemcpyDtoH(" + hex(src) + ", " + std::to_string(dst.size()) + " bytes)");
  return Outcome::runtime_success("cuMemcpyDtoH");
}

Result<Exported> CudaAdapter::mem_get(DevPtr p) {
  CUipcMemHandle h{};
  if (const CUresult r = cu_->cuIpcGetMemHandle(&h, p); r != CUDA_SUCCESS)
    return {fail(r, "cuIpcGetMemHandle(" + hex(p) + ")")};
  Exported e;
  e.id = next_id_++;
  e.bytes.assign(reinterpret_cast<const std::byte*>(h.reserved), reinterpret_cast<const std::byte*>(h.reserved) + sizeof h);
  return {Outcome::runtime_success("cuIpcGetMemHandle"), std::move(e)};
}

Outcome CudaAdapter::mem_put(ObjectId) { return Outcome::failure(Errc::not_implemented, kNoMemPut); }

Result<DevPtr> CudaAdapter::mem_open(std::span<const std::byte> bytes, int, int device, std::uint64_t flags) {
  if (bytes.size() != kIpcHandleSize)
    return {Outcome::failure(Errc::invalid, "cuda: handle is " + std::to_string(bytes.size()) +
                                                " bytes, CUipcMemHandle is " + std::to_string(kIpcHandleSize) +
                                                " (clause sycl.mem.open.size)")};
  // What the case asked for, 0 included; the plain open passes the flag CUDA requires.
  flags = open_flags(flags, kIpcMemLazyEnablePeerAccess);
  if (flags > 0xffffffffull)
    return {Outcome::failure(Errc::invalid, "cuda: open flags " + hex(flags) + " do not fit cuIpcOpenMemHandle's unsigned int")};
  if (auto o = use(device, "mem_open"); !o.ok()) return {o};
  CUipcMemHandle h;
  std::memcpy(h.reserved, bytes.data(), sizeof h);
  const unsigned f = static_cast<unsigned>(flags);
  CUdeviceptr p = 0;
  if (const CUresult r = cu_->cuIpcOpenMemHandle_v2(&p, h, f); r != CUDA_SUCCESS)
    return {fail(r, "cuIpcOpenMemHandle(flags " + hex(f) + ", device " + std::to_string(device) + ")")};
  owners_[p] = device;
  return {Outcome::runtime_success("cuIpcOpenMemHandle"), p};
}

Outcome CudaAdapter::mem_close(DevPtr p) {
  if (const CUresult r = cu_->cuIpcCloseMemHandle(p); r != CUDA_SUCCESS)
    return fail(r, "cuIpcCloseMemHandle(" + hex(p) + ")");
  // (CUDA reference-counts repeated opens of one pointer: one still open then copies in the
  // current context, as before any open on another device.)
  owners_.erase(p);
  return Outcome::runtime_success("cuIpcCloseMemHandle");
}

}  // namespace ipcheck::cuda_adapter
