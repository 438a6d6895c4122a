// The `sycl` adapter's class: ipcheck's verbs through Intel's released SYCL runtime
// (libsycl.so.9 of a oneAPI release ci/oneapi-stack installed), on its Level Zero backend (UR's
// v1 or v2 adapter under it), with dpctl's libsyclinterface making devices, contexts, queues
// and USM (sycl_adapter.cpp says what each verb maps to). One class, defined in:
//   sycl_adapter.cpp  set-up (options, the libraries, devices, the context), exceptions, info,
//                     registration
//   sycl_memory.cpp   USM memory and ipc::memory, physical memory and ipc::physical_memory,
//                     virtual ranges
//   sycl_events.cpp   make_event with enable_ipc, ipc::event, native identities and calls
// Private to this folder.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "ipcheck/adapter.hpp"
#include "ipcheck/level_zero_shaped.hpp"
#include "ipcheck/sycl/sycl_api.hpp"

namespace ipcheck::sycl_adapter {

using namespace sycl_api;

// The libraries and the entry points, resolved with dlsym; never closed (SYCL's runtime keeps
// threads and static state that outlive the adapter).
class Runtime {
  template <class T>
  using Fn = T;  // lets a function pointer type written as "R (*)(A)" declare a member

 public:
  // Opens the release in `dir` (lib/libsycl.so.9, lib/libDPCTLSyclInterface.so); "" or why not.
  std::string open(const std::string& dir);
  const std::string& sycl_path() const noexcept { return sycl_path_; }
  // Optional exports this release lacks (their members are null), by mangled name.
  const std::vector<std::string>& lacks() const noexcept { return lacks_; }

#define IPCHECK_SYCL_MEMBER(member, required, mangled, demangled, type) Fn<type> member = nullptr;
  IPCHECK_SYCL_EXPORTS(IPCHECK_SYCL_MEMBER)
#undef IPCHECK_SYCL_MEMBER
#define IPCHECK_DPCTL_MEMBER(name, type) Fn<type> name = nullptr;
  IPCHECK_DPCTL_FUNCTIONS(IPCHECK_DPCTL_MEMBER)
#undef IPCHECK_DPCTL_MEMBER

 private:
  std::string sycl_path_;
  std::vector<std::string> lacks_;
};

// Physical memory and events: objects SYCL hands out by value; the adapter keeps its copies (one
// per reference it holds), and the entry goes with the last.
struct SyclHeld {
  std::vector<SyclObject> copies;
  int device = 0;
  bool opened = false;
};

// Devices are dpctl's device refs (sycl::device*); exports keep SYCL's handle until the put.
class SyclAdapter final : public toolkit::LevelZeroShaped<void*, SyclHeld, SyclHeld, IpcHandle> {
 public:
  SyclAdapter() : LevelZeroShaped("sycl", "sycl: ") {}
  ~SyclAdapter() override;

  // Defined in sycl_adapter.cpp (init, info), sycl_memory.cpp (USM memory and ipc::memory,
  // physical memory and ipc::physical_memory, virtual ranges) and sycl_events.cpp (events,
  // native identities and calls).
  IPCHECK_LEVEL_ZERO_SHAPED_VERBS
  IPCHECK_LEVEL_ZERO_SHAPED_RANGE_VERBS

 private:
  using Held = SyclHeld;
  struct Alloc {
    int device = 0;
    bool opened = false;  // from ipc open: closed with close, never freed
  };

  static void* ptr(DevPtr p) { return reinterpret_cast<void*>(p); }

  // Runs `body` (calls into SYCL) and turns what it throws into SYCL's outcome: the errc name
  // (and the UR result SYCL's message names), decided by SYCL.
  template <class F>
  Outcome guarded(const char* call, F&& body) {
    try {
      body();
      return Outcome::runtime_success(call);
    } catch (...) {
      return thrown(call, std::current_exception());
    }
  }
  Outcome thrown(const char* call, std::exception_ptr e) const;
  Outcome lacking(const char* verb, const char* member) const;
  int device_of(DevPtr p) const;
  Outcome copy(void* dst, const void* src, std::size_t n, int device, const char* what);
  Outcome read_options(const AdapterConfig& config, std::string& release, std::string& l0);
  std::string library_release() const;  // the compiler identification libsycl carries

  Runtime api_;
  bool initialised_ = false;
  std::string release_, release_dir_, l0_request_;
  void* device_vector_ = nullptr;
  std::vector<SyclObject*> queues_;   // one per device
  SyclObject* ctx_ = nullptr;         // one context over every device
  std::map<DevPtr, Alloc> allocs_;
  // Whether the memory verbs use ipc::memory (2026.2.0) or ipc_memory (both releases).
  bool ipc_namespace_ = false;
};

}  // namespace ipcheck::sycl_adapter
