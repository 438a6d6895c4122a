// The driver, device and context entry points, and the extension functions offered by name.
// The driver's state (configuration, initialisation, the registry of live objects, error
// plumbing) is in state.cpp.
#include <cstdio>
#include <cstring>

#include <map>

#include "entries.hpp"
#include "state.hpp"
#include "ze_ipcheck/defects.hpp"

#ifndef ZE_IPCHECK_VERSION_MAJOR
#define ZE_IPCHECK_VERSION_MAJOR 0
#define ZE_IPCHECK_VERSION_MINOR 0
#define ZE_IPCHECK_VERSION_PATCH 0
#endif

namespace zedriver {

// ---------------------------------------------------------------- extension functions

// An offerable extension function by name; null for any other name.
static void* extension_function(const std::string& n) {
  static const std::map<std::string, void*> functions{
      {"zeMemPutIpcHandle", reinterpret_cast<void*>(&MemPutIpcHandle)},
      {"zeEventPoolPutIpcHandle", reinterpret_cast<void*>(&EventPoolPutIpcHandle)},
      {"zePhysicalMemGetProperties", reinterpret_cast<void*>(&PhysicalMemGetProperties)},
      {"zeMemGetFileDescriptorFromIpcHandleExp", reinterpret_cast<void*>(&MemGetFileDescriptorFromIpcHandleExp)},
      {"zeMemGetIpcHandleFromFileDescriptorExp", reinterpret_cast<void*>(&MemGetIpcHandleFromFileDescriptorExp)},
      {"zeDriverGetLastErrorDescription", reinterpret_cast<void*>(&DriverGetLastErrorDescription)},
      {"zeCommandListHostSynchronize", reinterpret_cast<void*>(&CommandListHostSynchronize)},
      {"zeEventCounterBasedCreate", reinterpret_cast<void*>(&EventCounterBasedCreate)},
      {"zeEventCounterBasedGetIpcHandle", reinterpret_cast<void*>(&EventCounterBasedGetIpcHandle)},
      {"zeEventCounterBasedOpenIpcHandle", reinterpret_cast<void*>(&EventCounterBasedOpenIpcHandle)},
      {"zeEventCounterBasedCloseIpcHandle", reinterpret_cast<void*>(&EventCounterBasedCloseIpcHandle)},
      // Intel's experimental names (compute-runtime): the same functions, but Create2 takes
      // the zex descriptor.
      {"zexCounterBasedEventCreate2", reinterpret_cast<void*>(&ZexCounterBasedEventCreate2)},
      {"zexCounterBasedEventGetIpcHandle", reinterpret_cast<void*>(&EventCounterBasedGetIpcHandle)},
      {"zexCounterBasedEventOpenIpcHandle", reinterpret_cast<void*>(&EventCounterBasedOpenIpcHandle)},
      {"zexCounterBasedEventCloseIpcHandle", reinterpret_cast<void*>(&EventCounterBasedCloseIpcHandle)},
  };
  const auto it = functions.find(n);
  return it == functions.end() ? nullptr : it->second;
}

// ---------------------------------------------------------------- global and driver

namespace {

Driver& get_driver(ze_driver_handle_t h, const char* function) {
  Driver& d = driver();
  get<Driver>(h, Kind::driver, function, "hDriver");
  return d;
}

ze_device_handle_t handle_of(Device* d) { return reinterpret_cast<ze_device_handle_t>(d); }

}  // namespace

ze_result_t ZE_APICALL Init(ze_init_flags_t flags) { return initialize(flags); }

ze_result_t ZE_APICALL DriverGet(uint32_t* pCount, ze_driver_handle_t* phDrivers) {
  return entry("zeDriverGet", [&] {
    need_pointer(pCount, "zeDriverGet", "pCount");
    Driver& d = driver();
    if (*pCount == 0 || !phDrivers) {
      *pCount = 1;
      return ZE_RESULT_SUCCESS;
    }
    phDrivers[0] = reinterpret_cast<ze_driver_handle_t>(&d);
    *pCount = 1;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DriverGetApiVersion(ze_driver_handle_t hDriver, ze_api_version_t* version) {
  return entry("zeDriverGetApiVersion", [&] {
    get_driver(hDriver, "zeDriverGetApiVersion");
    *need_pointer(version, "zeDriverGetApiVersion", "version") = ZE_API_VERSION_1_4;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DriverGetProperties(ze_driver_handle_t hDriver, ze_driver_properties_t* p) {
  return entry("zeDriverGetProperties", [&] {
    Driver& d = get_driver(hDriver, "zeDriverGetProperties");
    need_pointer(p, "zeDriverGetProperties", "pDriverProperties");
    // A stable identity: "ipcheck-ze" and the version, padded with zeros.
    std::memset(p->uuid.id, 0, sizeof p->uuid.id);
    std::memcpy(p->uuid.id, "ipcheck-ze", 10);
    p->uuid.id[12] = ZE_IPCHECK_VERSION_MAJOR;
    p->uuid.id[13] = ZE_IPCHECK_VERSION_MINOR;
    p->uuid.id[14] = ZE_IPCHECK_VERSION_PATCH;
    // compute-runtime's encoding, major << 24 | minor << 16 | build: ipcheck's major and minor,
    // and as build either the compute-runtime build from which runtimes trust counter-based
    // event IPC (identity intel) or ipcheck's patch version.
    p->driverVersion = (static_cast<uint32_t>(ZE_IPCHECK_VERSION_MAJOR) << 24) |
                       (static_cast<uint32_t>(ZE_IPCHECK_VERSION_MINOR) << 16) |
                       (d.config.identity == Identity::intel ? ze_ipcheck::kIntelDriverBuild
                                                             : static_cast<uint32_t>(ZE_IPCHECK_VERSION_PATCH));
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DriverGetIpcProperties(ze_driver_handle_t hDriver, ze_driver_ipc_properties_t* p) {
  return entry("zeDriverGetIpcProperties", [&] {
    Driver& d = get_driver(hDriver, "zeDriverGetIpcProperties");
    need_pointer(p, "zeDriverGetIpcProperties", "pIpcProperties");
    p->flags = 0;
    for (const auto& dev : d.devices) {
      if (dev->dev.has(ipcref::aspect::ipc_memory)) p->flags |= ZE_IPC_PROPERTY_FLAG_MEMORY;
      if (dev->dev.has(ipcref::aspect::ipc_event)) p->flags |= ZE_IPC_PROPERTY_FLAG_EVENT_POOL;
    }
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DriverGetExtensionProperties(ze_driver_handle_t hDriver, uint32_t* pCount,
                                                    ze_driver_extension_properties_t* pProperties) {
  return entry("zeDriverGetExtensionProperties", [&] {
    Driver& d = get_driver(hDriver, "zeDriverGetExtensionProperties");
    need_pointer(pCount, "zeDriverGetExtensionProperties", "pCount");
    // One extension: the name of the active IPC handle convention (handle_layout.hpp).
    const char* name = d.config.convention == Convention::fd ? ze_ipcheck::kExtensionFdHandle
                                                              : ze_ipcheck::kExtensionOpaqueHandle;
    if (*pCount == 0 || !pProperties) {
      *pCount = 1;
      return ZE_RESULT_SUCCESS;
    }
    std::memset(&pProperties[0], 0, sizeof pProperties[0]);
    std::snprintf(pProperties[0].name, sizeof pProperties[0].name, "%s", name);
    pProperties[0].version = 1;
    *pCount = 1;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DriverGetExtensionFunctionAddress(ze_driver_handle_t hDriver, const char* name,
                                                         void** ppFunctionAddress) {
  return entry("zeDriverGetExtensionFunctionAddress", [&] {
    Driver& d = get_driver(hDriver, "zeDriverGetExtensionFunctionAddress");
    need_pointer(name, "zeDriverGetExtensionFunctionAddress", "name");
    need_pointer(ppFunctionAddress, "zeDriverGetExtensionFunctionAddress", "ppFunctionAddress");
    *ppFunctionAddress = nullptr;
    const std::string n = name;
    void* f = extension_function(n);
    if (!f)
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat("zeDriverGetExtensionFunctionAddress: libze_ipcheck has no function '", n,
                                                 "'; it can offer: ", join(offerable_extensions())));
    if (extension_withheld(n))
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat("zeDriverGetExtensionFunctionAddress: '", n,
                                                 "' is withheld by IPCHECK_FAILPOINTS (withhold=ext:", n, ")"));
    if (!d.config.extensions.count(n))
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat("zeDriverGetExtensionFunctionAddress: '", n, "' is not offered: ",
                                                 ze_ipcheck::kEnvExtensions, " leaves it out"));
    *ppFunctionAddress = f;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DriverGetLastErrorDescription(ze_driver_handle_t hDriver, const char** ppString) {
  // Reads the last error without clearing it, so it does not go through `entry`.
  if (!initialized()) return ZE_RESULT_ERROR_UNINITIALIZED;
  if (!hDriver) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!ppString) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (hDriver != reinterpret_cast<ze_driver_handle_t>(&driver())) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  *ppString = last_error();
  return ZE_RESULT_SUCCESS;
}

// ---------------------------------------------------------------- devices

ze_result_t ZE_APICALL DeviceGet(ze_driver_handle_t hDriver, uint32_t* pCount, ze_device_handle_t* phDevices) {
  return entry("zeDeviceGet", [&] {
    Driver& d = get_driver(hDriver, "zeDeviceGet");
    need_pointer(pCount, "zeDeviceGet", "pCount");
    const auto n = static_cast<uint32_t>(d.devices.size());
    if (*pCount == 0 || !phDevices) {
      *pCount = n;
      return ZE_RESULT_SUCCESS;
    }
    const uint32_t give = *pCount < n ? *pCount : n;
    for (uint32_t i = 0; i < give; ++i) phDevices[i] = handle_of(d.devices[i].get());
    *pCount = give;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DeviceGetSubDevices(ze_device_handle_t hDevice, uint32_t* pCount, ze_device_handle_t*) {
  return entry("zeDeviceGetSubDevices", [&] {
    driver();
    get<Device>(hDevice, Kind::device, "zeDeviceGetSubDevices", "hDevice");
    *need_pointer(pCount, "zeDeviceGetSubDevices", "pCount") = 0;  // no sub-devices
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DeviceGetProperties(ze_device_handle_t hDevice, ze_device_properties_t* p) {
  return entry("zeDeviceGetProperties", [&] {
    driver();
    Device* dev = get<Device>(hDevice, Kind::device, "zeDeviceGetProperties", "hDevice");
    need_pointer(p, "zeDeviceGetProperties", "pDeviceProperties");
    void* next = p->pNext;
    const ze_structure_type_t stype = p->stype;
    std::memset(p, 0, sizeof *p);
    p->stype = stype;
    p->pNext = next;
    p->type = ZE_DEVICE_TYPE_GPU;
    const bool intel = driver().config.identity == Identity::intel;
    // As Intel's (IPCHECK_ZE_IDENTITY=intel, the default) or as no PCI device at all.
    p->vendorId = intel ? ze_ipcheck::kIntelVendorId : 0;
    p->deviceId = dev->index;
    p->flags = ZE_DEVICE_PROPERTY_FLAG_INTEGRATED;  // host memory is its memory
    p->coreClockRate = 1;
    p->maxMemAllocSize = 1ull << 46;
    p->maxHardwareContexts = 1;
    p->numThreadsPerEU = 1;
    p->physicalEUSimdWidth = 1;
    p->numEUsPerSubslice = 1;
    p->numSubslicesPerSlice = 1;
    p->numSlices = 1;
    p->timerResolution = 1;  // ns
    p->timestampValidBits = 64;
    p->kernelTimestampValidBits = 64;
    // "ipcheck-dev" and the index: distinct per device, stable across processes.
    std::memcpy(p->uuid.id, "ipcheck-dev", 11);
    p->uuid.id[12] = static_cast<uint8_t>(dev->index >> 24);
    p->uuid.id[13] = static_cast<uint8_t>(dev->index >> 16);
    p->uuid.id[14] = static_cast<uint8_t>(dev->index >> 8);
    p->uuid.id[15] = static_cast<uint8_t>(dev->index);
    std::snprintf(p->name, sizeof p->name, "%s", dev->dev.name().c_str());
    // ze_device_ip_version_ext_t: an Xe2 (Battlemage-class) IP version as Intel's, else 0.
    if (auto* ip = static_cast<ipcheck_ze_device_ip_version_ext_t*>(
            const_cast<void*>(find_in_chain(next, IPCHECK_ZE_STRUCTURE_TYPE_DEVICE_IP_VERSION_EXT))))
      ip->ipVersion = intel ? ze_ipcheck::kIntelIpVersion : 0;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DeviceGetCommandQueueGroupProperties(ze_device_handle_t hDevice, uint32_t* pCount,
                                                            ze_command_queue_group_properties_t* p) {
  return entry("zeDeviceGetCommandQueueGroupProperties", [&] {
    driver();
    get<Device>(hDevice, Kind::device, "zeDeviceGetCommandQueueGroupProperties", "hDevice");
    need_pointer(pCount, "zeDeviceGetCommandQueueGroupProperties", "pCount");
    if (*pCount == 0 || !p) {
      *pCount = 1;
      return ZE_RESULT_SUCCESS;
    }
    p[0].flags = ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE | ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
    p[0].maxMemoryFillPatternSize = 128;
    p[0].numQueues = 1;
    *pCount = 1;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DeviceGetExternalMemoryProperties(ze_device_handle_t hDevice,
                                                         ze_device_external_memory_properties_t* p) {
  return entry("zeDeviceGetExternalMemoryProperties", [&] {
    driver();
    get<Device>(hDevice, Kind::device, "zeDeviceGetExternalMemoryProperties", "hDevice");
    need_pointer(p, "zeDeviceGetExternalMemoryProperties", "pExternalMemoryProperties");
    if (ze_ipcheck::defects::is(ze_ipcheck::defects::id::ipc_properties_fail))
      fail(ZE_RESULT_ERROR_DEVICE_LOST,
           "zeDeviceGetExternalMemoryProperties: the query failed (seeded defect ipc_properties_fail)");
    p->memoryAllocationImportTypes = kFdTypes;
    p->memoryAllocationExportTypes = kFdTypes;
    p->imageImportTypes = 0;
    p->imageExportTypes = 0;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DeviceGetP2PProperties(ze_device_handle_t hDevice, ze_device_handle_t hPeerDevice,
                                              ze_device_p2p_properties_t* p) {
  return entry("zeDeviceGetP2PProperties", [&] {
    driver();
    get<Device>(hDevice, Kind::device, "zeDeviceGetP2PProperties", "hDevice");
    get<Device>(hPeerDevice, Kind::device, "zeDeviceGetP2PProperties", "hPeerDevice");
    need_pointer(p, "zeDeviceGetP2PProperties", "pP2PProperties")->flags = ZE_DEVICE_P2P_PROPERTY_FLAG_ACCESS;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DeviceCanAccessPeer(ze_device_handle_t hDevice, ze_device_handle_t hPeerDevice,
                                           ze_bool_t* value) {
  return entry("zeDeviceCanAccessPeer", [&] {
    driver();
    get<Device>(hDevice, Kind::device, "zeDeviceCanAccessPeer", "hDevice");
    get<Device>(hPeerDevice, Kind::device, "zeDeviceCanAccessPeer", "hPeerDevice");
    *need_pointer(value, "zeDeviceCanAccessPeer", "value") = 1;  // every device sees host memory
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DeviceGetStatus(ze_device_handle_t hDevice) {
  return entry("zeDeviceGetStatus", [&] {
    driver();
    get<Device>(hDevice, Kind::device, "zeDeviceGetStatus", "hDevice");
    return ZE_RESULT_SUCCESS;
  });
}

// ---------------------------------------------------------------- contexts

namespace {

ze_result_t create_context(ze_driver_handle_t hDriver, const ze_context_desc_t* desc, uint32_t numDevices,
                           ze_device_handle_t* phDevices, ze_context_handle_t* phContext, const char* function) {
  Driver& d = get_driver(hDriver, function);
  need_pointer(desc, function, "desc");
  need_pointer(phContext, function, "phContext");
  if (ze_ipcheck::defects::is(ze_ipcheck::defects::id::context_create_fails))
    fail(ZE_RESULT_ERROR_DEVICE_LOST, cat(function, ": the device was lost (seeded defect context_create_fails)"));
  if (desc->flags & ~static_cast<ze_context_flags_t>(ZE_CONTEXT_FLAG_TBD))
    fail(ZE_RESULT_ERROR_INVALID_ENUMERATION, cat(function, ": desc->flags 0x", std::hex, desc->flags, " has unknown bits"));
  auto c = std::make_unique<Context>();
  if (numDevices == 0) {
    for (auto& dev : d.devices) c->devices.push_back(dev.get());
  } else {
    need_pointer(phDevices, function, "phDevices");
    for (uint32_t i = 0; i < numDevices; ++i) {
      Device* dev = get<Device>(phDevices[i], Kind::device, function, "phDevices[i]");
      if (c->contains(dev)) fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat(function, ": device ", i, " is listed twice"));
      c->devices.push_back(dev);
    }
  }
  std::vector<ipcref::device> devs;
  for (auto* dev : c->devices) devs.push_back(dev->dev);
  c->ctx.emplace(devs);
  add_live(c.get(), Kind::context);
  *phContext = reinterpret_cast<ze_context_handle_t>(c.release());
  return ZE_RESULT_SUCCESS;
}

}  // namespace

ze_result_t ZE_APICALL ContextCreate(ze_driver_handle_t hDriver, const ze_context_desc_t* desc,
                                     ze_context_handle_t* phContext) {
  return entry("zeContextCreate", [&] { return create_context(hDriver, desc, 0, nullptr, phContext, "zeContextCreate"); });
}

ze_result_t ZE_APICALL ContextCreateEx(ze_driver_handle_t hDriver, const ze_context_desc_t* desc, uint32_t numDevices,
                                       ze_device_handle_t* phDevices, ze_context_handle_t* phContext) {
  return entry("zeContextCreateEx",
               [&] { return create_context(hDriver, desc, numDevices, phDevices, phContext, "zeContextCreateEx"); });
}

ze_result_t ZE_APICALL ContextDestroy(ze_context_handle_t hContext) {
  return entry("zeContextDestroy", [&] {
    Context* c = context_of(hContext, "zeContextDestroy");
    if (c->children.load() != 0)
      fail(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE,
           cat("zeContextDestroy: the context still has ", c->children.load(),
               " command lists, command queues, fences, event pools, counter-based events or physical memory ",
               "objects; destroy them first"));
    remove_live(c);
    delete c;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL ContextGetStatus(ze_context_handle_t hContext) {
  return entry("zeContextGetStatus", [&] {
    context_of(hContext, "zeContextGetStatus");
    return ZE_RESULT_SUCCESS;
  });
}

}  // namespace zedriver
