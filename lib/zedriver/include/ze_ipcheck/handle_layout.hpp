// IPC handle layouts of libze_ipcheck, ipcheck's Level Zero driver over ipcref, and the names
// by which the driver is configured and recognised. Header only: the driver and the `ze`
// adapter read it; neither links the other.
//
// A ze_ipc_mem_handle_t and a ze_ipc_event_pool_handle_t are 64 bytes (ZE_MAX_IPC_HANDLE_SIZE),
// exactly the size of an ipcref record (lib/include/ipcref/record.hpp). The driver produces one
// of two conventions, both used by Intel's compute-runtime, chosen by IPCHECK_ZE_IPC_HANDLE in
// the environment of the driver's process (exporter and importer must agree):
//
// "ze-ipcheck-fd/1" (IPCHECK_ZE_IPC_HANDLE=fd, the default; compute-runtime's default shape):
//    0  i32 descriptor   the exporter's descriptor of the exported object, valid only in the
//                        exporter. It must travel by SCM_RIGHTS; the importer writes the number of
//                        the descriptor it received here before zeMemOpenIpcHandle or
//                        zeEventPoolOpenIpcHandle. A negative number is refused (never pidfd_getfd).
//    4  u16 version      bytes 4..63 of the ipcref record, unchanged; its magic ("IPCK",
//    6  u8  kind         bytes 0..3) is implied and restored by the importer, so the
//    7  u8  guard kind   record's checksum still covers every field. The fd at 12 keeps
//    8  u32 exporter pid the exporter's number even after the importer rewrote bytes 0..3.
//   12  i32 fd
//   16  u64 guard
//   24  u64 token
//   32  u64 size
//   40  u64 offset
//   48  u32 device
//   52  u32 slot
//   56  u64 checksum     FNV-1a 64 of the record's bytes 0..55 with the magic in 0..3
//
// "ipcref/1" (IPCHECK_ZE_IPC_HANDLE=opaque; compute-runtime's opaque handles):
//    the 64-byte ipcref record itself, byte for byte ("ipcref/1"). No descriptor travels: the
//    importer's driver takes it from the exporter named by pid with pidfd_open + pidfd_getfd,
//    which needs ptrace access (Yama ptrace_scope 1: the exporter must allow the importer with
//    prctl(PR_SET_PTRACER)).
//
// In both, the importer's driver proves the export live by reading the exporter's export
// table in the exporter's memory (process_vm_readv; ipcref's control descriptor does not
// travel), which needs that same ptrace access even when the descriptor came by SCM_RIGHTS.
//
// In both, an event pool handle names the ipcref device allocation that holds the pool's
// events (its first page: EventPoolHeader below), so its record kind is "memory".
//
// A counter-based event's IPC handle (zeEventCounterBasedGetIpcHandle, Level Zero 1.15, or
// Intel's zexCounterBasedEventGetIpcHandle) always names its exporter, whatever
// IPCHECK_ZE_IPC_HANDLE says: it is the ipcref record of the event's memory byte for byte
// ("ipcref/1"), opened with pidfd_getfd. The specification gives these handles no descriptor
// to move (Unified Runtime copies them as plain bytes). The memory begins with an
// EventPoolHeader whose magic is kCounterEventMagic, then one CounterEventState.
//
// External memory (ze_external_memory_export_fd_t from zeMemGetAllocProperties or
// zePhysicalMemGetProperties; imported with ze_external_memory_import_fd_t) is a DMA-BUF-style
// descriptor: a sealed memfd holding an ExternalDescriptor (below). Unlike a real dma-buf it
// names the exported object instead of being it: importing takes the object from its exporter
// with pidfd_getfd, so the exporter must still run.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace ze_ipcheck {

inline constexpr std::size_t kHandleSize = 64;

// Environment of the driver's process.
inline constexpr const char* kEnvIpcHandle = "IPCHECK_ZE_IPC_HANDLE";    // fd (default) | opaque
inline constexpr const char* kEnvExtensions = "IPCHECK_ZE_EXTENSIONS";  // all (default) | none | name,name...
inline constexpr const char* kEnvIdentity = "IPCHECK_ZE_IDENTITY";      // intel (default) | ipcheck

// IPCHECK_ZE_IDENTITY=intel: what devices and the driver say, so that runtimes written for
// Intel's driver take the paths they take there. Unified Runtime's Level Zero v2 adapter
// offers event IPC only for vendor 0x8086 devices with an IP version of Xe2 (Battlemage,
// 0x05004000) or newer on a compute-runtime build of 38646 or newer (driverVersion & 0xffff).
inline constexpr std::uint32_t kIntelVendorId = 0x8086;
inline constexpr std::uint32_t kIntelIpVersion = 0x05004000;
inline constexpr std::uint32_t kIntelDriverBuild = 38646;
// Devices: ipcref's IPCHECK_REF_DEVICES or IPCHECK_REF_CONFIG; when neither is set the driver
// sets IPCHECK_REF_DEVICES=ref0=all;ref1=all;ref2=none (a device without IPC aspects).

// Extension properties (zeDriverGetExtensionProperties) that name the active convention.
inline constexpr const char* kExtensionFdHandle = "ZE_ipcheck_ipc_handle_fd";
inline constexpr const char* kExtensionOpaqueHandle = "ZE_ipcheck_ipc_handle_opaque";

// AdapterInfo::handle_layout of the `ze` adapter on libze_ipcheck. The opaque convention is
// the ipcref record byte for byte, so it carries ipcref's name: tools that know "ipcref/1"
// (fuzz/, the robustness cases) read and forge it as they do the ref adapter's handles.
inline constexpr const char* kLayoutFd = "ze-ipcheck-fd/1";
inline constexpr const char* kLayoutOpaque = "ipcref/1";

// The descriptor of an fd-first handle (bytes 0..3, little-endian).
inline std::int32_t fd_of(std::span<const std::byte> handle) noexcept {
  if (handle.size() < 4) return -1;
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(handle[static_cast<std::size_t>(i)]) << (8 * i);
  return static_cast<std::int32_t>(v);
}

// Writes `fd` into bytes 0..3 of an fd-first handle (what an importer does with the
// descriptor it received by SCM_RIGHTS).
inline void set_fd(std::span<std::byte> handle, std::int32_t fd) noexcept {
  if (handle.size() < 4) return;
  const auto v = static_cast<std::uint32_t>(fd);
  for (int i = 0; i < 4; ++i) handle[static_cast<std::size_t>(i)] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

// First page of an event pool's memory. Events follow at kEventSlotsOffset, one
// EventSlot each; `signaled` is a futex word shared across processes.
inline constexpr std::uint64_t kEventPoolMagic = 0x4c4f4f5056455a49ull;  // "IZEVPOOL"
inline constexpr std::uint32_t kEventPoolVersion = 1;
inline constexpr std::size_t kEventSlotsOffset = 64;

struct EventPoolHeader {
  std::uint64_t magic;
  std::uint32_t version;
  std::uint32_t count;  // events in the pool
  std::uint32_t flags;  // ze_event_pool_flags_t at creation
  std::uint32_t reserved[11];
};
static_assert(sizeof(EventPoolHeader) == kEventSlotsOffset);

struct EventSlot {
  std::uint32_t signaled;  // 0 or 1; futex word
  std::uint32_t waiters;   // host waiters sleeping on `signaled`
  std::uint64_t signal_count;
  std::uint64_t reserved[2];
};
static_assert(sizeof(EventSlot) == 32);

// A counter-based event: each append that signals it arms it (armed + 1, the new tracking
// point) and, when that command is done, completes it (completed = that point). It is
// complete when completed >= armed: a fresh event is. `sequence` is the futex word waiters
// sleep on; every completion bumps it.
inline constexpr std::uint64_t kCounterEventMagic = 0x544e564542435a49ull;  // "IZCBEVNT"
inline constexpr std::uint32_t kCounterEventVersion = 1;

struct CounterEventState {
  std::uint32_t sequence;  // futex word
  std::uint32_t waiters;   // host waiters sleeping on `sequence`
  std::uint64_t armed;
  std::uint64_t completed;
  std::uint64_t reserved;
};
static_assert(sizeof(CounterEventState) == 32);

// Content of an external memory descriptor (a sealed memfd).
inline constexpr std::uint64_t kExternalMagic = 0x4d58524554584549ull;  // "IEXTERXM"
inline constexpr std::uint32_t kExternalVersion = 1;
enum class ExternalKind : std::uint32_t { memory = 1, physical_memory = 2 };

struct ExternalDescriptor {
  std::uint64_t magic;
  std::uint32_t version;
  std::uint32_t kind;                      // ExternalKind
  std::array<std::byte, 64> record;        // the ipcref record of the export
};
static_assert(sizeof(ExternalDescriptor) == 80);

}  // namespace ze_ipcheck
