// The `ze` adapter's memory verbs: allocations, memory IPC handles (both conventions),
// physical memory with its own export record, and the descriptors they move (virtual ranges:
// the toolkit's LevelZeroRanges, over zeVirtualMem*).
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

// Host <-> device memory moves through an immediate (synchronous) command list of the memory's
// device.

Result<DevPtr> ZeAdapter::alloc(int device, std::size_t bytes, MemKind kind) {
  ze_device_handle_t dev = nullptr;
  if (Outcome o = device_at(device, dev); !o.ok()) return {o};
  void* p = nullptr;
  ze_device_mem_alloc_desc_t dd{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
  ze_host_mem_alloc_desc_t hd{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
  Outcome o;
  switch (kind) {
    case MemKind::device: o = call("zeMemAllocDevice", api_.zeMemAllocDevice(ctx_, &dd, bytes, 0, dev, &p)); break;
    case MemKind::host: o = call("zeMemAllocHost", api_.zeMemAllocHost(ctx_, &hd, bytes, 0, &p)); break;
    case MemKind::shared:
      o = call("zeMemAllocShared", api_.zeMemAllocShared(ctx_, &dd, &hd, bytes, 0, dev, &p));
      break;
  }
  return {o, reinterpret_cast<DevPtr>(p)};
}

Outcome ZeAdapter::free(DevPtr p) { return call("zeMemFree", api_.zeMemFree(ctx_, ptr(p))); }

Outcome ZeAdapter::write(DevPtr dst, std::span<const std::byte> src) {
  ze_command_list_handle_t l = nullptr;
  if (Outcome o = list_for(dst, l); !o.ok()) return o;
  return call("zeCommandListAppendMemoryCopy",
              api_.zeCommandListAppendMemoryCopy(l, ptr(dst), src.data(), src.size(), nullptr, 0, nullptr),
              "write " + std::to_string(src.size()) + " bytes to " + hex(dst));
}

Outcome ZeAdapter::read(DevPtr src, std::span<std::byte> dst) {
  ze_command_list_handle_t l = nullptr;
  if (Outcome o = list_for(src, l); !o.ok()) return o;
  return call("zeCommandListAppendMemoryCopy",
              api_.zeCommandListAppendMemoryCopy(l, dst.data(), ptr(src), dst.size(), nullptr, 0, nullptr),
              "read " + std::to_string(dst.size()) + " bytes from " + hex(src));
}

Result<Exported> ZeAdapter::mem_get(DevPtr p) {
  ze_ipc_mem_handle_t h{};
  if (Outcome o = call("zeMemGetIpcHandle", api_.zeMemGetIpcHandle(ctx_, ptr(p), &h)); !o.ok()) return {o};
  Exported e;
  e.id = new_id();
  e.bytes.assign(reinterpret_cast<const std::byte*>(h.data), reinterpret_cast<const std::byte*>(h.data) + sizeof h.data);
  if (fd_first_) {
    if (auto o = descriptor_of(h, e.fd); !o.ok()) return {o};
  }
  mem_exports_[e.id] = h;
  return {Outcome::runtime_success("zeMemGetIpcHandle"), std::move(e)};
}

// A put that fails leaves the export live.
Outcome ZeAdapter::mem_put(ObjectId id) {
  return put_export(mem_exports_, id, "mem_put", /*keep_on_failure=*/true, [&](const ze_ipc_mem_handle_t& h) {
    if (!api_.zeMemPutIpcHandle) return newer_missing("zeMemPutIpcHandle", "1.6", "mem_put");
    auto& f = api_.zeMemPutIpcHandle;
    return call("zeMemPutIpcHandle", f.fn(context_for(f.via_driver), h));
  });
}

Result<DevPtr> ZeAdapter::mem_open(std::span<const std::byte> bytes, int fd, int device, std::uint64_t flags) {
  flags = open_flags(flags, 0);  // the API's plain open asks for nothing
  ze_device_handle_t dev = nullptr;
  if (Outcome o = device_at(device, dev); !o.ok()) return {o};
  if (flags > UINT32_MAX)
    return {Outcome::failure(Errc::invalid, "mem_open: flags " + hex(flags) +
                                                " do not fit ze_ipc_memory_flags_t (32 bits); nothing was called")};
  ze_ipc_mem_handle_t h{};
  if (Outcome o = to_handle(bytes, fd, h.data, "zeMemOpenIpcHandle"); !o.ok()) return {o};
  void* p = nullptr;
  const Outcome o = call("zeMemOpenIpcHandle",
                         api_.zeMemOpenIpcHandle(ctx_, dev, h, static_cast<ze_ipc_memory_flags_t>(flags), &p));
  return {o, reinterpret_cast<DevPtr>(p)};
}

Outcome ZeAdapter::mem_close(DevPtr p) { return call("zeMemCloseIpcHandle", api_.zeMemCloseIpcHandle(ctx_, ptr(p))); }

Outcome ZeAdapter::list_for(DevPtr p, ze_command_list_handle_t& out) {
  std::size_t index = 0;
  ze_memory_allocation_properties_t props{ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES, nullptr,
                                          ZE_MEMORY_TYPE_UNKNOWN, 0, 0};
  ze_device_handle_t dev = nullptr;
  if (api_.zeMemGetAllocProperties(ctx_, ptr(p), &props, &dev) == ZE_RESULT_SUCCESS && dev)
    for (std::size_t i = 0; i < devices_.size(); ++i)
      if (devices_[i] == dev) index = i;
  if (!lists_[index]) {
    ze_command_queue_desc_t qd{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, 0, 0, 0,
                               ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    if (Outcome o = call("zeCommandListCreateImmediate",
                         api_.zeCommandListCreateImmediate(ctx_, devices_[index], &qd, &lists_[index]));
        !o.ok())
      return o;
  }
  out = lists_[index];
  return Outcome::success();
}

Outcome ZeAdapter::descriptor_of(const ze_ipc_mem_handle_t& h, int& fd) {
  fd = ze_ipcheck::fd_of(std::as_bytes(std::span(h.data)));
  if (auto& f = api_.zeMemGetFileDescriptorFromIpcHandleExp) {
    uint64_t v = 0;
    if (Outcome o = call("zeMemGetFileDescriptorFromIpcHandleExp", f.fn(context_for(f.via_driver), h, &v)); !o.ok())
      return o;
    if (static_cast<int>(v) != fd)
      return Outcome::failure(Errc::other,
                              "zeMemGetFileDescriptorFromIpcHandleExp gave descriptor " + std::to_string(v) +
                                  ", but the handle's first bytes hold " + std::to_string(fd) +
                                  "; the adapter cannot tell which descriptor to send (use handle=opaque if the "
                                  "driver's handles name their exporter)");
  }
  return Outcome::success();
}

Outcome ZeAdapter::to_handle(std::span<const std::byte> bytes, int fd, char (&out)[ZE_MAX_IPC_HANDLE_SIZE], const char* fn) {
  if (bytes.size() != ZE_MAX_IPC_HANDLE_SIZE)
    return Outcome::failure(Errc::invalid, std::to_string(bytes.size()) + " handle bytes cannot reach " + fn +
                                               ": a Level Zero IPC handle is ZE_MAX_IPC_HANDLE_SIZE (64) bytes, " +
                                               "passed by value; the adapter refuses other sizes (clauses " +
                                               "sycl.mem.open.size, ur.event.open.size)");
  std::memcpy(out, bytes.data(), ZE_MAX_IPC_HANDLE_SIZE);
  if (fd_first_ && fd >= 0) ze_ipcheck::set_fd(std::as_writable_bytes(std::span(out)), fd);
  return Outcome::success();
}

std::size_t ZeAdapter::phys_granularity(int device) {
  ze_device_handle_t dev = nullptr;
  std::size_t g = 0;
  if (device_at(device, dev).ok() && api_.zeVirtualMemQueryPageSize(ctx_, dev, 1, &g) == ZE_RESULT_SUCCESS && g)
    return g;
  return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

Result<ObjectId> ZeAdapter::phys_create(int device, std::size_t bytes, bool ipc) {
  ze_device_handle_t dev = nullptr;
  if (Outcome o = device_at(device, dev); !o.ok()) return {o};
  ze_external_memory_export_desc_t exp{ZE_STRUCTURE_TYPE_EXTERNAL_MEMORY_EXPORT_DESC, nullptr, kPhysExportType};
  ze_physical_mem_desc_t desc{ZE_STRUCTURE_TYPE_PHYSICAL_MEM_DESC, ipc ? &exp : nullptr, 0, bytes};
  ze_physical_mem_handle_t h = nullptr;
  if (Outcome o = call("zePhysicalMemCreate", api_.zePhysicalMemCreate(ctx_, dev, &desc, &h)); !o.ok()) return {o};
  const ObjectId id = new_id();
  phys_[id] = Phys{h, bytes, ipc, false, 1};
  return {Outcome::runtime_success("zePhysicalMemCreate"), id};
}

Result<Exported> ZeAdapter::phys_get(ObjectId pm) {
  Phys* p = phys(pm);
  if (!p) return {unknown("phys_get", "physical memory", pm)};
  if (!api_.zePhysicalMemGetProperties) return {newer_missing("zePhysicalMemGetProperties", "1.15", "phys_get")};
  ze_external_memory_export_fd_t out{ZE_STRUCTURE_TYPE_EXTERNAL_MEMORY_EXPORT_FD, nullptr, kPhysExportType, -1};
  ipcheck_ze_physical_mem_properties_t props{IPCHECK_ZE_STRUCTURE_TYPE_PHYSICAL_MEM_PROPERTIES, &out, 0, 0};
  auto& f = api_.zePhysicalMemGetProperties;
  if (Outcome o = call("zePhysicalMemGetProperties",
                       f.fn(context_for(f.via_driver), phys_for(f.via_driver, p->handle), &props));
      !o.ok()) {
    if (out.fd >= 0) ::close(out.fd);
    return {o};
  }
  if (out.fd < 0)
    return {Outcome::failure(Errc::feature_not_supported,
                             "zePhysicalMemGetProperties succeeded without exporting a descriptor", 0,
                             "ZE_RESULT_SUCCESS")};
  PhysHandle ph{};
  ph.magic = kPhysMagic;
  ph.version = 1;
  ph.fd = out.fd;
  ph.pid = static_cast<std::uint32_t>(::getpid());
  ph.size = props.size;
  struct stat st{};
  if (::fstat(out.fd, &st) == 0) {
    ph.ino = st.st_ino;
    ph.dev = st.st_dev;
  }
  Exported e = keep_export(phys_exports_, unique_fd(out.fd), &ph, sizeof ph);
  e.fd = fd_first_ ? out.fd : -1;
  return {Outcome::runtime_success("zePhysicalMemGetProperties"), std::move(e)};
}

// Put releases the exported descriptor the way Level Zero 1.6 describes it (zeMemPutIpcHandle
// of zeMemGetIpcHandleFromFileDescriptorExp(fd)) when both functions are there, and closes it,
// as Unified Runtime's adapter does for DMA-BUF exports. Without them the close alone is the
// release: the driver keeps its export until the object is destroyed.
Outcome ZeAdapter::phys_put(ObjectId id) {
  return put_export(phys_exports_, id, "phys_put", /*keep_on_failure=*/false, [&](const unique_fd& fd) {
    Outcome o;
    auto& to_handle = api_.zeMemGetIpcHandleFromFileDescriptorExp;
    auto& put = api_.zeMemPutIpcHandle;
    if (to_handle && put) {
      ze_ipc_mem_handle_t h{};
      o = call("zeMemGetIpcHandleFromFileDescriptorExp",
               to_handle.fn(context_for(to_handle.via_driver), static_cast<uint64_t>(fd.get()), &h));
      if (o.ok()) o = call("zeMemPutIpcHandle", put.fn(context_for(put.via_driver), h));
    }
    return o;
  });
}

Result<ObjectId> ZeAdapter::phys_open(std::span<const std::byte> bytes, int fd, int device) {
  phys_import_handed_.clear();
  ze_device_handle_t dev = nullptr;
  if (Outcome o = device_at(device, dev); !o.ok()) return {o};
  if (bytes.size() != kPhysHandleSize)
    return {Outcome::failure(Errc::invalid, "phys_open: the handle is " + std::to_string(bytes.size()) +
                                                " bytes, expected " + std::to_string(kPhysHandleSize) +
                                                " (clause sycl.phys.open.size)")};
  PhysHandle ph{};
  std::memcpy(&ph, bytes.data(), sizeof ph);
  if (ph.magic != kPhysMagic || ph.version != 1 || ph.size == 0)
    return {Outcome::failure(Errc::invalid, "phys_open: the bytes are not a version 1 ze physical memory handle")};
  unique_fd local;
  if (Outcome o = take_descriptor(ph, fd, local); !o.ok()) return {o};
  ze_external_memory_import_fd_t& imp = phys_import_;
  imp = {ZE_STRUCTURE_TYPE_EXTERNAL_MEMORY_IMPORT_FD, nullptr, kPhysExportType, local.get()};
  phys_import_handed_.assign(reinterpret_cast<const std::byte*>(&imp), reinterpret_cast<const std::byte*>(&imp + 1));
  ze_physical_mem_desc_t desc{ZE_STRUCTURE_TYPE_PHYSICAL_MEM_DESC, &imp, 0, ph.size};
  ze_physical_mem_handle_t h = nullptr;
  // The driver keeps what it needs from the descriptor; ours closes when `local` goes.
  if (Outcome o = call("zePhysicalMemCreate", api_.zePhysicalMemCreate(ctx_, dev, &desc, &h)); !o.ok()) return {o};
  const ObjectId id = new_id();
  phys_[id] = Phys{h, ph.size, true, true, 1};
  return {Outcome::runtime_success("zePhysicalMemCreate"), id};
}

Adapter::OpenInput ZeAdapter::last_open_input(const std::string& verb, std::span<const std::byte> given) {
  if (verb != "phys_open" || phys_import_handed_.empty()) return {{}, {}, given};
  return {"the import descriptor (ze_external_memory_import_fd_t) handed to zePhysicalMemCreate", phys_import_handed_,
          std::as_bytes(std::span(&phys_import_, 1))};
}

Outcome ZeAdapter::phys_close(ObjectId pm) {
  if (Outcome o = closable(pm); !o.ok()) return o;
  return drop_phys(pm);
}

Outcome ZeAdapter::phys_retain(ObjectId pm) {
  return on_phys("phys_retain", pm, [](Phys& p) {
    ++p.refs;
    return Outcome::success();
  });
}

Outcome ZeAdapter::phys_release(ObjectId pm) {
  if (!phys(pm)) return unknown("phys_release", "physical memory", pm);
  return drop_phys(pm);
}

Result<std::size_t> ZeAdapter::phys_size(ObjectId pm) {
  Phys* p = phys(pm);
  if (!p) return {unknown("phys_size", "physical memory", pm)};
  // Without the query the size is the one recorded at creation or open: the adapter's answer.
  if (!api_.zePhysicalMemGetProperties) return {Outcome::success(), p->size};
  ipcheck_ze_physical_mem_properties_t props{IPCHECK_ZE_STRUCTURE_TYPE_PHYSICAL_MEM_PROPERTIES, nullptr, 0, 0};
  auto& f = api_.zePhysicalMemGetProperties;
  const Outcome o = call("zePhysicalMemGetProperties",
                         f.fn(context_for(f.via_driver), phys_for(f.via_driver, p->handle), &props));
  return {o, static_cast<std::size_t>(props.size)};
}

// Level Zero has no query: the creation descriptor.
Result<bool> ZeAdapter::phys_ipc_enabled(ObjectId pm) {
  return on_phys("phys_ipc_enabled", pm, [](Phys& p) { return Result<bool>{Outcome::success(), p.ipc}; });
}

Outcome ZeAdapter::drop_phys(ObjectId id) {
  return drop_reference(phys_, id, [&](Phys& p) {
    return call("zePhysicalMemDestroy", api_.zePhysicalMemDestroy(ctx_, p.handle));
  });
}

Outcome ZeAdapter::take_descriptor(const PhysHandle& ph, int received, unique_fd& out) {
  if (Outcome o = fetch_descriptor(ph, received, out); !o.ok()) return o;
  struct stat st{};
  if (::fstat(out.get(), &st) != 0 || st.st_ino != ph.ino || st.st_dev != ph.dev)
    return Outcome::failure(Errc::invalid, "phys_open: descriptor " + std::to_string(received >= 0 ? received : ph.fd) +
                                               " is not the exported one (the export was put and its number " +
                                               "reused, or the bytes were forged)", EBADF, "EBADF");
  return Outcome::success();
}

Outcome ZeAdapter::fetch_descriptor(const PhysHandle& ph, int received, unique_fd& out) {
  if (received >= 0) {
    out.reset(::fcntl(received, F_DUPFD_CLOEXEC, 0));
    if (!out) return Outcome::failure(Errc::invalid, "phys_open: the received descriptor is unusable: " +
                                                         std::string(std::strerror(errno)), errno, "errno");
    return Outcome::success();
  }
  if (ph.pid == static_cast<std::uint32_t>(::getpid())) {
    out.reset(::fcntl(ph.fd, F_DUPFD_CLOEXEC, 0));
    if (!out) return Outcome::failure(Errc::invalid, "phys_open: this process has no descriptor " +
                                                         std::to_string(ph.fd) + " (the export was put)", errno,
                                                     "EBADF");
    return Outcome::success();
  }
  return toolkit::take_exporter_fd({static_cast<int>(ph.pid), ph.fd, std::nullopt}, "phys_open: ", out);
}

}  // namespace ipcheck::ze
