// Exportable kernel objects and the import protocol shared by memory, physical memory
// and events.
//
// An object is two memfds. The data memfd holds the object's bytes and nothing else:
// it is what importers map, receive by SCM_RIGHTS or take with pidfd_getfd, and they may
// write every byte of it. The control memfd holds one page: the object header and the
// export slots (a random token per live export; put and free clear it). The exporter maps
// it read-write, then seals it (F_SEAL_FUTURE_WRITE, SHRINK, GROW, SEAL): from then on no
// descriptor of it, however obtained, can write it or map it writable, so no importer
// can decide whether an export is live. Beside the control page the exporter keeps a
// private page with a random witness that lives exactly as long as the object.
//
// The data memfd's name ("ipcref-<kind>:<control inode>") binds it to its control page;
// a name is fixed at memfd_create, so only the exporter names its objects. The header
// names the data memfd back (device and inode). An importer proves an export live before
// it maps anything:
//   - the descriptor's inode, through its name, gives the control inode;
//   - the exporter's page of that control inode is found once in /proc/<pid>/maps (its
//     read-write shared mapping; nobody else can map it writable) and cached;
//   - each open reads the export's slot and then the witness with one process_vm_readv
//     (the ptrace access pidfd_getfd needs): an intact witness after the slot proves the
//     object, hence that page, was there while the slot was read;
//   - or, for an importer without ptrace access, from the control descriptor the exporter
//     passed with the data descriptor (pread; its inode must be the one the name gives).
// Once an export of an object was proven so, the importer remembers the fact (exporter pid
// and identity guard, descriptor number -> control page, witness, header): a later open of
// the same descriptor of the same exporter checks the identity guard on the exporter's pidfd,
// takes the descriptor, checks with fstat that it is the object's data memfd still, and reads
// the slot and the witness (one process_vm_readv), without the control inode and
// /proc/<pid>/maps. An intact witness proves the object alive when the descriptor was taken;
// the guard proves the process the exporter (a process sharing its memory, clone(CLONE_VM),
// shows the witness too). Anything else (a miss, a guard or witness that differs, a slot that
// does not match) takes the whole proof above, which also gives
// every refusal its message.
// The slot's token, offset and size must be the handle's, the header's data inode the
// descriptor's. Revoking an export (put, free) clears its slot.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ipcref/ipcref.hpp"
#include "sys.hpp"

namespace ipcref::detail {

inline constexpr std::uint64_t kControlMagic = 0x314c54434b435049ull;  // "IPCKCTL1"
inline constexpr std::uint32_t kFlagIpcEnabled = 1u;
// The witness page is wiped in every child (MADV_WIPEONFORK): only the exporter itself
// holds the witness at its address, so an intact witness proves the exporter's identity
// as well as the object's life (the import fast path relies on it).
inline constexpr std::uint64_t kFeatureWitnessWipedOnFork = 1u;

struct export_slot {
  std::atomic<std::uint64_t> token;  // 0 when free
  std::uint64_t offset;
  std::uint64_t size;
  std::uint64_t reserved;
};

// The first 64 bytes of a control page.
struct control_fields {
  std::uint64_t magic;
  std::uint32_t kind;
  std::uint32_t flags;
  std::uint64_t payload_size;
  std::uint32_t device;
  std::uint32_t slot_count;
  std::uint64_t data_dev;  // st_dev and st_ino of the data memfd this page speaks for
  std::uint64_t data_ino;
  std::uint64_t features;  // kFeature* bits: what importers may rely on
  std::uint64_t reserved;
};

// Page 0 of a control memfd.
struct control_header {
  control_fields fields;
  export_slot slots[1];  // slot_count of them fill the rest of the page
};
static_assert(sizeof(control_fields) == 64 && offsetof(control_header, slots) == 64 && sizeof(export_slot) == 32);

std::uint32_t slots_per_object() noexcept;
// Where the payload starts in a data memfd: 0 (the seeded defect importer_writes_liveness
// puts a copy of the export table in front of it).
std::uint64_t payload_file_offset() noexcept;

// The exporter's side of one object.
class exportable {
 public:
  exportable(record::kind kind, std::size_t payload_bytes, std::uint32_t device, std::uint32_t flags);
  exportable(exportable&&) noexcept = default;
  exportable& operator=(exportable&&) noexcept = default;
  ~exportable();

  int fd() const noexcept { return data_fd_.get(); }
  int control_fd() const noexcept { return control_fd_.get(); }
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
  control_header* header() const noexcept { return static_cast<control_header*>(control_map_.get()); }
  void mirror_slot(std::uint32_t slot) noexcept;  // seeded defect importer_writes_liveness only
  unique_fd data_fd_;
  unique_fd control_fd_;
  sys::mapping control_map_;  // the control page (shared), then the witness page (private)
  sys::mapping mirror_map_;   // seeded defect importer_writes_liveness only
  record::kind kind_ = record::kind::memory;
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
// and proves it is the exported object, live; else why not. `verb` prefixes every message.
sys::or_refusal<imported_object> try_import_object(std::span<const std::byte> data, record::kind kind,
                                                   const char* verb, const char* size_clause,
                                                   const open_options& opts);
// The same, a refusal thrown.
imported_object import_object(std::span<const std::byte> data, record::kind kind, const char* verb,
                              const char* size_clause, const open_options& opts);

// Number of configured devices (platform.cpp).
std::size_t platform_device_count();

// Fills pid, guard kind and guard for this process.
void stamp_exporter(record::fields& f);
// Decodes a handle and checks that this process exported it; throws invalid otherwise.
record::fields decode_own_handle(const handle& h, record::kind kind, const char* verb);

struct handle_access {
  static handle make(const record::bytes& bytes, const exportable& object) {
    handle h;
    h.bytes_ = bytes;
    h.descriptor_ = object.fd();
    h.control_descriptor_ = object.control_fd();
    h.put_ = false;
    return h;
  }
  static void mark_put(handle& h) noexcept {
    h.put_ = true;
    h.descriptor_ = -1;
    h.control_descriptor_ = -1;
  }
  static bool is_put(const handle& h) noexcept { return h.put_; }
};

}  // namespace ipcref::detail
