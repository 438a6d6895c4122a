// The `cuda` adapter's class: ipcheck's verbs over the CUDA driver API, loaded at run time
// (cuda_adapter.cpp says what each verb maps to). One class, defined in several files:
//   cuda_adapter.cpp      set-up (init, the current context), CUDA results, registration
//   cuda_device_info.cpp  each device's attributes, the driver's version, info()
//   cuda_warm_up.cpp      the warm-up before the role's audit baseline
//   cuda_memory.cpp       memory verbs (allocations and CUDA's IPC memory handles)
//   cuda_physical.cpp     physical memory (VMM) and virtual ranges; the fd record's travel
//   cuda_events.cpp       event verbs and the gates that hold an IPC event pending
//   cuda_native.cpp       native_identity and the native calls
// Private to this folder.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ipcheck/adapter.hpp"
#include "ipcheck/adapter_toolkit.hpp"
#include "ipcheck/cuda/cuda_driver.hpp"
#include "ipcheck/cuda/fd_record.hpp"
#include "ipcref/unique_fd.hpp"

namespace ipcheck::cuda_adapter {

// Why mem_put and event_put answer not_implemented (AdapterInfo::unsupported_verbs says so too).
inline constexpr const char* kNoMemPut =
    "CUDA has no put for memory handles: cuIpcGetMemHandle's handle holds nothing to release and stays valid while "
    "the allocation lives";
inline constexpr const char* kNoEventPut =
    "CUDA has no put for event handles: cuIpcGetEventHandle's handle holds nothing to release";

using namespace cuda_api;
using ipcref::unique_fd;

using toolkit::hex;

// The NVIDIA driver's own version ("580.159.04"): the kernel module's line, else NVML,
// else the libcuda file name (libcuda.so.580.159.04). Empty when none says; `source` names
// where it was read (cuda_device_info.cpp).
std::string nvidia_driver_version(const std::string& libcuda_path, std::string& source);

struct Device {
  CUdevice handle = 0;
  CUcontext ctx = nullptr;
  // The context IPC events live in, beside the primary one (cuda_events.cpp says why), and the
  // gate page's device address there.
  CUcontext event_ctx = nullptr;
  CUdeviceptr gate_dev = 0;
  std::string name, uuid, pci;
  int cc_major = 0, cc_minor = 0;
  bool unified_addressing = false, vmm = false, posix_fd = false, ipc_event = false, managed = false;
};

class CudaAdapter final : public Adapter {
 public:
  CudaAdapter() { adapter_name_ = "cuda"; }

  ~CudaAdapter() override;

  // ---- set-up (cuda_adapter.cpp) and device information (cuda_device_info.cpp)

  Outcome prepare(const AdapterConfig& config) override;
  Outcome init(const AdapterConfig& config) override;
  AdapterInfo info() override;

  std::size_t device_count() override { return devices_.size(); }

  // ---- memory (cuda_memory.cpp)

  Result<DevPtr> alloc(int device, std::size_t bytes, MemKind kind) override;
  Outcome free(DevPtr p) override;
  Outcome write(DevPtr dst, std::span<const std::byte> src) override;
  Outcome read(DevPtr src, std::span<std::byte> dst) override;
  Result<Exported> mem_get(DevPtr p) override;
  Outcome mem_put(ObjectId) override;
  Result<DevPtr> mem_open(std::span<const std::byte> bytes, int, int device, std::uint64_t flags) override;
  Outcome mem_close(DevPtr p) override;

  // ---- physical memory and virtual ranges (cuda_physical.cpp)

  std::size_t phys_granularity(int device) override;
  Result<ObjectId> phys_create(int device, std::size_t bytes, bool ipc) override;
  Result<Exported> phys_get(ObjectId pm) override;
  // The exported descriptor is what a put can release: closing it revokes pidfd_getfd.
  Outcome phys_put(ObjectId export_id) override;
  Result<ObjectId> phys_open(std::span<const std::byte> bytes, int fd, int device) override;
  // The record's size travels beside the descriptor and is ipcheck's own, so a forged record
  // must not make phys_size (and every later map) lie about the allocation CUDA imported.
  // CUDA answers it by mapping: the claimed size must map, and one granule more must not.
  Outcome hold_to_allocation(CUmemGenericAllocationHandle h, std::uint64_t size, int device);
  Outcome phys_close(ObjectId pm) override;
  // CUDA counts references to an allocation handle only through a mapped address.
  Outcome phys_retain(ObjectId pm) override;
  Outcome phys_release(ObjectId pm) override;
  Result<std::size_t> phys_size(ObjectId pm) override;
  Result<bool> phys_ipc_enabled(ObjectId pm) override;
  Result<DevPtr> vm_reserve(int device, std::size_t bytes) override;
  Outcome vm_free(DevPtr p, std::size_t bytes) override;
  Outcome vm_map(DevPtr p, std::size_t bytes, ObjectId pm, std::size_t offset) override;
  Outcome vm_unmap(DevPtr p, std::size_t bytes) override;

  // ---- events (cuda_events.cpp)

  Result<ObjectId> event_create(int device, EventFlags flags) override;
  Result<Exported> event_get(ObjectId id) override;
  Outcome event_put(ObjectId) override;
  Result<ObjectId> event_open(std::span<const std::byte> bytes, int, int device) override;
  // The creator's first signal opens the event's gate: the record CUDA holds pending since
  // creation completes on the device (the host write is the adapter's; whether the event
  // then completes is cuEventQuery's answer). Any other signal records the event again.
  Outcome event_signal(ObjectId id) override;
  Outcome event_reset(ObjectId) override;
  Result<bool> event_query(ObjectId id) override;
  Result<bool> event_wait(ObjectId id, std::chrono::nanoseconds timeout) override;
  Outcome event_retain(ObjectId) override;
  Outcome event_release(ObjectId id) override;

  // ---- native calls (cuda_native.cpp)

  // The CUevent or the CUmemGenericAllocationHandle CUDA returned for the object.
  Result<std::uint64_t> native_identity(ObjectId id) override;

  // native("null_argument", {verb, argument}): CUDA's call with that argument null, as asked.
  // CUDA's IPC calls take no context (they act on the current one): those combinations do
  // not exist here. native("event_unrecorded"): cuEventQuery on an IPC event never recorded
  // (not armed), CUDA's answer in the outcome's native code (cuda.event.unrecorded).
  // native("context_check"): cuCtxSynchronize on device 0's context (a lost context answers
  // its sticky error).
  Outcome native(const std::string& what, const std::map<std::string, std::string>& args) override;

 private:
  struct Phys {
    CUmemGenericAllocationHandle handle = 0;
    std::size_t size = 0;
    int device = 0;
    bool opened = false;
    int refs = 1;  // this adapter's references: creation or import, plus retains
  };
  struct VmMap {
    ObjectId pm = 0;
    std::size_t bytes = 0;
  };
  struct Event {
    CUevent ev = nullptr;
    int device = 0;
    bool opened = false;
    CUstream stream = nullptr;  // the gated record's stream (from the first arm on)
    int slot = -1;              // the gate's word in gate_host_
    bool gate_closed = false;   // the gated record is still pending on the device
    CUevent priv = nullptr;     // IPCHECK_CUDA_FAULT=private_event: what gets recorded instead
    CUcontext ctx = nullptr;    // the context it lives in when not the current one (IPC events)
  };
  // Makes `ctx` current for a scope (pushed, then popped); nothing when null.
  class ContextScope {
   public:
    ContextScope(Driver& cu, CUcontext ctx) : cu_(cu), pushed_(ctx && cu.cuCtxPushCurrent_v2(ctx) == CUDA_SUCCESS) {}
    ~ContextScope() {
      CUcontext popped = nullptr;
      if (pushed_) cu_.cuCtxPopCurrent_v2(&popped);
    }
    ContextScope(const ContextScope&) = delete;
    ContextScope& operator=(const ContextScope&) = delete;

   private:
    Driver& cu_;
    bool pushed_;
  };
  // What a warm-up counted, which calls failed, and the first group that broke the context
  // (cuda_warm_up.cpp).
  struct WarmUp;
  static constexpr int kGateSlots = 1024;  // words of the one gate page
  // How long a signal waits for the record behind an opened gate (under the role's 20-s
  // inactivity limit: a record that never runs fails the signal, not the case by timeout).
  static constexpr std::chrono::seconds kGatedRecordLimit{10};

  // ---- set-up (cuda_adapter.cpp)

  // CUDA_DEVICE_MAX_CONNECTIONS before the driver loads: the adapter option `connections`
  // (`driver`: as it is), else the environment's, else 1 for a process without events and
  // the driver's own for one with them (cuda_adapter.cpp says why).
  Outcome set_connections(const std::string& option, bool events);
  // Loads libcuda (the adapter option `library`, else the search), cuInit, the API version.
  Outcome start_driver(const std::string& library);
  // Every device: its information and its primary context, retained; device 0's current.
  Outcome open_devices();
  // IPCHECK_CUDA_FAULT: empty, or the one test-only fault, private_event.
  Outcome read_fault();

  // An outcome for a failed CUDA call: the code mapped, the native name and sentence.
  Outcome fail(CUresult r, const std::string& call) const;
  static Outcome unknown(const char* what, ObjectId id);
  // Makes `device`'s primary context current (calls act on the current context).
  Outcome use(int device, const char* verb);
  // Makes current the context of the device whose allocation, opened mapping or reserved
  // range holds `p` (the one with the greatest base at or below it), so that a copy through a
  // mapping made on another device (an open there, a range whose access only it has) runs in
  // that device's context; nothing when no region of this adapter holds it.
  Outcome use_owner(DevPtr p, const char* verb);

  // ---- device information (cuda_device_info.cpp)

  // Device `index`: its handle (cuDeviceGet), name, UUID, PCI address and attributes.
  Outcome read_device(int index, Device& d) const;
  int attribute(CUdevice d, CUdevice_attribute a) const;

  // ---- the warm-up (cuda_warm_up.cpp)

  // Runs each kind of call once, so that the driver's one-time lazy state (staging
  // buffers, event pools, VMM bookkeeping) exists before the role's audit baseline and is
  // not mistaken for what a case leaked. Each group ends with a context synchronize, so
  // nothing is freed under an in-flight copy. A failed call is recorded, not fatal (cases
  // meet it again); a group that leaves the context broken (a sticky error) gets the
  // primary context reset, and init fails only if that does not bring it back.
  Outcome warm_up();
  void warm_up_memory(WarmUp& w, std::vector<std::byte>& bytes);
  void warm_up_events(WarmUp& w);
  void warm_up_physical(WarmUp& w);
  // Resets device 0's primary context the warm-up broke (`broken` says how), takes it
  // afresh and proves it with one allocation of `probe_bytes`.
  Outcome reset_broken_context(const std::string& broken, std::size_t probe_bytes);

  // ---- physical memory (cuda_physical.cpp)

  Outcome need_vmm(const char* verb) const;
  CUmemAllocationProp phys_prop(int device, bool ipc) const;
  Phys* find_phys(ObjectId id) {
    auto it = phys_.find(id);
    return it == phys_.end() ? nullptr : &it->second;
  }
  Outcome release_phys(ObjectId pm, const char* verb);
  // The exporter's descriptor through pidfd_open + pidfd_getfd, after proving the pid is
  // still the process that exported (its start time).
  Result<int> take_fd(const FdRecord& rec);
  // This process's start time (the records' proof of the exporter).
  static std::uint64_t own_start_time();
  Outcome relocate_export_fd(unique_fd& fd);

  // ---- events and their gates (cuda_events.cpp)

  Event* find_event(ObjectId id) {
    auto it = events_.find(id);
    return it == events_.end() ? nullptr : &it->second;
  }
  // One page of pinned host memory mapped for the devices; word i is gate i. With it, each
  // device's event context (where IPC events and their gated streams live) and that
  // context's own warm-up of IPC events. Made once per process, before the role's audit
  // baseline (they live as long as the process).
  void make_gates();
  // Device d's event context, created, its gate address taken and its IPC events warmed up.
  Outcome make_event_context(Device& d);
  // Records `e` on its gate's stream (made on the first arm) behind a wait for gate word
  // `slot` to reach a value the host has not written yet: CUDA holds the record, and so the
  // event, pending until open_gate. At creation of an IPC event, and again at each reset.
  Outcome arm(Event& e);
  // The host's write that lets the gated record run (idempotent).
  void open_gate(Event& e);
  // Frees what an event holds besides its CUevent (which the caller destroyed, or not made).
  void drop(Event& e);
  static std::string event_flag_names(unsigned f);

  // ---- native calls (cuda_native.cpp)

  Outcome null_argument(const std::string& verb, const std::string& arg);

  std::unique_ptr<Driver> cu_;
  std::vector<Device> devices_;
  int current_ = -1;
  int api_version_ = 0;
  std::string driver_version_, driver_version_source_, warm_up_;
  std::string connections_;  // CUDA_DEVICE_MAX_CONNECTIONS as the driver saw it, and from where
  std::optional<Outcome> prepared_;  // prepare's answer, once it ran
  bool scm_ = false;
  toolkit::ExportFdNumbers export_numbers_;
  ObjectId next_id_ = 1;
  std::map<DevPtr, MemKind> allocations_;
  std::map<DevPtr, int> owners_;  // allocation or opened mapping base -> its device
  std::map<ObjectId, Phys> phys_;
  std::map<ObjectId, unique_fd> phys_exports_;
  std::map<DevPtr, int> reservations_;  // base -> device
  std::map<DevPtr, VmMap> vm_maps_;
  std::map<ObjectId, Event> events_;
  bool fault_private_event_ = false;  // IPCHECK_CUDA_FAULT=private_event (test only)
  std::uint32_t* gate_host_ = nullptr;
  void* warm_host_ = nullptr;  // the warm-up's pinned host allocation, kept while the adapter lives
  std::vector<std::uint32_t> gate_value_;  // per gate: the value its wait asks for (the last one)
  std::vector<bool> gate_used_;
  Outcome gate_error_ = Outcome::failure(Errc::not_implemented, "cuda: the event gates were never made");
};

}  // namespace ipcheck::cuda_adapter
