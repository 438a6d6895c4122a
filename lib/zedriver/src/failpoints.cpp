// libze_ipcheck's failpoints (ipcref/failpoints.hpp has the IPCHECK_FAILPOINTS grammar):
// any entry point that runs inside `entry` answers the rule's ze_result_t instead of running,
// and `withhold=` takes away an optional capability. lib/zedriver/README.md lists both.
#include "failpoints.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "ipcref/failpoints.hpp"
#include "ze_ipcheck/result_name.hpp"

namespace zedriver {
namespace {

using ze_ipcheck::result_name;

// The results a rule may name: every code result_name knows (ze_ipcheck/result_name.hpp).
constexpr ze_result_t kNamed[] = {
    ZE_RESULT_NOT_READY, ZE_RESULT_ERROR_DEVICE_LOST, ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY,
    ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY, ZE_RESULT_ERROR_MODULE_BUILD_FAILURE, ZE_RESULT_ERROR_MODULE_LINK_FAILURE,
    ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET, ZE_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE,
    ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS, ZE_RESULT_ERROR_NOT_AVAILABLE, ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE,
    ZE_RESULT_ERROR_UNINITIALIZED, ZE_RESULT_ERROR_UNSUPPORTED_VERSION, ZE_RESULT_ERROR_UNSUPPORTED_FEATURE,
    ZE_RESULT_ERROR_INVALID_ARGUMENT, ZE_RESULT_ERROR_INVALID_NULL_HANDLE, ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE,
    ZE_RESULT_ERROR_INVALID_NULL_POINTER, ZE_RESULT_ERROR_INVALID_SIZE, ZE_RESULT_ERROR_UNSUPPORTED_SIZE,
    ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT, ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT,
    ZE_RESULT_ERROR_INVALID_ENUMERATION, ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION, ZE_RESULT_ERROR_OVERLAPPING_REGIONS,
    ZE_RESULT_ERROR_UNKNOWN};

ze_result_t result_of(const ipcref::failpoints::rule& r) {
  for (ze_result_t code : kNamed)
    if (r.result == result_name(code)) return code;
  // A number, decimal or 0x hexadecimal (a code this driver has no name for).
  char* end = nullptr;
  const unsigned long v = std::strtoul(r.result.c_str(), &end, 0);
  if (end && *end == '\0' && !r.result.empty() && v != 0 && v <= 0xffffffffUL) return static_cast<ze_result_t>(v);
  std::fprintf(stderr,
               "%s: %s=%s: libze_ipcheck answers a ze_result_t name (ZE_RESULT_ERROR_DEVICE_LOST, "
               "ZE_RESULT_ERROR_UNKNOWN, ...) or a non-zero number\n",
               ipcref::failpoints::kEnv, r.function.c_str(), r.result.c_str());
  std::abort();
}

}  // namespace

ze_result_t failpoint(const char* function) {
  const auto& spec = ipcref::failpoints::active();
  if (spec.empty()) return ZE_RESULT_SUCCESS;
  const std::string_view f(function);
  unsigned long call = 0;
  const ipcref::failpoints::rule* r = ipcref::failpoints::hit(f, &call);
  // Withheld: regular command queues and lists (a driver with immediate command lists only).
  if ((f == "zeCommandQueueCreate" || f == "zeCommandListCreate") &&
      ipcref::failpoints::withheld("regular_queues")) {
    ipcref::failpoints::report_fired(f, call, "ZE_RESULT_ERROR_UNSUPPORTED_FEATURE");
    return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
  }
  if (!r) return ZE_RESULT_SUCCESS;
  const ze_result_t code = result_of(*r);
  ipcref::failpoints::report_fired(f, call, result_name(code));
  return code;
}

bool extension_withheld(const std::string& name) { return ipcref::failpoints::withheld("ext:" + name); }

}  // namespace zedriver
