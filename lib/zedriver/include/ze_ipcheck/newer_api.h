// Level Zero entry points and structures newer than the API 1.4 headers Debian ships
// (libze-dev 1.8.12), declared under ipcheck's own names so that newer system headers never
// clash. Signatures and values follow the Level Zero specification (1.6 and later). Nothing
// here is linked: callers find the functions at run time (dlsym on the loader, or
// zeDriverGetExtensionFunctionAddress).
#pragma once

#include <level_zero/ze_api.h>

#include <cstdint>

// API versions past the 1.4 headers' enumeration.
#define IPCHECK_ZE_API_VERSION_1_6 static_cast<ze_api_version_t>(ZE_MAKE_VERSION(1, 6))
#define IPCHECK_ZE_API_VERSION_1_7 static_cast<ze_api_version_t>(ZE_MAKE_VERSION(1, 7))
#define IPCHECK_ZE_API_VERSION_1_9 static_cast<ze_api_version_t>(ZE_MAKE_VERSION(1, 9))
#define IPCHECK_ZE_API_VERSION_1_15 static_cast<ze_api_version_t>(ZE_MAKE_VERSION(1, 15))

extern "C" {

// zeMemPutIpcHandle (1.6)
typedef ze_result_t(ZE_APICALL* ipcheck_pfnMemPutIpcHandle_t)(ze_context_handle_t, ze_ipc_mem_handle_t);
// zeEventPoolPutIpcHandle (1.6)
typedef ze_result_t(ZE_APICALL* ipcheck_pfnEventPoolPutIpcHandle_t)(ze_context_handle_t, ze_ipc_event_pool_handle_t);
// zeMemGetFileDescriptorFromIpcHandleExp (1.6)
typedef ze_result_t(ZE_APICALL* ipcheck_pfnMemGetFileDescriptorFromIpcHandleExp_t)(ze_context_handle_t,
                                                                                   ze_ipc_mem_handle_t, uint64_t*);
// zeMemGetIpcHandleFromFileDescriptorExp (1.6)
typedef ze_result_t(ZE_APICALL* ipcheck_pfnMemGetIpcHandleFromFileDescriptorExp_t)(ze_context_handle_t, uint64_t,
                                                                                   ze_ipc_mem_handle_t*);
// zeDriverGetLastErrorDescription (1.6)
typedef ze_result_t(ZE_APICALL* ipcheck_pfnDriverGetLastErrorDescription_t)(ze_driver_handle_t, const char**);

// zePhysicalMemGetProperties (1.15) and its structure
#define IPCHECK_ZE_STRUCTURE_TYPE_PHYSICAL_MEM_PROPERTIES ((ze_structure_type_t)0x00020040)
typedef struct ipcheck_ze_physical_mem_properties_t {
  ze_structure_type_t stype;
  void* pNext;
  uint64_t id;
  uint64_t size;
} ipcheck_ze_physical_mem_properties_t;
typedef ze_result_t(ZE_APICALL* ipcheck_pfnPhysicalMemGetProperties_t)(ze_context_handle_t, ze_physical_mem_handle_t,
                                                                       ipcheck_ze_physical_mem_properties_t*);

// ze_device_ip_version_ext_t (1.x extension ZE_extension_device_ip_version), chained to
// ze_device_properties_t
#define IPCHECK_ZE_STRUCTURE_TYPE_DEVICE_IP_VERSION_EXT ((ze_structure_type_t)0x0001000f)
typedef struct ipcheck_ze_device_ip_version_ext_t {
  ze_structure_type_t stype;
  const void* pNext;
  uint32_t ipVersion;
} ipcheck_ze_device_ip_version_ext_t;

// Counter-based events (1.15): an event made on its own, signaled by the appends that name
// it; complete when the last of them is done. Flags and descriptor.
#define IPCHECK_ZE_STRUCTURE_TYPE_EVENT_COUNTER_BASED_DESC ((ze_structure_type_t)0x0002003a)
typedef uint32_t ipcheck_ze_event_counter_based_flags_t;
#define IPCHECK_ZE_EVENT_COUNTER_BASED_FLAG_IMMEDIATE (1u << 0)
#define IPCHECK_ZE_EVENT_COUNTER_BASED_FLAG_NON_IMMEDIATE (1u << 1)
#define IPCHECK_ZE_EVENT_COUNTER_BASED_FLAG_HOST_VISIBLE (1u << 2)
#define IPCHECK_ZE_EVENT_COUNTER_BASED_FLAG_IPC (1u << 3)
#define IPCHECK_ZE_EVENT_COUNTER_BASED_FLAG_DEVICE_TIMESTAMP (1u << 4)
#define IPCHECK_ZE_EVENT_COUNTER_BASED_FLAG_HOST_TIMESTAMP (1u << 5)
typedef struct ipcheck_ze_event_counter_based_desc_t {
  ze_structure_type_t stype;
  const void* pNext;
  ipcheck_ze_event_counter_based_flags_t flags;
  ze_event_scope_flags_t signal;
  ze_event_scope_flags_t wait;
} ipcheck_ze_event_counter_based_desc_t;
// The IPC handle of a counter-based event: 64 opaque bytes, passed by value.
typedef struct ipcheck_ze_ipc_event_counter_based_handle_t {
  char data[ZE_MAX_IPC_HANDLE_SIZE];
} ipcheck_ze_ipc_event_counter_based_handle_t;
typedef ze_result_t(ZE_APICALL* ipcheck_pfnEventCounterBasedCreate_t)(ze_context_handle_t, ze_device_handle_t,
                                                                      const ipcheck_ze_event_counter_based_desc_t*,
                                                                      ze_event_handle_t*);
typedef ze_result_t(ZE_APICALL* ipcheck_pfnEventCounterBasedGetIpcHandle_t)(
    ze_event_handle_t, ipcheck_ze_ipc_event_counter_based_handle_t*);
typedef ze_result_t(ZE_APICALL* ipcheck_pfnEventCounterBasedOpenIpcHandle_t)(
    ze_context_handle_t, ipcheck_ze_ipc_event_counter_based_handle_t, ze_event_handle_t*);
typedef ze_result_t(ZE_APICALL* ipcheck_pfnEventCounterBasedCloseIpcHandle_t)(ze_event_handle_t);

// Intel's experimental form of the same (compute-runtime's driver_experimental headers), found
// by name through zeDriverGetExtensionFunctionAddress: zexCounterBasedEventCreate2 takes this
// descriptor; zexCounterBasedEvent{Get,Open,Close}IpcHandle have the 1.15 signatures above.
// The flag bits 0..3 equal the 1.15 ones; bit 4 asks for kernel timestamps.
#define IPCHECK_ZEX_STRUCTURE_COUNTER_BASED_EVENT_DESC ((ze_structure_type_t)0x0003001c)
#define IPCHECK_ZEX_COUNTER_BASED_EVENT_FLAG_KERNEL_TIMESTAMP (1u << 4)
#define IPCHECK_ZEX_COUNTER_BASED_EVENT_FLAG_KERNEL_MAPPED_TIMESTAMP (1u << 5)
typedef struct ipcheck_zex_counter_based_event_desc_t {
  ze_structure_type_t stype;
  const void* pNext;
  uint32_t flags;
  ze_event_scope_flags_t signalScope;
  ze_event_scope_flags_t waitScope;
} ipcheck_zex_counter_based_event_desc_t;
typedef ze_result_t(ZE_APICALL* ipcheck_pfnZexCounterBasedEventCreate2_t)(ze_context_handle_t, ze_device_handle_t,
                                                                          const ipcheck_zex_counter_based_event_desc_t*,
                                                                          ze_event_handle_t*);

// zeCommandListHostSynchronize (1.6)
typedef ze_result_t(ZE_APICALL* ipcheck_pfnCommandListHostSynchronize_t)(ze_command_list_handle_t, uint64_t);

}  // extern "C"
