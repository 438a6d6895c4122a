// ipcref: the reference IPC implementation of ipcheck.
//
// A minimal, strict implementation of the semantics of SYCL's
// sycl_ext_oneapi_inter_process_communication (ipc::memory, ipc::physical_memory,
// ipc::event) on host memory: allocations are sealed memfds holding only their bytes,
// whether an export is live is decided by a control object only the exporter can write
// (SECURITY.md), handles are 64-byte records (record.hpp), descriptors move by
// pidfd_getfd or SCM_RIGHTS, events are shared futex pages. Every failure throws
// ipcref::exception with an errc code.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ipcref/errc.hpp"
#include "ipcref/record.hpp"

namespace ipcref {

namespace detail {
struct handle_access;
}

// ---------------------------------------------------------------- platform

enum class aspect : std::uint8_t { ipc_memory = 0, ipc_physical_memory = 1, ipc_event = 2 };
inline constexpr int aspect_count = 3;
const char* aspect_name(aspect a) noexcept;

// A host "device". The set comes from IPCHECK_REF_DEVICES, else the file named by
// IPCHECK_REF_CONFIG, else two devices with every aspect (see platform.cpp for the syntax).
class device {
 public:
  std::uint32_t index() const noexcept { return index_; }
  const std::string& name() const;
  bool has(aspect a) const;
  friend bool operator==(const device&, const device&) = default;

 private:
  friend struct platform_access;
  explicit device(std::uint32_t index) : index_(index) {}
  std::uint32_t index_ = 0;
};

std::vector<device> get_devices();
// Where the device set came from: "default", "IPCHECK_REF_DEVICES=..." or the config path.
std::string device_config_source();

class context {
 public:
  // All devices of the platform.
  context();
  explicit context(std::vector<device> devices);

  const std::vector<device>& devices() const noexcept;
  bool contains(const device& d) const noexcept;
  std::uint64_t id() const noexcept;
  friend bool operator==(const context& a, const context& b) noexcept { return a.id() == b.id(); }

 private:
  struct state;
  std::shared_ptr<const state> state_;
};

// ---------------------------------------------------------------- USM

enum class usm_kind : std::uint8_t { host, device, shared };
const char* usm_kind_name(usm_kind k) noexcept;

// Device and shared allocations are memfd-backed and exportable; host ones are not.
void* malloc_device(std::size_t bytes, const device& dev, const context& ctx);
void* malloc_shared(std::size_t bytes, const device& dev, const context& ctx);
void* malloc_host(std::size_t bytes, const context& ctx);
void free(void* ptr, const context& ctx);

struct pointer_info {
  usm_kind kind = usm_kind::host;
  std::uint32_t device = 0;
  void* base = nullptr;
  std::size_t size = 0;
  bool imported = false;  // a mapping returned by ipc::memory::open
};
// Describes a pointer allocated or opened in `ctx`; throws invalid for anything else.
pointer_info get_pointer_info(const void* ptr, const context& ctx);

// ---------------------------------------------------------------- physical memory

struct physical_mem_object;
using physical_mem = physical_mem_object*;

// Sizes and offsets of physical memory and virtual ranges are multiples of this.
std::size_t physical_granularity() noexcept;

physical_mem physical_create(const context& ctx, const device& dev, std::size_t bytes,
                             bool enable_ipc);
void physical_retain(physical_mem pm);
void physical_release(physical_mem pm);
std::size_t physical_size(physical_mem pm);
bool physical_ipc_enabled(physical_mem pm);
std::uint32_t physical_reference_count(physical_mem pm);

enum class access : std::uint8_t { read_only, read_write };
void* virtual_reserve(const context& ctx, std::size_t bytes);
void virtual_free(const context& ctx, void* ptr, std::size_t bytes);
void virtual_map(const context& ctx, void* ptr, std::size_t bytes, physical_mem pm,
                 std::size_t offset, access acc);
void virtual_unmap(const context& ctx, void* ptr, std::size_t bytes);

// ---------------------------------------------------------------- events

struct event_object;
using event = event_object*;

struct event_properties {
  bool enable_ipc = false;
  bool enable_profiling = false;
};

// IPC and profiling together are refused (clause ur.event.create.profiling_ipc).
event event_create(const context& ctx, const device& dev, event_properties props);
void event_signal(event e);
void event_reset(event e);
bool event_query(event e);  // true when signaled
// True when the event is signaled before `timeout` passes, false on timeout.
bool event_wait(event e, std::chrono::nanoseconds timeout);
void event_retain(event e);
void event_release(event e);
std::uint32_t event_reference_count(event e);
// CLOCK_MONOTONIC time of the last signal; only for events created with profiling.
std::uint64_t event_profiling_signal_ns(event e);

// ---------------------------------------------------------------- IPC

// The bytes to send to another process, and the exporter's descriptors for callers that
// move descriptors with SCM_RIGHTS: the object's data (what the importer maps) and its
// control object (the export table, which importers can only read). Both stay owned by
// the library (valid until put or free). SECURITY.md says which importers need which.
class handle {
 public:
  handle() = default;
  std::span<const std::byte> data() const noexcept { return bytes_; }
  int descriptor() const noexcept { return descriptor_; }
  int control_descriptor() const noexcept { return control_descriptor_; }
  bool valid() const noexcept { return !put_; }

 private:
  friend struct detail::handle_access;
  record::bytes bytes_{};
  int descriptor_ = -1;
  int control_descriptor_ = -1;
  bool put_ = true;
};

struct open_options {
  // A descriptor of the exported object received by SCM_RIGHTS; borrowed, not closed.
  // When -1, the descriptor is taken from the exporter with pidfd_getfd.
  int descriptor = -1;
  // The exporter's control descriptor (handle::control_descriptor) received by SCM_RIGHTS;
  // borrowed. When -1, open reads the export table in the exporter's memory
  // (process_vm_readv), which needs the ptrace access pidfd_getfd needs: an importer
  // without it (another user) must be given both descriptors.
  int control_descriptor = -1;
};

// Lets process `pid` and its descendants take this process's exported descriptors and read
// its export table where Yama (ptrace_scope 1) would refuse pidfd_getfd and
// process_vm_readv. Never opens this process to everyone.
void allow_importer(pid_t pid);

// How this process would identify itself in a handle ("pidfs_inode" or "start_time").
const char* exporter_guard_kind();

namespace ipc::memory {
handle get(void* ptr, const context& ctx);
void put(handle& h, const context& ctx);
// Every call maps anew and returns a pointer no other open returned; each needs a close.
void* open(std::span<const std::byte> data, const context& ctx, const device& dev,
           const open_options& opts = {});
// open, a refusal returned rather than thrown: null, with `why` holding the code and message
// open would throw. For a caller that expects most of its opens to be refused (a fuzz
// worker), where unwinding a throw costs more than the refusal itself.
void* try_open(std::span<const std::byte> data, const context& ctx, const device& dev, const open_options& opts,
               refusal& why);
void close(void* ptr, const context& ctx);
}  // namespace ipc::memory

namespace ipc::physical_memory {
handle get(physical_mem pm, const context& ctx);
void put(handle& h, const context& ctx);
// The opened object has reference count 1 and the exported object's size.
physical_mem open(std::span<const std::byte> data, const context& ctx, const device& dev,
                  const open_options& opts = {});
// Drops the reference of an opened object (like physical_release).
void close(physical_mem pm, const context& ctx);
}  // namespace ipc::physical_memory

namespace ipc::event {
handle get(ipcref::event e, const context& ctx);
void put(handle& h, const context& ctx);
// A new event object sharing state with the exported one; released with event_release.
ipcref::event open(std::span<const std::byte> data, const context& ctx, const device& dev,
                   const open_options& opts = {});
}  // namespace ipc::event

// Counts of what the library holds in this process, for audits and tests.
struct resource_counts {
  std::size_t allocations = 0;
  std::size_t open_mappings = 0;
  std::size_t live_exports = 0;
  std::size_t physical_objects = 0;
  std::size_t reservations = 0;
  std::size_t events = 0;
};
resource_counts get_resource_counts();

}  // namespace ipcref
