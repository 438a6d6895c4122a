// Level Zero dispatch-table layouts newer than the API 1.4 headers Debian ships, declared
// under ipcheck's own names (as newer_api.h does for functions). A loader hands a driver's
// table getter the table of its own API version; within major version 1 tables only grow at
// their end, so each layout here is the 1.4 table followed by the slots later versions
// appended, in the specification's order. Loaders from 1.6 on (the 1.32 loader passes API
// 1.17) dispatch zeMemPutIpcHandle, zePhysicalMemGetProperties, the counter-based event
// functions and the rest through these slots, never by name; a slot may only be written when
// the version the loader passed is at least the version that added it (ddi.cpp).
//
// Only the slots up to the last one libze_ipcheck fills are declared; a table's later slots
// stay as the loader left them (the loaders zero them).
#pragma once

#include <level_zero/ze_ddi.h>

#include <cstddef>

#include "ze_ipcheck/newer_api.h"

extern "C" {

// ze_driver_dditable_t: + GetLastErrorDescription (1.6)
typedef struct ipcheck_ze_driver_dditable_t {
  ze_driver_dditable_t v1_4;
  ipcheck_pfnDriverGetLastErrorDescription_t pfnGetLastErrorDescription;  // 1.6
} ipcheck_ze_driver_dditable_t;

// ze_device_dditable_t: + GetRootDevice (1.7)
typedef struct ipcheck_ze_device_dditable_t {
  ze_device_dditable_t v1_4;  // ends with pfnPciGetPropertiesExt (1.3)
  ze_result_t(ZE_APICALL* pfnGetRootDevice)(ze_device_handle_t, ze_device_handle_t*);  // 1.7
} ipcheck_ze_device_dditable_t;

// ze_mem_dditable_t: + PutIpcHandle (1.6), GetPitchFor2dImage (1.9), GetIpcHandleWithProperties (1.15)
typedef struct ipcheck_ze_mem_dditable_t {
  ze_mem_dditable_t v1_4;  // ends with pfnFreeExt (1.3)
  ipcheck_pfnMemPutIpcHandle_t pfnPutIpcHandle;  // 1.6
  void* pfnGetPitchFor2dImage;                  // 1.9 (not implemented)
  void* pfnGetIpcHandleWithProperties;          // 1.15 (not implemented)
} ipcheck_ze_mem_dditable_t;

// ze_mem_exp_dditable_t (1.6; not in the 1.4 headers at all)
typedef struct ipcheck_ze_mem_exp_dditable_t {
  ipcheck_pfnMemGetIpcHandleFromFileDescriptorExp_t pfnGetIpcHandleFromFileDescriptorExp;  // 1.6
  ipcheck_pfnMemGetFileDescriptorFromIpcHandleExp_t pfnGetFileDescriptorFromIpcHandleExp;  // 1.6
  void* pfnSetAtomicAccessAttributeExp;                                                    // 1.7 (not implemented)
  void* pfnGetAtomicAccessAttributeExp;                                                    // 1.7 (not implemented)
} ipcheck_ze_mem_exp_dditable_t;
typedef ze_result_t(ZE_APICALL* ipcheck_pfnGetMemExpProcAddrTable_t)(ze_api_version_t, ipcheck_ze_mem_exp_dditable_t*);

// ze_physical_mem_dditable_t: + GetProperties (1.15)
typedef struct ipcheck_ze_physical_mem_dditable_t {
  ze_physical_mem_dditable_t v1_4;
  ipcheck_pfnPhysicalMemGetProperties_t pfnGetProperties;  // 1.15
} ipcheck_ze_physical_mem_dditable_t;

// ze_event_pool_dditable_t: + PutIpcHandle (1.6)
typedef struct ipcheck_ze_event_pool_dditable_t {
  ze_event_pool_dditable_t v1_4;
  ipcheck_pfnEventPoolPutIpcHandle_t pfnPutIpcHandle;  // 1.6
} ipcheck_ze_event_pool_dditable_t;

// ze_event_dditable_t: + QueryKernelTimestampsExt (1.6), GetEventPool, GetSignalScope,
// GetWaitScope (1.9), CounterBasedCreate, CounterBased{Get,Open,Close}IpcHandle (1.15)
typedef struct ipcheck_ze_event_dditable_t {
  ze_event_dditable_t v1_4;  // ends with pfnQueryKernelTimestamp (1.0)
  void* pfnQueryKernelTimestampsExt;  // 1.6 (not implemented)
  void* pfnGetEventPool;              // 1.9 (not implemented)
  void* pfnGetSignalScope;            // 1.9 (not implemented)
  void* pfnGetWaitScope;              // 1.9 (not implemented)
  ipcheck_pfnEventCounterBasedCreate_t pfnCounterBasedCreate;                  // 1.15
  ipcheck_pfnEventCounterBasedGetIpcHandle_t pfnCounterBasedGetIpcHandle;      // 1.15
  ipcheck_pfnEventCounterBasedOpenIpcHandle_t pfnCounterBasedOpenIpcHandle;    // 1.15
  ipcheck_pfnEventCounterBasedCloseIpcHandle_t pfnCounterBasedCloseIpcHandle;  // 1.15
} ipcheck_ze_event_dditable_t;

// ze_command_list_dditable_t: + HostSynchronize (1.6)
typedef struct ipcheck_ze_command_list_dditable_t {
  ze_command_list_dditable_t v1_4;  // ends with pfnAppendImageCopyFromMemoryExt (1.3)
  ipcheck_pfnCommandListHostSynchronize_t pfnHostSynchronize;  // 1.6
} ipcheck_ze_command_list_dditable_t;

}  // extern "C"

// The layouts extend the 1.4 tables without padding (every slot is one pointer).
static_assert(offsetof(ipcheck_ze_mem_dditable_t, pfnPutIpcHandle) == sizeof(ze_mem_dditable_t));
static_assert(offsetof(ipcheck_ze_device_dditable_t, pfnGetRootDevice) == sizeof(ze_device_dditable_t));
static_assert(sizeof(ze_device_dditable_t) == 18 * sizeof(void*));  // the 1.32 table: pfnGetRootDevice is its 19th slot
static_assert(sizeof(ze_mem_dditable_t) == 10 * sizeof(void*));
static_assert(sizeof(ze_event_dditable_t) == 7 * sizeof(void*));
static_assert(sizeof(ze_command_list_dditable_t) == 28 * sizeof(void*));
static_assert(sizeof(ze_physical_mem_dditable_t) == 2 * sizeof(void*));
static_assert(sizeof(ze_event_pool_dditable_t) == 5 * sizeof(void*));
static_assert(sizeof(ze_driver_dditable_t) == 6 * sizeof(void*));
static_assert(sizeof(ipcheck_ze_event_dditable_t) == 15 * sizeof(void*));
