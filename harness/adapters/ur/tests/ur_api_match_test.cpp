// Compiled only when the build is configured with the Unified Runtime stack (IPCHECK_UR_STACK):
// the project's declarations (ipcheck/ur/ur_api.hpp) against UR's own ur_api.h. Every value,
// structure layout and entry point's parameter list the adapter relies on must match, or the
// build fails here, naming what drifted. Nothing runs: the checks are static_asserts.
#include <ur_api.h>

#include <cstddef>
#include <type_traits>

#include "ipcheck/ur/ur_api.hpp"

namespace mine = ipcheck::ur_api;

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // UR_RESULT_ERROR_INVALID_KERNEL_ARGS
#define IPCHECK_UR_CHECK_RESULT(name, value)                                                   \
  static_assert(static_cast<long long>(mine::name) == static_cast<long long>(::name),          \
                "ur_api.hpp: " #name " differs from ur_api.h");                                \
  static_assert(static_cast<long long>(::name) == static_cast<long long>(value), #name);
IPCHECK_UR_RESULTS(IPCHECK_UR_CHECK_RESULT)
#undef IPCHECK_UR_CHECK_RESULT
#pragma GCC diagnostic pop
static_assert(sizeof(mine::ur_result_t) == sizeof(::ur_result_t));

#define IPCHECK_UR_SAME(name) \
  static_assert(static_cast<long long>(mine::name) == static_cast<long long>(::name), "ur_api.hpp: " #name " differs from ur_api.h");
IPCHECK_UR_SAME(UR_DEVICE_INIT_FLAG_GPU)
IPCHECK_UR_SAME(UR_STRUCTURE_TYPE_CONTEXT_PROPERTIES)
IPCHECK_UR_SAME(UR_STRUCTURE_TYPE_USM_DESC)
IPCHECK_UR_SAME(UR_STRUCTURE_TYPE_QUEUE_PROPERTIES)
IPCHECK_UR_SAME(UR_STRUCTURE_TYPE_PHYSICAL_MEM_PROPERTIES)
IPCHECK_UR_SAME(UR_STRUCTURE_TYPE_EXP_EVENT_DESC)
IPCHECK_UR_SAME(UR_BACKEND_UNKNOWN)
IPCHECK_UR_SAME(UR_BACKEND_LEVEL_ZERO)
IPCHECK_UR_SAME(UR_BACKEND_OPENCL)
IPCHECK_UR_SAME(UR_BACKEND_CUDA)
IPCHECK_UR_SAME(UR_BACKEND_HIP)
IPCHECK_UR_SAME(UR_BACKEND_NATIVE_CPU)
IPCHECK_UR_SAME(UR_BACKEND_OFFLOAD)
IPCHECK_UR_SAME(UR_ADAPTER_INFO_BACKEND)
IPCHECK_UR_SAME(UR_ADAPTER_INFO_VERSION)
IPCHECK_UR_SAME(UR_PLATFORM_INFO_NAME)
IPCHECK_UR_SAME(UR_PLATFORM_INFO_VERSION)
IPCHECK_UR_SAME(UR_PLATFORM_INFO_BACKEND)
IPCHECK_UR_SAME(UR_PLATFORM_INFO_ADAPTER)
IPCHECK_UR_SAME(UR_DEVICE_TYPE_ALL)
IPCHECK_UR_SAME(UR_DEVICE_INFO_VENDOR_ID)
IPCHECK_UR_SAME(UR_DEVICE_INFO_NAME)
IPCHECK_UR_SAME(UR_DEVICE_INFO_DRIVER_VERSION)
IPCHECK_UR_SAME(UR_DEVICE_INFO_UUID)
IPCHECK_UR_SAME(UR_DEVICE_INFO_VIRTUAL_MEMORY_SUPPORT)
IPCHECK_UR_SAME(UR_DEVICE_INFO_IPC_MEMORY_SUPPORT_EXP)
IPCHECK_UR_SAME(UR_DEVICE_INFO_IPC_PHYSICAL_MEMORY_SUPPORT_EXP)
IPCHECK_UR_SAME(UR_DEVICE_INFO_REUSABLE_EVENTS_SUPPORT_EXP)
IPCHECK_UR_SAME(UR_DEVICE_INFO_IPC_EVENT_SUPPORT_EXP)
IPCHECK_UR_SAME(UR_USM_ALLOC_INFO_TYPE)
IPCHECK_UR_SAME(UR_USM_ALLOC_INFO_DEVICE)
IPCHECK_UR_SAME(UR_USM_TYPE_UNKNOWN)
IPCHECK_UR_SAME(UR_USM_TYPE_HOST)
IPCHECK_UR_SAME(UR_USM_TYPE_DEVICE)
IPCHECK_UR_SAME(UR_USM_TYPE_SHARED)
IPCHECK_UR_SAME(UR_PHYSICAL_MEM_FLAG_ENABLE_IPC)
IPCHECK_UR_SAME(UR_PHYSICAL_MEM_INFO_SIZE)
IPCHECK_UR_SAME(UR_PHYSICAL_MEM_INFO_PROPERTIES)
IPCHECK_UR_SAME(UR_VIRTUAL_MEM_GRANULARITY_INFO_MINIMUM)
IPCHECK_UR_SAME(UR_VIRTUAL_MEM_GRANULARITY_INFO_RECOMMENDED)
IPCHECK_UR_SAME(UR_VIRTUAL_MEM_ACCESS_FLAG_READ_WRITE)
IPCHECK_UR_SAME(UR_EXP_EVENT_FLAG_ENABLE_PROFILING)
IPCHECK_UR_SAME(UR_EXP_EVENT_FLAG_IPC_EXP)
IPCHECK_UR_SAME(UR_EVENT_INFO_COMMAND_EXECUTION_STATUS)
IPCHECK_UR_SAME(UR_EVENT_STATUS_COMPLETE)
IPCHECK_UR_SAME(UR_EVENT_STATUS_RUNNING)
IPCHECK_UR_SAME(UR_EVENT_STATUS_SUBMITTED)
IPCHECK_UR_SAME(UR_EVENT_STATUS_QUEUED)
IPCHECK_UR_SAME(UR_EVENT_STATUS_ERROR)
#undef IPCHECK_UR_SAME
static_assert(sizeof(mine::ur_bool_t) == sizeof(::ur_bool_t));
static_assert(sizeof(mine::ur_event_status_t) == sizeof(::ur_event_status_t));
static_assert(sizeof(mine::ur_backend_t) == sizeof(::ur_backend_t));

#define IPCHECK_UR_SAME_STRUCT(type, ...)                                                          \
  static_assert(sizeof(mine::type) == sizeof(::type) && alignof(mine::type) == alignof(::type),   \
                "ur_api.hpp: " #type " has another size or alignment than in ur_api.h");
#define IPCHECK_UR_SAME_FIELD(type, field)                                                         \
  static_assert(offsetof(mine::type, field) == offsetof(::type, field) &&                          \
                    sizeof(mine::type::field) == sizeof(::type::field),                            \
                "ur_api.hpp: " #type "::" #field " differs from ur_api.h");
IPCHECK_UR_SAME_STRUCT(ur_usm_desc_t)
IPCHECK_UR_SAME_FIELD(ur_usm_desc_t, stype)
IPCHECK_UR_SAME_FIELD(ur_usm_desc_t, pNext)
IPCHECK_UR_SAME_FIELD(ur_usm_desc_t, hints)
IPCHECK_UR_SAME_FIELD(ur_usm_desc_t, align)
IPCHECK_UR_SAME_STRUCT(ur_queue_properties_t)
IPCHECK_UR_SAME_FIELD(ur_queue_properties_t, stype)
IPCHECK_UR_SAME_FIELD(ur_queue_properties_t, pNext)
IPCHECK_UR_SAME_FIELD(ur_queue_properties_t, flags)
IPCHECK_UR_SAME_STRUCT(ur_physical_mem_properties_t)
IPCHECK_UR_SAME_FIELD(ur_physical_mem_properties_t, stype)
IPCHECK_UR_SAME_FIELD(ur_physical_mem_properties_t, pNext)
IPCHECK_UR_SAME_FIELD(ur_physical_mem_properties_t, flags)
IPCHECK_UR_SAME_STRUCT(ur_exp_event_desc_t)
IPCHECK_UR_SAME_FIELD(ur_exp_event_desc_t, stype)
IPCHECK_UR_SAME_FIELD(ur_exp_event_desc_t, pNext)
IPCHECK_UR_SAME_FIELD(ur_exp_event_desc_t, flags)
#undef IPCHECK_UR_SAME_FIELD
#undef IPCHECK_UR_SAME_STRUCT

// Entry points: the same number of parameters, each of the same size and the same kind
// (pointer or value), and a result of the same size. Handle and enum types are the project's
// own, so the types themselves differ by design.
namespace {
template <class T>
constexpr int kind() {
  return std::is_pointer_v<T> ? 1 : (std::is_floating_point_v<T> ? 2 : 3);
}
template <class A, class B>
struct same_abi : std::false_type {};
template <class RA, class... A, class RB, class... B>
struct same_abi<RA (*)(A...), RB (*)(B...)> {
  static constexpr bool value = []() {
    if constexpr (sizeof...(A) != sizeof...(B)) {
      return false;
    } else {
      return sizeof(RA) == sizeof(RB) && ((sizeof(A) == sizeof(B) && kind<A>() == kind<B>()) && ...);
    }
  }();
};
}  // namespace
#define IPCHECK_UR_SAME_FUNCTION(name, params)                                               \
  static_assert(same_abi<mine::PFN_##name, decltype(&::name)>::value,                        \
                "ur_api.hpp: the parameters of " #name " differ from ur_api.h");
IPCHECK_UR_FUNCTIONS(IPCHECK_UR_SAME_FUNCTION)
#undef IPCHECK_UR_SAME_FUNCTION
