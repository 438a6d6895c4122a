// Handle layouts: what ipcheck knows of each adapter's handle bytes (field names, offsets,
// widths, the meaning of each field, and how to recompute a checksum), selected by the
// name an adapter reports in AdapterInfo::handle_layout.
//
//   ipcref/1             exact   the reference record (lib/include/ipcref/record.hpp)
//   ze-ipcheck-opaque/1  exact   libze_ipcheck's opaque handle: the ipcref record itself
//   ze-ipcheck-fd/1      exact   libze_ipcheck's fd-first handle: descriptor in 0..3, the
//                                record's bytes 4..63 after it (magic implied in the checksum)
//   ze-intel-fd/1        partial Intel compute-runtime IpcMemoryData (packed): u64 handle (the
//                                dma-buf fd), u64 pool offset, u8 type; the rest unused
//   ze-intel-opaque/1    partial compute-runtime IpcOpaqueMemoryData (packed): u64 handle (fd),
//                                u64 pool offset, u32 process id, u8 type, u8 memory type,
//                                reserved bytes; the rest opaque
//   vk-fd/1              exact   the vk adapter's record (harness/adapters/vk/vk_record.hpp):
//                                exporter pid + start time + fd, allocation size, offset,
//                                memory type, handle type, dedicated flag, device, dedicated
//                                buffer size, the exported file's inode and device, FNV-1a
//                                checksum
//   cuda-fd-record/1     exact   the cuda adapter's physical-memory record (fd_record.hpp)
//   ze-adapter-physical/1 exact  the ze adapter's physical-memory record (no checksum)
//   cuda-ipc-mem/learned partial CUipcMemHandle as learned on driver 580.159.04: pid at 8, the
//                                allocation's size at 16 and offset in its 2 MiB chunk at 28,
//                                the chunk at 40..55; the rest opaque
//   ur-umf-l0-v1/1       partial Unified Runtime's memory handle on its Level Zero v1 adapter:
//                                UMF's 40-byte header (handle_id, base, pid, baseSize, offset),
//                                the provider's pid, the ze_ipc_mem_handle_t (descriptor first)
//   ur-umf-l0-v2/1       partial the same on the v2 adapter (UMF's Level Zero provider: pid,
//                                size, ze_ipc_mem_handle_t): 120 bytes
//   ur-umf-cuda/1        partial the same on UR's CUDA adapter: the header, then CUipcMemHandle
//                                with cuda-ipc-mem/learned's fields: 104 bytes
//   ur-l0-v2-physical/1  exact   UR's Level Zero v2 physical-memory handle: pid, fd, size
//   anything else        opaque  8-byte chunks with no meaning (CUDA's event handle)
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ipcheck {

// What a field means; field-aware mutators pick their values by role.
enum class FieldRole : std::uint8_t {
  magic,
  version,
  kind,
  guard_kind,
  pid,         // the exporting process
  fd,          // a descriptor number in the exporter
  descriptor,  // a descriptor number the importer fills in (fd-first conventions)
  guard,       // pid-reuse guard
  token,       // export proof
  size,
  offset,
  device,
  slot,
  type,        // a handle-type tag
  checksum,
  opaque,
};
const char* role_name(FieldRole r) noexcept;

struct LayoutField {
  std::string name;
  std::size_t offset = 0;
  std::size_t width = 0;  // 1..8 bytes, little-endian
  FieldRole role = FieldRole::opaque;
};

class HandleLayout {
 public:
  std::string name;       // "ipcref/1"
  std::string knowledge;  // exact | partial | opaque
  std::size_t size = 0;   // bytes of a well-formed handle
  std::vector<LayoutField> fields;
  // Recomputes the checksum of data[0..size) in place; null when the layout has none.
  void (*reseal_fn)(std::span<std::byte> data) = nullptr;

  bool has_checksum() const noexcept { return reseal_fn != nullptr; }
  // No-op for layouts without a checksum; `data` must hold at least `size` bytes.
  void reseal(std::span<std::byte> data) const;
  bool checksum_valid(std::span<const std::byte> data) const;

  // Index of the first field with `role` (or name), or -1.
  int find(FieldRole role) const noexcept;
  int find(const std::string& field_name) const noexcept;
  // Little-endian value of field `i` in `data` (which holds at least `size` bytes).
  std::uint64_t get(std::span<const std::byte> data, int i) const noexcept;
  void set(std::span<std::byte> data, int i, std::uint64_t v) const noexcept;
  // Mask (bit i = field i) of the fields that overlap [begin, end).
  std::uint64_t fields_overlapping(std::size_t begin, std::size_t end) const noexcept;
};

// The layout named `name`; for a name fuzz/ does not know, an opaque layout of
// `handle_bytes` bytes (named "opaque/<n>").
const HandleLayout& layout_for(const std::string& name, std::size_t handle_bytes);
// Names of the layouts fuzz/ knows (not the opaque fallback).
std::vector<std::string> known_layouts();

// All ones in the low `width` bytes.
inline std::uint64_t width_mask(std::size_t width) noexcept { return width >= 8 ? ~0ull : (1ull << (8 * width)) - 1; }
std::uint64_t load_le(const std::byte* p, std::size_t width) noexcept;
void store_le(std::byte* p, std::size_t width, std::uint64_t v) noexcept;

}  // namespace ipcheck
