// USM allocations and ipc::memory.
#include <sys/mman.h>
#include <time.h>

#include <cstring>
#include <utility>

#include "ipcref/defects.hpp"
#include "ipcref/failpoints.hpp"
#include "registry.hpp"
#include "text.hpp"

namespace ipcref {

using detail::reg;
using text::cat;
using text::hex;

namespace detail {

registry& reg() {
  static registry* r = new registry;  // never destroyed: usable from static destructors
  return *r;
}

allocation* find_allocation(registry& r, const void* ptr) {
  const auto p = reinterpret_cast<std::uintptr_t>(ptr);
  auto it = r.allocations.upper_bound(p);
  if (it == r.allocations.begin()) return nullptr;
  --it;
  return p < it->first + it->second.size ? &it->second : nullptr;
}

void require_device_in(const context& ctx, const device& dev, const char* verb, const char* clause) {
  if (!ctx.contains(dev))
    sys::fail(errc::invalid, cat(verb, ": device '", dev.name(), "' is not in the context (clause ", clause,
                                 "); use a context that contains it"));
}

}  // namespace detail

namespace {

void* allocate(std::size_t bytes, usm_kind kind, const device* dev, const context& ctx, const char* verb) {
  if (bytes == 0) sys::fail(errc::invalid, cat(verb, ": size is 0; allocate at least one byte"));
  if (bytes > (1ull << 46)) sys::fail(errc::exhausted, cat(verb, ": ", bytes, " bytes is more than ipcref allocates"));
  if (dev) detail::require_device_in(ctx, *dev, verb, "usm");
  detail::allocation a;
  a.kind = kind;
  a.device = dev ? dev->index() : ctx.devices().front().index();
  a.ctx = ctx.id();
  a.size = bytes;
  if (kind == usm_kind::host) {
    const std::size_t len = sys::round_up(bytes, sys::page_size());
    void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) sys::fail(errc::exhausted, cat(verb, ": cannot map ", bytes, " bytes: ", sys::errno_text(errno)));
    a.payload = sys::mapping(p, len);
  } else {
    a.object.emplace(record::kind::memory, bytes, a.device, 0u);
    a.payload = a.object->map_payload();
  }
  a.base = a.payload.get();
  auto& r = reg();
  std::lock_guard lock(r.lock);
  void* base = a.base;
  r.allocations.emplace(reinterpret_cast<std::uintptr_t>(base), std::move(a));
  return base;
}

}  // namespace

const char* usm_kind_name(usm_kind k) noexcept {
  switch (k) {
    case usm_kind::host: return "host";
    case usm_kind::device: return "device";
    case usm_kind::shared: return "shared";
  }
  return "unknown";
}

void* malloc_device(std::size_t bytes, const device& dev, const context& ctx) {
  return allocate(bytes, usm_kind::device, &dev, ctx, "malloc_device");
}
void* malloc_shared(std::size_t bytes, const device& dev, const context& ctx) {
  return allocate(bytes, usm_kind::shared, &dev, ctx, "malloc_shared");
}
void* malloc_host(std::size_t bytes, const context& ctx) {
  return allocate(bytes, usm_kind::host, nullptr, ctx, "malloc_host");
}

void free(void* ptr, const context& ctx) {
  failpoints::check("ipcref::free");
  auto& r = reg();
  std::lock_guard lock(r.lock);
  auto it = r.allocations.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == r.allocations.end()) {
    if (r.mappings.count(ptr))
      sys::fail(errc::invalid, cat("free: ", ptr, " was opened from another process; release it with "
                                   "ipc::memory::close"));
    sys::fail(errc::invalid, cat("free: ", ptr, " is not the start of an allocation of this process"));
  }
  if (it->second.ctx != ctx.id())
    sys::fail(errc::invalid, cat("free: ", ptr, " was allocated in another context"));
  r.allocations.erase(it);  // revokes every export, unmaps, closes the memfd
}

pointer_info get_pointer_info(const void* ptr, const context& ctx) {
  auto& r = reg();
  std::lock_guard lock(r.lock);
  if (auto* a = detail::find_allocation(r, ptr); a && a->ctx == ctx.id())
    return {a->kind, a->device, a->base, a->size, false};
  if (auto it = r.mappings.find(const_cast<void*>(ptr)); it != r.mappings.end() && it->second.ctx == ctx.id())
    return {usm_kind::device, it->second.device, it->first, it->second.size, true};
  sys::fail(errc::invalid, cat("get_pointer_info: ", ptr, " is not memory of this context"));
}

namespace ipc::memory {

handle get(void* ptr, const context& ctx) {
  auto& r = reg();
  std::lock_guard lock(r.lock);
  detail::allocation* a = detail::find_allocation(r, ptr);
  if (!a) {
    if (r.mappings.count(ptr))
      sys::fail(errc::invalid, cat("memory::get: ", ptr, " was opened from another process; "
                                   "ipcref does not re-export imported memory"));
    sys::fail(errc::invalid, cat("memory::get: ", ptr, " is not memory allocated by this process"));
  }
  if (a->ctx != ctx.id()) sys::fail(errc::invalid, cat("memory::get: ", ptr, " was allocated in another context"));
  if (!a->object)
    sys::fail(errc::invalid, cat("memory::get: ", ptr, " is a host allocation, which is not exportable "
                                 "(clause sycl.mem.get.non_device); allocate with malloc_device"));
  const device dev = get_devices().at(a->device);
  if (!dev.has(aspect::ipc_memory))
    sys::fail(errc::feature_not_supported, cat("memory::get: device '", dev.name(),
                                               "' lacks aspect ipc_memory (clause sycl.mem.get.aspect)"));
  std::uint64_t offset = reinterpret_cast<std::uintptr_t>(ptr) - reinterpret_cast<std::uintptr_t>(a->base);
  if (defects::is(defects::id::interior_offset_page_aligned)) offset -= offset % sys::page_size();
  return detail::handle_access::make(a->object->publish(offset, a->size - offset), *a->object);
}

void put(handle& h, const context& ctx) {
  failpoints::check("ipcref::mem_put");
  const record::fields f = detail::decode_own_handle(h, record::kind::memory, "memory::put");
  auto& r = reg();
  std::lock_guard lock(r.lock);
  for (auto& [base, a] : r.allocations) {
    if (!a.object || !a.object->owns(f)) continue;
    if (a.ctx != ctx.id()) sys::fail(errc::invalid, "memory::put: the handle's memory belongs to another context");
    if (defects::is(defects::id::put_revokes_all))
      a.object->revoke_all();
    else if (!defects::is(defects::id::put_keeps_export))
      a.object->revoke(f);
    detail::handle_access::mark_put(h);
    return;
  }
  sys::fail(errc::invalid, "memory::put: the handle's export is not live (its memory was freed)");
}

void* try_open(std::span<const std::byte> data, const context& ctx, const device& dev, const open_options& opts,
               refusal& why) {
  if (failpoints::refuse("ipcref::mem_open", why)) return nullptr;
  if (defects::is(defects::id::slow_open)) {  // seeded: a slow path in the verb, 50 us
    timespec t{0, 50'000};
    while (::nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
  }
  try {  // the caller's context and device: a misuse, not a refused handle (rare; thrown inside)
    detail::require_device_in(ctx, dev, "memory::open", "sycl.mem.open.aspect");
    if (!dev.has(aspect::ipc_memory))
      sys::fail(errc::feature_not_supported, cat("memory::open: device '", dev.name(),
                                                 "' lacks aspect ipc_memory (clause sycl.mem.open.aspect)"));
  } catch (const exception& e) {
    why = {e.code_value(), e.what()};
    return nullptr;
  }
  auto imported = detail::try_import_object(data, record::kind::memory, "memory::open", "sycl.mem.open.size", opts);
  if (!imported) {
    why = std::move(imported.error());
    return nullptr;
  }
  detail::imported_object& obj = *imported;
  const std::size_t page = sys::page_size();
  const std::uint64_t in_page = obj.rec.offset % page;
  // Only the pages of the export: the data object holds nothing else of this process.
  std::uint64_t from = detail::payload_file_offset() + (obj.rec.offset - in_page);
  std::size_t lead = 0;
  // Seeded defect: the mapping starts at the object's first page, the export table's copy.
  if (defects::is(defects::id::importer_writes_liveness)) lead = std::exchange(from, 0);
  const std::size_t len = lead + sys::round_up(in_page + obj.rec.size, page);
  // Seeded defect: an open on another device than the exporter's gets a private copy.
  const int share =
      defects::is(defects::id::other_device_mem_copy) && obj.rec.device != dev.index() ? MAP_PRIVATE : MAP_SHARED;
  void* base = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, share, obj.fd.get(), static_cast<off_t>(from));
  if (base == MAP_FAILED) {
    why = {errc::exhausted, cat("memory::open: cannot map ", obj.rec.size, " bytes: ", sys::errno_text(errno))};
    return nullptr;
  }
  sys::mapping map(base, len);
  void* ptr = static_cast<char*>(base) + lead + in_page;
  // Seeded defect: the open marks the handle consumed in its caller's buffer (the record's
  // exporter descriptor field, bytes 12..15, cleared), bytes the caller handed over as const.
  if (defects::is(defects::id::open_writes_handle) && data.size() >= 16)
    std::memset(const_cast<std::byte*>(data.data()) + 12, 0, 4);
  if (defects::is(defects::id::leak_fd_per_open)) (void)obj.fd.release();
  auto& r = reg();
  std::lock_guard lock(r.lock);
  // Seeded defects: a runtime's import cache that serves a live mapping again, keyed by
  // the export (open_same_mapping) or only by exporter pid and descriptor number, which
  // a reallocation reuses (stale_mapping_cache).
  const bool same = defects::is(defects::id::open_same_mapping);
  const bool stale = defects::is(defects::id::stale_mapping_cache);
  if (same || stale)
    for (auto& [p, m] : r.mappings)
      if (m.ctx == ctx.id() && m.exporter_pid == obj.rec.pid && m.exporter_fd == obj.rec.fd &&
          (stale || m.token == obj.rec.token))
        return p;
  // Seeded defect: a cache that hands the new export's pages to the importer's earlier, live
  // mappings of the same exporter (each is replaced by a duplicate of the new mapping).
  if (defects::is(defects::id::reopen_replaces_live_mapping))
    for (auto& [p, m] : r.mappings)
      if (m.ctx == ctx.id() && m.exporter_pid == obj.rec.pid && m.token != obj.rec.token && m.map.size() == len)
        (void)::mremap(base, 0, len, MREMAP_MAYMOVE | MREMAP_FIXED, m.map.get());
  detail::open_mapping m{std::move(map), ctx.id(), dev.index(), obj.rec.size, obj.rec.pid, obj.rec.fd, obj.rec.token};
  if (auto node = std::move(r.spare_mapping)) {
    node.key() = ptr;
    node.mapped() = std::move(m);
    r.mappings.insert(std::move(node));
  } else {
    r.mappings.emplace(ptr, std::move(m));
  }
  return ptr;
}

void* open(std::span<const std::byte> data, const context& ctx, const device& dev, const open_options& opts) {
  refusal why;
  void* p = try_open(data, ctx, dev, opts, why);
  if (!p) sys::fail(why);
  return p;
}

void close(void* ptr, const context& ctx) {
  failpoints::check("ipcref::mem_close");
  auto& r = reg();
  std::lock_guard lock(r.lock);
  auto it = r.mappings.find(ptr);
  if (it == r.mappings.end()) {
    if (defects::is(defects::id::double_close_ok)) return;
    if (detail::find_allocation(r, ptr))
      sys::fail(errc::invalid, cat("memory::close: ", ptr, " is this process's own allocation; free it instead"));
    sys::fail(errc::invalid, cat("memory::close: ", ptr, " is not an open mapping of this process "
                                 "(closed twice, or never opened; clause rb.close.double)"));
  }
  if (it->second.ctx != ctx.id())
    sys::fail(errc::invalid, cat("memory::close: ", ptr, " was opened in another context"));
  if (defects::is(defects::id::close_keeps_mapping)) (void)it->second.map.release();
  auto node = r.mappings.extract(it);
  node.mapped() = detail::open_mapping{};  // unmaps
  r.spare_mapping = std::move(node);
}

}  // namespace ipc::memory
}  // namespace ipcref
