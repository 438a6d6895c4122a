// Physical memory objects (with external-memory export and import) and virtual ranges,
// over ipcref's physical memory and reservations.
#include <cstring>

#include "ze_ipcheck/defects.hpp"
#include "entries.hpp"
#include "ipcref/record.hpp"
#include "state.hpp"

namespace zedriver {

namespace {

void check_granular(std::size_t v, const char* what, const char* function, ze_result_t code) {
  if (v % ipcref::physical_granularity() != 0)
    fail(code, cat(function, ": ", what, " ", v, " is not a multiple of the page size ",
                   ipcref::physical_granularity(), " (zeVirtualMemQueryPageSize)"));
}

}  // namespace

ze_result_t ZE_APICALL PhysicalMemCreate(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                         ze_physical_mem_desc_t* desc, ze_physical_mem_handle_t* ph) {
  const char* fn = "zePhysicalMemCreate";
  return entry(fn, [&] {
    Context* c = context_of(hContext, fn);
    Device* dev = get<Device>(hDevice, Kind::device, fn, "hDevice");
    need_pointer(desc, fn, "desc");
    need_pointer(ph, fn, "phPhysicalMemory");
    if (!c->contains(dev))
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
           cat(fn, ": device '", dev->dev.name(), "' is not in the context (clause sycl.phys.open.ctx_dev)"));
    if (desc->flags & ~static_cast<ze_physical_mem_flags_t>(ZE_PHYSICAL_MEM_FLAG_TBD))
      fail(ZE_RESULT_ERROR_INVALID_ENUMERATION, cat(fn, ": desc->flags 0x", std::hex, desc->flags, " has unknown bits"));
    if (desc->size == 0) fail(ZE_RESULT_ERROR_UNSUPPORTED_SIZE, cat(fn, ": desc->size is 0"));
    check_granular(desc->size, "desc->size", fn, ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT);
    auto obj = std::make_unique<PhysicalMem>();
    obj->ctx = c;
    const auto* import = static_cast<const ze_external_memory_import_fd_t*>(
        find_in_chain(desc->pNext, ZE_STRUCTURE_TYPE_EXTERNAL_MEMORY_IMPORT_FD));
    const auto* exp = static_cast<const ze_external_memory_export_desc_t*>(
        find_in_chain(desc->pNext, ZE_STRUCTURE_TYPE_EXTERNAL_MEMORY_EXPORT_DESC));
    if (import && exp)
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat(fn, ": desc chains both an import and an export descriptor"));
    if (import) {
      check_fd_types(import->flags, fn, "ze_external_memory_import_fd_t");
      const auto record = read_external_descriptor(import->fd, ze_ipcheck::ExternalKind::physical_memory, fn);
      obj->pm = ipcref::ipc::physical_memory::open(record, *c->ctx, dev->dev, {});
      obj->imported = true;
      // Seeded defect: the import marks the caller's descriptor taken, in the const import
      // descriptor it was handed (fd set to -1), as if it had consumed it.
      if (ze_ipcheck::defects::is(ze_ipcheck::defects::id::phys_import_writes_fd))
        const_cast<ze_external_memory_import_fd_t*>(import)->fd = -1;
      const std::size_t size = ipcref::physical_size(obj->pm);
      if (ze_ipcheck::defects::is(ze_ipcheck::defects::id::phys_import_trusts_size)) {
        obj->claimed = desc->size;
      } else if (size != desc->size) {
        ipcref::ipc::physical_memory::close(obj->pm, *c->ctx);
        fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
             cat(fn, ": desc->size ", desc->size, " differs from the imported object's ", size, " bytes"));
      }
    } else {
      if (exp) check_fd_types(exp->flags, fn, "ze_external_memory_export_desc_t");
      obj->exportable = exp != nullptr;
      obj->pm = ipcref::physical_create(*c->ctx, dev->dev, desc->size, obj->exportable);
    }
    ++c->children;
    add_live(obj.get(), Kind::physical_mem);
    *ph = reinterpret_cast<ze_physical_mem_handle_t>(obj.release());
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL PhysicalMemDestroy(ze_context_handle_t hContext, ze_physical_mem_handle_t hPhysicalMemory) {
  const char* fn = "zePhysicalMemDestroy";
  return entry(fn, [&] {
    Context* c = context_of(hContext, fn);
    auto* obj = get<PhysicalMem>(hPhysicalMemory, Kind::physical_mem, fn, "hPhysicalMemory");
    if (obj->ctx != c) fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat(fn, ": the object belongs to another context"));
    Driver& d = driver();
    {
      std::lock_guard lock(d.lock);
      d.phys_exports.erase(obj);
    }
    if (obj->imported)
      ipcref::ipc::physical_memory::close(obj->pm, *c->ctx);
    else
      ipcref::physical_release(obj->pm);
    remove_live(obj);
    --c->children;
    delete obj;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL PhysicalMemGetProperties(ze_context_handle_t hContext, ze_physical_mem_handle_t hPhysicalMem,
                                                ipcheck_ze_physical_mem_properties_t* p) {
  const char* fn = "zePhysicalMemGetProperties";
  return entry(fn, [&] {
    Context* c = context_of(hContext, fn);
    auto* obj = get<PhysicalMem>(hPhysicalMem, Kind::physical_mem, fn, "hPhysicalMem");
    need_pointer(p, fn, "pMemProperties");
    if (obj->ctx != c) fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat(fn, ": the object belongs to another context"));
    p->id = reinterpret_cast<std::uintptr_t>(obj);
    p->size = obj->claimed ? obj->claimed : ipcref::physical_size(obj->pm);
    auto* out = static_cast<ze_external_memory_export_fd_t*>(
        const_cast<void*>(find_in_chain(p->pNext, ZE_STRUCTURE_TYPE_EXTERNAL_MEMORY_EXPORT_FD)));
    if (!out) return ZE_RESULT_SUCCESS;
    check_fd_types(out->flags, fn, "ze_external_memory_export_fd_t");
    if (obj->imported)
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat(fn, ": the object was imported from another process; ",
                                                 "libze_ipcheck does not export imported objects again"));
    if (!obj->exportable)
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
           cat(fn, ": the object was created without ze_external_memory_export_desc_t ",
               "(clause sycl.phys.get.not_enabled); request the export type at zePhysicalMemCreate"));
    Driver& d = driver();
    std::lock_guard lock(d.lock);
    auto it = d.phys_exports.find(obj);
    if (it == d.phys_exports.end()) {
      it = d.phys_exports.emplace(obj, make_export(ipcref::ipc::physical_memory::get(obj->pm, *c->ctx), *c)).first;
    }
    ++it->second.refs;  // released by zeMemPutIpcHandle of zeMemGetIpcHandleFromFileDescriptorExp(fd)
    out->fd = make_external_descriptor(ze_ipcheck::ExternalKind::physical_memory, it->second.handle.data(), fn);
    return ZE_RESULT_SUCCESS;
  });
}

// ---------------------------------------------------------------- virtual memory

ze_result_t ZE_APICALL VirtualMemReserve(ze_context_handle_t hContext, const void*, size_t size, void** pptr) {
  const char* fn = "zeVirtualMemReserve";
  return entry(fn, [&] {
    Context* c = context_of(hContext, fn);
    need_pointer(pptr, fn, "pptr");
    if (size == 0) fail(ZE_RESULT_ERROR_UNSUPPORTED_SIZE, cat(fn, ": size is 0"));
    check_granular(size, "size", fn, ZE_RESULT_ERROR_UNSUPPORTED_SIZE);
    // The start hint is not honoured (the specification allows that).
    *pptr = ipcref::virtual_reserve(*c->ctx, size);
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL VirtualMemFree(ze_context_handle_t hContext, const void* ptr, size_t size) {
  const char* fn = "zeVirtualMemFree";
  return entry(fn, [&] {
    Context* c = context_of(hContext, fn);
    need_pointer(ptr, fn, "ptr");
    ipcref::virtual_free(*c->ctx, const_cast<void*>(ptr), size);
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL VirtualMemQueryPageSize(ze_context_handle_t hContext, ze_device_handle_t hDevice, size_t size,
                                               size_t* pagesize) {
  const char* fn = "zeVirtualMemQueryPageSize";
  return entry(fn, [&] {
    context_of(hContext, fn);
    get<Device>(hDevice, Kind::device, fn, "hDevice");
    need_pointer(pagesize, fn, "pagesize");
    if (size == 0) fail(ZE_RESULT_ERROR_UNSUPPORTED_SIZE, cat(fn, ": size is 0"));
    *pagesize = ipcref::physical_granularity();
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL VirtualMemMap(ze_context_handle_t hContext, const void* ptr, size_t size,
                                     ze_physical_mem_handle_t hPhysicalMemory, size_t offset,
                                     ze_memory_access_attribute_t access) {
  const char* fn = "zeVirtualMemMap";
  return entry(fn, [&] {
    Context* c = context_of(hContext, fn);
    need_pointer(ptr, fn, "ptr");
    auto* obj = get<PhysicalMem>(hPhysicalMemory, Kind::physical_mem, fn, "hPhysicalMemory");
    if (obj->ctx != c) fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat(fn, ": the physical object belongs to another context"));
    ipcref::access acc = ipcref::access::read_write;
    switch (access) {
      case ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE: acc = ipcref::access::read_write; break;
      case ZE_MEMORY_ACCESS_ATTRIBUTE_READONLY: acc = ipcref::access::read_only; break;
      case ZE_MEMORY_ACCESS_ATTRIBUTE_NONE:
        fail(ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION,
             cat(fn, ": ZE_MEMORY_ACCESS_ATTRIBUTE_NONE mappings are not supported; map READWRITE or READONLY"));
      default: fail(ZE_RESULT_ERROR_INVALID_ENUMERATION, cat(fn, ": access ", static_cast<int>(access), " is unknown"));
    }
    check_granular(size, "size", fn, ZE_RESULT_ERROR_UNSUPPORTED_SIZE);
    check_granular(offset, "offset", fn, ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT);
    ipcref::virtual_map(*c->ctx, const_cast<void*>(ptr), size, obj->pm,
                        ze_ipcheck::defects::is(ze_ipcheck::defects::id::map_ignores_offset) ? 0 : offset, acc);
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL VirtualMemUnmap(ze_context_handle_t hContext, const void* ptr, size_t size) {
  const char* fn = "zeVirtualMemUnmap";
  return entry(fn, [&] {
    Context* c = context_of(hContext, fn);
    need_pointer(ptr, fn, "ptr");
    ipcref::virtual_unmap(*c->ctx, const_cast<void*>(ptr), size);
    return ZE_RESULT_SUCCESS;
  });
}

}  // namespace zedriver
