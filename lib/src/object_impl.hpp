// What object.cpp (the exporter's side) and the importer's side (object_import.cpp,
// object_export_read.cpp) share: this process's identity, which stamps its exports and which
// an importer checks, and its own objects by data inode (a self-import reads its control page
// directly). Private to lib/src.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_map>

#include "object.hpp"

namespace ipcref::detail {

// Start time of `pid` in clock ticks (field 22 of /proc/<pid>/stat); 0 when unreadable.
std::uint64_t process_start_time(pid_t pid);

struct self_identity {
  pid_t pid = 0;
  record::guard_kind kind = record::guard_kind::pidfs_inode;
  std::uint64_t guard = 0;
};

// This process's identity; a child computes its own (never stamps its parent's).
const self_identity& self();

struct object_key {
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;
  friend bool operator==(const object_key&, const object_key&) = default;
};
struct object_key_hash {
  std::size_t operator()(const object_key& k) const noexcept { return std::hash<std::uint64_t>()(k.ino * 31 + k.dev); }
};
inline object_key key_of(const struct stat& st) { return {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)}; }

// This process's own objects by data inode: a self-import reads its control page directly.
struct own_objects {
  std::mutex lock;
  std::unordered_map<object_key, const control_header*, object_key_hash> by_data;
};
own_objects& own();

}  // namespace ipcref::detail
