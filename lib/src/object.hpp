// Exportable kernel objects and the import protocol shared by memory, physical memory
// and events.
//
// An object is a sealed memfd: file page 0 is the object header (magic, kind, payload
// size, export slots), the payload starts at file offset page_size(). Each export takes
// a slot and writes a random token there; the record carries the same token. An
// importer fetches the descriptor, checks it is a sealed memfd, reads the header with
// pread and finds its token in the named slot before anything is mapped. Revoking an
// export (put, free) clears the slot, so stale bytes no longer open.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ipcref/ipcref.hpp"
#include "sys.hpp"

namespace ipcref::detail {

inline constexpr std::uint64_t kObjectMagic = 0x314a424f4b435049ull;  // "IPCKOBJ1"
inline constexpr std::uint32_t kFlagIpcEnabled = 1u;

struct export_slot {
  std::atomic<std::uint64_t> token;  // 0 when free
  std::uint64_t offset;
  std::uint64_t size;
  std::uint64_t reserved;
};

struct object_header {
  std::uint64_t magic;
  std::uint32_t kind;
  std::uint32_t flags;
  std::uint64_t payload_size;
  std::uint32_t device;
  std::uint32_t slot_count;
  std::uint64_t reserved[4];
  export_slot slots[1];  // slot_count of them fill the rest of the page
};
static_assert(offsetof(object_header, slots) == 64 && sizeof(export_slot) == 32);

std::uint32_t slots_per_object() noexcept;
std::uint64_t payload_file_offset() noexcept;

// The exporter's side of one object.
class exportable {
 public:
  exportable(record::kind kind, std::size_t payload_bytes, std::uint32_t device, std::uint32_t flags);
  exportable(exportable&&) noexcept = default;
  exportable& operator=(exportable&&) noexcept = default;
  ~exportable();

  int fd() const noexcept { return fd_.get(); }
  std::size_t payload_size() const noexcept { return payload_; }
  std::uint32_t flags() const noexcept;

  // Maps the whole payload read-write, shared.
  sys::mapping map_payload() const;

  // Takes a slot and returns the record of a new export of [offset, offset + size).
  record::bytes publish(std::uint64_t offset, std::uint64_t size);
  // Clears the slot of a live export of this object; false when `f` names none.
  bool revoke(const record::fields& f) noexcept;
  void revoke_all() noexcept;
  std::size_t live_exports() const noexcept;
  // True when `f` was exported by this object (same descriptor, live token).
  bool owns(const record::fields& f) const noexcept;

 private:
  object_header* header() const noexcept { return static_cast<object_header*>(header_map_.get()); }
  unique_fd fd_;
  sys::mapping header_map_;
  record::kind kind_;
  std::size_t payload_ = 0;
};

// What an importer holds after the object was proven.
struct imported_object {
  unique_fd fd;
  record::fields rec;
  std::uint64_t payload_size = 0;
  std::uint32_t flags = 0;
};

// Validates `data`, fetches the descriptor (pidfd_getfd, or a dup of opts.descriptor),
// and proves it is the exported object. `verb` prefixes every message.
imported_object import_object(std::span<const std::byte> data, record::kind kind, const char* verb,
                              const char* size_clause, const open_options& opts);

// Number of configured devices (platform.cpp).
std::size_t platform_device_count();

// Fills pid, guard kind and guard for this process.
void stamp_exporter(record::fields& f);
// Decodes a handle and checks that this process exported it; throws invalid otherwise.
record::fields decode_own_handle(const handle& h, record::kind kind, const char* verb);

struct handle_access {
  static handle make(const record::bytes& bytes, int descriptor) {
    handle h;
    h.bytes_ = bytes;
    h.descriptor_ = descriptor;
    h.put_ = false;
    return h;
  }
  static void mark_put(handle& h) noexcept {
    h.put_ = true;
    h.descriptor_ = -1;
  }
  static bool is_put(const handle& h) noexcept { return h.put_; }
};

}  // namespace ipcref::detail
