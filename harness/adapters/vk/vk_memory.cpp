// The `vk` adapter's memory verbs: alloc, free, read and write (through the mapping or a
// staging copy), export (mem_get, mem_put) and import (mem_open, mem_close), and the checks an
// importer makes on a record before the driver sees it.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include "vk_adapter.hpp"

namespace ipcheck::vk_adapter {

Result<DevPtr> VkAdapter::alloc(int device, std::size_t bytes, MemKind kind) {
  Dev* d = dev(device);
  if (!d) return {bad_device(device)};
  if (bytes == 0) return {Outcome::failure(Errc::invalid, "alloc: 0 bytes (Vulkan allocations are not empty)")};
  Mem m;
  m.device = device;
  m.exportable = d->memory_ok;
  const auto ext_buffer = VkExternalMemoryBufferCreateInfo{VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
                                                           nullptr, static_cast<VkExternalMemoryHandleTypeFlags>(kMemHandle)};
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.pNext = m.exportable ? &ext_buffer : nullptr;
  bi.size = bytes;
  bi.usage = kBufferUsage;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  if (Outcome o = call("vkCreateBuffer", d->fn.vkCreateBuffer(d->device, &bi, nullptr, &m.buffer)); !o.ok()) return {o};
  VkMemoryRequirements req{};
  d->fn.vkGetBufferMemoryRequirements(d->device, m.buffer, &req);
  const std::optional<std::uint32_t> type = pick_type(*d, req.memoryTypeBits, kind);
  if (!type) {
    d->fn.vkDestroyBuffer(d->device, m.buffer, nullptr);
    return {Outcome::failure(Errc::feature_not_supported,
                             std::string("alloc: no memory type of device ") + std::to_string(device) + " suits " +
                                 mem_kind_name(kind) + " memory (memoryTypeBits " + hex(req.memoryTypeBits) + ")")};
  }
  m.type = *type;
  m.size = req.size;
  m.bytes = bytes;
  m.dedicated = m.exportable && (force_dedicated_ || (d->buffer_features & VK_EXTERNAL_MEMORY_FEATURE_DEDICATED_ONLY_BIT));
  m.buffer_size = m.dedicated ? bytes : 0;
  VkExportMemoryAllocateInfo exp{VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO, nullptr,
                                 static_cast<VkExternalMemoryHandleTypeFlags>(kMemHandle)};
  VkMemoryDedicatedAllocateInfo ded{VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO, nullptr, VK_NULL_HANDLE,
                                    m.buffer};
  if (m.dedicated) exp.pNext = &ded;
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, m.exportable ? &exp : nullptr, m.size, m.type};
  if (Outcome o = call("vkAllocateMemory", d->fn.vkAllocateMemory(d->device, &ai, nullptr, &m.memory),
                       "alloc " + std::to_string(m.size) + " bytes of memory type " + std::to_string(m.type));
      !o.ok()) {
    d->fn.vkDestroyBuffer(d->device, m.buffer, nullptr);
    if (m.memory) d->fn.vkFreeMemory(d->device, m.memory, nullptr);
    return {o};
  }
  if (Outcome o = finish_memory(*d, m, "vkAllocateMemory"); !o.ok()) return {o};
  const DevPtr p = m.base;
  mems_.emplace(p, std::move(m));
  return {Outcome::runtime_success("vkAllocateMemory"), p};
}

Outcome VkAdapter::free(DevPtr p) {
  auto it = mems_.find(p);
  if (it == mems_.end() || it->second.imported)
    return Outcome::failure(Errc::invalid, "free: " + hex(p) + " is not an allocation of this adapter" +
                                               (it != mems_.end() ? " (it was opened: close it)" : ""));
  Outcome o = release_memory(it->second);
  mems_.erase(it);
  return o;
}

Outcome VkAdapter::write(DevPtr dst, std::span<const std::byte> src) { return transfer(dst, src.size(), src.data(), nullptr); }

Outcome VkAdapter::read(DevPtr src, std::span<std::byte> dst) { return transfer(src, dst.size(), nullptr, dst.data()); }

Result<Exported> VkAdapter::mem_get(DevPtr p) {
  Mem* m = containing(p);
  if (!m) return {Outcome::failure(Errc::invalid, "mem_get: " + hex(p) + " is in no allocation of this adapter")};
  Dev& d = devs_[static_cast<std::size_t>(m->device)];
  if (!d.memory_ok)
    return {Outcome::failure(Errc::feature_not_supported, "mem_get: device " + std::to_string(m->device) +
                                                              " cannot export memory: " + d.memory_why)};
  if (!m->exportable)
    return {Outcome::failure(Errc::invalid, "mem_get: " + hex(p) + " is " +
                                                (m->imported ? "imported memory, allocated without VkExportMemoryAllocateInfo"
                                                             : "not exportable") +
                                                " (VUID-VkMemoryGetFdInfoKHR-handleType-00671); nothing was called")};
  VkMemoryGetFdInfoKHR gi{VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR, nullptr, m->memory, kMemHandle};
  int raw = -1;
  if (Outcome o = call("vkGetMemoryFdKHR", d.fn.vkGetMemoryFdKHR(d.device, &gi, &raw)); !o.ok()) {
    if (raw >= 0) ::close(raw);
    return {o};
  }
  unique_fd fd(raw);
  Export x;
  x.driver_fd = raw;
  const int fl = ::fcntl(raw, F_GETFD);
  x.cloexec = fl >= 0 && (fl & FD_CLOEXEC);
  x.fresh = true;
  // A new descriptor is none of the earlier exports' (still open, at their relocated numbers).
  for (const auto& [id, other] : mem_exports_)
    if (other.fd.get() == raw) x.fresh = false;
  if (Outcome o = relocate(fd, x.cloexec); !o.ok()) return {o};
  FdRecord rec;
  rec.kind = FdRecord::memory;
  rec.pid = static_cast<std::uint32_t>(::getpid());
  rec.fd = fd.get();
  rec.start_time = own_start_time();
  rec.size = m->size;
  rec.offset = p - m->base;
  rec.memory_type = m->type;
  rec.handle_type = kMemHandle;
  rec.flags = m->dedicated ? static_cast<std::uint32_t>(FdRecord::dedicated) : 0u;
  rec.device = static_cast<std::uint32_t>(m->device);
  rec.buffer_size = m->buffer_size;
  identity(fd.get(), rec);
  Exported e;
  e.id = next_id_++;
  e.bytes = rec.encode();
  e.fd = scm_ ? fd.get() : -1;
  x.fd = std::move(fd);
  mem_exports_.emplace(e.id, std::move(x));
  return {Outcome::runtime_success("vkGetMemoryFdKHR"), std::move(e)};
}

// Vulkan has no put: the export is the descriptor, and closing the exporter's copy is all
// there is (a copy already sent, or imported, keeps the payload alive).
Outcome VkAdapter::mem_put(ObjectId export_id) {
  auto it = mem_exports_.find(export_id);
  if (it == mem_exports_.end())
    return Outcome::failure(Errc::invalid, "mem_put: export id " + std::to_string(export_id) + " is not a live export");
  mem_exports_.erase(it);
  return Outcome::success();
}

Result<DevPtr> VkAdapter::mem_open(std::span<const std::byte> bytes, int fd, int device, std::uint64_t flags) {
  flags = open_flags(flags, 0);  // the API's plain open asks for nothing
  Dev* d = dev(device);
  if (!d) return {bad_device(device)};
  if (flags != 0)
    return {Outcome::failure(Errc::invalid, "mem_open: flags " + hex(flags) +
                                                ": a Vulkan import has no open flags; nothing was called")};
  std::string why;
  const auto rec = FdRecord::decode(bytes, why);
  if (!rec) return {Outcome::failure(Errc::invalid, "mem_open: " + why)};
  if (rec->kind != FdRecord::memory)
    return {Outcome::failure(Errc::invalid, "mem_open: the record is a semaphore export, not memory")};
  if (Outcome o = importable(*d, *rec); !o.ok()) return {o};
  if (!d->memory_ok)
    return {Outcome::failure(Errc::feature_not_supported, "mem_open: device " + std::to_string(device) +
                                                              " cannot import memory: " + d->memory_why)};
  unique_fd local;
  if (Outcome o = take_descriptor(*rec, fd, local); !o.ok()) return {o};
  Import im;
  im.size = rec->size;
  im.memory_type = rec->memory_type;
  im.handle_type = rec->handle_type;
  im.dedicated = rec->flags & FdRecord::dedicated;
  im.buffer_size = rec->buffer_size;
  return import_memory(*d, device, im, local);
}

Outcome VkAdapter::mem_close(DevPtr p) {
  auto it = std::find_if(mems_.begin(), mems_.end(), [&](const auto& kv) { return kv.second.imported && kv.second.opened_at == p; });
  if (it == mems_.end())
    return Outcome::failure(Errc::invalid, "mem_close: " + hex(p) + " is not an open mapping of this adapter "
                                           "(closed already, or never opened); nothing was called");
  Outcome o = release_memory(it->second);
  mems_.erase(it);
  return o;
}

VkAdapter::Mem* VkAdapter::containing(DevPtr p) {
  auto it = mems_.upper_bound(p);
  if (it == mems_.begin()) return nullptr;
  --it;
  Mem& m = it->second;
  if (p >= m.base && p < m.base + m.size) return &m;
  return nullptr;
}

// Maps host-visible memory and gives the object its pointer (or a synthetic one).
Outcome VkAdapter::finish_memory(Dev& d, Mem& m, const char* what) {
  const bool visible = d.mem.memoryTypes[m.type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
  if (m.buffer && !m.buffer_bound) {
    if (Outcome o = call("vkBindBufferMemory", d.fn.vkBindBufferMemory(d.device, m.buffer, m.memory, 0),
                         std::string(what) + ": bind the transfer buffer");
        !o.ok()) {
      release_memory(m);
      return o;
    }
    m.buffer_bound = true;
  }
  if (visible) {
    if (Outcome o = call("vkMapMemory", d.fn.vkMapMemory(d.device, m.memory, 0, VK_WHOLE_SIZE, 0, &m.map)); !o.ok()) {
      m.map = nullptr;
      release_memory(m);
      return o;
    }
    m.base = reinterpret_cast<DevPtr>(m.map);
  } else {
    m.base = kSyntheticBase + synthetic_next_++ * kSyntheticStride;
  }
  return Outcome::success();
}

Outcome VkAdapter::release_memory(Mem& m) {
  Dev& d = devs_[static_cast<std::size_t>(m.device)];
  if (m.map) d.fn.vkUnmapMemory(d.device, m.memory);
  if (m.buffer) d.fn.vkDestroyBuffer(d.device, m.buffer, nullptr);
  if (m.memory) d.fn.vkFreeMemory(d.device, m.memory, nullptr);
  m.map = nullptr;
  m.buffer = VK_NULL_HANDLE;
  m.memory = VK_NULL_HANDLE;
  return call("vkFreeMemory", VK_SUCCESS);
}

// The import itself: vkAllocateMemory with VkImportMemoryFdInfoKHR (and the dedicated
// buffer the record describes). `fd` is this process's descriptor: released when a
// successful import took it (or a failed one closed it), left to the caller otherwise.
Result<DevPtr> VkAdapter::import_memory(Dev& d, int device, const Import& im, unique_fd& fd) {
  Mem m;
  m.device = device;
  m.imported = true;
  m.size = im.size;
  m.bytes = im.size;
  m.type = im.memory_type;
  m.dedicated = im.dedicated;
  m.buffer_size = im.buffer_size;
  VkExternalMemoryBufferCreateInfo ext_buffer{VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO, nullptr,
                                              im.handle_type};
  if (m.dedicated) {
    VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, &ext_buffer};
    bi.size = im.buffer_size;
    bi.usage = kBufferUsage;
    if (Outcome o = call("vkCreateBuffer", d.fn.vkCreateBuffer(d.device, &bi, nullptr, &m.buffer),
                         "mem_open: the dedicated buffer the record describes");
        !o.ok())
      return {o};
  }
  VkImportMemoryFdInfoKHR ii{VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR, nullptr,
                             static_cast<VkExternalMemoryHandleTypeFlagBits>(im.handle_type), fd.get()};
  VkMemoryDedicatedAllocateInfo ded{VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO, nullptr, VK_NULL_HANDLE, m.buffer};
  if (m.dedicated) ii.pNext = &ded;
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, &ii, m.size, m.type};
  const VkResult r = d.fn.vkAllocateMemory(d.device, &ai, nullptr, &m.memory);
  if (r == VK_SUCCESS) (void)fd.release();  // the driver owns it now
  Outcome o = call("vkAllocateMemory", r,
                   "mem_open: import of " + std::to_string(m.size) + " bytes, memory type " + std::to_string(m.type));
  if (!o.ok()) {
    // The layer may flag an import the driver accepted: that memory is still ours to free.
    if (m.memory) d.fn.vkFreeMemory(d.device, m.memory, nullptr);
    if (m.buffer) d.fn.vkDestroyBuffer(d.device, m.buffer, nullptr);
    if (validation_) log_.drain();
    if (r != VK_SUCCESS) {
      if (keep_or_forget(fd)) o.message += " (the driver closed the descriptor although the import failed)";
    }
    return {o};
  }
  if (!m.dedicated && staging_) {
    // The copy path needs a buffer on the memory; made now so that close finds it bound.
    if (Outcome b = make_transfer_buffer(d, m); !b.ok()) {
      release_memory(m);
      return {b};
    }
  }
  if (Outcome f = finish_memory(d, m, "mem_open"); !f.ok()) return {f};
  // The whole allocation, as CUDA does for an interior pointer: the record's offset is not
  // bound to the export (no token), so the importer never moves by it.
  m.opened_at = m.base;
  const DevPtr p = m.opened_at;
  mems_.emplace(m.base, std::move(m));
  return {Outcome::runtime_success("vkAllocateMemory"), p};
}

Outcome VkAdapter::make_transfer_buffer(Dev& d, Mem& m) {
  if (m.buffer) return Outcome::success();
  VkExternalMemoryBufferCreateInfo ext_buffer{VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO, nullptr,
                                              static_cast<VkExternalMemoryHandleTypeFlags>(kMemHandle)};
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, (m.imported || m.exportable) ? &ext_buffer : nullptr};
  bi.size = m.size;
  bi.usage = kBufferUsage;
  if (Outcome o = call("vkCreateBuffer", d.fn.vkCreateBuffer(d.device, &bi, nullptr, &m.buffer)); !o.ok()) return o;
  VkMemoryRequirements req{};
  d.fn.vkGetBufferMemoryRequirements(d.device, m.buffer, &req);
  if (!(req.memoryTypeBits & (1u << m.type)) || req.size > m.size) {
    d.fn.vkDestroyBuffer(d.device, m.buffer, nullptr);
    m.buffer = VK_NULL_HANDLE;
    return Outcome::failure(Errc::not_implemented, "vk: a transfer buffer of " + std::to_string(m.size) +
                                                       " bytes does not fit memory type " + std::to_string(m.type));
  }
  if (m.memory) {
    if (Outcome o = call("vkBindBufferMemory", d.fn.vkBindBufferMemory(d.device, m.buffer, m.memory, 0)); !o.ok())
      return o;
    m.buffer_bound = true;
  }
  return Outcome::success();
}

// Host access: through the mapping, or a copy through a staging buffer.
Outcome VkAdapter::transfer(DevPtr p, std::size_t n, const std::byte* in, std::byte* out) {
  const char* verb = in ? "write" : "read";
  Mem* m = containing(p);
  if (!m || p + n > m->base + m->size || p + n < p)
    return Outcome::failure(Errc::invalid, std::string(verb) + ": " + std::to_string(n) + " bytes at " + hex(p) +
                                               " are not inside one allocation or open mapping of this adapter");
  if (n == 0) return Outcome::success();
  const std::size_t off = static_cast<std::size_t>(p - m->base);
  if (m->map && !staging_) {
    if (in) std::memcpy(static_cast<std::byte*>(m->map) + off, in, n);
    else std::memcpy(out, static_cast<const std::byte*>(m->map) + off, n);
    // The bytes land in the payload vkMapMemory mapped: the runtime decides what they reach.
    return Outcome::runtime_success("vkMapMemory");
  }
  return staged(*m, off, n, in, out);
}

Outcome VkAdapter::staged(Mem& m, std::size_t off, std::size_t n, const std::byte* in, std::byte* out) {
  Dev& d = devs_[static_cast<std::size_t>(m.device)];
  if (Outcome o = make_transfer_buffer(d, m); !o.ok()) return o;
  // A host-visible staging buffer of n bytes.
  Mem s;
  s.device = m.device;
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = n;
  bi.usage = kBufferUsage;
  if (Outcome o = call("vkCreateBuffer", d.fn.vkCreateBuffer(d.device, &bi, nullptr, &s.buffer)); !o.ok()) return o;
  VkMemoryRequirements req{};
  d.fn.vkGetBufferMemoryRequirements(d.device, s.buffer, &req);
  auto t = pick_type(d, req.memoryTypeBits, MemKind::host);
  if (!t || !(d.mem.memoryTypes[*t].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)) {
    d.fn.vkDestroyBuffer(d.device, s.buffer, nullptr);
    return Outcome::failure(Errc::not_implemented, "vk: no host-visible memory type for a staging buffer");
  }
  s.type = *t;
  s.size = req.size;
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, nullptr, s.size, s.type};
  if (Outcome o = call("vkAllocateMemory", d.fn.vkAllocateMemory(d.device, &ai, nullptr, &s.memory)); !o.ok()) {
    release_memory(s);
    return o;
  }
  if (Outcome o = finish_memory(d, s, "staging"); !o.ok()) return o;
  if (in) std::memcpy(s.map, in, n);
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, nullptr,
                                 VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
  Outcome o = call("vkResetCommandBuffer", d.fn.vkResetCommandBuffer(d.cmd, 0));
  if (o.ok()) o = call("vkBeginCommandBuffer", d.fn.vkBeginCommandBuffer(d.cmd, &begin));
  if (o.ok()) {
    const VkBufferCopy region{in ? 0 : off, in ? off : 0, n};
    d.fn.vkCmdCopyBuffer(d.cmd, in ? s.buffer : m.buffer, in ? m.buffer : s.buffer, 1, &region);
    o = call("vkEndCommandBuffer", d.fn.vkEndCommandBuffer(d.cmd));
  }
  if (o.ok()) {
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &d.cmd;
    o = call("vkQueueSubmit", d.fn.vkQueueSubmit(d.queue, 1, &si, VK_NULL_HANDLE),
             std::string(in ? "write" : "read") + " of " + std::to_string(n) + " bytes through a staging buffer");
  }
  if (o.ok()) o = call("vkQueueWaitIdle", d.fn.vkQueueWaitIdle(d.queue));
  if (o.ok() && out) std::memcpy(out, s.map, n);
  const Outcome freed = release_memory(s);
  if (o.ok() && !freed.ok()) return freed;
  return o.ok() ? Outcome::runtime_success("vkCmdCopyBuffer") : o;
}

// What the importer can check itself before the driver sees a record: Vulkan makes these
// the application's duty (valid usage), and the record is input from another process.
Outcome VkAdapter::importable(const Dev& d, const FdRecord& rec) {
  if (rec.size == 0)
    return Outcome::failure(Errc::invalid, "the record's allocation size is 0 (VUID-VkMemoryAllocateInfo-allocationSize-00638: "
                                           "greater than 0); nothing was imported");
  if (rec.memory_type >= d.mem.memoryTypeCount)
    return Outcome::failure(Errc::invalid, "the record's memory type " + std::to_string(rec.memory_type) + " is not one of the " +
                                               std::to_string(d.mem.memoryTypeCount) +
                                               " types of this device (VUID-vkAllocateMemory-pAllocateInfo-01714); "
                                               "nothing was imported");
  if (!import_supported(d, rec.handle_type))
    return Outcome::failure(Errc::invalid, "the record's handle type " + hex(rec.handle_type) +
                                               " is not importable for buffers on this device "
                                               "(VUID-VkImportMemoryFdInfoKHR-handleType-00667); nothing was imported");
  if ((rec.flags & FdRecord::dedicated) && (rec.buffer_size == 0 || rec.buffer_size > rec.size))
    return Outcome::failure(Errc::invalid, "the record's dedicated buffer of " + std::to_string(rec.buffer_size) +
                                               " bytes does not fit its allocation of " + std::to_string(rec.size) +
                                               "; nothing was imported");
  return Outcome::success();
}

bool VkAdapter::import_supported(const Dev& d, std::uint32_t handle_type) {
  if (handle_type == 0 || (handle_type & (handle_type - 1)) != 0) return false;  // one bit
  if (handle_type != VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT &&
      !(handle_type == VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT && d.ext_dma_buf))
    return false;
  VkPhysicalDeviceExternalBufferInfo bi{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_BUFFER_INFO, nullptr, 0,
                                        kBufferUsage, static_cast<VkExternalMemoryHandleTypeFlagBits>(handle_type)};
  VkExternalBufferProperties bp{VK_STRUCTURE_TYPE_EXTERNAL_BUFFER_PROPERTIES};
  api_.vkGetPhysicalDeviceExternalBufferProperties(d.phys, &bi, &bp);
  return bp.externalMemoryProperties.externalMemoryFeatures & VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT;
}

}  // namespace ipcheck::vk_adapter
