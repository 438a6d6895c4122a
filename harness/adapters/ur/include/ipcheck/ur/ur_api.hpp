// The part of the Unified Runtime (UR) API the `ur` adapter uses, declared by the project so
// that ipcheck builds without UR's headers and never links libur_loader: opaque handle types,
// the enumerators and structures passed in calls, and the function types looked up with dlsym.
// The values are those of UR's ur_api.h at the pinned commit (578c2a84, API 0.12); when the
// build is configured with the stack (IPCHECK_UR_STACK), tests/ur_api_match_test.cpp includes
// the real header and checks every value and layout declared here against it, so drift fails
// the build.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ipcheck {
enum class Errc;  // ipcheck/adapter.hpp
}

namespace ipcheck::ur_api {

// ---------------------------------------------------------------- handles

#define IPCHECK_UR_HANDLE(name) \
  struct name##_opaque;         \
  using name = name##_opaque*;
IPCHECK_UR_HANDLE(ur_adapter_handle_t)
IPCHECK_UR_HANDLE(ur_platform_handle_t)
IPCHECK_UR_HANDLE(ur_device_handle_t)
IPCHECK_UR_HANDLE(ur_context_handle_t)
IPCHECK_UR_HANDLE(ur_queue_handle_t)
IPCHECK_UR_HANDLE(ur_event_handle_t)
IPCHECK_UR_HANDLE(ur_physical_mem_handle_t)
IPCHECK_UR_HANDLE(ur_usm_pool_handle_t)
IPCHECK_UR_HANDLE(ur_loader_config_handle_t)
#undef IPCHECK_UR_HANDLE

using ur_bool_t = std::uint8_t;

// ---------------------------------------------------------------- results

// Every ur_result_t of the pinned API, by name: the adapter reports UR's own names.
#define IPCHECK_UR_RESULTS(X)                                                                             \
  X(UR_RESULT_SUCCESS, 0) X(UR_RESULT_ERROR_INVALID_OPERATION, 1) X(UR_RESULT_ERROR_INVALID_QUEUE_PROPERTIES, 2)  \
  X(UR_RESULT_ERROR_INVALID_QUEUE, 3) X(UR_RESULT_ERROR_INVALID_VALUE, 4) X(UR_RESULT_ERROR_INVALID_CONTEXT, 5) \
  X(UR_RESULT_ERROR_INVALID_PLATFORM, 6) X(UR_RESULT_ERROR_INVALID_BINARY, 7)                                    \
  X(UR_RESULT_ERROR_INVALID_PROGRAM, 8) X(UR_RESULT_ERROR_INVALID_SAMPLER, 9)                                    \
  X(UR_RESULT_ERROR_INVALID_BUFFER_SIZE, 10) X(UR_RESULT_ERROR_INVALID_MEM_OBJECT, 11)                           \
  X(UR_RESULT_ERROR_INVALID_EVENT, 12) X(UR_RESULT_ERROR_INVALID_EVENT_WAIT_LIST, 13)                            \
  X(UR_RESULT_ERROR_MISALIGNED_SUB_BUFFER_OFFSET, 14) X(UR_RESULT_ERROR_INVALID_WORK_GROUP_SIZE, 15)             \
  X(UR_RESULT_ERROR_COMPILER_NOT_AVAILABLE, 16) X(UR_RESULT_ERROR_PROFILING_INFO_NOT_AVAILABLE, 17)              \
  X(UR_RESULT_ERROR_DEVICE_NOT_FOUND, 18) X(UR_RESULT_ERROR_INVALID_DEVICE, 19)                                  \
  X(UR_RESULT_ERROR_DEVICE_LOST, 20) X(UR_RESULT_ERROR_DEVICE_REQUIRES_RESET, 21)                                \
  X(UR_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE, 22) X(UR_RESULT_ERROR_DEVICE_PARTITION_FAILED, 23)                \
  X(UR_RESULT_ERROR_INVALID_DEVICE_PARTITION_COUNT, 24) X(UR_RESULT_ERROR_INVALID_WORK_ITEM_SIZE, 25)            \
  X(UR_RESULT_ERROR_INVALID_WORK_DIMENSION, 26) X(UR_RESULT_ERROR_INVALID_KERNEL_ARGS, 27)                       \
  X(UR_RESULT_ERROR_INVALID_KERNEL, 28) X(UR_RESULT_ERROR_INVALID_KERNEL_NAME, 29)                               \
  X(UR_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX, 30) X(UR_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE, 31)        \
  X(UR_RESULT_ERROR_INVALID_KERNEL_ATTRIBUTE_VALUE, 32) X(UR_RESULT_ERROR_INVALID_IMAGE_SIZE, 33)                \
  X(UR_RESULT_ERROR_INVALID_IMAGE_FORMAT_DESCRIPTOR, 34) X(UR_RESULT_ERROR_MEM_OBJECT_ALLOCATION_FAILURE, 35)     \
  X(UR_RESULT_ERROR_INVALID_PROGRAM_EXECUTABLE, 36) X(UR_RESULT_ERROR_UNINITIALIZED, 37)                         \
  X(UR_RESULT_ERROR_OUT_OF_HOST_MEMORY, 38) X(UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY, 39)                          \
  X(UR_RESULT_ERROR_OUT_OF_RESOURCES, 40) X(UR_RESULT_ERROR_PROGRAM_BUILD_FAILURE, 41)                           \
  X(UR_RESULT_ERROR_PROGRAM_LINK_FAILURE, 42) X(UR_RESULT_ERROR_UNSUPPORTED_VERSION, 43)                         \
  X(UR_RESULT_ERROR_UNSUPPORTED_FEATURE, 44) X(UR_RESULT_ERROR_INVALID_ARGUMENT, 45)                             \
  X(UR_RESULT_ERROR_INVALID_NULL_HANDLE, 46) X(UR_RESULT_ERROR_HANDLE_OBJECT_IN_USE, 47)                         \
  X(UR_RESULT_ERROR_INVALID_NULL_POINTER, 48) X(UR_RESULT_ERROR_INVALID_SIZE, 49)                                \
  X(UR_RESULT_ERROR_UNSUPPORTED_SIZE, 50) X(UR_RESULT_ERROR_UNSUPPORTED_ALIGNMENT, 51)                           \
  X(UR_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT, 52) X(UR_RESULT_ERROR_INVALID_ENUMERATION, 53)               \
  X(UR_RESULT_ERROR_UNSUPPORTED_ENUMERATION, 54) X(UR_RESULT_ERROR_UNSUPPORTED_IMAGE_FORMAT, 55)                 \
  X(UR_RESULT_ERROR_INVALID_NATIVE_BINARY, 56) X(UR_RESULT_ERROR_INVALID_GLOBAL_NAME, 57)                        \
  X(UR_RESULT_ERROR_FUNCTION_ADDRESS_NOT_AVAILABLE, 58) X(UR_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION, 59)      \
  X(UR_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION, 60) X(UR_RESULT_ERROR_PROGRAM_UNLINKED, 61)                  \
  X(UR_RESULT_ERROR_OVERLAPPING_REGIONS, 62) X(UR_RESULT_ERROR_INVALID_HOST_PTR, 63)                             \
  X(UR_RESULT_ERROR_INVALID_USM_SIZE, 64) X(UR_RESULT_ERROR_OBJECT_ALLOCATION_FAILURE, 65)                       \
  X(UR_RESULT_ERROR_ADAPTER_SPECIFIC, 66) X(UR_RESULT_ERROR_LAYER_NOT_PRESENT, 67)                               \
  X(UR_RESULT_ERROR_IN_EVENT_LIST_EXEC_STATUS, 68) X(UR_RESULT_ERROR_DEVICE_NOT_AVAILABLE, 69)                   \
  X(UR_RESULT_ERROR_INVALID_SPEC_ID, 70) X(UR_RESULT_ERROR_INVALID_GRAPH, 71)                                    \
  X(UR_RESULT_ERROR_GRAPH_CAPTURE_UNSUPPORTED, 72) X(UR_RESULT_ERROR_GRAPH_CAPTURE_INVALIDATED, 73)              \
  X(UR_RESULT_ERROR_GRAPH_CAPTURE_MERGE_ATTEMPT, 74) X(UR_RESULT_ERROR_COMMAND_LIST_NOT_CAPTURING, 75)           \
  X(UR_RESULT_ERROR_GRAPH_UNJOINED_FORKS, 76) X(UR_RESULT_ERROR_GRAPH_INTERNAL_EVENT, 77)                        \
  X(UR_RESULT_ERROR_INVALID_COMMAND_BUFFER_EXP, 0x1000)                                                          \
  X(UR_RESULT_ERROR_INVALID_COMMAND_BUFFER_SYNC_POINT_EXP, 0x1001)                                               \
  X(UR_RESULT_ERROR_INVALID_COMMAND_BUFFER_SYNC_POINT_WAIT_LIST_EXP, 0x1002)                                     \
  X(UR_RESULT_ERROR_INVALID_COMMAND_BUFFER_COMMAND_HANDLE_EXP, 0x1003) X(UR_RESULT_ERROR_UNKNOWN, 0x7ffffffe)

enum ur_result_t : std::uint32_t {
#define IPCHECK_UR_RESULT_ENUM(name, value) name = value,
  IPCHECK_UR_RESULTS(IPCHECK_UR_RESULT_ENUM)
#undef IPCHECK_UR_RESULT_ENUM
};

// "UR_RESULT_ERROR_INVALID_VALUE"; "ur_result_t <n>" for a value the pinned API does not name.
const char* result_name(ur_result_t r) noexcept;
// The ur_result_t a name stands for ("UR_RESULT_ERROR_INVALID_VALUE"); false when the list
// lacks it. The sycl adapter reads UR's result out of SYCL's exception messages with it.
bool result_of(const char* name, ur_result_t& out) noexcept;
// ipcheck's Errc of a UR result: one map for the ur adapter and the sycl adapter (whose SYCL
// errors carry UR's result underneath).
Errc errc_of(ur_result_t r) noexcept;

// ---------------------------------------------------------------- enumerators

using ur_device_init_flags_t = std::uint32_t;
inline constexpr ur_device_init_flags_t UR_DEVICE_INIT_FLAG_GPU = 1u << 0;

enum ur_structure_type_t : std::uint32_t {
  UR_STRUCTURE_TYPE_CONTEXT_PROPERTIES = 0,
  UR_STRUCTURE_TYPE_USM_DESC = 7,
  UR_STRUCTURE_TYPE_QUEUE_PROPERTIES = 14,
  UR_STRUCTURE_TYPE_PHYSICAL_MEM_PROPERTIES = 37,
  UR_STRUCTURE_TYPE_EXP_EVENT_DESC = 0x8000,
};

enum ur_backend_t : std::uint32_t {
  UR_BACKEND_UNKNOWN = 0,
  UR_BACKEND_LEVEL_ZERO = 1,
  UR_BACKEND_OPENCL = 2,
  UR_BACKEND_CUDA = 3,
  UR_BACKEND_HIP = 4,
  UR_BACKEND_NATIVE_CPU = 5,
  UR_BACKEND_OFFLOAD = 0x100,
};

enum ur_adapter_info_t : std::uint32_t {
  UR_ADAPTER_INFO_BACKEND = 0,  // ur_backend_t
  UR_ADAPTER_INFO_VERSION = 2,  // uint32_t; UR's Level Zero adapters answer 1 (v1) or 2 (v2)
};

enum ur_platform_info_t : std::uint32_t {
  UR_PLATFORM_INFO_NAME = 1,     // char[]
  UR_PLATFORM_INFO_VERSION = 3,  // char[]
  UR_PLATFORM_INFO_BACKEND = 6,  // ur_backend_t
  UR_PLATFORM_INFO_ADAPTER = 7,  // ur_adapter_handle_t
};

enum ur_device_type_t : std::uint32_t { UR_DEVICE_TYPE_ALL = 2 };

enum ur_device_info_t : std::uint32_t {
  UR_DEVICE_INFO_VENDOR_ID = 1,                         // uint32_t
  UR_DEVICE_INFO_NAME = 66,                             // char[]
  UR_DEVICE_INFO_DRIVER_VERSION = 68,                   // char[]
  UR_DEVICE_INFO_UUID = 88,                             // uint8_t[16]
  UR_DEVICE_INFO_VIRTUAL_MEMORY_SUPPORT = 114,          // ur_bool_t
  UR_DEVICE_INFO_IPC_MEMORY_SUPPORT_EXP = 0x2023,       // ur_bool_t
  UR_DEVICE_INFO_IPC_PHYSICAL_MEMORY_SUPPORT_EXP = 0x2024,
  UR_DEVICE_INFO_REUSABLE_EVENTS_SUPPORT_EXP = 0x2025,
  UR_DEVICE_INFO_IPC_EVENT_SUPPORT_EXP = 0x2026,
};

enum ur_usm_alloc_info_t : std::uint32_t {
  UR_USM_ALLOC_INFO_TYPE = 0,    // ur_usm_type_t
  UR_USM_ALLOC_INFO_DEVICE = 3,  // ur_device_handle_t
};

enum ur_usm_type_t : std::uint32_t {
  UR_USM_TYPE_UNKNOWN = 0,
  UR_USM_TYPE_HOST = 1,
  UR_USM_TYPE_DEVICE = 2,
  UR_USM_TYPE_SHARED = 3,
};

using ur_physical_mem_flags_t = std::uint32_t;
inline constexpr ur_physical_mem_flags_t UR_PHYSICAL_MEM_FLAG_ENABLE_IPC = 1u << 1;

enum ur_physical_mem_info_t : std::uint32_t {
  UR_PHYSICAL_MEM_INFO_SIZE = 2,        // size_t
  UR_PHYSICAL_MEM_INFO_PROPERTIES = 3,  // ur_physical_mem_properties_t
};

enum ur_virtual_mem_granularity_info_t : std::uint32_t {
  UR_VIRTUAL_MEM_GRANULARITY_INFO_MINIMUM = 0x30100,
  UR_VIRTUAL_MEM_GRANULARITY_INFO_RECOMMENDED = 0x30101,
};

using ur_virtual_mem_access_flags_t = std::uint32_t;
inline constexpr ur_virtual_mem_access_flags_t UR_VIRTUAL_MEM_ACCESS_FLAG_READ_WRITE = 1u << 1;

using ur_exp_event_flags_t = std::uint32_t;
inline constexpr ur_exp_event_flags_t UR_EXP_EVENT_FLAG_ENABLE_PROFILING = 1u << 0;
inline constexpr ur_exp_event_flags_t UR_EXP_EVENT_FLAG_IPC_EXP = 1u << 1;

enum ur_event_info_t : std::uint32_t { UR_EVENT_INFO_COMMAND_EXECUTION_STATUS = 3 };

enum ur_event_status_t : std::int32_t {
  UR_EVENT_STATUS_COMPLETE = 0,
  UR_EVENT_STATUS_RUNNING = 1,
  UR_EVENT_STATUS_SUBMITTED = 2,
  UR_EVENT_STATUS_QUEUED = 3,
  UR_EVENT_STATUS_ERROR = 4,
};

// ---------------------------------------------------------------- structures

struct ur_usm_desc_t {
  ur_structure_type_t stype;
  const void* pNext;
  std::uint32_t hints;  // ur_usm_advice_flags_t
  std::uint32_t align;
};

struct ur_queue_properties_t {
  ur_structure_type_t stype;
  void* pNext;
  std::uint32_t flags;  // ur_queue_flags_t
};

struct ur_physical_mem_properties_t {
  ur_structure_type_t stype;
  void* pNext;
  ur_physical_mem_flags_t flags;
};

struct ur_exp_event_desc_t {
  ur_structure_type_t stype;
  const void* pNext;
  ur_exp_event_flags_t flags;
};

// ---------------------------------------------------------------- functions

// name, return, parameters: one entry per entry point the adapter looks up.
#define IPCHECK_UR_FUNCTIONS(X)                                                                                        \
  X(urLoaderInit, (ur_device_init_flags_t, ur_loader_config_handle_t))                                                 \
  X(urLoaderTearDown, (void))                                                                                          \
  X(urAdapterGet, (std::uint32_t, ur_adapter_handle_t*, std::uint32_t*))                                               \
  X(urAdapterRelease, (ur_adapter_handle_t))                                                                           \
  X(urAdapterGetInfo, (ur_adapter_handle_t, ur_adapter_info_t, std::size_t, void*, std::size_t*))                      \
  X(urAdapterGetLastError, (ur_adapter_handle_t, const char**, std::int32_t*))                                         \
  X(urPlatformGet, (ur_adapter_handle_t, std::uint32_t, ur_platform_handle_t*, std::uint32_t*))                        \
  X(urPlatformGetInfo, (ur_platform_handle_t, ur_platform_info_t, std::size_t, void*, std::size_t*))                   \
  X(urDeviceGet, (ur_platform_handle_t, ur_device_type_t, std::uint32_t, ur_device_handle_t*, std::uint32_t*))         \
  X(urDeviceGetInfo, (ur_device_handle_t, ur_device_info_t, std::size_t, void*, std::size_t*))                         \
  X(urContextCreate, (std::uint32_t, const ur_device_handle_t*, const void*, ur_context_handle_t*))                    \
  X(urContextRelease, (ur_context_handle_t))                                                                           \
  X(urUSMDeviceAlloc,                                                                                                  \
    (ur_context_handle_t, ur_device_handle_t, const ur_usm_desc_t*, ur_usm_pool_handle_t, std::size_t, void**))        \
  X(urUSMHostAlloc, (ur_context_handle_t, const ur_usm_desc_t*, ur_usm_pool_handle_t, std::size_t, void**))            \
  X(urUSMSharedAlloc,                                                                                                  \
    (ur_context_handle_t, ur_device_handle_t, const ur_usm_desc_t*, ur_usm_pool_handle_t, std::size_t, void**))        \
  X(urUSMFree, (ur_context_handle_t, void*))                                                                           \
  X(urUSMGetMemAllocInfo, (ur_context_handle_t, const void*, ur_usm_alloc_info_t, std::size_t, void*, std::size_t*))   \
  X(urQueueCreate, (ur_context_handle_t, ur_device_handle_t, const ur_queue_properties_t*, ur_queue_handle_t*))        \
  X(urQueueRelease, (ur_queue_handle_t))                                                                               \
  X(urQueueFinish, (ur_queue_handle_t))                                                                                \
  X(urEnqueueUSMMemcpy, (ur_queue_handle_t, bool, void*, const void*, std::size_t, std::uint32_t,                      \
                         const ur_event_handle_t*, ur_event_handle_t*))                                                \
  X(urEnqueueEventsWaitWithBarrierExt,                                                                                 \
    (ur_queue_handle_t, const void*, std::uint32_t, const ur_event_handle_t*, ur_event_handle_t*))                     \
  X(urIPCGetMemHandleExp, (ur_context_handle_t, void*, void**, std::size_t*))                                          \
  X(urIPCPutMemHandleExp, (ur_context_handle_t, void*))                                                                \
  X(urIPCOpenMemHandleExp, (ur_context_handle_t, ur_device_handle_t, void*, std::size_t, void**))                      \
  X(urIPCCloseMemHandleExp, (ur_context_handle_t, void*))                                                              \
  X(urPhysicalMemCreate, (ur_context_handle_t, ur_device_handle_t, std::size_t, const ur_physical_mem_properties_t*,   \
                          ur_physical_mem_handle_t*))                                                                  \
  X(urPhysicalMemRetain, (ur_physical_mem_handle_t))                                                                   \
  X(urPhysicalMemRelease, (ur_physical_mem_handle_t))                                                                  \
  X(urPhysicalMemGetInfo, (ur_physical_mem_handle_t, ur_physical_mem_info_t, std::size_t, void*, std::size_t*))       \
  X(urIPCGetPhysMemHandleExp, (ur_context_handle_t, ur_physical_mem_handle_t, void**, std::size_t*))                   \
  X(urIPCPutPhysMemHandleExp, (ur_context_handle_t, const void*))                                                      \
  X(urIPCOpenPhysMemHandleExp,                                                                                         \
    (ur_context_handle_t, ur_device_handle_t, const void*, std::size_t, ur_physical_mem_handle_t*))                    \
  X(urIPCClosePhysMemHandleExp, (ur_context_handle_t, ur_physical_mem_handle_t))                                       \
  X(urVirtualMemGranularityGetInfo, (ur_context_handle_t, ur_device_handle_t, std::size_t,                            \
                                     ur_virtual_mem_granularity_info_t, std::size_t, void*, std::size_t*))             \
  X(urVirtualMemReserve, (ur_context_handle_t, const void*, std::size_t, void**))                                      \
  X(urVirtualMemFree, (ur_context_handle_t, const void*, std::size_t))                                                 \
  X(urVirtualMemMap, (ur_context_handle_t, const void*, std::size_t, ur_physical_mem_handle_t, std::size_t,            \
                      ur_virtual_mem_access_flags_t))                                                                  \
  X(urVirtualMemUnmap, (ur_context_handle_t, const void*, std::size_t))                                                \
  X(urEventCreateExp, (ur_context_handle_t, ur_device_handle_t, const ur_exp_event_desc_t*, ur_event_handle_t*))       \
  X(urIPCGetEventHandleExp, (ur_event_handle_t, void**, std::size_t*))                                                 \
  X(urIPCPutEventHandleExp, (ur_context_handle_t, void*))                                                              \
  X(urIPCOpenEventHandleExp, (ur_context_handle_t, const void*, std::size_t, ur_event_handle_t*))                      \
  X(urEventGetInfo, (ur_event_handle_t, ur_event_info_t, std::size_t, void*, std::size_t*))                            \
  X(urEventWait, (std::uint32_t, const ur_event_handle_t*))                                                            \
  X(urEventRetain, (ur_event_handle_t))                                                                                \
  X(urEventRelease, (ur_event_handle_t))

#define IPCHECK_UR_PFN(name, params) using PFN_##name = ur_result_t(*) params;
IPCHECK_UR_FUNCTIONS(IPCHECK_UR_PFN)
#undef IPCHECK_UR_PFN

}  // namespace ipcheck::ur_api
