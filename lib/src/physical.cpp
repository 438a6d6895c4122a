// Physical memory objects, virtual ranges, and ipc::physical_memory.
#include <sys/mman.h>

#include "ipcref/defects.hpp"
#include "registry.hpp"
#include "text.hpp"

namespace ipcref {

using detail::reg;
using text::cat;

namespace {

physical_mem_object& lookup(detail::registry& r, physical_mem pm, const char* verb) {
  auto it = r.physicals.find(pm);
  if (it == r.physicals.end())
    sys::fail(errc::invalid, cat(verb, ": ", static_cast<void*>(pm), " is not a live physical memory object "
                                 "(released already?)"));
  return *it->second;
}

void drop_reference(detail::registry& r, physical_mem pm) {
  if (--pm->refs == 0) r.physicals.erase(pm);  // revokes exports, closes the memfd
}

detail::reservation& lookup_reservation(detail::registry& r, void* ptr, std::size_t bytes, const context& ctx,
                                        const char* verb) {
  const auto p = reinterpret_cast<std::uintptr_t>(ptr);
  auto it = r.reservations.upper_bound(p);
  if (it == r.reservations.begin())
    sys::fail(errc::invalid, cat(verb, ": ", ptr, " is not inside a range from virtual_reserve"));
  --it;
  if (p + bytes > it->first + it->second.size || p + bytes < p)
    sys::fail(errc::invalid, cat(verb, ": [", ptr, ", +", bytes, ") is not inside a range from virtual_reserve"));
  if (it->second.ctx != ctx.id()) sys::fail(errc::invalid, cat(verb, ": ", ptr, " was reserved in another context"));
  return it->second;
}

void require_granular(std::size_t v, const char* what, const char* verb) {
  if (v % physical_granularity() != 0)
    sys::fail(errc::invalid, cat(verb, ": ", what, " ", v, " is not a multiple of the granularity ",
                                 physical_granularity(), "; round it up"));
}

}  // namespace

std::size_t physical_granularity() noexcept { return sys::page_size(); }

physical_mem physical_create(const context& ctx, const device& dev, std::size_t bytes, bool enable_ipc) {
  detail::require_device_in(ctx, dev, "physical_create", "sycl.phys.open.ctx_dev");
  if (bytes == 0) sys::fail(errc::invalid, "physical_create: size is 0");
  require_granular(bytes, "size", "physical_create");
  auto obj = std::make_unique<physical_mem_object>();
  obj->ctx = ctx.id();
  obj->device = dev.index();
  obj->ipc_enabled = enable_ipc;
  obj->size = bytes;
  obj->exported.emplace(record::kind::physical_memory, bytes, dev.index(), enable_ipc ? detail::kFlagIpcEnabled : 0u);
  auto& r = reg();
  std::lock_guard lock(r.lock);
  physical_mem pm = obj.get();
  r.physicals.emplace(pm, std::move(obj));
  return pm;
}

void physical_retain(physical_mem pm) {
  auto& r = reg();
  std::lock_guard lock(r.lock);
  ++lookup(r, pm, "physical_retain").refs;
}

void physical_release(physical_mem pm) {
  auto& r = reg();
  std::lock_guard lock(r.lock);
  lookup(r, pm, "physical_release");
  drop_reference(r, pm);
}

std::size_t physical_size(physical_mem pm) {
  auto& r = reg();
  std::lock_guard lock(r.lock);
  return lookup(r, pm, "physical_size").size;
}

bool physical_ipc_enabled(physical_mem pm) {
  auto& r = reg();
  std::lock_guard lock(r.lock);
  return lookup(r, pm, "physical_ipc_enabled").ipc_enabled;
}

std::uint32_t physical_reference_count(physical_mem pm) {
  auto& r = reg();
  std::lock_guard lock(r.lock);
  return lookup(r, pm, "physical_reference_count").refs;
}

void* virtual_reserve(const context& ctx, std::size_t bytes) {
  if (bytes == 0) sys::fail(errc::invalid, "virtual_reserve: size is 0");
  require_granular(bytes, "size", "virtual_reserve");
  void* p = ::mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) sys::fail(errc::exhausted, cat("virtual_reserve: ", bytes, " bytes: ", sys::errno_text(errno)));
  auto& r = reg();
  std::lock_guard lock(r.lock);
  r.reservations.emplace(reinterpret_cast<std::uintptr_t>(p), detail::reservation{bytes, ctx.id(), {}});
  return p;
}

void virtual_free(const context& ctx, void* ptr, std::size_t bytes) {
  auto& r = reg();
  std::lock_guard lock(r.lock);
  auto it = r.reservations.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == r.reservations.end() || it->second.size != bytes)
    sys::fail(errc::invalid, cat("virtual_free: [", ptr, ", +", bytes, ") is not a range from virtual_reserve"));
  if (it->second.ctx != ctx.id()) sys::fail(errc::invalid, "virtual_free: range was reserved in another context");
  ::munmap(ptr, bytes);  // also drops any mapping still in it
  r.reservations.erase(it);
}

void virtual_map(const context& ctx, void* ptr, std::size_t bytes, physical_mem pm, std::size_t offset, access acc) {
  require_granular(reinterpret_cast<std::uintptr_t>(ptr), "address", "virtual_map");
  require_granular(bytes, "size", "virtual_map");
  require_granular(offset, "offset", "virtual_map");
  auto& r = reg();
  std::lock_guard lock(r.lock);
  physical_mem_object& obj = lookup(r, pm, "virtual_map");
  if (bytes == 0 || offset > obj.size || bytes > obj.size - offset)
    sys::fail(errc::invalid, cat("virtual_map: [", offset, ", +", bytes, ") is outside the ", obj.size,
                                 "-byte physical object"));
  auto& res = lookup_reservation(r, ptr, bytes, ctx, "virtual_map");
  const auto p = reinterpret_cast<std::uintptr_t>(ptr);
  for (const auto& [start, len] : res.mapped)
    if (p < start + len && start < p + bytes)
      sys::fail(errc::invalid, cat("virtual_map: ", ptr, " overlaps a range mapped already; unmap it first"));
  const int prot = acc == access::read_write ? PROT_READ | PROT_WRITE : PROT_READ;
  const std::size_t from = defects::is(defects::id::virtual_map_from_zero) ? 0 : offset;
  void* got = ::mmap(ptr, bytes, prot, (obj.private_copy ? MAP_PRIVATE : MAP_SHARED) | MAP_FIXED, obj.fd(),
                     static_cast<off_t>(detail::payload_file_offset() + from));
  if (got == MAP_FAILED) sys::fail(errc::exhausted, cat("virtual_map: mmap failed: ", sys::errno_text(errno)));
  res.mapped.emplace(p, bytes);
}

void virtual_unmap(const context& ctx, void* ptr, std::size_t bytes) {
  auto& r = reg();
  std::lock_guard lock(r.lock);
  auto& res = lookup_reservation(r, ptr, bytes, ctx, "virtual_unmap");
  auto it = res.mapped.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == res.mapped.end() || it->second != bytes)
    sys::fail(errc::invalid, cat("virtual_unmap: [", ptr, ", +", bytes, ") is not a mapped range"));
  // Back to an inaccessible reservation.
  if (::mmap(ptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) == MAP_FAILED)
    sys::fail(errc::exhausted, cat("virtual_unmap: ", sys::errno_text(errno)));
  res.mapped.erase(it);
}

namespace ipc::physical_memory {

handle get(physical_mem pm, const context& ctx) {
  auto& r = reg();
  std::lock_guard lock(r.lock);
  physical_mem_object& obj = lookup(r, pm, "physical_memory::get");
  if (obj.ctx != ctx.id()) sys::fail(errc::invalid, "physical_memory::get: object belongs to another context");
  if (obj.imported)
    sys::fail(errc::invalid, "physical_memory::get: object was opened from another process; "
                             "ipcref does not re-export imported objects");
  const device dev = get_devices().at(obj.device);
  if (!dev.has(aspect::ipc_physical_memory))
    sys::fail(errc::feature_not_supported, cat("physical_memory::get: device '", dev.name(),
                                               "' lacks aspect ipc_physical_memory (clause sycl.phys.get.aspect)"));
  if (!obj.ipc_enabled)
    sys::fail(errc::invalid, "physical_memory::get: object was created without the IPC property "
                             "(clause sycl.phys.get.not_enabled); create it with enable_ipc");
  return detail::handle_access::make(obj.exported->publish(0, obj.size), *obj.exported);
}

void put(handle& h, const context& ctx) {
  const record::fields f = detail::decode_own_handle(h, record::kind::physical_memory, "physical_memory::put");
  auto& r = reg();
  std::lock_guard lock(r.lock);
  for (auto& [pm, obj] : r.physicals) {
    if (!obj->exported || !obj->exported->owns(f)) continue;
    if (obj->ctx != ctx.id()) sys::fail(errc::invalid, "physical_memory::put: object belongs to another context");
    if (!defects::is(defects::id::put_keeps_export)) obj->exported->revoke(f);
    detail::handle_access::mark_put(h);
    return;
  }
  sys::fail(errc::invalid, "physical_memory::put: the handle's export is not live (its object was released)");
}

physical_mem open(std::span<const std::byte> data, const context& ctx, const device& dev, const open_options& opts) {
  detail::require_device_in(ctx, dev, "physical_memory::open", "sycl.phys.open.ctx_dev");
  if (!dev.has(aspect::ipc_physical_memory))
    sys::fail(errc::feature_not_supported, cat("physical_memory::open: device '", dev.name(),
                                               "' lacks aspect ipc_physical_memory"));
  detail::imported_object imp = detail::import_object(data, record::kind::physical_memory, "physical_memory::open",
                                                      "sycl.phys.open.size", opts);
  if (imp.rec.offset != 0 || imp.rec.size != imp.payload_size)
    sys::fail(errc::invalid, "physical_memory::open: handle does not cover its whole object");
  auto obj = std::make_unique<physical_mem_object>();
  obj->ctx = ctx.id();
  obj->device = dev.index();
  obj->imported = true;
  obj->private_copy = defects::is(defects::id::other_device_phys_copy) && imp.rec.device != dev.index();
  obj->ipc_enabled = (imp.flags & detail::kFlagIpcEnabled) != 0;
  obj->size = defects::is(defects::id::opened_phys_size_zero) ? 0 : imp.rec.size;
  obj->imported_fd = std::move(imp.fd);
  auto& r = reg();
  std::lock_guard lock(r.lock);
  physical_mem pm = obj.get();
  r.physicals.emplace(pm, std::move(obj));
  return pm;
}

void close(physical_mem pm, const context& ctx) {
  auto& r = reg();
  std::lock_guard lock(r.lock);
  physical_mem_object& obj = lookup(r, pm, "physical_memory::close");
  if (!obj.imported)
    sys::fail(errc::invalid, "physical_memory::close: object was created here, not opened; release it with "
                             "physical_release");
  if (obj.ctx != ctx.id()) sys::fail(errc::invalid, "physical_memory::close: object belongs to another context");
  if (defects::is(defects::id::close_ignores_refcount)) {
    r.physicals.erase(pm);
    return;
  }
  drop_reference(r, pm);
}

}  // namespace ipc::physical_memory
}  // namespace ipcref
