// The `ze` adapter's class: ipcheck's verbs over the Level Zero API, through the system
// loader (ze_adapter.cpp says what it drives and how handles travel). One class, defined in
// three files: ze_adapter.cpp (set-up, device information, results, the handle convention),
// ze_memory.cpp (memory, physical memory and virtual ranges, descriptors) and ze_events.cpp
// (events and native calls). Private to this folder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "ipcheck/adapter.hpp"
#include "ipcheck/adapter_toolkit.hpp"
#include "ipcheck/level_zero_shaped.hpp"
#include "ipcref/unique_fd.hpp"
#include "ze_loader.hpp"

namespace ipcheck::ze {

using ipcref::unique_fd;

// ---------------------------------------------------------------- results and text

// The Errc of a Level Zero result.
Errc errc_of(ze_result_t r);
// Whether the environment variable is "1" (the loader's getenv_tobool reads "1" only).
bool env_is_one(const char* name);
using toolkit::hex;
std::string bytes_hex(const std::uint8_t* p, std::size_t n);

// The physical memory handle this adapter sends (Level Zero has none of its own before the
// opaque IPC handles of newer drivers): the exporter's DMA-BUF-style descriptor, as
// Unified Runtime's Level Zero adapter does for pre-Xe2 GPUs.
//    0 u64 magic "IPCKZEPH"   8 u32 version (1)   12 i32 descriptor in the exporter
//   16 u32 exporter pid      20 u32 zero         24 u64 size
//   32 u64 st_ino, 40 u64 st_dev of the exported descriptor: a descriptor taken by number
//      must be that file, not a later one that reused the number after a put
//   48..63 zero
constexpr std::uint64_t kPhysMagic = 0x4850455a4b435049ull;
constexpr std::size_t kPhysHandleSize = 64;
struct PhysHandle {
  std::uint64_t magic;
  std::uint32_t version;
  std::int32_t fd;
  std::uint32_t pid;
  std::uint32_t zero;
  std::uint64_t size;
  std::uint64_t ino;
  std::uint64_t dev;
  std::uint8_t reserved[16];
};
static_assert(sizeof(PhysHandle) == kPhysHandleSize);

// The adapter's physical memory and events: Level Zero has no reference counts for either, and
// API 1.4 no event without a pool, so the adapter keeps a count per object (as Unified
// Runtime does) and gives each event a one-event pool.
struct ZeEvent {
  ze_event_pool_handle_t pool = nullptr;
  ze_event_handle_t event = nullptr;
  bool opened = false;
  int refs = 1;
};
struct ZePhys {
  ze_physical_mem_handle_t handle = nullptr;
  std::size_t size = 0;
  bool ipc = false;
  bool opened = false;
  int refs = 1;
};

// Exports keep what their put needs: the memory's and the event pool's IPC handles, and the
// physical memory's exported descriptor. Virtual ranges are the toolkit's, over zeVirtualMem*.
class ZeAdapter;
using ZeShaped = toolkit::LevelZeroShaped<ze_device_handle_t, ZePhys, ZeEvent, ze_ipc_mem_handle_t, unique_fd,
                                          ze_ipc_event_pool_handle_t>;

class ZeAdapter final : public toolkit::LevelZeroRanges<ZeAdapter, ZeShaped> {
 public:
  ZeAdapter() : LevelZeroRanges("ze", "") {}
  ~ZeAdapter() override;

  // Defined in ze_adapter.cpp (init, info), ze_memory.cpp (memory, physical memory) and
  // ze_events.cpp (events, native identities and calls).
  IPCHECK_LEVEL_ZERO_SHAPED_VERBS
  // Memory and event handles reach Level Zero by value; phys_open hands zePhysicalMemCreate an
  // import descriptor of its own making (phys_import_): that descriptor, as the driver left it.
  OpenInput last_open_input(const std::string& verb, std::span<const std::byte> given) override;

 private:
  friend class toolkit::LevelZeroRanges<ZeAdapter, ZeShaped>;
  static constexpr ze_external_memory_type_flags_t kPhysExportType = ZE_EXTERNAL_MEMORY_TYPE_FLAG_OPAQUE_FD;
  static constexpr std::uintptr_t kReserveHint = 0x600000000000ull;

  using Ev = ZeEvent;
  using Phys = ZePhys;

  static void* ptr(DevPtr p) { return reinterpret_cast<void*>(p); }
  // Whether the loader's validation layer checks parameters; init (first of all verbs) reads it.
  bool validation_on() const { return validation_; }

  // The outcome of a Level Zero call: its code, its name, and the driver's description.
  // Decided by the runtime: Level Zero answered.
  Outcome call(const char* function, ze_result_t r, const std::string& what = {});
  Outcome newer_missing(const char* function, const char* version, const char* verb) const;
  // The zeVirtualMem* calls the toolkit's virtual-range verbs make.
  auto virtual_mem() {
    static constexpr const char* kNames[] = {"zeVirtualMemReserve", "zeVirtualMemFree", "zeVirtualMemMap",
                                             "zeVirtualMemUnmap"};
    // The 1.8 loader's validation layer refuses pStart == nullptr, which the specification
    // allows ("implementation will choose"): with it on, a reserve passes a hint the driver may
    // ignore.
    const void* hint = validation_on() ? reinterpret_cast<const void*>(kReserveHint) : nullptr;
    return toolkit::virtual_mem_calls(ctx_, hint, api_.zeVirtualMemReserve, api_.zeVirtualMemFree, api_.zeVirtualMemMap,
                                      api_.zeVirtualMemUnmap, ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE, kNames);
  }
  ze_context_handle_t context_for(bool via_driver) const;
  ze_physical_mem_handle_t phys_for(bool via_driver, ze_physical_mem_handle_t h) const;
  Outcome drop_phys(ObjectId id);
  Outcome create_event(Ev& e);
  Outcome drop_event(Ev& e);

  // IPC aspects per device. Level Zero 1.4 states IPC support per driver
  // (zeDriverGetIpcProperties) and export types per device; whether a given device can
  // export is found by trying once: a one-page export, a one-event IPC pool, and a
  // one-granule physical export, each released at once.
  const std::vector<std::map<std::string, bool>>& device_aspects();
  bool can_export_memory(int device);
  bool can_export_event(int device);
  bool can_export_physical(int device);

  // The command list of the device that holds `p` (the first device for host memory).
  Outcome list_for(DevPtr p, ze_command_list_handle_t& out);

  // The descriptor an fd-first handle carries.
  Outcome descriptor_of(const ze_ipc_mem_handle_t& h, int& fd);

  // Handle bytes for an open: exactly 64, with a received descriptor written in front (fd).
  Outcome to_handle(std::span<const std::byte> bytes, int fd, char (&out)[ZE_MAX_IPC_HANDLE_SIZE], const char* fn);

  // A descriptor of the exported physical memory in this process: the one received by
  // SCM_RIGHTS, or taken from the exporter (pidfd_getfd; dup in the exporter itself).
  Outcome take_descriptor(const PhysHandle& ph, int received, unique_fd& out);
  Outcome fetch_descriptor(const PhysHandle& ph, int received, unique_fd& out);

  // How this driver's handles travel: its extension property names it (libze_ipcheck),
  // else the adapter option, else compute-runtime's default (a descriptor first).
  Outcome read_convention(const std::string& option);

  // Loaded libraries that are Level Zero drivers: they export the table getters and are not
  // the loader or one of its layers.
  static std::vector<std::string> driver_libraries();

  // compute-runtime's own version string, when the driver offers it.
  std::string intel_version_string();

  // native("null_argument"): the verb's Level Zero call with one argument null, judged by the
  // loader's parameter validation (clause ze.mem.null).
  Outcome null_argument(const std::string& verb, const std::string& arg);
  Loader api_;
  int driver_index_ = 0;
  ze_driver_handle_t driver_ = nullptr;
  std::vector<ze_command_list_handle_t> lists_;
  ze_context_handle_t ctx_ = nullptr;
  bool fd_first_ = true;
  bool validation_ = false;  // the validation layer checks parameters (validation_on)
  std::string layout_;
  std::vector<std::map<std::string, bool>> aspects_;
  std::vector<std::map<std::string, std::string>> aspect_errors_;  // per device: a query that answered an error
  ze_external_memory_import_fd_t phys_import_{};  // the last phys_open's import descriptor, and as handed over
  std::vector<std::byte> phys_import_handed_;
};

}  // namespace ipcheck::ze
