// What the importer's two files share: object_import.cpp (the import itself: the descriptor
// fetched from an exporter its identity guard proves, the fast path, the proof before
// anything is mapped) and object_export_read.cpp (reading an export's object header and
// slot, wherever this importer may read them). Private to lib/src.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "object.hpp"
#include "object_impl.hpp"

namespace ipcref::detail {

// ---------------------------------------------------------------- who vouches for a descriptor

// A copy of one export slot.
struct slot_fields {
  std::uint64_t token = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint64_t reserved = 0;
};
static_assert(sizeof(slot_fields) == sizeof(export_slot));

// What an importer read about one export: its object's header and its slot.
struct export_view {
  control_fields header{};
  slot_fields slot{};
};

// What an importer may keep between opens: nothing that holds a descriptor or a mapping
// (rb.close.no_leak), only facts. A memfd's name never changes, so a data object's
// control inode is a fact; where an exporter maps a control page is one only while its
// witness is intact, which every read checks.
struct located_control {
  std::uintptr_t page = 0;  // the exporter's address of its control page; the witness follows
  std::uint64_t witness = 0;
  control_fields header{};
};
struct location_key {
  std::uint32_t pid;
  std::uint8_t guard_kind;
  std::uint64_t guard;
  std::uint64_t control_ino;
  auto operator<=>(const location_key&) const = default;
};
// An exporter's descriptor whose export this process has proven (the fast path's key).
struct proven_key {
  std::uint32_t pid;
  std::int32_t fd;
  std::uint8_t guard_kind;
  std::uint64_t guard;
  friend bool operator==(const proven_key&, const proven_key&) = default;
};
struct proven_key_hash {
  std::size_t operator()(const proven_key& k) const noexcept {
    return std::hash<std::uint64_t>()((std::uint64_t{k.pid} << 32 | static_cast<std::uint32_t>(k.fd)) ^
                                      (k.guard * 0x9e3779b97f4a7c15ull) ^ k.guard_kind);
  }
};
struct import_caches {
  std::mutex lock;
  std::unordered_map<object_key, std::uint64_t, object_key_hash> control_of;  // 0: not an ipcref data object
  std::map<location_key, located_control> located;
  std::unordered_map<proven_key, located_control, proven_key_hash> proven;
};
import_caches& caches();
inline constexpr std::size_t kCacheLimit = 1024;  // entries of each; each is emptied when full

// Why an open is refused when the exporter has exited (object_import.cpp).
refusal exporter_exited(const record::fields& rec, const char* verb);
// Why an open is refused when the descriptor is not an exported object of `kind`.
refusal not_an_object(const record::fields& rec, record::kind kind, const char* verb);

// Reading an export (object_export_read.cpp): its slot and its object's witness from the
// exporter's control page at `page`; the slot's copy in the data object (seeded defect
// importer_writes_liveness); its header and slot from wherever this importer may read them.
sys::or_refusal<bool> read_slot_and_witness(const record::fields& rec, std::uintptr_t page, slot_fields& slot,
                                            std::uint64_t& witness, const char* verb);
slot_fields read_mirrored_slot(int fd, const record::fields& rec);
sys::or_refusal<export_view> read_export(int fd, const struct stat& st, const record::fields& rec, record::kind kind,
                                         const char* verb, const open_options& opts,
                                         std::optional<located_control>& read_at);

}  // namespace ipcref::detail
