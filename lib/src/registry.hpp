// Everything the library holds in this process, behind one lock. Opaque handles that
// callers pass back (pointers, physical_mem, event) are looked up here first, so a
// garbage value is an `invalid` error and never a dereference.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "ipcref/ipcref.hpp"
#include "object.hpp"

namespace ipcref {

struct physical_mem_object {
  std::uint64_t ctx = 0;
  std::uint32_t device = 0;
  bool imported = false;
  bool ipc_enabled = false;
  std::size_t size = 0;
  std::optional<detail::exportable> exported;  // the creator's object
  unique_fd imported_fd;                       // an opener's descriptor
  std::uint32_t refs = 1;
  bool private_copy = false;  // seeded defect other_device_phys_copy: its mappings are private
  int fd() const noexcept { return exported ? exported->fd() : imported_fd.get(); }
};

struct event_state {
  std::atomic<std::uint32_t> signaled;  // the futex word
  std::atomic<std::uint32_t> waiters;
  std::atomic<std::uint64_t> signal_count;
  std::atomic<std::uint64_t> signal_ns;
};

struct event_object {
  std::uint64_t ctx = 0;
  std::uint32_t device = 0;
  event_properties props;
  bool imported = false;
  std::optional<detail::exportable> exported;
  sys::mapping state_map;
  event_state* state = nullptr;
  std::uint32_t refs = 1;
  std::atomic<bool> private_signal{false};  // seeded defect event_signal_private only
};

namespace detail {

struct allocation {
  void* base = nullptr;
  std::size_t size = 0;
  usm_kind kind = usm_kind::host;
  std::uint32_t device = 0;
  std::uint64_t ctx = 0;
  std::optional<exportable> object;  // device and shared kinds
  sys::mapping payload;
};

struct open_mapping {
  sys::mapping map;
  std::uint64_t ctx = 0;
  std::uint32_t device = 0;
  std::size_t size = 0;
  std::uint32_t exporter_pid = 0;  // which export it came from (seeded defects key on these)
  std::int32_t exporter_fd = -1;
  std::uint64_t token = 0;
};

struct reservation {
  std::size_t size = 0;
  std::uint64_t ctx = 0;
  std::map<std::uintptr_t, std::size_t> mapped;  // start -> length
};

struct registry {
  std::mutex lock;
  std::map<std::uintptr_t, allocation> allocations;  // by base address
  std::unordered_map<void*, open_mapping> mappings;  // by returned pointer
  // The node of the last closed mapping (unmapped, empty), which the next open reuses: an
  // open + close cycle then allocates nothing.
  std::unordered_map<void*, open_mapping>::node_type spare_mapping;
  std::unordered_map<physical_mem_object*, std::unique_ptr<physical_mem_object>> physicals;
  std::map<std::uintptr_t, reservation> reservations;
  std::unordered_map<event_object*, std::unique_ptr<event_object>> events;
};

registry& reg();

// The allocation containing `ptr`, or null.
allocation* find_allocation(registry& r, const void* ptr);

void require_device_in(const context& ctx, const device& dev, const char* verb, const char* clause);

}  // namespace detail
}  // namespace ipcref
