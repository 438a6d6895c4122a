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
#include "ipcheck/level_zero_shaped.hpp"
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

// Physical memory and events UR handed out: UR counts their references; the adapter counts
// its own too (refs), and the entry goes at zero.
struct UrPhys {
  ur_physical_mem_handle_t handle = nullptr;
  bool opened = false;
  int refs = 1;
};
struct UrEvent {
  ur_event_handle_t handle = nullptr;
  int device = 0;
  bool opened = false;
  int refs = 1;
};
// An export keeps the handle data UR allocated at the get, until the matching put.
struct UrExport {
  void* data = nullptr;
};

// Virtual ranges are the toolkit's, over urVirtualMem* (Level Zero's calls).
class UrAdapter;
using UrShaped = toolkit::LevelZeroShaped<ur_device_handle_t, UrPhys, UrEvent, UrExport>;

class UrAdapter final : public toolkit::LevelZeroRanges<UrAdapter, UrShaped> {
 public:
  UrAdapter() : LevelZeroRanges("ur", "ur: ") {}
  ~UrAdapter() override;

  // Defined in ur_adapter.cpp (init, info), ur_memory.cpp (USM memory and its IPC handles,
  // physical memory) and ur_events.cpp (events, native identities and calls).
  IPCHECK_LEVEL_ZERO_SHAPED_VERBS

  // event_wait blocks in urEventWait from this timeout on; a shorter wait polls.
  static constexpr std::chrono::seconds kBlockingWaitFrom{1};
  // mem_open and phys_open hand UR a copy of the bytes (open_copy_): that copy, as UR left it.
  OpenInput last_open_input(const std::string& verb, std::span<const std::byte> given) override;

 private:
  friend class toolkit::LevelZeroRanges<UrAdapter, UrShaped>;
  using Phys = UrPhys;
  using Ev = UrEvent;
  using Export = UrExport;
  Result<bool> blocking_wait(Ev& e, std::chrono::steady_clock::time_point deadline);

  static void* ptr(DevPtr p) { return reinterpret_cast<void*>(p); }

  // The outcome of a UR call: decided by UR; failures carry the ur_result_t name, and UR's
  // adapter-specific message when the result is UR_RESULT_ERROR_ADAPTER_SPECIFIC.
  Outcome call(const char* function, ur_result_t r, const std::string& what = {});
  // The urVirtualMem* calls the toolkit's virtual-range verbs make.
  auto virtual_mem() {
    static constexpr const char* kNames[] = {"urVirtualMemReserve", "urVirtualMemFree", "urVirtualMemMap",
                                             "urVirtualMemUnmap"};
    return toolkit::virtual_mem_calls(ctx_, nullptr, api_.urVirtualMemReserve, api_.urVirtualMemFree, api_.urVirtualMemMap,
                                      api_.urVirtualMemUnmap, UR_VIRTUAL_MEM_ACCESS_FLAG_READ_WRITE, kNames);
  }
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
  Outcome null_argument(const std::string& verb, const std::string& arg);

  Loader api_;
  bool initialised_ = false;
  ur_adapter_handle_t adapter_ = nullptr;
  std::vector<ur_adapter_handle_t> adapters_;
  ur_platform_handle_t platform_ = nullptr;
  ur_backend_t backend_ = UR_BACKEND_UNKNOWN;
  std::uint32_t adapter_version_ = 0;
  std::vector<ur_queue_handle_t> queues_;
  ur_context_handle_t ctx_ = nullptr;
  std::string l0_request_;  // the l0 option as given (v1, v2, auto)
  toolkit::OneapiRelease release_;  // the oneAPI release named by release= (its own UR is loaded first)
  std::vector<std::byte> open_copy_;  // what the last mem_open or phys_open handed UR (UR may write it)
};

}  // namespace ipcheck::ur_adapter
