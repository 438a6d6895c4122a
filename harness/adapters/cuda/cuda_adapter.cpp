// The `cuda` adapter: ipcheck's verbs over the CUDA driver API, loaded at run time
// (cuda_driver.hpp), so that one build runs everywhere. Without libcuda, init answers
// not_implemented ("no NVIDIA driver: ..."); without a device, feature_not_supported.
//
// Mapping (CUDA driver API reference, 13.0):
//   memory     cuMemAlloc / cuMemAllocHost / cuMemAllocManaged; write and read through
//              cuMemcpyHtoD (then cuCtxSynchronize) and cuMemcpyDtoH
//   mem IPC    cuIpcGetMemHandle, cuIpcOpenMemHandle (flags a case names go to CUDA exactly,
//              0 as 0, which CUDA refuses; a case that names none, kDefaultOpenFlags, gets
//              CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS, the one flag CUDA documents and requires,
//              as a runtime without open flags passes it), cuIpcCloseMemHandle; no put in CUDA. Repeated opens go to the
//              driver unchanged: CUDA returns the same pointer, reference counted, and each
//              open needs its own close.
//   events     cuEventCreate (ipc: CU_EVENT_INTERPROCESS; profiling off:
//              CU_EVENT_DISABLE_TIMING), cuIpcGetEventHandle / cuIpcOpenEventHandle,
//              query = cuEventQuery, wait = cuEventQuery polled until it completes or the
//              timeout, release = cuEventDestroy. No put, reset or retain in CUDA.
//              A never-recorded CUDA event is complete (cuEventQuery answers CUDA_SUCCESS),
//              so an IPC event is made pending at creation: recorded on a stream of its own
//              behind cuStreamWaitValue32 on a word of host memory the device sees (the
//              event's gate), which stays closed until the creating process signals; signal
//              = the host writes the gate's value, and the record completes on the device.
//              Both the exporter's event and every opened one then answer CUDA_ERROR_NOT_READY
//              from cuEventQuery until that signal, CUDA_SUCCESS after: the pending state and
//              its end are CUDA's answers, through both handles. A signal through an opened
//              event, or a second signal, is cuEventRecord on the default stream.
//   test only  IPCHECK_CUDA_FAULT=private_event (environment): every record goes to a
//              private event (CU_EVENT_DISABLE_TIMING, not interprocess) instead of the IPC
//              event, the defect the event cases exist to catch; they must fail under it.
//   physical   cuMemCreate (POSIX fd handle type when ipc), cuMemExportToShareableHandle,
//              the fd moved by SCM_RIGHTS or pidfd_getfd, cuMemImportFromShareableHandle,
//              cuMemAddressReserve / cuMemMap / cuMemSetAccess / cuMemUnmap / cuMemRelease.
#include <dlfcn.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "ipcheck/cuda/cuda_driver.hpp"
#include "ipcheck/cuda/fd_record.hpp"
#include "ipcheck/adapter_toolkit.hpp"
#include "ipcheck/adapter.hpp"
#include "ipcref/unique_fd.hpp"

namespace ipcheck::cuda_adapter {
namespace {

using namespace cuda_api;
using ipcref::unique_fd;

using toolkit::hex;

// CUresult onto ipcheck's vocabulary; the native name travels with every outcome.
Errc map_result(CUresult r) {
  switch (r) {
    case CUDA_SUCCESS: return Errc::success;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_INVALID_CONTEXT:
    case CUDA_ERROR_ALREADY_MAPPED:
    case CUDA_ERROR_NOT_MAPPED:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_ILLEGAL_STATE:
    case CUDA_ERROR_NOT_FOUND:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED: return Errc::invalid;
    case CUDA_ERROR_OUT_OF_MEMORY: return Errc::exhausted;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_DEVICE_NOT_LICENSED:
    case CUDA_ERROR_PEER_ACCESS_UNSUPPORTED:
    case CUDA_ERROR_NOT_SUPPORTED:
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE: return Errc::feature_not_supported;
    case CUDA_ERROR_STUB_LIBRARY:
    case CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER: return Errc::not_implemented;
    case CUDA_ERROR_NOT_PERMITTED: return Errc::permission_denied;
    case CUDA_ERROR_TIMEOUT: return Errc::timeout;
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED: return Errc::device_lost;
    default: return Errc::other;
  }
}

// Errors that leave the context unusable: every later call in the process answers the same.
bool sticky(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED: return true;
    default: return false;
  }
}

bool looks_like_version(const std::string& w) {
  if (w.empty() || !std::isdigit(static_cast<unsigned char>(w[0])) || w.find('.') == std::string::npos) return false;
  for (char c : w)
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.') return false;
  return true;
}

// The NVIDIA driver's own version ("580.159.04"): the kernel module's line, else NVML,
// else the libcuda file name (libcuda.so.580.159.04). Empty when none says.
std::string nvidia_driver_version(const std::string& libcuda_path, std::string& source) {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (std::getline(in, line)) {
    std::istringstream words(line);
    for (std::string w; words >> w;)
      if (looks_like_version(w)) {
        source = "/proc/driver/nvidia/version";
        return w;
      }
  }
  if (void* nvml = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL)) {
    using Init = int (*)();
    using Get = int (*)(char*, unsigned);
    auto init = reinterpret_cast<Init>(::dlsym(nvml, "nvmlInit_v2"));
    auto get = reinterpret_cast<Get>(::dlsym(nvml, "nvmlSystemGetDriverVersion"));
    auto shutdown = reinterpret_cast<Init>(::dlsym(nvml, "nvmlShutdown"));
    if (init && get && shutdown && init() == 0) {
      char buf[96] = {};
      const int r = get(buf, sizeof buf);
      shutdown();
      if (r == 0 && looks_like_version(buf)) {
        source = "NVML nvmlSystemGetDriverVersion";
        return buf;
      }
    }
  }
  const auto slash = libcuda_path.rfind('/');
  const std::string file = libcuda_path.substr(slash == std::string::npos ? 0 : slash + 1);
  const std::string prefix = "libcuda.so.";
  if (file.rfind(prefix, 0) == 0 && looks_like_version(file.substr(prefix.size())) &&
      file.substr(prefix.size()).find('.') != std::string::npos) {
    source = "file name of " + libcuda_path;
    return file.substr(prefix.size());
  }
  return {};
}

std::string format_uuid(const CUuuid& u) {
  const auto* b = reinterpret_cast<const unsigned char*>(u.bytes);
  char s[48];
  std::snprintf(s, sizeof s, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return s;
}

struct Device {
  CUdevice handle = 0;
  CUcontext ctx = nullptr;
  std::string name, uuid, pci;
  int cc_major = 0, cc_minor = 0;
  bool unified_addressing = false, vmm = false, posix_fd = false, ipc_event = false, managed = false;
};

class CudaAdapter final : public Adapter {
 public:
  CudaAdapter() { adapter_name_ = "cuda"; }

  ~CudaAdapter() override {
    // Objects a case left behind die with the primary context (the audit already ran).
    if (!cu_) return;
    // Gated records a case left pending complete first, so that no stream waits forever.
    for (auto& [id, e] : events_) open_gate(e);
    for (auto& d : devices_)
      if (d.ctx) cu_->cuDevicePrimaryCtxRelease_v2(d.handle);
  }

  Outcome init(const AdapterConfig& config) override {
    std::string library;
    for (const auto& [k, v] : config.options) {
      if (k == "library") library = v;
      else
        return Outcome::failure(Errc::invalid, "cuda: unknown adapter option '" + k + "'; cuda knows: library");
    }
    scm_ = config.transport == "scm";
    if (Outcome o = start_driver(library); !o.ok()) return o;
    if (Outcome o = open_devices(); !o.ok()) return o;
    // Under Yama ptrace_scope 1, let the run's process tree take our descriptors.
    if (!scm_ && config.runner_pid > 0)
      ::prctl(PR_SET_PTRACER, static_cast<unsigned long>(config.runner_pid), 0, 0, 0);
    driver_version_ = nvidia_driver_version(cu_->path(), driver_version_source_);
    if (Outcome o = read_fault(); !o.ok()) return o;
    if (Outcome o = warm_up(); !o.ok()) return o;
    make_gates();  // after the warm-up: a context reset there would take the gate page with it
    return Outcome::success();
  }

  // Loads libcuda (the adapter option `library`, else the search), cuInit, the API version.
  Outcome start_driver(const std::string& library) {
    std::string why;
    cu_ = Driver::load(library, why);
    if (!cu_)
      return Outcome::failure(Errc::not_implemented,
                              "no NVIDIA driver: " + why +
                                  "; install the NVIDIA driver, or name its libcuda with --adapter-opt library=PATH");
    if (const CUresult r = cu_->cuInit(0); r != CUDA_SUCCESS) {
      Outcome o = fail(r, "cuInit(0) in " + cu_->path());
      if (r == CUDA_ERROR_NO_DEVICE) o.message = "no CUDA device: " + o.message;
      if (r == CUDA_ERROR_STUB_LIBRARY)
        o.message = "no NVIDIA driver: " + o.message +
                    "; that file is the CUDA toolkit's stub, not a driver: take the stubs folder out of the library path";
      return o;
    }
    if (const CUresult r = cu_->cuDriverGetVersion(&api_version_); r != CUDA_SUCCESS)
      return fail(r, "cuDriverGetVersion");
    return Outcome::success();
  }

  // Every device: its information and its primary context, retained; device 0's current.
  Outcome open_devices() {
    int count = 0;
    if (const CUresult r = cu_->cuDeviceGetCount(&count); r != CUDA_SUCCESS) return fail(r, "cuDeviceGetCount");
    if (count <= 0)
      return Outcome::failure(Errc::feature_not_supported, "no CUDA device: cuDeviceGetCount found 0 devices");
    for (int i = 0; i < count; ++i) {
      Device d;
      if (Outcome o = read_device(i, d); !o.ok()) return o;
      if (const CUresult r = cu_->cuDevicePrimaryCtxRetain(&d.ctx, d.handle); r != CUDA_SUCCESS)
        return fail(r, "cuDevicePrimaryCtxRetain(device " + std::to_string(i) + ")");
      devices_.push_back(d);
    }
    if (const CUresult r = cu_->cuCtxSetCurrent(devices_[0].ctx); r != CUDA_SUCCESS)
      return fail(r, "cuCtxSetCurrent(device 0)");
    current_ = 0;
    return Outcome::success();
  }

  // Device `index`: its handle (cuDeviceGet), name, UUID, PCI address and attributes.
  Outcome read_device(int index, Device& d) const {
    if (const CUresult r = cu_->cuDeviceGet(&d.handle, index); r != CUDA_SUCCESS)
      return fail(r, "cuDeviceGet(" + std::to_string(index) + ")");
    char name[256] = {};
    if (cu_->cuDeviceGetName(name, sizeof name - 1, d.handle) == CUDA_SUCCESS) d.name = name;
    CUuuid uuid{};
    if (cu_->cuDeviceGetUuid_v2 && cu_->cuDeviceGetUuid_v2(&uuid, d.handle) == CUDA_SUCCESS) d.uuid = format_uuid(uuid);
    d.cc_major = attribute(d.handle, kAttrComputeCapabilityMajor);
    d.cc_minor = attribute(d.handle, kAttrComputeCapabilityMinor);
    char pci[40];
    std::snprintf(pci, sizeof pci, "%04x:%02x:%02x.0", attribute(d.handle, kAttrPciDomainId),
                  attribute(d.handle, kAttrPciBusId), attribute(d.handle, kAttrPciDeviceId));
    d.pci = pci;
    d.unified_addressing = attribute(d.handle, kAttrUnifiedAddressing) != 0;
    d.vmm = attribute(d.handle, kAttrVirtualMemoryManagementSupported) != 0 && cu_->has_vmm();
    d.posix_fd = attribute(d.handle, kAttrHandleTypePosixFileDescriptorSupported) != 0;
    d.ipc_event = attribute(d.handle, kAttrIpcEventSupported) != 0;
    d.managed = attribute(d.handle, kAttrManagedMemory) != 0 && cu_->cuMemAllocManaged;
    return Outcome::success();
  }

  // IPCHECK_CUDA_FAULT: empty, or the one test-only fault, private_event.
  Outcome read_fault() {
    if (const char* f = std::getenv("IPCHECK_CUDA_FAULT"); f && *f) {
      if (std::string(f) != "private_event")
        return Outcome::failure(Errc::invalid, std::string("cuda: IPCHECK_CUDA_FAULT='") + f +
                                                   "' is not a fault this adapter knows; the one test-only fault is private_event");
      fault_private_event_ = true;
      std::fprintf(stderr, "[cuda] TEST-ONLY FAULT IPCHECK_CUDA_FAULT=private_event: events are recorded on private events\n");
    }
    return Outcome::success();
  }

  AdapterInfo info() override {
    AdapterInfo i;
    const std::string api = std::to_string(api_version_ / 1000) + "." + std::to_string(api_version_ % 1000 / 10);
    i.driver_name = "NVIDIA CUDA " + api;
    i.driver_version = driver_version_.empty() ? "CUDA " + api : driver_version_;
    i.api_version = "CUDA driver API " + api + " (cuDriverGetVersion " + std::to_string(api_version_) + ")";
    // Memory handles: what the fuzzer learned of CUipcMemHandle (fields that move the mapped
    // size and offset); event handles are opaque; physical memory travels as ipcheck's record.
    i.handle_layout = "cuda-ipc-mem/learned";
    i.kind_layouts["event"] = "opaque";
    i.kind_layouts["physical"] = "cuda-fd-record/1";
    i.opened_memory_is_host_mapping = false;  // cuIpcOpenMemHandle maps into CUDA's reserved VA
    i.transport = scm_ ? "scm" : "pidfd";
    i.extra["libcuda"] = cu_->path();
    i.extra["driver_version_source"] = driver_version_source_.empty() ? "none found" : driver_version_source_;
    i.extra["cuda_driver_api"] = std::to_string(api_version_);
    i.extra["mem_open_flags"] = "passed to cuIpcOpenMemHandle as the case asked (0 is 0; CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS is 0x1)";
    i.extra["mem_open_flags_default"] = "CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS (0x1): CUDA requires it; flags 0 answer CUDA_ERROR_INVALID_VALUE";
    i.extra["event_gate"] = gate_host_ ? "IPC events are recorded at creation behind cuStreamWaitValue32 on host memory "
                                         "(" + std::to_string(kGateSlots) + " gates); signal opens the gate"
                                       : "unavailable: " + gate_error_.describe();
    if (fault_private_event_) i.extra["test_fault"] = "IPCHECK_CUDA_FAULT=private_event (records go to private events)";
    i.extra["mem_open_repeat"] = "passed to the driver unchanged: CUDA returns the same pointer, reference counted";
    i.extra["handles"] = "memory and events: CUDA's 64-byte IPC handles; physical memory: a 48-byte record naming a POSIX fd";
    i.extra["not_in_cuda"] = "mem_put, event_put, event_reset, event_retain";
    i.extra["warm_up"] = warm_up_;
    std::string missing;
    for (const auto& m : cu_->missing_optional()) missing += (missing.empty() ? "" : ", ") + m;
    if (!missing.empty()) i.extra["driver_lacks"] = missing;
    for (std::size_t n = 0; n < devices_.size(); ++n) {
      const Device& d = devices_[n];
      DeviceInfo di;
      di.name = d.name;
      di.uuid = d.uuid;
      // CUDA IPC on Linux needs unified addressing (cuIpcGetMemHandle's documented restriction).
      di.aspects["ipc_memory"] = d.unified_addressing;
      di.aspects["ipc_physical_memory"] = d.vmm && d.posix_fd;
      di.aspects["ipc_event"] = d.ipc_event;
      di.aspects["managed_memory"] = d.managed;
      i.devices.push_back(di);
      i.extra["device" + std::to_string(n)] = d.name + ", sm_" + std::to_string(d.cc_major) +
                                              std::to_string(d.cc_minor) + ", PCI " + d.pci;
    }
    return i;
  }

  std::size_t device_count() override { return devices_.size(); }

  // ---- memory

  Result<DevPtr> alloc(int device, std::size_t bytes, MemKind kind) override {
    if (auto o = use(device, "alloc"); !o.ok()) return {o};
    if (kind == MemKind::device) {
      CUdeviceptr p = 0;
      if (const CUresult r = cu_->cuMemAlloc_v2(&p, bytes); r != CUDA_SUCCESS)
        return {fail(r, "cuMemAlloc(" + std::to_string(bytes) + " bytes)")};
      allocations_[p] = kind;
      return {Outcome::runtime_success("cuMemAlloc"), p};
    }
    if (kind == MemKind::host) {
      void* p = nullptr;
      if (const CUresult r = cu_->cuMemAllocHost_v2(&p, bytes); r != CUDA_SUCCESS)
        return {fail(r, "cuMemAllocHost(" + std::to_string(bytes) + " bytes)")};
      allocations_[reinterpret_cast<DevPtr>(p)] = kind;
      return {Outcome::runtime_success("cuMemAllocHost"), reinterpret_cast<DevPtr>(p)};
    }
    if (!cu_->cuMemAllocManaged)
      return {Outcome::failure(Errc::not_implemented, "cuda: " + cu_->path() + " has no cuMemAllocManaged")};
    // Oversubscribed managed memory can hang the GPU: stay under half of what is free.
    std::size_t free_bytes = 0, total = 0;
    if (cu_->cuMemGetInfo_v2(&free_bytes, &total) == CUDA_SUCCESS && bytes > free_bytes / 2)
      return {Outcome::failure(Errc::exhausted, "cuda: refusing a managed allocation of " + std::to_string(bytes) +
                                                    " bytes, over half of the device's free " +
                                                    std::to_string(free_bytes) + " (oversubscription can hang the GPU)")};
    CUdeviceptr p = 0;
    if (const CUresult r = cu_->cuMemAllocManaged(&p, bytes, kMemAttachGlobal); r != CUDA_SUCCESS)
      return {fail(r, "cuMemAllocManaged(" + std::to_string(bytes) + " bytes, CU_MEM_ATTACH_GLOBAL)")};
    allocations_[p] = kind;
    return {Outcome::runtime_success("cuMemAllocManaged"), p};
  }

  Outcome free(DevPtr p) override {
    auto it = allocations_.find(p);
    if (it != allocations_.end() && it->second == MemKind::host) {
      if (const CUresult r = cu_->cuMemFreeHost(reinterpret_cast<void*>(p)); r != CUDA_SUCCESS)
        return fail(r, "cuMemFreeHost(" + hex(p) + ")");
    } else if (const CUresult r = cu_->cuMemFree_v2(p); r != CUDA_SUCCESS) {
      // Pointers this adapter did not allocate go to the driver too: its answer is the datum.
      return fail(r, "cuMemFree(" + hex(p) + ")");
    }
    if (it != allocations_.end()) allocations_.erase(it);
    return Outcome::runtime_success(it != allocations_.end() && it->second == MemKind::host ? "cuMemFreeHost" : "cuMemFree");
  }

  Outcome write(DevPtr dst, std::span<const std::byte> src) override {
    if (const CUresult r = cu_->cuMemcpyHtoD_v2(dst, src.data(), src.size()); r != CUDA_SUCCESS)
      return fail(r, "cuMemcpyHtoD(" + hex(dst) + ", " + std::to_string(src.size()) + " bytes)");
    // A copy from pageable memory may return before the DMA lands; another process reads next.
    if (const CUresult r = cu_->cuCtxSynchronize(); r != CUDA_SUCCESS)
      return fail(r, "cuCtxSynchronize after cuMemcpyHtoD(" + hex(dst) + ")");
    return Outcome::runtime_success("cuCtxSynchronize");
  }

  Outcome read(DevPtr src, std::span<std::byte> dst) override {
    if (const CUresult r = cu_->cuMemcpyDtoH_v2(dst.data(), src, dst.size()); r != CUDA_SUCCESS)
      return fail(r, "cuMemcpyDtoH(" + hex(src) + ", " + std::to_string(dst.size()) + " bytes)");
    return Outcome::runtime_success("cuMemcpyDtoH");
  }

  Result<Exported> mem_get(DevPtr p) override {
    CUipcMemHandle h{};
    if (const CUresult r = cu_->cuIpcGetMemHandle(&h, p); r != CUDA_SUCCESS)
      return {fail(r, "cuIpcGetMemHandle(" + hex(p) + ")")};
    Exported e;
    e.id = next_id_++;
    e.bytes.assign(reinterpret_cast<const std::byte*>(h.reserved), reinterpret_cast<const std::byte*>(h.reserved) + sizeof h);
    return {Outcome::runtime_success("cuIpcGetMemHandle"), std::move(e)};
  }

  Outcome mem_put(ObjectId) override {
    return Outcome::failure(Errc::not_implemented,
                            "CUDA has no put for memory handles: cuIpcGetMemHandle's handle holds nothing to release "
                            "and stays valid while the allocation lives");
  }

  Result<DevPtr> mem_open(std::span<const std::byte> bytes, int, int device, std::uint64_t flags) override {
    if (bytes.size() != kIpcHandleSize)
      return {Outcome::failure(Errc::invalid, "cuda: handle is " + std::to_string(bytes.size()) +
                                                  " bytes, CUipcMemHandle is " + std::to_string(kIpcHandleSize) +
                                                  " (clause sycl.mem.open.size)")};
    // What the case asked for, 0 included; the plain open passes the flag CUDA requires.
    flags = open_flags(flags, kIpcMemLazyEnablePeerAccess);
    if (flags > 0xffffffffull)
      return {Outcome::failure(Errc::invalid, "cuda: open flags " + hex(flags) + " do not fit cuIpcOpenMemHandle's unsigned int")};
    if (auto o = use(device, "mem_open"); !o.ok()) return {o};
    CUipcMemHandle h;
    std::memcpy(h.reserved, bytes.data(), sizeof h);
    const unsigned f = static_cast<unsigned>(flags);
    CUdeviceptr p = 0;
    if (const CUresult r = cu_->cuIpcOpenMemHandle_v2(&p, h, f); r != CUDA_SUCCESS)
      return {fail(r, "cuIpcOpenMemHandle(flags " + hex(f) + ", device " + std::to_string(device) + ")")};
    return {Outcome::runtime_success("cuIpcOpenMemHandle"), p};
  }

  Outcome mem_close(DevPtr p) override {
    if (const CUresult r = cu_->cuIpcCloseMemHandle(p); r != CUDA_SUCCESS)
      return fail(r, "cuIpcCloseMemHandle(" + hex(p) + ")");
    return Outcome::runtime_success("cuIpcCloseMemHandle");
  }

  // ---- physical memory and virtual ranges

  std::size_t phys_granularity(int device) override {
    std::size_t g = 0;
    if (!cu_ || !cu_->has_vmm() || device < 0 || static_cast<std::size_t>(device) >= devices_.size())
      return Adapter::phys_granularity(device);
    const CUmemAllocationProp prop = phys_prop(device, true);
    if (cu_->cuMemGetAllocationGranularity(&g, &prop, kMemAllocGranularityMinimum) != CUDA_SUCCESS || g == 0)
      return Adapter::phys_granularity(device);
    return g;
  }

  Result<ObjectId> phys_create(int device, std::size_t bytes, bool ipc) override {
    if (auto o = need_vmm("phys_create"); !o.ok()) return {o};
    if (auto o = use(device, "phys_create"); !o.ok()) return {o};
    const CUmemAllocationProp prop = phys_prop(device, ipc);
    CUmemGenericAllocationHandle h = 0;
    if (const CUresult r = cu_->cuMemCreate(&h, bytes, &prop, 0); r != CUDA_SUCCESS)
      return {fail(r, "cuMemCreate(" + std::to_string(bytes) + " bytes, handle type " +
                          (ipc ? "CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR" : "CU_MEM_HANDLE_TYPE_NONE") + ")")};
    const ObjectId id = next_id_++;
    phys_[id] = Phys{h, bytes, device, false, 1};
    return {Outcome::runtime_success("cuMemCreate"), id};
  }

  Result<Exported> phys_get(ObjectId pm) override {
    if (auto o = need_vmm("phys_get"); !o.ok()) return {o};
    Phys* p = find_phys(pm);
    if (!p) return {unknown("physical memory object", pm)};
    int fd = -1;
    if (const CUresult r = cu_->cuMemExportToShareableHandle(&fd, p->handle, kMemHandleTypePosixFd, 0); r != CUDA_SUCCESS)
      return {fail(r, "cuMemExportToShareableHandle(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)")};
    unique_fd owned(fd);
    if (auto o = relocate_export_fd(owned); !o.ok()) return {o};
    fd = owned.get();
    FdRecord rec;
    rec.pid = static_cast<std::uint32_t>(::getpid());
    rec.fd = fd;
    rec.start_time = own_start_time();
    rec.size = p->size;
    rec.device = static_cast<std::uint32_t>(devices_[static_cast<std::size_t>(p->device)].handle);
    Exported e;
    e.id = next_id_++;
    e.bytes = rec.encode();
    e.fd = scm_ ? fd : -1;
    phys_exports_[e.id] = std::move(owned);
    return {Outcome::runtime_success("cuMemExportToShareableHandle"), std::move(e)};
  }

  // The exported descriptor is what a put can release: closing it revokes pidfd_getfd.
  Outcome phys_put(ObjectId export_id) override {
    auto it = phys_exports_.find(export_id);
    if (it == phys_exports_.end()) return unknown("physical memory export", export_id);
    phys_exports_.erase(it);
    return Outcome::success();
  }

  Result<ObjectId> phys_open(std::span<const std::byte> bytes, int fd, int device) override {
    if (auto o = need_vmm("phys_open"); !o.ok()) return {o};
    std::string why;
    const auto rec = FdRecord::decode(bytes, why);
    if (!rec) return {Outcome::failure(Errc::invalid, "cuda: " + why)};
    if (auto o = use(device, "phys_open"); !o.ok()) return {o};
    unique_fd taken;
    if (fd < 0) {
      auto got = take_fd(*rec);
      if (!got.ok()) return {got.outcome};
      taken.reset(got.value);
      fd = taken.get();
    }
    CUmemGenericAllocationHandle h = 0;
    void* os_handle = reinterpret_cast<void*>(static_cast<std::intptr_t>(fd));
    if (const CUresult r = cu_->cuMemImportFromShareableHandle(&h, os_handle, kMemHandleTypePosixFd); r != CUDA_SUCCESS)
      return {fail(r, "cuMemImportFromShareableHandle(fd " + std::to_string(fd) + " from pid " +
                          std::to_string(rec->pid) + ")")};
    if (Outcome held = hold_to_allocation(h, rec->size, device); !held.ok()) {
      cu_->cuMemRelease(h);
      return {held};
    }
    const ObjectId id = next_id_++;
    // CUDA has no size query on an allocation handle: the size is the one the record carries,
    // held to what CUDA maps of the imported allocation (hold_to_allocation).
    phys_[id] = Phys{h, static_cast<std::size_t>(rec->size), device, true, 1};
    return {Outcome::runtime_success("cuMemImportFromShareableHandle"), id};
  }

  // The record's size travels beside the descriptor and is ipcheck's own, so a forged record
  // must not make phys_size (and every later map) lie about the allocation CUDA imported.
  // CUDA answers it by mapping: the claimed size must map, and one granule more must not.
  Outcome hold_to_allocation(CUmemGenericAllocationHandle h, std::uint64_t size, int device) {
    const std::size_t g = phys_granularity(device);
    if (size == 0 || g == 0 || size % g != 0 || size > (std::uint64_t{1} << 46))
      return Outcome::failure(Errc::invalid, "cuda: the handle's record claims " + std::to_string(size) +
                                                 " bytes, not a whole number of " + std::to_string(g) +
                                                 "-byte granules of a physical allocation (a forged record)");
    const std::size_t bytes = static_cast<std::size_t>(size);
    CUdeviceptr va = 0;
    if (const CUresult r = cu_->cuMemAddressReserve(&va, bytes + g, 0, 0, 0); r != CUDA_SUCCESS)
      return fail(r, "cuMemAddressReserve(" + std::to_string(bytes + g) + " bytes) to check the imported allocation's size");
    Outcome out = Outcome::runtime_success("cuMemMap");
    if (const CUresult r = cu_->cuMemMap(va, bytes, 0, h, 0); r != CUDA_SUCCESS) {
      out = Outcome::failure(Errc::invalid, "cuda: the handle's record claims " + std::to_string(bytes) +
                                                " bytes, but cuMemMap of that many bytes of the imported allocation answered " +
                                                cu_->error_name(r) + " (a forged record)");
    } else {
      cu_->cuMemUnmap(va, bytes);
      if (cu_->cuMemMap(va, bytes + g, 0, h, 0) == CUDA_SUCCESS) {
        cu_->cuMemUnmap(va, bytes + g);
        out = Outcome::failure(Errc::invalid, "cuda: the handle's record claims " + std::to_string(bytes) +
                                                  " bytes, but the imported allocation maps " + std::to_string(bytes + g) +
                                                  " bytes or more (a forged record)");
      }
    }
    cu_->cuMemAddressFree(va, bytes + g);
    return out;
  }

  Outcome phys_close(ObjectId pm) override {
    Phys* p = find_phys(pm);
    if (!p) return unknown("physical memory object", pm);
    if (!p->opened)
      return Outcome::failure(Errc::invalid, "cuda: physical memory object " + std::to_string(pm) +
                                                 " was created here, not opened: release it instead of closing it");
    return release_phys(pm, "phys_close");
  }

  // CUDA counts references to an allocation handle only through a mapped address.
  Outcome phys_retain(ObjectId pm) override {
    if (auto o = need_vmm("phys_retain"); !o.ok()) return o;
    Phys* p = find_phys(pm);
    if (!p) return unknown("physical memory object", pm);
    for (const auto& [addr, m] : vm_maps_) {
      if (m.pm != pm) continue;
      CUmemGenericAllocationHandle h = 0;
      if (const CUresult r = cu_->cuMemRetainAllocationHandle(&h, reinterpret_cast<void*>(addr)); r != CUDA_SUCCESS)
        return fail(r, "cuMemRetainAllocationHandle(" + hex(addr) + ")");
      if (h != p->handle) {
        cu_->cuMemRelease(h);
        return Outcome::failure(Errc::other, "cuda: cuMemRetainAllocationHandle(" + hex(addr) + ") gave handle " +
                                                 hex(h) + ", the mapping was made from " + hex(p->handle));
      }
      ++p->refs;
      return Outcome::runtime_success("cuMemRetainAllocationHandle");
    }
    return Outcome::failure(Errc::not_implemented,
                            "cuda: CUDA retains an allocation handle only through a mapped address "
                            "(cuMemRetainAllocationHandle); object " + std::to_string(pm) + " is not mapped");
  }

  Outcome phys_release(ObjectId pm) override {
    if (!find_phys(pm)) return unknown("physical memory object", pm);
    return release_phys(pm, "phys_release");
  }

  Result<std::size_t> phys_size(ObjectId pm) override {
    Phys* p = find_phys(pm);
    if (!p) return {unknown("physical memory object", pm)};
    return {Outcome::success(), p->size};
  }

  Result<bool> phys_ipc_enabled(ObjectId pm) override {
    if (auto o = need_vmm("phys_ipc_enabled"); !o.ok()) return {o};
    Phys* p = find_phys(pm);
    if (!p) return {unknown("physical memory object", pm)};
    CUmemAllocationProp prop{};
    if (const CUresult r = cu_->cuMemGetAllocationPropertiesFromHandle(&prop, p->handle); r != CUDA_SUCCESS)
      return {fail(r, "cuMemGetAllocationPropertiesFromHandle")};
    return {Outcome::runtime_success("cuMemGetAllocationPropertiesFromHandle"), (prop.requestedHandleTypes & kMemHandleTypePosixFd) != 0};
  }

  Result<DevPtr> vm_reserve(int device, std::size_t bytes) override {
    if (auto o = need_vmm("vm_reserve"); !o.ok()) return {o};
    if (auto o = use(device, "vm_reserve"); !o.ok()) return {o};
    CUdeviceptr p = 0;
    if (const CUresult r = cu_->cuMemAddressReserve(&p, bytes, 0, 0, 0); r != CUDA_SUCCESS)
      return {fail(r, "cuMemAddressReserve(" + std::to_string(bytes) + " bytes)")};
    reservations_[p] = device;
    return {Outcome::runtime_success("cuMemAddressReserve"), p};
  }

  Outcome vm_free(DevPtr p, std::size_t bytes) override {
    if (auto o = need_vmm("vm_free"); !o.ok()) return o;
    if (const CUresult r = cu_->cuMemAddressFree(p, bytes); r != CUDA_SUCCESS)
      return fail(r, "cuMemAddressFree(" + hex(p) + ", " + std::to_string(bytes) + " bytes)");
    reservations_.erase(p);
    return Outcome::runtime_success("cuMemAddressFree");
  }

  Outcome vm_map(DevPtr p, std::size_t bytes, ObjectId pm, std::size_t offset) override {
    if (auto o = need_vmm("vm_map"); !o.ok()) return o;
    Phys* ph = find_phys(pm);
    if (!ph) return unknown("physical memory object", pm);
    if (const CUresult r = cu_->cuMemMap(p, bytes, offset, ph->handle, 0); r != CUDA_SUCCESS)
      return fail(r, "cuMemMap(" + hex(p) + ", " + std::to_string(bytes) + " bytes, offset " + std::to_string(offset) + ")");
    // Access for the device the range was reserved on (else the object's own device).
    int device = ph->device;
    for (const auto& [base, dev] : reservations_)
      if (base <= p) device = dev;
    CUmemAccessDesc access{};
    access.location.type = kMemLocationTypeDevice;
    access.location.id = devices_[static_cast<std::size_t>(device)].handle;
    access.flags = kMemAccessProtReadWrite;
    if (const CUresult r = cu_->cuMemSetAccess(p, bytes, &access, 1); r != CUDA_SUCCESS) {
      cu_->cuMemUnmap(p, bytes);
      return fail(r, "cuMemSetAccess(" + hex(p) + ", " + std::to_string(bytes) + " bytes, read-write for device " +
                         std::to_string(device) + ")");
    }
    vm_maps_[p] = VmMap{pm, bytes};
    return Outcome::runtime_success("cuMemSetAccess");
  }

  Outcome vm_unmap(DevPtr p, std::size_t bytes) override {
    if (auto o = need_vmm("vm_unmap"); !o.ok()) return o;
    if (const CUresult r = cu_->cuMemUnmap(p, bytes); r != CUDA_SUCCESS)
      return fail(r, "cuMemUnmap(" + hex(p) + ", " + std::to_string(bytes) + " bytes)");
    vm_maps_.erase(p);
    return Outcome::runtime_success("cuMemUnmap");
  }

  // ---- events

  Result<ObjectId> event_create(int device, EventFlags flags) override {
    if (auto o = use(device, "event_create"); !o.ok()) return {o};
    unsigned f = 0;
    if (flags.ipc) f |= kEventInterprocess;
    if (!flags.profiling) f |= kEventDisableTiming;  // timing is CUDA's profiling
    CUevent ev = nullptr;
    if (const CUresult r = cu_->cuEventCreate(&ev, f); r != CUDA_SUCCESS)
      return {fail(r, "cuEventCreate(" + event_flag_names(f) + ")")};
    Event e;
    e.ev = ev;
    e.device = device;
    // An IPC event starts pending (see the top of this file): recorded behind a closed gate.
    if (flags.ipc) {
      if (Outcome o = arm(e); !o.ok()) {
        drop(e);
        return {o};
      }
    }
    const ObjectId id = next_id_++;
    events_[id] = e;
    return {Outcome::runtime_success("cuEventCreate"), id};
  }

  Result<Exported> event_get(ObjectId id) override {
    Event* e = find_event(id);
    if (!e) return {unknown("event", id)};
    CUipcEventHandle h{};
    if (const CUresult r = cu_->cuIpcGetEventHandle(&h, e->ev); r != CUDA_SUCCESS)
      return {fail(r, std::string("cuIpcGetEventHandle(") + (e->opened ? "an opened event" : "a created event") + ")")};
    Exported x;
    x.id = next_id_++;
    x.bytes.assign(reinterpret_cast<const std::byte*>(h.reserved), reinterpret_cast<const std::byte*>(h.reserved) + sizeof h);
    return {Outcome::runtime_success("cuIpcGetEventHandle"), std::move(x)};
  }

  Outcome event_put(ObjectId) override {
    return Outcome::failure(Errc::not_implemented,
                            "CUDA has no put for event handles: cuIpcGetEventHandle's handle holds nothing to release");
  }

  Result<ObjectId> event_open(std::span<const std::byte> bytes, int, int device) override {
    if (bytes.size() != kIpcHandleSize)
      return {Outcome::failure(Errc::invalid, "cuda: handle is " + std::to_string(bytes.size()) +
                                                  " bytes, CUipcEventHandle is " + std::to_string(kIpcHandleSize))};
    if (auto o = use(device, "event_open"); !o.ok()) return {o};
    CUipcEventHandle h;
    std::memcpy(h.reserved, bytes.data(), sizeof h);
    CUevent ev = nullptr;
    if (const CUresult r = cu_->cuIpcOpenEventHandle(&ev, h); r != CUDA_SUCCESS)
      return {fail(r, "cuIpcOpenEventHandle(device " + std::to_string(device) + ")")};
    const ObjectId id = next_id_++;
    Event e;
    e.ev = ev;
    e.device = device;
    e.opened = true;
    events_[id] = e;
    return {Outcome::runtime_success("cuIpcOpenEventHandle"), id};
  }

  // The creator's first signal opens the event's gate: the record CUDA holds pending since
  // creation completes on the device (the host write is the adapter's; whether the event
  // then completes is cuEventQuery's answer). Any other signal records the event again.
  Outcome event_signal(ObjectId id) override {
    Event* e = find_event(id);
    if (!e) return unknown("event", id);
    if (auto o = use(e->device, "event_signal"); !o.ok()) return o;
    if (e->gate_closed) {
      open_gate(*e);
      return Outcome::success();
    }
    CUevent target = e->ev;
    if (fault_private_event_) {
      if (!e->priv)
        if (const CUresult r = cu_->cuEventCreate(&e->priv, kEventDisableTiming); r != CUDA_SUCCESS)
          return fail(r, "cuEventCreate(CU_EVENT_DISABLE_TIMING) for the test-only private_event fault");
      target = e->priv;
    }
    if (const CUresult r = cu_->cuEventRecord(target, nullptr); r != CUDA_SUCCESS)
      return fail(r, "cuEventRecord(default stream)");
    return Outcome::runtime_success("cuEventRecord");
  }

  Outcome event_reset(ObjectId) override {
    return Outcome::failure(Errc::not_implemented,
                            "CUDA has no event reset: an event is complete once its last record has run");
  }

  Result<bool> event_query(ObjectId id) override {
    Event* e = find_event(id);
    if (!e) return {unknown("event", id)};
    const CUresult r = cu_->cuEventQuery(e->ev);
    if (r == CUDA_SUCCESS) return {Outcome::runtime_success("cuEventQuery"), true};
    if (r == CUDA_ERROR_NOT_READY) return {Outcome::runtime_success("cuEventQuery"), false};
    return {fail(r, "cuEventQuery")};
  }

  Result<bool> event_wait(ObjectId id, std::chrono::nanoseconds timeout) override {
    Event* e = find_event(id);
    if (!e) return {unknown("event", id)};
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto pause = std::chrono::microseconds(50);
    for (;;) {
      const CUresult r = cu_->cuEventQuery(e->ev);
      if (r == CUDA_SUCCESS) return {Outcome::runtime_success("cuEventQuery"), true};
      if (r != CUDA_ERROR_NOT_READY) return {fail(r, "cuEventQuery while waiting")};
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) return {Outcome::runtime_success("cuEventQuery"), false};  // still CUDA_ERROR_NOT_READY
      std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(pause, deadline - now));
      pause = std::min(pause * 2, std::chrono::microseconds(2000));
    }
  }

  // The CUevent or the CUmemGenericAllocationHandle CUDA returned for the object.
  Result<std::uint64_t> native_identity(ObjectId id) override {
    if (Event* e = find_event(id)) return {Outcome::runtime_success("cuEventCreate/cuIpcOpenEventHandle"), reinterpret_cast<std::uint64_t>(e->ev)};
    if (Phys* p = find_phys(id)) return {Outcome::runtime_success("cuMemCreate/cuMemImportFromShareableHandle"), p->handle};
    return {unknown("object", id)};
  }

  Outcome event_retain(ObjectId) override {
    return Outcome::failure(Errc::not_implemented, "CUDA events have no reference count to retain");
  }

  Outcome event_release(ObjectId id) override {
    Event* e = find_event(id);
    if (!e) return unknown("event", id);
    open_gate(*e);  // a record still pending completes before its event goes
    if (const CUresult r = cu_->cuEventDestroy_v2(e->ev); r != CUDA_SUCCESS)
      return fail(r, std::string("cuEventDestroy(") + (e->opened ? "an opened event" : "a created event") + ")");
    e->ev = nullptr;
    drop(*e);
    events_.erase(id);
    return Outcome::runtime_success("cuEventDestroy");
  }

  // native("null_argument", {verb, argument}): CUDA's call with that argument null, as asked.
  // CUDA's IPC calls take no context (they act on the current one): those combinations do
  // not exist here. native("event_unrecorded"): cuEventQuery on an IPC event never recorded
  // (not armed), CUDA's answer in the outcome's native code (cuda.event.unrecorded).
  Outcome native(const std::string& what, const std::map<std::string, std::string>& args) override {
    const auto arg = [&](const char* k) { return args.count(k) ? args.at(k) : std::string(); };
    if (what == "null_argument") return null_argument(arg("verb"), arg("argument"));
    if (what == "event_unrecorded") {
      if (auto o = use(0, "event_unrecorded"); !o.ok()) return o;
      CUevent ev = nullptr;
      if (const CUresult r = cu_->cuEventCreate(&ev, kEventInterprocess | kEventDisableTiming); r != CUDA_SUCCESS)
        return fail(r, "cuEventCreate(CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING)");
      const CUresult q = cu_->cuEventQuery(ev);
      cu_->cuEventDestroy_v2(ev);
      Outcome o = Outcome::runtime_success("cuEventQuery");
      o.native = q;
      o.native_name = cu_->error_name(q);
      o.message = "cuEventQuery on a never-recorded IPC event answered " + o.native_name;
      if (q != CUDA_SUCCESS && q != CUDA_ERROR_NOT_READY) return fail(q, "cuEventQuery on a never-recorded IPC event");
      return o;
    }
    return Adapter::native(what, args);
  }

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
    CUstream stream = nullptr;  // the gated record's stream (created events)
    int slot = -1;              // the gate's word in gate_host_
    bool gate_closed = false;   // the gated record is still pending on the device
    CUevent priv = nullptr;     // IPCHECK_CUDA_FAULT=private_event: what gets recorded instead
  };
  // What a warm-up counted, which calls failed, and the first group that broke the context.
  struct WarmUp {
    explicit WarmUp(const Driver& driver) : cu(driver) {}

    const Driver& cu;
    std::vector<std::string> failed;
    int calls = 0;
    std::string broken;  // "after <group>: <error>"

    // Counts the call; a failure is recorded by its name and CUDA's.
    bool ok(const char* what, CUresult r) {
      ++calls;
      if (r != CUDA_SUCCESS) failed.push_back(std::string(what) + " " + cu.error_name(r));
      return r == CUDA_SUCCESS;
    }
    // Synchronizes the context; the first group after which that fails broke it.
    bool synced(const char* group) {
      const CUresult r = cu.cuCtxSynchronize();
      if (r != CUDA_SUCCESS && broken.empty()) broken = std::string("after ") + group + ": " + cu.error_name(r);
      return r == CUDA_SUCCESS;
    }
  };
  static constexpr int kGateSlots = 1024;  // words of the one gate page

  // One page of pinned host memory mapped for the device; word i is gate i. Made once per
  // process, before the role's audit baseline (it lives as long as the context).
  void make_gates() {
    if (!cu_->has_stream_wait()) {
      gate_error_ = Outcome::failure(Errc::not_implemented, "cuda: " + cu_->path() +
                                                                " lacks cuStreamWaitValue32_v2/cuMemHostAlloc (needed to hold an event pending)");
      return;
    }
    void* host = nullptr;
    if (const CUresult r = cu_->cuMemHostAlloc(&host, kGateSlots * sizeof(std::uint32_t), kMemHostAllocDeviceMap);
        r != CUDA_SUCCESS) {
      gate_error_ = fail(r, "cuMemHostAlloc(4096 bytes, CU_MEMHOSTALLOC_DEVICEMAP) for the event gates");
      return;
    }
    CUdeviceptr dev = 0;
    if (const CUresult r = cu_->cuMemHostGetDevicePointer_v2(&dev, host, 0); r != CUDA_SUCCESS) {
      gate_error_ = fail(r, "cuMemHostGetDevicePointer for the event gates");
      cu_->cuMemFreeHost(host);
      return;
    }
    std::memset(host, 0, kGateSlots * sizeof(std::uint32_t));
    gate_host_ = static_cast<std::uint32_t*>(host);
    gate_dev_ = dev;
    gate_value_.assign(kGateSlots, 0);
    gate_used_.assign(kGateSlots, false);
  }

  // Records `e` on a new stream behind a wait for gate word `slot` to reach a value the host
  // has not written yet: CUDA holds the record, and so the event, pending until open_gate.
  Outcome arm(Event& e) {
    if (!gate_host_) return gate_error_;
    const auto free_slot = std::find(gate_used_.begin(), gate_used_.end(), false);
    if (free_slot == gate_used_.end())
      return Outcome::failure(Errc::exhausted, "cuda: all " + std::to_string(kGateSlots) +
                                                   " event gates are in use (one per live IPC event of this process)");
    const int slot = static_cast<int>(free_slot - gate_used_.begin());
    if (const CUresult r = cu_->cuStreamCreate(&e.stream, kStreamNonBlocking); r != CUDA_SUCCESS)
      return fail(r, "cuStreamCreate(CU_STREAM_NON_BLOCKING) for the event's gate");
    // Values only grow: a gate opened before (the word holds its last value) is closed again.
    const std::uint32_t value = gate_value_[static_cast<std::size_t>(slot)] + 1;
    const CUdeviceptr word = gate_dev_ + static_cast<CUdeviceptr>(slot) * sizeof(std::uint32_t);
    if (const CUresult r = cu_->cuStreamWaitValue32_v2(e.stream, word, value, kStreamWaitValueGeq); r != CUDA_SUCCESS)
      return fail(r, "cuStreamWaitValue32(gate " + std::to_string(slot) + ", CU_STREAM_WAIT_VALUE_GEQ " +
                         std::to_string(value) + ")");
    gate_value_[static_cast<std::size_t>(slot)] = value;
    gate_used_[static_cast<std::size_t>(slot)] = true;
    e.slot = slot;
    e.gate_closed = true;
    CUevent target = e.ev;
    if (fault_private_event_) {
      if (const CUresult r = cu_->cuEventCreate(&e.priv, kEventDisableTiming); r != CUDA_SUCCESS)
        return fail(r, "cuEventCreate(CU_EVENT_DISABLE_TIMING) for the test-only private_event fault");
      target = e.priv;
    }
    if (const CUresult r = cu_->cuEventRecord(target, e.stream); r != CUDA_SUCCESS)
      return fail(r, "cuEventRecord(the event's gated stream)");
    return Outcome::success();
  }

  // The host's write that lets the gated record run (idempotent).
  void open_gate(Event& e) {
    if (!e.gate_closed) return;
    __atomic_store_n(&gate_host_[e.slot], gate_value_[static_cast<std::size_t>(e.slot)], __ATOMIC_SEQ_CST);
    e.gate_closed = false;
  }

  // Frees what an event holds besides its CUevent (which the caller destroyed, or not made).
  void drop(Event& e) {
    open_gate(e);
    if (e.ev) cu_->cuEventDestroy_v2(e.ev);
    e.ev = nullptr;
    if (e.priv) cu_->cuEventDestroy_v2(e.priv);
    e.priv = nullptr;
    if (e.stream) cu_->cuStreamDestroy_v2(e.stream);  // returns at once; the stream goes once drained
    e.stream = nullptr;
    if (e.slot >= 0) gate_used_[static_cast<std::size_t>(e.slot)] = false;
    e.slot = -1;
  }

  Outcome null_argument(const std::string& verb, const std::string& arg) {
    const std::string known =
        "mem_get (pointer, out), mem_open (out), mem_close (pointer), event_get (handle, out); "
        "CUDA's IPC calls take no context";
    if (auto o = use(0, "null_argument"); !o.ok()) return o;
    if (verb == "mem_get" && arg == "pointer") {
      CUipcMemHandle h{};
      const CUresult r = cu_->cuIpcGetMemHandle(&h, 0);
      return r == CUDA_SUCCESS ? Outcome::runtime_success("cuIpcGetMemHandle") : fail(r, "cuIpcGetMemHandle(&h, 0)");
    }
    if (verb == "mem_get" && arg == "out") {
      CUdeviceptr p = 0;
      if (const CUresult r = cu_->cuMemAlloc_v2(&p, 4096); r != CUDA_SUCCESS) return fail(r, "cuMemAlloc(4096 bytes)");
      const CUresult r = cu_->cuIpcGetMemHandle(nullptr, p);
      cu_->cuMemFree_v2(p);
      return r == CUDA_SUCCESS ? Outcome::runtime_success("cuIpcGetMemHandle")
                               : fail(r, "cuIpcGetMemHandle(NULL, a live allocation)");
    }
    if (verb == "mem_open" && arg == "out") {
      CUipcMemHandle h{};
      const CUresult r = cu_->cuIpcOpenMemHandle_v2(nullptr, h, 0);
      return r == CUDA_SUCCESS ? Outcome::runtime_success("cuIpcOpenMemHandle")
                               : fail(r, "cuIpcOpenMemHandle(NULL, a zero handle, 0)");
    }
    if (verb == "mem_close" && arg == "pointer") {
      const CUresult r = cu_->cuIpcCloseMemHandle(0);
      return r == CUDA_SUCCESS ? Outcome::runtime_success("cuIpcCloseMemHandle") : fail(r, "cuIpcCloseMemHandle(0)");
    }
    if (verb == "event_get" && (arg == "handle" || arg == "out")) {
      CUevent ev = nullptr;
      if (arg == "out")
        if (const CUresult r = cu_->cuEventCreate(&ev, kEventInterprocess | kEventDisableTiming); r != CUDA_SUCCESS)
          return fail(r, "cuEventCreate(CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING)");
      CUipcEventHandle h{};
      const CUresult r = arg == "out" ? cu_->cuIpcGetEventHandle(nullptr, ev) : cu_->cuIpcGetEventHandle(&h, nullptr);
      if (ev) cu_->cuEventDestroy_v2(ev);
      return r == CUDA_SUCCESS ? Outcome::runtime_success("cuIpcGetEventHandle")
                               : fail(r, arg == "out" ? "cuIpcGetEventHandle(NULL, an IPC event)" : "cuIpcGetEventHandle(&h, NULL)");
    }
    return Outcome::failure(Errc::not_implemented,
                            "null_argument: no CUDA call for verb '" + verb + "' with a null '" + arg + "'; known: " + known);
  }

  // An outcome for a failed CUDA call: the code mapped, the native name and sentence.
  Outcome fail(CUresult r, const std::string& call) const {
    std::string message = call + " answered " + cu_->error_name(r) + ": " + cu_->error_text(r);
    if (sticky(r)) message += " (a sticky error: the context is unusable, every later call in this process fails)";
    return Outcome::runtime_failure(call.substr(0, call.find_first_of("( ")), map_result(r), std::move(message), r,
                                    cu_->error_name(r));
  }

  static Outcome unknown(const char* what, ObjectId id) {
    return Outcome::failure(Errc::invalid, std::string("cuda: ") + what + " " + std::to_string(id) +
                                               " is not live in this process (released already, or never made here)");
  }

  int attribute(CUdevice d, CUdevice_attribute a) const {
    int v = 0;
    return cu_->cuDeviceGetAttribute(&v, a, d) == CUDA_SUCCESS ? v : 0;
  }

  // Makes `device`'s primary context current (calls act on the current context).
  Outcome use(int device, const char* verb) {
    if (device < 0 || static_cast<std::size_t>(device) >= devices_.size())
      return Outcome::failure(Errc::invalid, std::string("cuda: ") + verb + ": device " + std::to_string(device) +
                                                 " is not one of the " + std::to_string(devices_.size()) + " devices");
    if (device == current_) return Outcome::success();
    if (const CUresult r = cu_->cuCtxSetCurrent(devices_[static_cast<std::size_t>(device)].ctx); r != CUDA_SUCCESS)
      return fail(r, "cuCtxSetCurrent(device " + std::to_string(device) + ")");
    current_ = device;
    return Outcome::success();
  }

  Outcome need_vmm(const char* verb) const {
    if (cu_->has_vmm()) return Outcome::success();
    return Outcome::failure(Errc::not_implemented, std::string("cuda: ") + verb + ": " + cu_->path() +
                                                       " lacks the virtual memory management functions (cuMemCreate...)");
  }

  CUmemAllocationProp phys_prop(int device, bool ipc) const {
    CUmemAllocationProp prop{};
    prop.type = kMemAllocationTypePinned;
    prop.requestedHandleTypes = ipc ? kMemHandleTypePosixFd : kMemHandleTypeNone;
    prop.location.type = kMemLocationTypeDevice;
    prop.location.id = devices_[static_cast<std::size_t>(device)].handle;
    return prop;
  }

  Phys* find_phys(ObjectId id) {
    auto it = phys_.find(id);
    return it == phys_.end() ? nullptr : &it->second;
  }
  Event* find_event(ObjectId id) {
    auto it = events_.find(id);
    return it == events_.end() ? nullptr : &it->second;
  }

  Outcome release_phys(ObjectId pm, const char* verb) {
    Phys& p = phys_.at(pm);
    if (const CUresult r = cu_->cuMemRelease(p.handle); r != CUDA_SUCCESS)
      return fail(r, std::string("cuMemRelease (") + verb + ")");
    if (--p.refs == 0) phys_.erase(pm);
    return Outcome::runtime_success("cuMemRelease");
  }

  // The exporter's descriptor through pidfd_open + pidfd_getfd, after proving the pid is
  // still the process that exported (its start time).
  Result<int> take_fd(const FdRecord& rec) {
    unique_fd fd;
    if (Outcome o = toolkit::take_exporter_fd({static_cast<int>(rec.pid), rec.fd, rec.start_time}, "cuda: ", fd);
        !o.ok())
      return {o};
    return {Outcome::success(), fd.release()};
  }

  // This process's start time (the records' proof of the exporter).
  static std::uint64_t own_start_time() { return toolkit::own_start_time(); }

  Outcome relocate_export_fd(unique_fd& fd) {
    if (const int err = export_numbers_.place(fd); err != 0)
      return Outcome::failure(Errc::exhausted, std::string("cuda: fcntl(F_DUPFD_CLOEXEC) of an exported fd failed: ") +
                                                   std::strerror(err), err, "errno");
    return Outcome::success();
  }

  static std::string event_flag_names(unsigned f) {
    std::string s;
    if (f & kEventInterprocess) s += "CU_EVENT_INTERPROCESS";
    if (f & kEventDisableTiming) s += std::string(s.empty() ? "" : " | ") + "CU_EVENT_DISABLE_TIMING";
    return s.empty() ? "CU_EVENT_DEFAULT" : s;
  }

  // Runs each kind of call once, so that the driver's one-time lazy state (staging
  // buffers, event pools, VMM bookkeeping) exists before the role's audit baseline and is
  // not mistaken for what a case leaked. Each group ends with a context synchronize, so
  // nothing is freed under an in-flight copy. A failed call is recorded, not fatal (cases
  // meet it again); a group that leaves the context broken (a sticky error) gets the
  // primary context reset, and init fails only if that does not bring it back.
  Outcome warm_up() {
    WarmUp w(*cu_);
    std::vector<std::byte> bytes(4096, std::byte{0x5a});
    warm_up_memory(w, bytes);
    warm_up_events(w);
    if (devices_[0].vmm && devices_[0].posix_fd) warm_up_physical(w);
    w.synced("the warm-up");
    warm_up_ = std::to_string(w.calls) + " calls, " +
               (w.failed.empty() ? std::string("all succeeded") : std::to_string(w.failed.size()) + " failed:");
    for (const auto& f : w.failed) warm_up_ += " " + f;
    if (!w.failed.empty()) std::fprintf(stderr, "[cuda] warm-up: %s\n", warm_up_.c_str());
    if (w.broken.empty()) return Outcome::success();
    std::fprintf(stderr, "[cuda] warm-up left the context broken (%s); resetting the primary context\n", w.broken.c_str());
    warm_up_ += "; context broken " + w.broken + ", primary context reset";
    return reset_broken_context(w.broken, bytes.size());
  }

  // Device memory (allocated, copied both ways, its IPC handle taken), then pinned host memory.
  void warm_up_memory(WarmUp& w, std::vector<std::byte>& bytes) {
    CUdeviceptr p = 0;
    if (w.ok("cuMemAlloc", cu_->cuMemAlloc_v2(&p, bytes.size()))) {
      w.ok("cuMemcpyHtoD", cu_->cuMemcpyHtoD_v2(p, bytes.data(), bytes.size()));
      w.ok("cuMemcpyDtoH", cu_->cuMemcpyDtoH_v2(bytes.data(), p, bytes.size()));
      CUipcMemHandle h{};
      w.ok("cuIpcGetMemHandle", cu_->cuIpcGetMemHandle(&h, p));
      w.synced("device memory");
      cu_->cuMemFree_v2(p);
    }
    void* host = nullptr;
    if (w.ok("cuMemAllocHost", cu_->cuMemAllocHost_v2(&host, bytes.size()))) cu_->cuMemFreeHost(host);
    w.synced("host memory");
  }

  // An IPC event: created, its IPC handle taken, recorded and waited for.
  void warm_up_events(WarmUp& w) {
    CUevent ev = nullptr;
    if (w.ok("cuEventCreate", cu_->cuEventCreate(&ev, kEventInterprocess | kEventDisableTiming))) {
      CUipcEventHandle h{};
      w.ok("cuIpcGetEventHandle", cu_->cuIpcGetEventHandle(&h, ev));
      w.ok("cuEventRecord", cu_->cuEventRecord(ev, nullptr));
      w.ok("cuEventSynchronize", cu_->cuEventSynchronize(ev));
      w.synced("events");
      cu_->cuEventDestroy_v2(ev);
    }
  }

  // One granule of physical memory on device 0: created, exported as a descriptor, mapped
  // read-write into a reserved range.
  void warm_up_physical(WarmUp& w) {
    const CUmemAllocationProp prop = phys_prop(0, true);
    std::size_t g = 0;
    CUmemGenericAllocationHandle h = 0;
    if (w.ok("cuMemGetAllocationGranularity", cu_->cuMemGetAllocationGranularity(&g, &prop, kMemAllocGranularityMinimum)) &&
        w.ok("cuMemCreate", cu_->cuMemCreate(&h, g, &prop, 0))) {
      int fd = -1;
      if (w.ok("cuMemExportToShareableHandle", cu_->cuMemExportToShareableHandle(&fd, h, kMemHandleTypePosixFd, 0)))
        ::close(fd);
      CUdeviceptr va = 0;
      if (w.ok("cuMemAddressReserve", cu_->cuMemAddressReserve(&va, g, 0, 0, 0))) {
        if (w.ok("cuMemMap", cu_->cuMemMap(va, g, 0, h, 0))) {
          CUmemAccessDesc access{};
          access.location = prop.location;
          access.flags = kMemAccessProtReadWrite;
          w.ok("cuMemSetAccess", cu_->cuMemSetAccess(va, g, &access, 1));
          w.synced("physical memory");
          cu_->cuMemUnmap(va, g);
        }
        cu_->cuMemAddressFree(va, g);
      }
      cu_->cuMemRelease(h);
    }
  }

  // Resets device 0's primary context the warm-up broke (`broken` says how), takes it
  // afresh and proves it with one allocation of `probe_bytes`.
  Outcome reset_broken_context(const std::string& broken, std::size_t probe_bytes) {
    const Device d = devices_[0];
    if (!cu_->cuDevicePrimaryCtxReset_v2)
      return Outcome::failure(Errc::device_lost, "cuda: the warm-up left the context broken (" + broken +
                                                     ") and this driver has no cuDevicePrimaryCtxReset");
    if (const CUresult r = cu_->cuDevicePrimaryCtxReset_v2(d.handle); r != CUDA_SUCCESS)
      return fail(r, "cuDevicePrimaryCtxReset after the warm-up broke the context (" + broken + ")");
    // Take the reset context afresh: release our reference, retain it again, make it current.
    cu_->cuDevicePrimaryCtxRelease_v2(d.handle);
    devices_[0].ctx = nullptr;
    if (const CUresult r = cu_->cuDevicePrimaryCtxRetain(&devices_[0].ctx, d.handle); r != CUDA_SUCCESS)
      return fail(r, "cuDevicePrimaryCtxRetain after resetting the context the warm-up broke (" + broken + ")");
    current_ = -1;
    if (auto o = use(0, "init"); !o.ok()) return o;
    CUdeviceptr probe = 0;
    CUresult r = cu_->cuMemAlloc_v2(&probe, probe_bytes);
    if (r == CUDA_SUCCESS) {
      cu_->cuMemFree_v2(probe);
      r = cu_->cuCtxSynchronize();
    }
    if (r != CUDA_SUCCESS) return fail(r, "the first allocation after resetting the context the warm-up broke (" + broken + ")");
    return Outcome::success();
  }

  std::unique_ptr<Driver> cu_;
  std::vector<Device> devices_;
  int current_ = -1;
  int api_version_ = 0;
  std::string driver_version_, driver_version_source_, warm_up_;
  bool scm_ = false;
  toolkit::ExportFdNumbers export_numbers_;
  ObjectId next_id_ = 1;
  std::map<DevPtr, MemKind> allocations_;
  std::map<ObjectId, Phys> phys_;
  std::map<ObjectId, unique_fd> phys_exports_;
  std::map<DevPtr, int> reservations_;  // base -> device
  std::map<DevPtr, VmMap> vm_maps_;
  std::map<ObjectId, Event> events_;
  bool fault_private_event_ = false;  // IPCHECK_CUDA_FAULT=private_event (test only)
  std::uint32_t* gate_host_ = nullptr;
  CUdeviceptr gate_dev_ = 0;
  std::vector<std::uint32_t> gate_value_;  // per gate: the value its wait asks for (the last one)
  std::vector<bool> gate_used_;
  Outcome gate_error_ = Outcome::failure(Errc::not_implemented, "cuda: the event gates were never made");
};

const AdapterRegistration registered_cuda{{"cuda",
                               "NVIDIA's CUDA driver API (libcuda, loaded at run time)",
                               {"sycl", "cuda"},
                               [] { return std::unique_ptr<Adapter>(new CudaAdapter); },
                               {"library"}}};

}  // namespace
}  // namespace ipcheck::cuda_adapter
