// The `ur` adapter's class: ipcheck's verbs over the Unified Runtime, through libur_loader.so.0
// opened at run time (ur_adapter.cpp says what each verb maps to). One class, defined in:
//   ur_adapter.cpp  set-up (options, the loader, the platform, the context), results, info,
//                   registration
//   ur_memory.cpp   USM memory and its IPC handles, physical memory and virtual ranges
//   ur_events.cpp   reusable IPC events, native identities and native calls
// Private to this folder.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ipcheck/adapter.hpp"
#include "ipcheck/adapter_toolkit.hpp"
#include "ipcheck/runtime_library.hpp"
#include "ipcheck/ur/ur_api.hpp"

namespace ipcheck::ur_adapter {

using namespace ur_api;
using toolkit::hex;

using ur_api::errc_of;

// libur_loader.so.0 and the entry points the adapter uses, resolved with dlsym. The library is
// never closed: UR's adapters keep threads and static state that outlive the adapter.
class Loader {
 public:
  // Opens `library` ("" for libur_loader.so.0 on the search path, then the stack ipcheck was
  // configured with); "" on success, else why not.
  std::string open(const std::string& library);
  const std::string& path() const noexcept { return path_; }
  // The optional entry points the library does not export (null members), and the outcome of
  // a verb that needs one of them.
  const std::vector<std::string>& lacks() const noexcept { return lacks_; }
  Outcome lacking(const char* verb, const char* symbol) const;

#define IPCHECK_UR_MEMBER(name, params) PFN_##name name = nullptr;
  IPCHECK_UR_FUNCTIONS(IPCHECK_UR_MEMBER)
#undef IPCHECK_UR_MEMBER

 private:
  static bool optional(const char* name);
  void* lib_ = nullptr;
  std::string path_;
  std::vector<std::string> lacks_;
};

class UrAdapter final : public Adapter {
 public:
  UrAdapter() { adapter_name_ = "ur"; }
  ~UrAdapter() override;

  // ---- set-up (ur_adapter.cpp)
  Outcome init(const AdapterConfig& config) override;
  AdapterInfo info() override;
  std::size_t device_count() override { return devices_.size(); }

  // ---- memory (ur_memory.cpp)
  Result<DevPtr> alloc(int device, std::size_t bytes, MemKind kind) override;
  Outcome free(DevPtr p) override;
  Outcome write(DevPtr dst, std::span<const std::byte> src) override;
  Outcome read(DevPtr src, std::span<std::byte> dst) override;
  Result<Exported> mem_get(DevPtr p) override;
  Outcome mem_put(ObjectId id) override;
  Result<DevPtr> mem_open(std::span<const std::byte> bytes, int fd, int device, std::uint64_t flags) override;
  Outcome mem_close(DevPtr p) override;

  // ---- physical memory and virtual ranges (ur_memory.cpp)
  std::size_t phys_granularity(int device) override;
  Result<ObjectId> phys_create(int device, std::size_t bytes, bool ipc) override;
  Result<Exported> phys_get(ObjectId pm) override;
  Outcome phys_put(ObjectId id) override;
  Result<ObjectId> phys_open(std::span<const std::byte> bytes, int fd, int device) override;
  Outcome phys_close(ObjectId pm) override;
  Outcome phys_retain(ObjectId pm) override;
  Outcome phys_release(ObjectId pm) override;
  Result<std::size_t> phys_size(ObjectId pm) override;
  Result<bool> phys_ipc_enabled(ObjectId pm) override;
  Result<DevPtr> vm_reserve(int device, std::size_t bytes) override;
  Outcome vm_free(DevPtr p, std::size_t bytes) override;
  Outcome vm_map(DevPtr p, std::size_t bytes, ObjectId pm, std::size_t offset) override;
  Outcome vm_unmap(DevPtr p, std::size_t bytes) override;

  // ---- events (ur_events.cpp)
  Result<ObjectId> event_create(int device, EventFlags flags) override;
  Result<Exported> event_get(ObjectId ev) override;
  Outcome event_put(ObjectId id) override;
  Result<ObjectId> event_open(std::span<const std::byte> bytes, int fd, int device) override;
  // urEnqueueEventsWaitWithBarrierExt on the device's queue with the event as the one it
  // signals (UR's way to signal a reusable event), then urQueueFinish.
  Outcome event_signal(ObjectId ev) override;
  // UR has no call that resets an event: not_implemented, naming why.
  Outcome event_reset(ObjectId ev) override;
  Result<bool> event_query(ObjectId ev) override;
  // urEventWait has no timeout. A wait of kBlockingWaitFrom or longer (a wait for a signal
  // the case expects) is urEventWait itself, on a thread of its own (blocking_wait), so that a
  // runtime whose wait wakes late is timed; a shorter one (a check that nothing signaled yet)
  // polls UR_EVENT_INFO_COMMAND_EXECUTION_STATUS, leaving no thread blocked behind.
  Result<bool> event_wait(ObjectId ev, std::chrono::nanoseconds timeout) override;
  static constexpr std::chrono::seconds kBlockingWaitFrom{1};
  Outcome event_retain(ObjectId ev) override;
  Outcome event_release(ObjectId ev) override;

  // The ur_event_handle_t or ur_physical_mem_handle_t UR returned for the object.
  Result<std::uint64_t> native_identity(ObjectId id) override;
  Outcome native(const std::string& what, const std::map<std::string, std::string>& args) override;
  // mem_open and phys_open hand UR a copy of the bytes (open_copy_): that copy, as UR left it.
  OpenInput last_open_input(const std::string& verb, std::span<const std::byte> given) override;

 private:
  struct Phys {
    ur_physical_mem_handle_t handle = nullptr;
    bool opened = false;
    int refs = 1;  // this adapter's references (UR counts its own; the entry goes at zero)
  };
  struct Ev {
    ur_event_handle_t handle = nullptr;
    int device = 0;
    bool opened = false;
    int refs = 1;
  };
  Result<bool> blocking_wait(Ev& e, std::chrono::steady_clock::time_point deadline);
  // Handle data UR allocated at a get, kept until the matching put.
  struct Export {
    void* data = nullptr;
  };

  static void* ptr(DevPtr p) { return reinterpret_cast<void*>(p); }

  // The outcome of a UR call: decided by UR; failures carry the ur_result_t name, and UR's
  // adapter-specific message when the result is UR_RESULT_ERROR_ADAPTER_SPECIFIC.
  Outcome call(const char* function, ur_result_t r, const std::string& what = {});
  Outcome unknown(const char* verb, const char* kind, ObjectId id) const;
  Outcome device_at(int index, ur_device_handle_t& out) const;
  Outcome queue_for(int device, ur_queue_handle_t& out);
  int device_of(DevPtr p);
  Outcome copy(void* dst, const void* src, std::size_t n, int device, const std::string& what);
  Outcome choose_platform(const std::string& backend);
  Outcome read_options(const AdapterConfig& config, std::string& library, std::string& backend, std::string& l0);
  std::string platform_text(ur_platform_info_t what) const;
  std::string device_text(ur_device_handle_t d, ur_device_info_t what) const;
  bool device_flag(ur_device_handle_t d, ur_device_info_t what, std::string* error = nullptr) const;
  std::string backend_name() const;
  std::string l0_adapter_name() const;  // "v1", "v2", or "" off Level Zero
  std::string memory_layout() const;
  Phys* phys(ObjectId id);
  Ev* event(ObjectId id);
  Outcome null_argument(const std::string& verb, const std::string& arg);

  Loader api_;
  bool initialised_ = false;
  ur_adapter_handle_t adapter_ = nullptr;
  std::vector<ur_adapter_handle_t> adapters_;
  ur_platform_handle_t platform_ = nullptr;
  ur_backend_t backend_ = UR_BACKEND_UNKNOWN;
  std::uint32_t adapter_version_ = 0;
  std::vector<ur_device_handle_t> devices_;
  std::vector<ur_queue_handle_t> queues_;
  ur_context_handle_t ctx_ = nullptr;
  std::string l0_request_;  // the l0 option as given (v1, v2, auto)
  toolkit::OneapiRelease release_;  // the oneAPI release named by release= (its own UR is loaded first)
  ObjectId next_id_ = 1;
  std::map<ObjectId, Export> mem_exports_, phys_exports_, event_exports_;
  std::map<ObjectId, Phys> phys_;
  std::map<ObjectId, Ev> events_;
  std::vector<std::byte> open_copy_;  // what the last mem_open or phys_open handed UR (UR may write it)
};

}  // namespace ipcheck::ur_adapter
