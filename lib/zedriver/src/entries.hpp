// Every Level Zero entry point libze_ipcheck implements; ddi.cpp puts them in the tables
// the loader asks for. Entries not listed here stay null in those tables, so the loader
// answers ZE_RESULT_ERROR_UNSUPPORTED_FEATURE for them.
#pragma once

#include <level_zero/ze_api.h>

#include "ze_ipcheck/newer_api.h"

namespace zedriver {

// Global and driver
ze_result_t ZE_APICALL Init(ze_init_flags_t flags);
ze_result_t ZE_APICALL DriverGet(uint32_t* pCount, ze_driver_handle_t* phDrivers);
ze_result_t ZE_APICALL DriverGetApiVersion(ze_driver_handle_t hDriver, ze_api_version_t* version);
ze_result_t ZE_APICALL DriverGetProperties(ze_driver_handle_t hDriver, ze_driver_properties_t* pProperties);
ze_result_t ZE_APICALL DriverGetIpcProperties(ze_driver_handle_t hDriver, ze_driver_ipc_properties_t* pProperties);
ze_result_t ZE_APICALL DriverGetExtensionProperties(ze_driver_handle_t hDriver, uint32_t* pCount,
                                                    ze_driver_extension_properties_t* pProperties);
ze_result_t ZE_APICALL DriverGetExtensionFunctionAddress(ze_driver_handle_t hDriver, const char* name,
                                                         void** ppFunctionAddress);
ze_result_t ZE_APICALL DriverGetLastErrorDescription(ze_driver_handle_t hDriver, const char** ppString);

// Devices
ze_result_t ZE_APICALL DeviceGet(ze_driver_handle_t hDriver, uint32_t* pCount, ze_device_handle_t* phDevices);
ze_result_t ZE_APICALL DeviceGetSubDevices(ze_device_handle_t hDevice, uint32_t* pCount,
                                           ze_device_handle_t* phSubdevices);
ze_result_t ZE_APICALL DeviceGetProperties(ze_device_handle_t hDevice, ze_device_properties_t* pProperties);
ze_result_t ZE_APICALL DeviceGetCommandQueueGroupProperties(ze_device_handle_t hDevice, uint32_t* pCount,
                                                            ze_command_queue_group_properties_t* pProperties);
ze_result_t ZE_APICALL DeviceGetExternalMemoryProperties(ze_device_handle_t hDevice,
                                                         ze_device_external_memory_properties_t* pProperties);
ze_result_t ZE_APICALL DeviceGetP2PProperties(ze_device_handle_t hDevice, ze_device_handle_t hPeerDevice,
                                              ze_device_p2p_properties_t* pProperties);
ze_result_t ZE_APICALL DeviceCanAccessPeer(ze_device_handle_t hDevice, ze_device_handle_t hPeerDevice,
                                           ze_bool_t* value);
ze_result_t ZE_APICALL DeviceGetStatus(ze_device_handle_t hDevice);
// Device queries SYCL and UR's released adapters make (device_queries.cpp)
ze_result_t ZE_APICALL DeviceGetMemoryAccessProperties(ze_device_handle_t hDevice,
                                                       ze_device_memory_access_properties_t* pMemAccessProperties);
ze_result_t ZE_APICALL DeviceGetMemoryProperties(ze_device_handle_t hDevice, uint32_t* pCount,
                                                 ze_device_memory_properties_t* pMemProperties);
ze_result_t ZE_APICALL DeviceGetComputeProperties(ze_device_handle_t hDevice,
                                                  ze_device_compute_properties_t* pComputeProperties);
ze_result_t ZE_APICALL DeviceGetModuleProperties(ze_device_handle_t hDevice,
                                                 ze_device_module_properties_t* pModuleProperties);
ze_result_t ZE_APICALL DeviceGetImageProperties(ze_device_handle_t hDevice,
                                                ze_device_image_properties_t* pImageProperties);
ze_result_t ZE_APICALL DeviceGetRootDevice(ze_device_handle_t hDevice, ze_device_handle_t* phRootDevice);  // 1.7

// Contexts
ze_result_t ZE_APICALL ContextCreate(ze_driver_handle_t hDriver, const ze_context_desc_t* desc,
                                     ze_context_handle_t* phContext);
ze_result_t ZE_APICALL ContextCreateEx(ze_driver_handle_t hDriver, const ze_context_desc_t* desc,
                                       uint32_t numDevices, ze_device_handle_t* phDevices,
                                       ze_context_handle_t* phContext);
ze_result_t ZE_APICALL ContextDestroy(ze_context_handle_t hContext);
ze_result_t ZE_APICALL ContextGetStatus(ze_context_handle_t hContext);
ze_result_t ZE_APICALL ContextMakeMemoryResident(ze_context_handle_t hContext, ze_device_handle_t hDevice, void* ptr,
                                                 size_t size);
ze_result_t ZE_APICALL ContextEvictMemory(ze_context_handle_t hContext, ze_device_handle_t hDevice, void* ptr,
                                          size_t size);

// Memory
ze_result_t ZE_APICALL MemAllocShared(ze_context_handle_t hContext, const ze_device_mem_alloc_desc_t* device_desc,
                                      const ze_host_mem_alloc_desc_t* host_desc, size_t size, size_t alignment,
                                      ze_device_handle_t hDevice, void** pptr);
ze_result_t ZE_APICALL MemAllocDevice(ze_context_handle_t hContext, const ze_device_mem_alloc_desc_t* device_desc,
                                      size_t size, size_t alignment, ze_device_handle_t hDevice, void** pptr);
ze_result_t ZE_APICALL MemAllocHost(ze_context_handle_t hContext, const ze_host_mem_alloc_desc_t* host_desc,
                                    size_t size, size_t alignment, void** pptr);
ze_result_t ZE_APICALL MemFree(ze_context_handle_t hContext, void* ptr);
ze_result_t ZE_APICALL MemFreeExt(ze_context_handle_t hContext, const ze_memory_free_ext_desc_t* pMemFreeDesc,
                                  void* ptr);
ze_result_t ZE_APICALL MemGetAllocProperties(ze_context_handle_t hContext, const void* ptr,
                                             ze_memory_allocation_properties_t* pProperties,
                                             ze_device_handle_t* phDevice);
ze_result_t ZE_APICALL MemGetAddressRange(ze_context_handle_t hContext, const void* ptr, void** pBase,
                                          size_t* pSize);
ze_result_t ZE_APICALL MemGetIpcHandle(ze_context_handle_t hContext, const void* ptr, ze_ipc_mem_handle_t* pIpcHandle);
ze_result_t ZE_APICALL MemOpenIpcHandle(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                        ze_ipc_mem_handle_t handle, ze_ipc_memory_flags_t flags, void** pptr);
ze_result_t ZE_APICALL MemCloseIpcHandle(ze_context_handle_t hContext, const void* ptr);
ze_result_t ZE_APICALL MemPutIpcHandle(ze_context_handle_t hContext, ze_ipc_mem_handle_t handle);
ze_result_t ZE_APICALL MemGetIpcHandleFromFileDescriptorExp(ze_context_handle_t hContext, uint64_t handle,
                                                            ze_ipc_mem_handle_t* pIpcHandle);
ze_result_t ZE_APICALL MemGetFileDescriptorFromIpcHandleExp(ze_context_handle_t hContext, ze_ipc_mem_handle_t handle,
                                                            uint64_t* pHandle);

// Physical and virtual memory
ze_result_t ZE_APICALL PhysicalMemCreate(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                         ze_physical_mem_desc_t* desc, ze_physical_mem_handle_t* phPhysicalMemory);
ze_result_t ZE_APICALL PhysicalMemDestroy(ze_context_handle_t hContext, ze_physical_mem_handle_t hPhysicalMemory);
ze_result_t ZE_APICALL PhysicalMemGetProperties(ze_context_handle_t hContext, ze_physical_mem_handle_t hPhysicalMem,
                                                ipcheck_ze_physical_mem_properties_t* pProperties);
ze_result_t ZE_APICALL VirtualMemReserve(ze_context_handle_t hContext, const void* pStart, size_t size, void** pptr);
ze_result_t ZE_APICALL VirtualMemFree(ze_context_handle_t hContext, const void* ptr, size_t size);
ze_result_t ZE_APICALL VirtualMemQueryPageSize(ze_context_handle_t hContext, ze_device_handle_t hDevice, size_t size,
                                               size_t* pagesize);
ze_result_t ZE_APICALL VirtualMemMap(ze_context_handle_t hContext, const void* ptr, size_t size,
                                     ze_physical_mem_handle_t hPhysicalMemory, size_t offset,
                                     ze_memory_access_attribute_t access);
ze_result_t ZE_APICALL VirtualMemUnmap(ze_context_handle_t hContext, const void* ptr, size_t size);

// Command lists (immediate and regular), queues and fences
ze_result_t ZE_APICALL CommandListCreate(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                         const ze_command_list_desc_t* desc, ze_command_list_handle_t* phCommandList);
ze_result_t ZE_APICALL CommandListClose(ze_command_list_handle_t hCommandList);
ze_result_t ZE_APICALL CommandListReset(ze_command_list_handle_t hCommandList);
ze_result_t ZE_APICALL CommandListHostSynchronize(ze_command_list_handle_t hCommandList, uint64_t timeout);
ze_result_t ZE_APICALL CommandQueueCreate(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                          const ze_command_queue_desc_t* desc, ze_command_queue_handle_t* phCommandQueue);
ze_result_t ZE_APICALL CommandQueueDestroy(ze_command_queue_handle_t hCommandQueue);
ze_result_t ZE_APICALL CommandQueueExecuteCommandLists(ze_command_queue_handle_t hCommandQueue,
                                                       uint32_t numCommandLists,
                                                       ze_command_list_handle_t* phCommandLists,
                                                       ze_fence_handle_t hFence);
ze_result_t ZE_APICALL CommandQueueSynchronize(ze_command_queue_handle_t hCommandQueue, uint64_t timeout);
ze_result_t ZE_APICALL FenceCreate(ze_command_queue_handle_t hCommandQueue, const ze_fence_desc_t* desc,
                                   ze_fence_handle_t* phFence);
ze_result_t ZE_APICALL FenceDestroy(ze_fence_handle_t hFence);
ze_result_t ZE_APICALL FenceHostSynchronize(ze_fence_handle_t hFence, uint64_t timeout);
ze_result_t ZE_APICALL FenceQueryStatus(ze_fence_handle_t hFence);
ze_result_t ZE_APICALL FenceReset(ze_fence_handle_t hFence);
ze_result_t ZE_APICALL CommandListCreateImmediate(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                                  const ze_command_queue_desc_t* altdesc,
                                                  ze_command_list_handle_t* phCommandList);
ze_result_t ZE_APICALL CommandListDestroy(ze_command_list_handle_t hCommandList);
ze_result_t ZE_APICALL CommandListAppendBarrier(ze_command_list_handle_t hCommandList, ze_event_handle_t hSignalEvent,
                                                uint32_t numWaitEvents, ze_event_handle_t* phWaitEvents);
ze_result_t ZE_APICALL CommandListAppendMemoryCopy(ze_command_list_handle_t hCommandList, void* dstptr,
                                                   const void* srcptr, size_t size, ze_event_handle_t hSignalEvent,
                                                   uint32_t numWaitEvents, ze_event_handle_t* phWaitEvents);
ze_result_t ZE_APICALL CommandListAppendMemoryFill(ze_command_list_handle_t hCommandList, void* ptr,
                                                   const void* pattern, size_t pattern_size, size_t size,
                                                   ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
                                                   ze_event_handle_t* phWaitEvents);
ze_result_t ZE_APICALL CommandListAppendSignalEvent(ze_command_list_handle_t hCommandList, ze_event_handle_t hEvent);
ze_result_t ZE_APICALL CommandListAppendWaitOnEvents(ze_command_list_handle_t hCommandList, uint32_t numEvents,
                                                     ze_event_handle_t* phEvents);
ze_result_t ZE_APICALL CommandListAppendEventReset(ze_command_list_handle_t hCommandList, ze_event_handle_t hEvent);

// Event pools and events
ze_result_t ZE_APICALL EventPoolCreate(ze_context_handle_t hContext, const ze_event_pool_desc_t* desc,
                                       uint32_t numDevices, ze_device_handle_t* phDevices,
                                       ze_event_pool_handle_t* phEventPool);
ze_result_t ZE_APICALL EventPoolDestroy(ze_event_pool_handle_t hEventPool);
ze_result_t ZE_APICALL EventPoolGetIpcHandle(ze_event_pool_handle_t hEventPool, ze_ipc_event_pool_handle_t* phIpc);
ze_result_t ZE_APICALL EventPoolOpenIpcHandle(ze_context_handle_t hContext, ze_ipc_event_pool_handle_t hIpc,
                                              ze_event_pool_handle_t* phEventPool);
ze_result_t ZE_APICALL EventPoolCloseIpcHandle(ze_event_pool_handle_t hEventPool);
ze_result_t ZE_APICALL EventPoolPutIpcHandle(ze_context_handle_t hContext, ze_ipc_event_pool_handle_t hIpc);
ze_result_t ZE_APICALL EventCreate(ze_event_pool_handle_t hEventPool, const ze_event_desc_t* desc,
                                   ze_event_handle_t* phEvent);
ze_result_t ZE_APICALL EventDestroy(ze_event_handle_t hEvent);
ze_result_t ZE_APICALL EventHostSignal(ze_event_handle_t hEvent);
ze_result_t ZE_APICALL EventHostSynchronize(ze_event_handle_t hEvent, uint64_t timeout);
ze_result_t ZE_APICALL EventQueryStatus(ze_event_handle_t hEvent);
ze_result_t ZE_APICALL EventHostReset(ze_event_handle_t hEvent);

// Counter-based events and their IPC handles (1.15, and Intel's zex* names)
ze_result_t ZE_APICALL EventCounterBasedCreate(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                               const ipcheck_ze_event_counter_based_desc_t* desc,
                                               ze_event_handle_t* phEvent);
ze_result_t ZE_APICALL ZexCounterBasedEventCreate2(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                                   const ipcheck_zex_counter_based_event_desc_t* desc,
                                                   ze_event_handle_t* phEvent);
ze_result_t ZE_APICALL EventCounterBasedGetIpcHandle(ze_event_handle_t hEvent,
                                                     ipcheck_ze_ipc_event_counter_based_handle_t* phIpc);
ze_result_t ZE_APICALL EventCounterBasedOpenIpcHandle(ze_context_handle_t hContext,
                                                      ipcheck_ze_ipc_event_counter_based_handle_t hIpc,
                                                      ze_event_handle_t* phEvent);
ze_result_t ZE_APICALL EventCounterBasedCloseIpcHandle(ze_event_handle_t hEvent);

// Event operations shared by host calls and command lists.
void signal_event(ze_event_handle_t hEvent, const char* function);
void reset_event(ze_event_handle_t hEvent, const char* function);
// True when signaled (a counter-based event: complete) within `timeout_ns` (UINT64_MAX: no limit).
bool wait_event(ze_event_handle_t hEvent, std::uint64_t timeout_ns, const char* function);
// A command that signals hEvent: arm_signal when it is submitted (a counter-based event gets
// its new tracking point and reads as not complete; others: nothing), finish_signal when it
// is done with arm_signal's token.
std::uint64_t arm_signal(ze_event_handle_t hEvent, const char* function);
void finish_signal(ze_event_handle_t hEvent, std::uint64_t token, const char* function);
// Fails with INVALID_ARGUMENT for a counter-based event (`what` names the operation).
void refuse_counter_based(ze_event_handle_t hEvent, const char* function, const char* what);

// Futex helpers (shared futexes: the word may be on a page several processes map).
void futex_wake_all(std::uint32_t* word);
// Sleeps while *word == expected, until the absolute CLOCK_MONOTONIC deadline (0: none).
void futex_wait(std::uint32_t* word, std::uint32_t expected, std::uint64_t deadline_ns);
std::uint64_t monotonic_ns();

}  // namespace zedriver
