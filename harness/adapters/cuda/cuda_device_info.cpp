// The `cuda` adapter's device information: each device's attributes as init reads them, the
// NVIDIA driver's own version, and info().
#include <dlfcn.h>

#include <cctype>
#include <cstddef>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "cuda_adapter.hpp"

namespace ipcheck::cuda_adapter {
namespace {

bool looks_like_version(const std::string& w) {
  if (w.empty() || !std::isdigit(static_cast<unsigned char>(w[0])) || w.find('.') == std::string::npos) return false;
  for (char c : w)
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.') return false;
  return true;
}

std::string format_uuid(const CUuuid& u) {
  const auto* b = reinterpret_cast<const unsigned char*>(u.bytes);
  char s[48];
  std::snprintf(s, sizeof s, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return s;
}

}  // namespace

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

Outcome CudaAdapter::read_device(int index, Device& d) const {
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

int CudaAdapter::attribute(CUdevice d, CUdevice_attribute a) const {
  int v = 0;
  return cu_->cuDeviceGetAttribute(&v, a, d) == CUDA_SUCCESS ? v : 0;
}

AdapterInfo CudaAdapter::info() {
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
  i.any_process_ends_pending_event = false;
  // Cases that put exports skip before their roles start (each would start a context first).
  i.unsupported_verbs["mem_put"] = kNoMemPut;
  i.unsupported_verbs["event_put"] = kNoEventPut;
  i.pending_event_note =
      "a CUDA IPC event is pending while a record some process made has not run, and a record made elsewhere "
      "queues behind it; ipcheck's pending state of a new event and its reset are such records";
  i.transport = scm_ ? "scm" : "pidfd";
  i.extra["libcuda"] = cu_->path();
  i.extra["driver_version_source"] = driver_version_source_.empty() ? "none found" : driver_version_source_;
  i.extra["cuda_driver_api"] = std::to_string(api_version_);
  i.extra["device_max_connections"] = connections_;
  i.extra["mem_open_flags"] = "passed to cuIpcOpenMemHandle as the case asked (0 is 0; CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS is 0x1)";
  // The runtime's peer-access request for an open on another device (cases/multi_device/).
  i.extra["mem_open_peer_flag"] = "0x1";
  i.extra["mem_open_flags_default"] = "CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS (0x1): CUDA requires it; flags 0 answer CUDA_ERROR_INVALID_VALUE";
  i.extra["event_gate"] = gate_host_ ? "IPC events are recorded at creation behind cuStreamWaitValue32 on host memory "
                                       "(" + std::to_string(kGateSlots) + " gates), in an event context per device beside "
                                       "the primary one; signal opens the gate"
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

}  // namespace ipcheck::cuda_adapter
