// Level Zero entry points and structures newer than the API 1.4 headers Debian ships
// (libze-dev 1.8.12), declared under ipcheck's own names so that newer system headers never
// clash. Signatures and values follow the Level Zero specification (1.6 and later). Nothing
// here is linked: callers find the functions at run time (dlsym on the loader, or
// zeDriverGetExtensionFunctionAddress).
#pragma once

#include <level_zero/ze_api.h>

#include <cstdint>

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

}  // extern "C"
