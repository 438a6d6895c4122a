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

class SyclAdapter final : public Adapter {
 public:
  SyclAdapter() { adapter_name_ = "sycl"; }
  ~SyclAdapter() override;

  // ---- set-up (sycl_adapter.cpp)
  Outcome init(const AdapterConfig& config) override;
  AdapterInfo info() override;
  std::size_t device_count() override { return devices_.size(); }

  // ---- memory (sycl_memory.cpp)
  Result<DevPtr> alloc(int device, std::size_t bytes, MemKind kind) override;
  Outcome free(DevPtr p) override;
  Outcome write(DevPtr dst, std::span<const std::byte> src) override;
  Outcome read(DevPtr src, std::span<std::byte> dst) override;
  Result<Exported> mem_get(DevPtr p) override;
  Outcome mem_put(ObjectId id) override;
  Result<DevPtr> mem_open(std::span<const std::byte> bytes, int fd, int device, std::uint64_t flags) override;
  Outcome mem_close(DevPtr p) override;

  // ---- physical memory and virtual ranges (sycl_memory.cpp)
  std::size_t phys_granularity(int device) override;
  Result<ObjectId> phys_create(int device, std::size_t bytes, bool ipc) override;
  Result<Exported> phys_get(ObjectId pm) override;
  Outcome phys_put(ObjectId id) override;
  Result<ObjectId> phys_open(std::span<const std::byte> bytes, int fd, int device) override;
  // SYCL has no close for an opened physical_mem: its last copy going is the close.
  Outcome phys_close(ObjectId pm) override;
  Outcome phys_retain(ObjectId pm) override;
  Outcome phys_release(ObjectId pm) override;
  Result<std::size_t> phys_size(ObjectId pm) override;
  Result<bool> phys_ipc_enabled(ObjectId pm) override;
  Result<DevPtr> vm_reserve(int device, std::size_t bytes) override;
  Outcome vm_free(DevPtr p, std::size_t bytes) override;
  Outcome vm_map(DevPtr p, std::size_t bytes, ObjectId pm, std::size_t offset) override;
  Outcome vm_unmap(DevPtr p, std::size_t bytes) override;

  // ---- events (sycl_events.cpp)
  Result<ObjectId> event_create(int device, EventFlags flags) override;
  Result<Exported> event_get(ObjectId ev) override;
  Outcome event_put(ObjectId id) override;
  Result<ObjectId> event_open(std::span<const std::byte> bytes, int fd, int device) override;
  // enqueue_signal_event on the device's queue, then the queue's wait.
  Outcome event_signal(ObjectId ev) override;
  // SYCL has no call that resets an event: not_implemented, naming why.
  Outcome event_reset(ObjectId ev) override;
  Result<bool> event_query(ObjectId ev) override;
  // SYCL's wait has no timeout: the wait polls the command execution status.
  Result<bool> event_wait(ObjectId ev, std::chrono::nanoseconds timeout) override;
  Outcome event_retain(ObjectId ev) override;
  Outcome event_release(ObjectId ev) override;

  // The impl pointer of the SYCL object (physical_mem, event): SYCL's identity.
  Result<std::uint64_t> native_identity(ObjectId id) override;
  Outcome native(const std::string& what, const std::map<std::string, std::string>& args) override;

 private:
  // An object SYCL hands out by value: the adapter's copies (one per reference it holds).
  struct Held {
    std::vector<SyclObject> copies;
    int device = 0;
    bool opened = false;
  };
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
  Outcome unknown(const char* verb, const char* kind, ObjectId id) const;
  Outcome device_at(int index) const;
  int device_of(DevPtr p) const;
  Outcome copy(void* dst, const void* src, std::size_t n, int device, const char* what);
  Outcome read_options(const AdapterConfig& config, std::string& release, std::string& l0);
  std::string library_release() const;  // the compiler identification libsycl carries
  Held* held(std::map<ObjectId, Held>& in, ObjectId id);

  Runtime api_;
  bool initialised_ = false;
  std::string release_, release_dir_, l0_request_;
  void* device_vector_ = nullptr;
  std::vector<void*> devices_;        // dpctl's device refs (sycl::device*)
  std::vector<SyclObject*> queues_;   // one per device
  SyclObject* ctx_ = nullptr;         // one context over every device
  ObjectId next_id_ = 1;
  std::map<DevPtr, Alloc> allocs_;
  std::map<ObjectId, IpcHandle> mem_exports_, phys_exports_, event_exports_;
  std::map<ObjectId, Held> phys_, events_;
  // Whether the memory verbs use ipc::memory (2026.2.0) or ipc_memory (both releases).
  bool ipc_namespace_ = false;
};

}  // namespace ipcheck::sycl_adapter
