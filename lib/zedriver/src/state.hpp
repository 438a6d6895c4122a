// The driver's objects and the entry-point plumbing shared by every file of libze_ipcheck.
//
// Every handle the driver gives out is registered as live with its kind; each entry point
// looks its handles up first, so a null, stale or forged handle is an error code, never a
// dereference. Each entry point runs inside `entry`, which turns exceptions (ipcref's and
// the driver's own) into a ze_result_t and keeps the message for
// zeDriverGetLastErrorDescription.
#pragma once

#include <level_zero/ze_api.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <functional>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "failpoints.hpp"
#include "ipcref/failpoints.hpp"
#include "ipcref/ipcref.hpp"
#include "ze_ipcheck/handle_layout.hpp"
#include "ze_ipcheck/result_name.hpp"

namespace zedriver {

// ---------------------------------------------------------------- errors

class Error : public std::runtime_error {
 public:
  Error(ze_result_t code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ze_result_t code() const noexcept { return code_; }

 private:
  ze_result_t code_;
};

template <class... Args>
std::string cat(const Args&... args) {
  std::ostringstream s;
  (s << ... << args);
  return s.str();
}

[[noreturn]] inline void fail(ze_result_t code, const std::string& message) { throw Error(code, message); }

using ze_ipcheck::result_name;  // ze_ipcheck/result_name.hpp
ze_result_t from_ipcref(ipcref::errc e) noexcept;

// The message of the last failing call of this thread ("" after a success; at most 1023
// bytes), usable even after the thread's thread_local destructors ran.
const char* last_error();
void clear_last_error();
void set_last_error(const std::string& message);
bool debug_enabled();
void report_failure(const char* function, ze_result_t code, const std::string& message);

// Runs one entry point: `body` returns the result (SUCCESS or a status such as NOT_READY) or
// throws; nothing escapes.
template <class F>
ze_result_t entry(const char* function, F&& body) noexcept {
  const ipcref::failpoints::layer_above in_driver;  // ipcref's own failpoints stay off below
  try {
    clear_last_error();
    if (const ze_result_t forced = failpoint(function); forced != ZE_RESULT_SUCCESS) {
      report_failure(function, forced, "failed by failpoint (IPCHECK_FAILPOINTS)");
      return forced;
    }
    return body();
  } catch (const Error& e) {
    report_failure(function, e.code(), e.what());
    return e.code();
  } catch (const ipcref::exception& e) {
    const ze_result_t code = from_ipcref(e.code_value());
    report_failure(function, code, e.what());
    return code;
  } catch (const std::bad_alloc&) {
    report_failure(function, ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  } catch (const std::exception& e) {
    report_failure(function, ZE_RESULT_ERROR_UNKNOWN, e.what());
    return ZE_RESULT_ERROR_UNKNOWN;
  } catch (...) {
    report_failure(function, ZE_RESULT_ERROR_UNKNOWN, "unknown exception");
    return ZE_RESULT_ERROR_UNKNOWN;
  }
}

template <class T>
T* need_pointer(T* p, const char* function, const char* what) {
  if (!p) fail(ZE_RESULT_ERROR_INVALID_NULL_POINTER, cat(function, ": ", what, " is null"));
  return p;
}

// ---------------------------------------------------------------- configuration

enum class Convention { fd, opaque };

// What devices and the driver say they are (IPCHECK_ZE_IDENTITY).
enum class Identity { intel, ipcheck };

struct Config {
  Convention convention = Convention::fd;
  Identity identity = Identity::intel;
  std::set<std::string> extensions;  // extension functions offered by name
};

// Names of the extension functions the driver can offer (IPCHECK_ZE_EXTENSIONS).
const std::vector<std::string>& offerable_extensions();
// `v` as one text, ", " between (for messages that list them).
std::string join(const std::vector<std::string>& v);

// ---------------------------------------------------------------- objects

enum class Kind : std::uint32_t {
  driver = 1,
  device,
  context,
  command_list,
  event_pool,
  event,
  physical_mem,
  command_queue,
  fence
};
const char* kind_name(Kind k) noexcept;

struct Device {
  std::uint32_t index = 0;
  ipcref::device dev;
  explicit Device(ipcref::device d) : index(d.index()), dev(d) {}
};

struct Context {
  std::optional<ipcref::context> ctx;
  std::vector<Device*> devices;
  std::atomic<std::uint32_t> children{0};  // command lists, pools, physical objects
  bool contains(const Device* d) const {
    for (auto* x : devices)
      if (x == d) return true;
    return false;
  }
};

// One command of a regular list, run when a queue executes the list: wait for `waits`, run
// `body` (may be empty), signal `signal` (may be null).
struct Command {
  std::vector<ze_event_handle_t> waits;
  std::function<void()> body;
  ze_event_handle_t signal = nullptr;
};

struct CommandList {
  Context* ctx = nullptr;
  Device* device = nullptr;
  bool immediate = true;
  std::mutex order;  // commands of one list run one after another; guards what follows
  bool closed = false;            // regular lists: zeCommandListClose, until zeCommandListReset
  std::vector<Command> commands;  // regular lists: what a queue runs
  std::uint32_t executing = 0;    // regular lists: queues running it now
};

struct CommandQueue {
  Context* ctx = nullptr;
  Device* device = nullptr;
  std::mutex order;                 // lists of one queue run one after another
  std::atomic<std::uint32_t> fences{0};
};

struct Fence {
  CommandQueue* queue = nullptr;
  std::uint32_t signaled = 0;  // futex word: 1 when the queue ran the lists submitted with it
};

// The memory of an event pool: private (non-IPC pools), an ipcref device allocation (IPC pools
// of this process), or an ipcref mapping (pools opened from a handle). Shared by the pool and
// its events, so that a host wait never touches unmapped memory.
struct PoolMemory {
  enum class Source { private_map, allocation, opened };
  Source source = Source::private_map;
  void* base = nullptr;
  std::size_t bytes = 0;
  std::optional<ipcref::context> ipc_ctx;  // keeps the ipcref context alive for the release
  ~PoolMemory();
  ze_ipcheck::EventPoolHeader* header() const { return static_cast<ze_ipcheck::EventPoolHeader*>(base); }
  ze_ipcheck::EventSlot* slot(std::uint32_t i) const {
    return reinterpret_cast<ze_ipcheck::EventSlot*>(static_cast<char*>(base) + ze_ipcheck::kEventSlotsOffset) + i;
  }
};

struct EventPool {
  Context* ctx = nullptr;
  ze_event_pool_flags_t flags = 0;
  std::uint32_t count = 0;
  bool opened = false;
  std::shared_ptr<PoolMemory> mem;
  std::set<struct Event*> events;
};

struct Event {
  EventPool* pool = nullptr;  // null for counter-based events
  std::shared_ptr<PoolMemory> mem;
  std::uint32_t index = 0;
  ze_ipcheck::EventSlot* slot() const { return mem->slot(index); }
  // Counter-based events (zeEventCounterBasedCreate, zexCounterBasedEventCreate2): their own
  // memory, a CounterEventState at kEventSlotsOffset.
  bool counter_based = false;
  bool opened = false;      // opened from an IPC handle (zeEventCounterBasedOpenIpcHandle)
  std::uint32_t flags = 0;  // IPCHECK_ZE_EVENT_COUNTER_BASED_FLAG_* at creation
  Context* ctx = nullptr;   // counter-based: the context it was created or opened in
  ze_ipcheck::CounterEventState* counter() const {
    return reinterpret_cast<ze_ipcheck::CounterEventState*>(static_cast<char*>(mem->base) +
                                                            ze_ipcheck::kEventSlotsOffset);
  }
};

struct PhysicalMem {
  Context* ctx = nullptr;
  ipcref::physical_mem pm = nullptr;
  bool imported = false;
  bool exportable = false;  // created with ze_external_memory_export_desc_t
  std::size_t claimed = 0;  // seeded defect phys_import_trusts_size: the size the importer claimed
};

// A live IPC export: the ipcref handle and the bytes the driver gave out for it. Repeated gets
// of one allocation or pool share it (as compute-runtime does); puts count down to the revoke.
struct Export {
  ipcref::handle handle;
  std::array<std::byte, ze_ipcheck::kHandleSize> bytes{};
  std::uint64_t ctx_id = 0;
  std::uint32_t refs = 0;
};

struct Driver {
  Config config;
  std::vector<std::unique_ptr<Device>> devices;

  std::mutex lock;  // guards everything below
  std::map<std::uintptr_t, Export> memory_exports;   // by exported pointer
  std::map<const EventPool*, Export> pool_exports;    // by pool
  std::map<const PhysicalMem*, Export> phys_exports;  // by physical object
  std::map<const Event*, Export> event_exports;       // counter-based events, by event
  std::map<std::uintptr_t, Export> external_exports;  // by allocation base; live until zeMemFree
  std::set<void*> exportable_allocations;             // allocated with an export descriptor
  std::set<void*> imported_allocations;               // zeMemAllocDevice from an external descriptor
};

// The driver after a successful zeInit; fails with UNINITIALIZED before.
Driver& driver();
bool initialized() noexcept;
ze_result_t initialize(ze_init_flags_t flags) noexcept;

// Registers and looks up live objects (under the driver's lock).
void add_live(const void* p, Kind k);
void remove_live(const void* p);
void* lookup(const void* handle, Kind k, const char* function, const char* what);

template <class T>
T* get(const void* handle, Kind k, const char* function, const char* what) {
  return static_cast<T*>(lookup(handle, k, function, what));
}

// The live context `h` names (after checking the driver is initialised).
inline Context* context_of(ze_context_handle_t h, const char* function) {
  driver();
  return get<Context>(h, Kind::context, function, "hContext");
}

// The live device `h` names, which must be one of context `c`'s.
inline Device* device_in(Context* c, ze_device_handle_t h, const char* function) {
  Device* d = get<Device>(h, Kind::device, function, "hDevice");
  if (!c->contains(d))
    fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
         cat(function, ": device '", d->dev.name(), "' is not in the context; create the context with it"));
  return d;
}

// Sizes and granularity.
std::size_t page_size() noexcept;

// Handle codec: the active convention's bytes for an ipcref record, and back.
std::array<std::byte, ze_ipcheck::kHandleSize> encode_handle(std::span<const std::byte> record);
struct DecodedHandle {
  std::array<std::byte, ze_ipcheck::kHandleSize> record{};
  int descriptor = -1;  // -1: take the object with pidfd_getfd
};
DecodedHandle decode_handle(std::span<const std::byte> bytes, const char* function);

// A new export of `h` made in context `c`, with the active convention's bytes and no refs yet.
Export make_export(ipcref::handle h, const Context& c);

// The external memory types the driver exports and imports: fd-based ones.
inline constexpr ze_external_memory_type_flags_t kFdTypes =
    ZE_EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF | ZE_EXTERNAL_MEMORY_TYPE_FLAG_OPAQUE_FD;
// Fails with UNSUPPORTED_ENUMERATION unless `flags` (of the structure `what`) is a non-empty
// subset of kFdTypes.
void check_fd_types(ze_external_memory_type_flags_t flags, const char* function, const char* what);

// External memory descriptors (handle_layout.hpp: ExternalDescriptor in a sealed memfd).
int make_external_descriptor(ze_ipcheck::ExternalKind kind, std::span<const std::byte> record,
                             const char* function);
std::array<std::byte, ze_ipcheck::kHandleSize> read_external_descriptor(int fd, ze_ipcheck::ExternalKind kind,
                                                                       const char* function);

// Walks a pNext chain for a structure of `type`; null when absent.
const void* find_in_chain(const void* pNext, ze_structure_type_t type);

}  // namespace zedriver
