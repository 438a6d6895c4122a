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

class ZeAdapter final : public Adapter {
 public:
  ZeAdapter() { adapter_name_ = "ze"; }

  ~ZeAdapter() override;

  // ---------------------------------------------------------------- set-up

  Outcome init(const AdapterConfig& config) override;
  AdapterInfo info() override;

  std::size_t device_count() override { return devices_.size(); }

  // ---------------------------------------------------------------- memory

  Result<DevPtr> alloc(int device, std::size_t bytes, MemKind kind) override;

  Outcome free(DevPtr p) override { return call("zeMemFree", api_.zeMemFree(ctx_, ptr(p))); }

  // Host <-> device through an immediate (synchronous) command list of the memory's device.
  Outcome write(DevPtr dst, std::span<const std::byte> src) override;
  Outcome read(DevPtr src, std::span<std::byte> dst) override;
  Result<Exported> mem_get(DevPtr p) override;
  Outcome mem_put(ObjectId id) override;
  Result<DevPtr> mem_open(std::span<const std::byte> bytes, int fd, int device, std::uint64_t flags) override;

  Outcome mem_close(DevPtr p) override { return call("zeMemCloseIpcHandle", api_.zeMemCloseIpcHandle(ctx_, ptr(p))); }

  // ---------------------------------------------------------------- physical memory

  std::size_t phys_granularity(int device) override;
  Result<ObjectId> phys_create(int device, std::size_t bytes, bool ipc) override;
  Result<Exported> phys_get(ObjectId pm) override;

  // Put releases the exported descriptor the way Level Zero 1.6 describes it (zeMemPutIpcHandle
  // of zeMemGetIpcHandleFromFileDescriptorExp(fd)) when both functions are there, and closes
  // it, as Unified Runtime's adapter does for DMA-BUF exports. Without them the close alone
  // is the release: the driver keeps its export until the object is destroyed.
  Outcome phys_put(ObjectId id) override;
  Result<ObjectId> phys_open(std::span<const std::byte> bytes, int fd, int device) override;
  Outcome phys_close(ObjectId pm) override;
  Outcome phys_retain(ObjectId pm) override;
  Outcome phys_release(ObjectId pm) override;
  Result<std::size_t> phys_size(ObjectId pm) override;
  Result<bool> phys_ipc_enabled(ObjectId pm) override;
  Result<DevPtr> vm_reserve(int, std::size_t bytes) override;
  Outcome vm_free(DevPtr p, std::size_t bytes) override;
  Outcome vm_map(DevPtr p, std::size_t bytes, ObjectId pm, std::size_t offset) override;
  Outcome vm_unmap(DevPtr p, std::size_t bytes) override;

  // ---------------------------------------------------------------- events

  Result<ObjectId> event_create(int device, EventFlags flags) override;
  Result<Exported> event_get(ObjectId ev) override;
  Outcome event_put(ObjectId id) override;
  Result<ObjectId> event_open(std::span<const std::byte> bytes, int fd, int device) override;
  Outcome event_signal(ObjectId ev) override;
  Outcome event_reset(ObjectId ev) override;
  Result<bool> event_query(ObjectId ev) override;
  Result<bool> event_wait(ObjectId ev, std::chrono::nanoseconds timeout) override;
  Outcome event_retain(ObjectId ev) override;
  Outcome event_release(ObjectId ev) override;

  // The ze_event_handle_t or ze_physical_mem_handle_t Level Zero returned for the object.
  Result<std::uint64_t> native_identity(ObjectId id) override;

  // ---------------------------------------------------------------- native calls

  Outcome native(const std::string& what, const std::map<std::string, std::string>& args) override;
  // Memory and event handles reach Level Zero by value; phys_open hands zePhysicalMemCreate an
  // import descriptor of its own making (phys_import_): that descriptor, as the driver left it.
  OpenInput last_open_input(const std::string& verb, std::span<const std::byte> given) override;

 private:
  static constexpr ze_external_memory_type_flags_t kPhysExportType = ZE_EXTERNAL_MEMORY_TYPE_FLAG_OPAQUE_FD;
  static constexpr std::uintptr_t kReserveHint = 0x600000000000ull;

  struct Ev {
    ze_event_pool_handle_t pool = nullptr;
    ze_event_handle_t event = nullptr;
    bool opened = false;
    int refs = 1;
  };
  struct Phys {
    ze_physical_mem_handle_t handle = nullptr;
    std::size_t size = 0;
    bool ipc = false;
    bool opened = false;
    int refs = 1;
  };

  static void* ptr(DevPtr p) { return reinterpret_cast<void*>(p); }
  // Whether the loader's validation layer checks parameters; init (first of all verbs) reads it.
  bool validation_on() const { return validation_; }

  // The outcome of a Level Zero call: its code, its name, and the driver's description.
  // Decided by the runtime: Level Zero answered.
  Outcome call(const char* function, ze_result_t r, const std::string& what = {});
  Outcome newer_missing(const char* function, const char* version, const char* verb) const;
  Outcome unknown(const char* verb, const char* kind, ObjectId id) const;
  Outcome device_at(int index, ze_device_handle_t& out) const;
  ze_context_handle_t context_for(bool via_driver) const;
  ze_physical_mem_handle_t phys_for(bool via_driver, ze_physical_mem_handle_t h) const;
  Phys* phys(ObjectId id);
  Ev* event(ObjectId id);
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
  std::vector<ze_device_handle_t> devices_;
  std::vector<ze_command_list_handle_t> lists_;
  ze_context_handle_t ctx_ = nullptr;
  bool fd_first_ = true;
  bool validation_ = false;  // the validation layer checks parameters (validation_on)
  std::string layout_;
  ObjectId next_id_ = 1;
  std::map<ObjectId, ze_ipc_mem_handle_t> mem_exports_;
  std::map<ObjectId, ze_ipc_event_pool_handle_t> pool_exports_;
  std::map<ObjectId, unique_fd> phys_exports_;
  std::map<ObjectId, Phys> phys_;
  std::map<ObjectId, Ev> events_;
  std::vector<std::map<std::string, bool>> aspects_;
  std::vector<std::map<std::string, std::string>> aspect_errors_;  // per device: a query that answered an error
  ze_external_memory_import_fd_t phys_import_{};  // the last phys_open's import descriptor, and as handed over
  std::vector<std::byte> phys_import_handed_;
};

}  // namespace ipcheck::ze
