// The table getters, the only symbols libze_ipcheck exports (see exports.map). The loader
// (libze1 1.8.12) requires all 53 of its API version to be present and to succeed, or zeInit
// fails: 23 ze, 13 zet, 17 zes. Entries libze_ipcheck does not implement stay null, and the
// loader answers ZE_RESULT_ERROR_UNSUPPORTED_FEATURE for them. None is a stub.
//
// A newer loader (1.32 passes API 1.17) hands over longer tables and dispatches the functions
// added since 1.4 through their slots (newer_ddi.h); each such slot is written only when the
// version passed includes it. zeGetMemExpProcAddrTable (1.6) is exported for those loaders;
// the 1.8 loader never asks for it.
#include <level_zero/ze_ddi.h>
#include <level_zero/zes_ddi.h>
#include <level_zero/zet_ddi.h>

#include <cstring>

#include "entries.hpp"
#include "ze_ipcheck/newer_ddi.h"

namespace {

// Any 1.x loader: fill what API 1.4 defines.
ze_result_t check(ze_api_version_t version, const void* table) {
  if (!table) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (ZE_MAJOR_VERSION(version) != 1) return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
  return ZE_RESULT_SUCCESS;
}

template <class T>
ze_result_t empty(ze_api_version_t version, T* table) {
  const ze_result_t r = check(version, table);
  if (r == ZE_RESULT_SUCCESS) std::memset(table, 0, sizeof *table);
  return r;
}

// Writes a slot added in API `since` when the loader's table has it.
template <class Slot, class Fn>
void put(ze_api_version_t version, ze_api_version_t since, Slot& slot, Fn fn) {
  if (version >= since) slot = fn;
}

}  // namespace

extern "C" {

using namespace zedriver;

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetGlobalProcAddrTable(ze_api_version_t version, ze_global_dditable_t* t) {
  if (const ze_result_t r = empty(version, t); r != ZE_RESULT_SUCCESS) return r;
  t->pfnInit = Init;
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetDriverProcAddrTable(ze_api_version_t version, ze_driver_dditable_t* t) {
  if (const ze_result_t r = empty(version, t); r != ZE_RESULT_SUCCESS) return r;
  t->pfnGet = DriverGet;
  t->pfnGetApiVersion = DriverGetApiVersion;
  t->pfnGetProperties = DriverGetProperties;
  t->pfnGetIpcProperties = DriverGetIpcProperties;
  t->pfnGetExtensionProperties = DriverGetExtensionProperties;
  t->pfnGetExtensionFunctionAddress = DriverGetExtensionFunctionAddress;
  auto* n = reinterpret_cast<ipcheck_ze_driver_dditable_t*>(t);
  put(version, IPCHECK_ZE_API_VERSION_1_6, n->pfnGetLastErrorDescription, DriverGetLastErrorDescription);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetDeviceProcAddrTable(ze_api_version_t version, ze_device_dditable_t* t) {
  if (const ze_result_t r = empty(version, t); r != ZE_RESULT_SUCCESS) return r;
  t->pfnGet = DeviceGet;
  t->pfnGetSubDevices = DeviceGetSubDevices;
  t->pfnGetProperties = DeviceGetProperties;
  t->pfnGetCommandQueueGroupProperties = DeviceGetCommandQueueGroupProperties;
  t->pfnGetExternalMemoryProperties = DeviceGetExternalMemoryProperties;
  t->pfnGetP2PProperties = DeviceGetP2PProperties;
  t->pfnCanAccessPeer = DeviceCanAccessPeer;
  t->pfnGetStatus = DeviceGetStatus;
  t->pfnGetMemoryAccessProperties = DeviceGetMemoryAccessProperties;
  t->pfnGetMemoryProperties = DeviceGetMemoryProperties;
  t->pfnGetComputeProperties = DeviceGetComputeProperties;
  t->pfnGetModuleProperties = DeviceGetModuleProperties;
  t->pfnGetImageProperties = DeviceGetImageProperties;
  auto* n = reinterpret_cast<ipcheck_ze_device_dditable_t*>(t);
  put(version, IPCHECK_ZE_API_VERSION_1_7, n->pfnGetRootDevice, DeviceGetRootDevice);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetContextProcAddrTable(ze_api_version_t version, ze_context_dditable_t* t) {
  if (const ze_result_t r = empty(version, t); r != ZE_RESULT_SUCCESS) return r;
  t->pfnCreate = ContextCreate;
  t->pfnDestroy = ContextDestroy;
  t->pfnGetStatus = ContextGetStatus;
  t->pfnCreateEx = ContextCreateEx;
  t->pfnMakeMemoryResident = ContextMakeMemoryResident;
  t->pfnEvictMemory = ContextEvictMemory;
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetCommandListProcAddrTable(ze_api_version_t version,
                                                                  ze_command_list_dditable_t* t) {
  if (const ze_result_t r = empty(version, t); r != ZE_RESULT_SUCCESS) return r;
  t->pfnCreate = CommandListCreate;
  t->pfnCreateImmediate = CommandListCreateImmediate;
  t->pfnDestroy = CommandListDestroy;
  t->pfnClose = CommandListClose;
  t->pfnReset = CommandListReset;
  t->pfnAppendBarrier = CommandListAppendBarrier;
  t->pfnAppendMemoryCopy = CommandListAppendMemoryCopy;
  t->pfnAppendMemoryFill = CommandListAppendMemoryFill;
  t->pfnAppendSignalEvent = CommandListAppendSignalEvent;
  t->pfnAppendWaitOnEvents = CommandListAppendWaitOnEvents;
  t->pfnAppendEventReset = CommandListAppendEventReset;
  auto* n = reinterpret_cast<ipcheck_ze_command_list_dditable_t*>(t);
  put(version, IPCHECK_ZE_API_VERSION_1_6, n->pfnHostSynchronize, CommandListHostSynchronize);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetEventPoolProcAddrTable(ze_api_version_t version, ze_event_pool_dditable_t* t) {
  if (const ze_result_t r = empty(version, t); r != ZE_RESULT_SUCCESS) return r;
  t->pfnCreate = EventPoolCreate;
  t->pfnDestroy = EventPoolDestroy;
  t->pfnGetIpcHandle = EventPoolGetIpcHandle;
  t->pfnOpenIpcHandle = EventPoolOpenIpcHandle;
  t->pfnCloseIpcHandle = EventPoolCloseIpcHandle;
  auto* n = reinterpret_cast<ipcheck_ze_event_pool_dditable_t*>(t);
  put(version, IPCHECK_ZE_API_VERSION_1_6, n->pfnPutIpcHandle, EventPoolPutIpcHandle);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetEventProcAddrTable(ze_api_version_t version, ze_event_dditable_t* t) {
  if (const ze_result_t r = empty(version, t); r != ZE_RESULT_SUCCESS) return r;
  t->pfnCreate = EventCreate;
  t->pfnDestroy = EventDestroy;
  t->pfnHostSignal = EventHostSignal;
  t->pfnHostSynchronize = EventHostSynchronize;
  t->pfnQueryStatus = EventQueryStatus;
  t->pfnHostReset = EventHostReset;
  auto* n = reinterpret_cast<ipcheck_ze_event_dditable_t*>(t);
  put(version, IPCHECK_ZE_API_VERSION_1_6, n->pfnQueryKernelTimestampsExt, nullptr);
  put(version, IPCHECK_ZE_API_VERSION_1_9, n->pfnGetEventPool, nullptr);
  put(version, IPCHECK_ZE_API_VERSION_1_9, n->pfnGetSignalScope, nullptr);
  put(version, IPCHECK_ZE_API_VERSION_1_9, n->pfnGetWaitScope, nullptr);
  put(version, IPCHECK_ZE_API_VERSION_1_15, n->pfnCounterBasedCreate, EventCounterBasedCreate);
  put(version, IPCHECK_ZE_API_VERSION_1_15, n->pfnCounterBasedGetIpcHandle, EventCounterBasedGetIpcHandle);
  put(version, IPCHECK_ZE_API_VERSION_1_15, n->pfnCounterBasedOpenIpcHandle, EventCounterBasedOpenIpcHandle);
  put(version, IPCHECK_ZE_API_VERSION_1_15, n->pfnCounterBasedCloseIpcHandle, EventCounterBasedCloseIpcHandle);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetMemProcAddrTable(ze_api_version_t version, ze_mem_dditable_t* t) {
  if (const ze_result_t r = empty(version, t); r != ZE_RESULT_SUCCESS) return r;
  t->pfnAllocShared = MemAllocShared;
  t->pfnAllocDevice = MemAllocDevice;
  t->pfnAllocHost = MemAllocHost;
  t->pfnFree = MemFree;
  t->pfnGetAllocProperties = MemGetAllocProperties;
  t->pfnGetAddressRange = MemGetAddressRange;
  t->pfnGetIpcHandle = MemGetIpcHandle;
  t->pfnOpenIpcHandle = MemOpenIpcHandle;
  t->pfnCloseIpcHandle = MemCloseIpcHandle;
  t->pfnFreeExt = MemFreeExt;
  auto* n = reinterpret_cast<ipcheck_ze_mem_dditable_t*>(t);
  put(version, IPCHECK_ZE_API_VERSION_1_6, n->pfnPutIpcHandle, MemPutIpcHandle);
  put(version, IPCHECK_ZE_API_VERSION_1_9, n->pfnGetPitchFor2dImage, nullptr);
  put(version, IPCHECK_ZE_API_VERSION_1_15, n->pfnGetIpcHandleWithProperties, nullptr);
  return ZE_RESULT_SUCCESS;
}

// API 1.6 and later only: the descriptor conversions (also offered by name).
ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetMemExpProcAddrTable(ze_api_version_t version,
                                                             ipcheck_ze_mem_exp_dditable_t* t) {
  if (const ze_result_t r = check(version, t); r != ZE_RESULT_SUCCESS) return r;
  if (version < IPCHECK_ZE_API_VERSION_1_6) return ZE_RESULT_ERROR_UNSUPPORTED_VERSION;
  t->pfnGetIpcHandleFromFileDescriptorExp = MemGetIpcHandleFromFileDescriptorExp;
  t->pfnGetFileDescriptorFromIpcHandleExp = MemGetFileDescriptorFromIpcHandleExp;
  if (version >= IPCHECK_ZE_API_VERSION_1_7) {
    t->pfnSetAtomicAccessAttributeExp = nullptr;
    t->pfnGetAtomicAccessAttributeExp = nullptr;
  }
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetPhysicalMemProcAddrTable(ze_api_version_t version,
                                                                  ze_physical_mem_dditable_t* t) {
  if (const ze_result_t r = empty(version, t); r != ZE_RESULT_SUCCESS) return r;
  t->pfnCreate = PhysicalMemCreate;
  t->pfnDestroy = PhysicalMemDestroy;
  auto* n = reinterpret_cast<ipcheck_ze_physical_mem_dditable_t*>(t);
  put(version, IPCHECK_ZE_API_VERSION_1_15, n->pfnGetProperties, PhysicalMemGetProperties);
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetCommandQueueProcAddrTable(ze_api_version_t version,
                                                                   ze_command_queue_dditable_t* t) {
  if (const ze_result_t r = empty(version, t); r != ZE_RESULT_SUCCESS) return r;
  t->pfnCreate = CommandQueueCreate;
  t->pfnDestroy = CommandQueueDestroy;
  t->pfnExecuteCommandLists = CommandQueueExecuteCommandLists;
  t->pfnSynchronize = CommandQueueSynchronize;
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetFenceProcAddrTable(ze_api_version_t version, ze_fence_dditable_t* t) {
  if (const ze_result_t r = empty(version, t); r != ZE_RESULT_SUCCESS) return r;
  t->pfnCreate = FenceCreate;
  t->pfnDestroy = FenceDestroy;
  t->pfnHostSynchronize = FenceHostSynchronize;
  t->pfnQueryStatus = FenceQueryStatus;
  t->pfnReset = FenceReset;
  return ZE_RESULT_SUCCESS;
}

ZE_DLLEXPORT ze_result_t ZE_APICALL zeGetVirtualMemProcAddrTable(ze_api_version_t version,
                                                                 ze_virtual_mem_dditable_t* t) {
  if (const ze_result_t r = empty(version, t); r != ZE_RESULT_SUCCESS) return r;
  t->pfnReserve = VirtualMemReserve;
  t->pfnFree = VirtualMemFree;
  t->pfnQueryPageSize = VirtualMemQueryPageSize;
  t->pfnMap = VirtualMemMap;
  t->pfnUnmap = VirtualMemUnmap;
  return ZE_RESULT_SUCCESS;
}

// Tables with nothing implemented: present (the loader requires them), every entry null.
#define IPCHECK_EMPTY_TABLE(getter, table) \
  ZE_DLLEXPORT ze_result_t ZE_APICALL getter(ze_api_version_t version, table* t) { return empty(version, t); }

IPCHECK_EMPTY_TABLE(zeGetDeviceExpProcAddrTable, ze_device_exp_dditable_t)
IPCHECK_EMPTY_TABLE(zeGetImageProcAddrTable, ze_image_dditable_t)
IPCHECK_EMPTY_TABLE(zeGetImageExpProcAddrTable, ze_image_exp_dditable_t)
IPCHECK_EMPTY_TABLE(zeGetEventExpProcAddrTable, ze_event_exp_dditable_t)
IPCHECK_EMPTY_TABLE(zeGetModuleProcAddrTable, ze_module_dditable_t)
IPCHECK_EMPTY_TABLE(zeGetModuleBuildLogProcAddrTable, ze_module_build_log_dditable_t)
IPCHECK_EMPTY_TABLE(zeGetKernelProcAddrTable, ze_kernel_dditable_t)
IPCHECK_EMPTY_TABLE(zeGetKernelExpProcAddrTable, ze_kernel_exp_dditable_t)
IPCHECK_EMPTY_TABLE(zeGetSamplerProcAddrTable, ze_sampler_dditable_t)
IPCHECK_EMPTY_TABLE(zeGetFabricVertexExpProcAddrTable, ze_fabric_vertex_exp_dditable_t)
IPCHECK_EMPTY_TABLE(zeGetFabricEdgeExpProcAddrTable, ze_fabric_edge_exp_dditable_t)

IPCHECK_EMPTY_TABLE(zetGetDeviceProcAddrTable, zet_device_dditable_t)
IPCHECK_EMPTY_TABLE(zetGetContextProcAddrTable, zet_context_dditable_t)
IPCHECK_EMPTY_TABLE(zetGetCommandListProcAddrTable, zet_command_list_dditable_t)
IPCHECK_EMPTY_TABLE(zetGetModuleProcAddrTable, zet_module_dditable_t)
IPCHECK_EMPTY_TABLE(zetGetKernelProcAddrTable, zet_kernel_dditable_t)
IPCHECK_EMPTY_TABLE(zetGetMetricGroupProcAddrTable, zet_metric_group_dditable_t)
IPCHECK_EMPTY_TABLE(zetGetMetricGroupExpProcAddrTable, zet_metric_group_exp_dditable_t)
IPCHECK_EMPTY_TABLE(zetGetMetricProcAddrTable, zet_metric_dditable_t)
IPCHECK_EMPTY_TABLE(zetGetMetricStreamerProcAddrTable, zet_metric_streamer_dditable_t)
IPCHECK_EMPTY_TABLE(zetGetMetricQueryPoolProcAddrTable, zet_metric_query_pool_dditable_t)
IPCHECK_EMPTY_TABLE(zetGetMetricQueryProcAddrTable, zet_metric_query_dditable_t)
IPCHECK_EMPTY_TABLE(zetGetTracerExpProcAddrTable, zet_tracer_exp_dditable_t)
IPCHECK_EMPTY_TABLE(zetGetDebugProcAddrTable, zet_debug_dditable_t)

IPCHECK_EMPTY_TABLE(zesGetDriverProcAddrTable, zes_driver_dditable_t)
IPCHECK_EMPTY_TABLE(zesGetDeviceProcAddrTable, zes_device_dditable_t)
IPCHECK_EMPTY_TABLE(zesGetSchedulerProcAddrTable, zes_scheduler_dditable_t)
IPCHECK_EMPTY_TABLE(zesGetPerformanceFactorProcAddrTable, zes_performance_factor_dditable_t)
IPCHECK_EMPTY_TABLE(zesGetPowerProcAddrTable, zes_power_dditable_t)
IPCHECK_EMPTY_TABLE(zesGetFrequencyProcAddrTable, zes_frequency_dditable_t)
IPCHECK_EMPTY_TABLE(zesGetEngineProcAddrTable, zes_engine_dditable_t)
IPCHECK_EMPTY_TABLE(zesGetStandbyProcAddrTable, zes_standby_dditable_t)
IPCHECK_EMPTY_TABLE(zesGetFirmwareProcAddrTable, zes_firmware_dditable_t)
IPCHECK_EMPTY_TABLE(zesGetMemoryProcAddrTable, zes_memory_dditable_t)
IPCHECK_EMPTY_TABLE(zesGetFabricPortProcAddrTable, zes_fabric_port_dditable_t)
IPCHECK_EMPTY_TABLE(zesGetTemperatureProcAddrTable, zes_temperature_dditable_t)
IPCHECK_EMPTY_TABLE(zesGetPsuProcAddrTable, zes_psu_dditable_t)
IPCHECK_EMPTY_TABLE(zesGetFanProcAddrTable, zes_fan_dditable_t)
IPCHECK_EMPTY_TABLE(zesGetLedProcAddrTable, zes_led_dditable_t)
IPCHECK_EMPTY_TABLE(zesGetRasProcAddrTable, zes_ras_dditable_t)
IPCHECK_EMPTY_TABLE(zesGetDiagnosticsProcAddrTable, zes_diagnostics_dditable_t)

#undef IPCHECK_EMPTY_TABLE

}  // extern "C"
