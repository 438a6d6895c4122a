// Memory: allocations of every kind, their properties, memory IPC handles and external
// memory descriptors, all over ipcref.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "entries.hpp"
#include "ipcref/record.hpp"
#include "ze_ipcheck/defects.hpp"
#include "state.hpp"

namespace zedriver {

namespace {

void check_size_alignment(size_t size, size_t alignment, const char* function) {
  if (size == 0) fail(ZE_RESULT_ERROR_UNSUPPORTED_SIZE, cat(function, ": size is 0; allocate at least one byte"));
  if (alignment != 0 && ((alignment & (alignment - 1)) != 0 || alignment > page_size()))
    fail(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT,
         cat(function, ": alignment ", alignment, " is not a power of two up to the page size ", page_size()));
}

// Drops the driver's exports of [base, base + size) (the allocation is going away).
void forget_exports(Driver& d, std::uintptr_t base, std::size_t size) {
  for (auto it = d.memory_exports.lower_bound(base); it != d.memory_exports.end() && it->first < base + size;)
    it = d.memory_exports.erase(it);
  d.external_exports.erase(base);
  d.exportable_allocations.erase(reinterpret_cast<void*>(base));
}

}  // namespace

// ---------------------------------------------------------------- allocation

ze_result_t ZE_APICALL MemAllocDevice(ze_context_handle_t hContext, const ze_device_mem_alloc_desc_t* desc, size_t size,
                                      size_t alignment, ze_device_handle_t hDevice, void** pptr) {
  const char* fn = "zeMemAllocDevice";
  return entry(fn, [&] {
    Context* c = context_of(hContext, fn);
    need_pointer(desc, fn, "device_desc");
    need_pointer(pptr, fn, "pptr");
    Device* dev = device_in(c, hDevice, fn);
    Driver& d = driver();
    const auto* import = static_cast<const ze_external_memory_import_fd_t*>(
        find_in_chain(desc->pNext, ZE_STRUCTURE_TYPE_EXTERNAL_MEMORY_IMPORT_FD));
    if (import) {
      check_fd_types(import->flags, fn, "ze_external_memory_import_fd_t");
      const auto record = read_external_descriptor(import->fd, ze_ipcheck::ExternalKind::memory, fn);
      const auto f = ipcref::record::decode(record);
      if (size == 0 || size > f.size)
        fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
             cat(fn, ": size ", size, " does not fit the imported ", f.size, "-byte allocation"));
      void* p = ipcref::ipc::memory::open(record, *c->ctx, dev->dev, {});
      std::lock_guard lock(d.lock);
      d.imported_allocations.insert(p);
      *pptr = p;
      return ZE_RESULT_SUCCESS;
    }
    check_size_alignment(size, alignment, fn);
    const auto* exp = static_cast<const ze_external_memory_export_desc_t*>(
        find_in_chain(desc->pNext, ZE_STRUCTURE_TYPE_EXTERNAL_MEMORY_EXPORT_DESC));
    if (exp) check_fd_types(exp->flags, fn, "ze_external_memory_export_desc_t");
    void* p = ipcref::malloc_device(size, dev->dev, *c->ctx);
    if (exp) {
      std::lock_guard lock(d.lock);
      d.exportable_allocations.insert(p);
    }
    *pptr = p;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL MemAllocShared(ze_context_handle_t hContext, const ze_device_mem_alloc_desc_t* device_desc,
                                      const ze_host_mem_alloc_desc_t* host_desc, size_t size, size_t alignment,
                                      ze_device_handle_t hDevice, void** pptr) {
  const char* fn = "zeMemAllocShared";
  return entry(fn, [&] {
    Context* c = context_of(hContext, fn);
    need_pointer(device_desc, fn, "device_desc");
    need_pointer(host_desc, fn, "host_desc");
    need_pointer(pptr, fn, "pptr");
    check_size_alignment(size, alignment, fn);
    // A null device: shared memory not bound to a device; ipcref binds it to the context's first.
    Device* dev = hDevice ? device_in(c, hDevice, fn) : c->devices.front();
    *pptr = ipcref::malloc_shared(size, dev->dev, *c->ctx);
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL MemAllocHost(ze_context_handle_t hContext, const ze_host_mem_alloc_desc_t* host_desc, size_t size,
                                    size_t alignment, void** pptr) {
  const char* fn = "zeMemAllocHost";
  return entry(fn, [&] {
    Context* c = context_of(hContext, fn);
    need_pointer(host_desc, fn, "host_desc");
    need_pointer(pptr, fn, "pptr");
    check_size_alignment(size, alignment, fn);
    *pptr = ipcref::malloc_host(size, *c->ctx);
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL MemFree(ze_context_handle_t hContext, void* ptr) {
  const char* fn = "zeMemFree";
  return entry(fn, [&] {
    Context* c = context_of(hContext, fn);
    need_pointer(ptr, fn, "ptr");
    Driver& d = driver();
    std::lock_guard lock(d.lock);
    if (d.imported_allocations.count(ptr)) {
      ipcref::ipc::memory::close(ptr, *c->ctx);
      d.imported_allocations.erase(ptr);
      return ZE_RESULT_SUCCESS;
    }
    const ipcref::pointer_info info = ipcref::get_pointer_info(ptr, *c->ctx);
    if (info.imported)
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
           cat(fn, ": ", ptr, " was opened with zeMemOpenIpcHandle; release it with zeMemCloseIpcHandle"));
    if (info.base != ptr)
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
           cat(fn, ": ", ptr, " is inside the allocation at ", info.base, "; free the allocation's base pointer"));
    ipcref::free(ptr, *c->ctx);
    forget_exports(d, reinterpret_cast<std::uintptr_t>(info.base), info.size);
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL MemFreeExt(ze_context_handle_t hContext, const ze_memory_free_ext_desc_t* desc, void* ptr) {
  const char* fn = "zeMemFreeExt";
  return entry(fn, [&] {
    need_pointer(desc, fn, "pMemFreeDesc");
    const ze_driver_memory_free_policy_ext_flags_t known =
        ZE_DRIVER_MEMORY_FREE_POLICY_EXT_FLAG_BLOCKING_FREE | ZE_DRIVER_MEMORY_FREE_POLICY_EXT_FLAG_DEFER_FREE;
    if (desc->freePolicy & ~known)
      fail(ZE_RESULT_ERROR_INVALID_ENUMERATION,
           cat(fn, ": freePolicy 0x", std::hex, desc->freePolicy, " has bits beyond BLOCKING_FREE | DEFER_FREE"));
    // Commands run when they are submitted (cmdlist.cpp): none can still use the memory, so
    // every policy frees at once, as zeMemFree does.
    return MemFree(hContext, ptr);
  });
}

ze_result_t ZE_APICALL MemGetAllocProperties(ze_context_handle_t hContext, const void* ptr,
                                             ze_memory_allocation_properties_t* p, ze_device_handle_t* phDevice) {
  const char* fn = "zeMemGetAllocProperties";
  return entry(fn, [&] {
    Context* c = context_of(hContext, fn);
    need_pointer(ptr, fn, "ptr");
    need_pointer(p, fn, "pMemAllocProperties");
    Driver& d = driver();
    std::optional<ipcref::pointer_info> info;
    try {
      info = ipcref::get_pointer_info(ptr, *c->ctx);
    } catch (const ipcref::exception&) {
      // Not memory of this context: the specification's answer is an unknown type.
    }
    if (phDevice) *phDevice = nullptr;
    if (!info) {
      p->type = ZE_MEMORY_TYPE_UNKNOWN;
      p->id = 0;
      p->pageSize = 0;
      return ZE_RESULT_SUCCESS;
    }
    switch (info->kind) {
      case ipcref::usm_kind::host: p->type = ZE_MEMORY_TYPE_HOST; break;
      case ipcref::usm_kind::device: p->type = ZE_MEMORY_TYPE_DEVICE; break;
      case ipcref::usm_kind::shared: p->type = ZE_MEMORY_TYPE_SHARED; break;
    }
    p->id = reinterpret_cast<std::uintptr_t>(info->base);
    p->pageSize = page_size();
    if (phDevice && info->kind != ipcref::usm_kind::host)
      for (auto* dev : c->devices)
        if (dev->index == info->device) *phDevice = reinterpret_cast<ze_device_handle_t>(dev);

    auto* out = static_cast<ze_external_memory_export_fd_t*>(
        const_cast<void*>(find_in_chain(p->pNext, ZE_STRUCTURE_TYPE_EXTERNAL_MEMORY_EXPORT_FD)));
    if (!out) return ZE_RESULT_SUCCESS;
    check_fd_types(out->flags, fn, "ze_external_memory_export_fd_t");
    std::lock_guard lock(d.lock);
    if (info->imported || d.imported_allocations.count(info->base))
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat(fn, ": ", ptr, " was imported from another process; ",
                                                 "libze_ipcheck does not export imported memory again"));
    if (!d.exportable_allocations.count(info->base))
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
           cat(fn, ": the allocation at ", info->base, " was made without ze_external_memory_export_desc_t; ",
               "request the export type when allocating"));
    const auto base = reinterpret_cast<std::uintptr_t>(info->base);
    auto it = d.external_exports.find(base);
    if (it == d.external_exports.end()) {
      it = d.external_exports.emplace(base, make_export(ipcref::ipc::memory::get(info->base, *c->ctx), *c)).first;
    }
    ++it->second.refs;  // released by zeMemPutIpcHandle of zeMemGetIpcHandleFromFileDescriptorExp(fd)
    out->fd = make_external_descriptor(ze_ipcheck::ExternalKind::memory, it->second.handle.data(), fn);
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL MemGetAddressRange(ze_context_handle_t hContext, const void* ptr, void** pBase, size_t* pSize) {
  const char* fn = "zeMemGetAddressRange";
  return entry(fn, [&] {
    Context* c = context_of(hContext, fn);
    need_pointer(ptr, fn, "ptr");
    const ipcref::pointer_info info = ipcref::get_pointer_info(ptr, *c->ctx);
    if (pBase) *pBase = info.base;
    if (pSize) *pSize = info.size;
    return ZE_RESULT_SUCCESS;
  });
}

// ---------------------------------------------------------------- residency

namespace {

// Residency changes nothing here (device memory is host memory, always present), but the
// arguments are checked as a driver that pages would: memory of this context, inside one allocation.
void check_residency(ze_context_handle_t hContext, ze_device_handle_t hDevice, void* ptr, size_t size,
                     const char* fn) {
  Context* c = context_of(hContext, fn);
  device_in(c, hDevice, fn);
  need_pointer(ptr, fn, "ptr");
  if (size == 0) fail(ZE_RESULT_ERROR_INVALID_SIZE, cat(fn, ": size is 0"));
  std::optional<ipcref::pointer_info> info;
  try {
    info = ipcref::get_pointer_info(ptr, *c->ctx);
  } catch (const ipcref::exception&) {
  }
  if (!info)
    fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat(fn, ": ", ptr, " is not memory allocated or opened in this context"));
  const auto base = reinterpret_cast<std::uintptr_t>(info->base), p = reinterpret_cast<std::uintptr_t>(ptr);
  if (size > info->size - (p - base))
    fail(ZE_RESULT_ERROR_INVALID_SIZE, cat(fn, ": [", ptr, ", +", size, ") runs past the ", info->size,
                                           "-byte allocation at ", info->base));
}

}  // namespace

ze_result_t ZE_APICALL ContextMakeMemoryResident(ze_context_handle_t hContext, ze_device_handle_t hDevice, void* ptr,
                                                 size_t size) {
  const char* fn = "zeContextMakeMemoryResident";
  return entry(fn, [&] {
    check_residency(hContext, hDevice, ptr, size, fn);
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL ContextEvictMemory(ze_context_handle_t hContext, ze_device_handle_t hDevice, void* ptr,
                                          size_t size) {
  const char* fn = "zeContextEvictMemory";
  return entry(fn, [&] {
    check_residency(hContext, hDevice, ptr, size, fn);
    return ZE_RESULT_SUCCESS;
  });
}

// ---------------------------------------------------------------- IPC

ze_result_t ZE_APICALL MemGetIpcHandle(ze_context_handle_t hContext, const void* ptr, ze_ipc_mem_handle_t* pIpcHandle) {
  const char* fn = "zeMemGetIpcHandle";
  return entry(fn, [&] {
    Context* c = context_of(hContext, fn);
    need_pointer(ptr, fn, "ptr");
    need_pointer(pIpcHandle, fn, "pIpcHandle");
    Driver& d = driver();
    std::lock_guard lock(d.lock);
    const auto key = reinterpret_cast<std::uintptr_t>(ptr);
    auto it = d.memory_exports.find(key);
    if (it == d.memory_exports.end() || it->second.ctx_id != c->ctx->id()) {
      void* from = const_cast<void*>(ptr);
      if (ze_ipcheck::defects::is(ze_ipcheck::defects::id::interior_export_page_aligned))
        from = reinterpret_cast<void*>(key & ~std::uintptr_t{4095});
      Export e = make_export(ipcref::ipc::memory::get(from, *c->ctx), *c);
      it = d.memory_exports.insert_or_assign(key, std::move(e)).first;
    }
    ++it->second.refs;
    std::memcpy(pIpcHandle->data, it->second.bytes.data(), sizeof pIpcHandle->data);
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL MemPutIpcHandle(ze_context_handle_t hContext, ze_ipc_mem_handle_t handle) {
  const char* fn = "zeMemPutIpcHandle";
  return entry(fn, [&] {
    Context* c = context_of(hContext, fn);
    Driver& d = driver();
    std::lock_guard lock(d.lock);
    auto matches = [&](const Export& e) {
      if (std::memcmp(e.bytes.data(), handle.data, e.bytes.size()) != 0) return false;
      if (e.ctx_id != c->ctx->id())
        fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat(fn, ": the handle was exported in another context"));
      return true;
    };
    // A handle from zeMemGetIpcHandle, or one made from an exported descriptor
    // (zeMemGetIpcHandleFromFileDescriptorExp) of an allocation or a physical object.
    for (auto* exports : {&d.memory_exports, &d.external_exports})
      for (auto it = exports->begin(); it != exports->end(); ++it)
        if (matches(it->second)) {
          if (--it->second.refs == 0 || ze_ipcheck::defects::is(ze_ipcheck::defects::id::put_ignores_refcount)) {
            ipcref::ipc::memory::put(it->second.handle, *c->ctx);
            exports->erase(it);
          }
          return ZE_RESULT_SUCCESS;
        }
    for (auto it = d.phys_exports.begin(); it != d.phys_exports.end(); ++it)
      if (matches(it->second)) {
        if (--it->second.refs == 0) {
          ipcref::ipc::physical_memory::put(it->second.handle, *c->ctx);
          d.phys_exports.erase(it);
        }
        return ZE_RESULT_SUCCESS;
      }
    fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
         cat(fn, ": the handle is not a live export of this process (put already, its memory freed, or it was "
                 "never returned by zeMemGetIpcHandle or zeMemGetIpcHandleFromFileDescriptorExp here)"));
  });
}

// Seeded defect other_device_open_snapshot: the opened pages hold a copy of the export's bytes
// in private memory at the same address (close still unmaps them), no longer the export.
static void snapshot_in_place(void* p, std::size_t bytes) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  auto* first = reinterpret_cast<char*>(reinterpret_cast<std::uintptr_t>(p) & ~(page - 1));
  const std::size_t len = (static_cast<char*>(p) - first + bytes + page - 1) & ~(page - 1);
  std::vector<char> bytes_now(first, first + len);
  if (::mmap(first, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED)
    std::memcpy(first, bytes_now.data(), len);
}

// Seeded defect open_replaces_earlier_mapping: the earlier opens of the same exporter and
// size (this process's, kept here) get a duplicate of the new open's pages in place of theirs.
static void replace_earlier_mappings(void* p, const ipcref::record::fields& rec) {
  struct earlier {
    std::uintptr_t page;
    std::size_t len;
    std::uint32_t pid;
    std::uint64_t token;
  };
  static std::mutex m;
  static std::vector<earlier> opens;
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t base = at - at % page;
  const std::size_t len = ((at - base) + rec.size + page - 1) / page * page;
  std::lock_guard lock(m);
  for (const auto& e : opens)
    if (e.pid == rec.pid && e.len == len && e.token != rec.token && e.page != base)
      (void)::mremap(reinterpret_cast<void*>(base), 0, len, MREMAP_MAYMOVE | MREMAP_FIXED, reinterpret_cast<void*>(e.page));
  opens.push_back({base, len, rec.pid, rec.token});
}

ze_result_t ZE_APICALL MemOpenIpcHandle(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                        ze_ipc_mem_handle_t handle, ze_ipc_memory_flags_t flags, void** pptr) {
  const char* fn = "zeMemOpenIpcHandle";
  return entry(fn, [&] {
    Context* c = context_of(hContext, fn);
    Device* dev = device_in(c, hDevice, fn);
    need_pointer(pptr, fn, "pptr");
    const ze_ipc_memory_flags_t known = ZE_IPC_MEMORY_FLAG_BIAS_CACHED | ZE_IPC_MEMORY_FLAG_BIAS_UNCACHED;
    if (flags & ~known)
      fail(ZE_RESULT_ERROR_INVALID_ENUMERATION,
           cat(fn, ": flags 0x", std::hex, flags, " has bits beyond ZE_IPC_MEMORY_FLAG_BIAS_CACHED | _BIAS_UNCACHED (0x3)"));
    const DecodedHandle h = decode_handle(std::as_bytes(std::span(handle.data)), fn);
    void* p = ipcref::ipc::memory::open(h.record, *c->ctx, dev->dev, {h.descriptor});
    // An event pool's IPC handle names the allocation that holds the pool: it is no memory
    // handle (rb.open.cross_kind), and mapping it would hand the importer the pool's event
    // states to scribble over. Pools begin with their header (handle_layout.hpp).
    if (ipcref::record::decode(h.record).size >= ze_ipcheck::kEventSlotsOffset &&
        !ze_ipcheck::defects::is(ze_ipcheck::defects::id::pool_opens_as_memory)) {
      ze_ipcheck::EventPoolHeader hdr;
      std::memcpy(&hdr, p, sizeof hdr);
      if (hdr.magic == ze_ipcheck::kEventPoolMagic && hdr.version == ze_ipcheck::kEventPoolVersion) {
        ipcref::ipc::memory::close(p, *c->ctx);
        fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
             cat(fn, ": the handle names an event pool (zeEventPoolGetIpcHandle), not memory; open it with "
                     "zeEventPoolOpenIpcHandle"));
      }
      if (hdr.magic == ze_ipcheck::kCounterEventMagic && hdr.version == ze_ipcheck::kCounterEventVersion) {
        ipcref::ipc::memory::close(p, *c->ctx);
        fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
             cat(fn, ": the handle names a counter-based event (zeEventCounterBasedGetIpcHandle), not memory; ",
                 "open it with zeEventCounterBasedOpenIpcHandle"));
      }
    }
    if (ze_ipcheck::defects::is(ze_ipcheck::defects::id::other_device_open_snapshot) &&
        ipcref::record::decode(h.record).device != dev->index)
      snapshot_in_place(p, ipcref::record::decode(h.record).size);
    if (ze_ipcheck::defects::is(ze_ipcheck::defects::id::open_replaces_earlier_mapping))
      replace_earlier_mappings(p, ipcref::record::decode(h.record));
    *pptr = p;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL MemCloseIpcHandle(ze_context_handle_t hContext, const void* ptr) {
  const char* fn = "zeMemCloseIpcHandle";
  return entry(fn, [&] {
    Context* c = context_of(hContext, fn);
    need_pointer(ptr, fn, "ptr");
    ipcref::ipc::memory::close(const_cast<void*>(ptr), *c->ctx);
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL MemGetFileDescriptorFromIpcHandleExp(ze_context_handle_t hContext, ze_ipc_mem_handle_t handle,
                                                            uint64_t* pHandle) {
  const char* fn = "zeMemGetFileDescriptorFromIpcHandleExp";
  return entry(fn, [&] {
    context_of(hContext, fn);
    need_pointer(pHandle, fn, "pHandle");
    if (driver().config.convention != Convention::fd)
      fail(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE,
           cat(fn, ": handles carry no descriptor with ", ze_ipcheck::kEnvIpcHandle,
               "=opaque (the opener takes it from the exporter)"));
    const DecodedHandle h = decode_handle(std::as_bytes(std::span(handle.data)), fn);
    *pHandle = static_cast<uint64_t>(h.descriptor);
    return ZE_RESULT_SUCCESS;
  });
}

}  // namespace zedriver

namespace zedriver {

ze_result_t ZE_APICALL MemGetIpcHandleFromFileDescriptorExp(ze_context_handle_t hContext, uint64_t handle,
                                                            ze_ipc_mem_handle_t* pIpcHandle) {
  const char* fn = "zeMemGetIpcHandleFromFileDescriptorExp";
  return entry(fn, [&] {
    context_of(hContext, fn);
    need_pointer(pIpcHandle, fn, "pIpcHandle");
    if (handle > static_cast<uint64_t>(INT32_MAX))
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat(fn, ": ", handle, " is not a file descriptor"));
    const int fd = static_cast<int>(handle);
    // Either kind of external descriptor: the handle names the same export.
    std::array<std::byte, ze_ipcheck::kHandleSize> record{};
    try {
      record = read_external_descriptor(fd, ze_ipcheck::ExternalKind::physical_memory, fn);
    } catch (const Error&) {
      record = read_external_descriptor(fd, ze_ipcheck::ExternalKind::memory, fn);
    }
    const auto bytes = encode_handle(record);
    std::memcpy(pIpcHandle->data, bytes.data(), sizeof pIpcHandle->data);
    return ZE_RESULT_SUCCESS;
  });
}

}  // namespace zedriver
