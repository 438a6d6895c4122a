// The device queries the SYCL runtime and UR's released Level Zero adapters make while they
// list devices and decide what a device supports (oneAPI 2026.1.2 and 2026.2.0, traced with
// UR_LOG_LEVEL_ZERO=level:debug): without zeDeviceGetMemoryAccessProperties libsycl reports no
// USM aspect and every sycl::malloc_* fails ("Device does not support USM device
// allocations"). Each answers what libze_ipcheck really is: host memory behind every
// allocation (read/write from the host and the device, no atomics promised), no kernels
// (modules build nothing: no SPIR-V version, no images), one root device per ipcref device.
#include <cstdio>
#include <cstring>

#include "entries.hpp"
#include "state.hpp"

namespace zedriver {

namespace {

// Clears a properties structure but keeps its stype and pNext, as every query does.
template <class P>
void clear_keeping_chain(P* p) {
  void* next = p->pNext;
  const auto stype = p->stype;
  std::memset(p, 0, sizeof *p);
  p->stype = stype;
  p->pNext = next;
}

}  // namespace

ze_result_t ZE_APICALL DeviceGetMemoryAccessProperties(ze_device_handle_t hDevice,
                                                       ze_device_memory_access_properties_t* p) {
  return entry("zeDeviceGetMemoryAccessProperties", [&] {
    driver();
    get<Device>(hDevice, Kind::device, "zeDeviceGetMemoryAccessProperties", "hDevice");
    need_pointer(p, "zeDeviceGetMemoryAccessProperties", "pMemAccessProperties");
    clear_keeping_chain(p);
    // Host, device and single-device shared allocations: all host memory, read and written
    // by loads and stores; cross-device and system allocations are not offered.
    p->hostAllocCapabilities = ZE_MEMORY_ACCESS_CAP_FLAG_RW;
    p->deviceAllocCapabilities = ZE_MEMORY_ACCESS_CAP_FLAG_RW;
    p->sharedSingleDeviceAllocCapabilities = ZE_MEMORY_ACCESS_CAP_FLAG_RW;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DeviceGetMemoryProperties(ze_device_handle_t hDevice, uint32_t* pCount,
                                                 ze_device_memory_properties_t* p) {
  return entry("zeDeviceGetMemoryProperties", [&] {
    driver();
    get<Device>(hDevice, Kind::device, "zeDeviceGetMemoryProperties", "hDevice");
    need_pointer(pCount, "zeDeviceGetMemoryProperties", "pCount");
    if (*pCount == 0 || !p) {
      *pCount = 1;
      return ZE_RESULT_SUCCESS;
    }
    clear_keeping_chain(&p[0]);
    p[0].totalSize = 1ull << 34;  // what zeDeviceGetProperties' maxMemAllocSize allows, and less
    std::snprintf(p[0].name, sizeof p[0].name, "%s", "host memory (ipcref)");
    *pCount = 1;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DeviceGetComputeProperties(ze_device_handle_t hDevice, ze_device_compute_properties_t* p) {
  return entry("zeDeviceGetComputeProperties", [&] {
    driver();
    get<Device>(hDevice, Kind::device, "zeDeviceGetComputeProperties", "hDevice");
    need_pointer(p, "zeDeviceGetComputeProperties", "pComputeProperties");
    clear_keeping_chain(p);
    // No kernels run here; the smallest shape a runtime accepts as a device.
    p->maxTotalGroupSize = 1;
    p->maxGroupSizeX = p->maxGroupSizeY = p->maxGroupSizeZ = 1;
    p->maxGroupCountX = p->maxGroupCountY = p->maxGroupCountZ = 1;
    p->numSubGroupSizes = 1;
    p->subGroupSizes[0] = 1;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DeviceGetModuleProperties(ze_device_handle_t hDevice, ze_device_module_properties_t* p) {
  return entry("zeDeviceGetModuleProperties", [&] {
    driver();
    get<Device>(hDevice, Kind::device, "zeDeviceGetModuleProperties", "hDevice");
    need_pointer(p, "zeDeviceGetModuleProperties", "pModuleProperties");
    clear_keeping_chain(p);  // no SPIR-V version: zeModuleCreate is not offered
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DeviceGetImageProperties(ze_device_handle_t hDevice, ze_device_image_properties_t* p) {
  return entry("zeDeviceGetImageProperties", [&] {
    driver();
    get<Device>(hDevice, Kind::device, "zeDeviceGetImageProperties", "hDevice");
    need_pointer(p, "zeDeviceGetImageProperties", "pImageProperties");
    clear_keeping_chain(p);  // all zero: no images
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DeviceGetRootDevice(ze_device_handle_t hDevice, ze_device_handle_t* phRootDevice) {
  return entry("zeDeviceGetRootDevice", [&] {
    driver();
    get<Device>(hDevice, Kind::device, "zeDeviceGetRootDevice", "hDevice");
    need_pointer(phRootDevice, "zeDeviceGetRootDevice", "phRootDevice");
    *phRootDevice = nullptr;  // every device is a root device (no sub-devices)
    return ZE_RESULT_SUCCESS;
  });
}

}  // namespace zedriver
