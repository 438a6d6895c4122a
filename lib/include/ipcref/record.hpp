// The handle record: the 64 bytes that `get` produces and `open` consumes.
//
// Layout (little-endian, fixed size so that it fits a ze_ipc_mem_handle_t):
//   0  u32 magic "IPCK"        4  u16 version       6  u8 kind       7  u8 guard kind
//   8  u32 exporter pid       12  i32 fd in exporter
//  16  u64 pid-reuse guard    24  u64 export token
//  32  u64 size               40  u64 offset
//  48  u32 device index       52  u32 export slot
//  56  u64 checksum (FNV-1a 64 of bytes 0..55)
// The token is random per export and is also written into the export's slot of the object's
// control page, which only the exporter can write (SECURITY.md); `open` proves the descriptor
// it took is that object, and the export live, by finding the token there.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace ipcref::record {

inline constexpr std::size_t size = 64;
inline constexpr std::uint32_t magic = 0x4b435049;  // "IPCK" in little-endian byte order
inline constexpr std::uint16_t version = 1;

enum class kind : std::uint8_t { memory = 1, physical_memory = 2, event = 3 };

// How the exporter's identity is pinned against pid reuse.
enum class guard_kind : std::uint8_t {
  pidfs_inode = 1,  // inode of a pidfd on pidfs (Linux >= 6.9): never reused while the system runs
  start_time = 2,   // process start time in clock ticks from /proc/<pid>/stat
};

struct fields {
  std::uint32_t magic = record::magic;
  std::uint16_t version = record::version;
  kind object_kind = kind::memory;
  guard_kind guard_type = guard_kind::pidfs_inode;
  std::uint32_t pid = 0;
  std::int32_t fd = -1;
  std::uint64_t guard = 0;
  std::uint64_t token = 0;
  std::uint64_t size = 0;
  std::uint64_t offset = 0;
  std::uint32_t device = 0;
  std::uint32_t slot = 0;
  std::uint64_t checksum = 0;
};

// One named field of the layout, for tools that inspect or mutate records (fuzz/).
struct field_desc {
  const char* name;
  std::size_t offset;
  std::size_t width;
};
std::span<const field_desc> layout() noexcept;

using bytes = std::array<std::byte, size>;

std::uint64_t checksum(std::span<const std::byte> first_56) noexcept;

// Serialises `f`, computing the checksum (f.checksum is ignored).
bytes encode(const fields& f) noexcept;

// Reads the fields without judging them; `data` must be exactly `size` bytes.
fields decode(std::span<const std::byte> data) noexcept;

// Recomputes the checksum of a (possibly mutated) record in place.
void reseal(std::span<std::byte, size> data) noexcept;

// Checks framing: size, magic, version, kind, guard kind, checksum and field ranges.
// Returns a message naming the field, the value and the fix, or nothing when sound.
// `size_clause` is the spec clause a wrong byte count violates (cited in the message).
std::optional<std::string> check(std::span<const std::byte> data, kind expected,
                                 const char* size_clause);

const char* kind_name(kind k) noexcept;

}  // namespace ipcref::record
