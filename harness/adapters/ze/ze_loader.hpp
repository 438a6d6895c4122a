// The Level Zero API as the `ze` adapter reaches it: the system loader (libze_loader.so.1)
// opened at run time, so one ipcheck build runs with or without it. API 1.4 functions are
// taken from the loader with dlsym; newer ones (put, physical memory properties, descriptor
// conversion, last error description, counter-based event IPC) from the loader if it exports
// them, else from the driver through zeDriverGetExtensionFunctionAddress, else they are absent
// and the verbs that need them answer not_implemented naming them.
#pragma once

#include <level_zero/loader/ze_loader.h>
#include <level_zero/ze_api.h>

#include <map>
#include <string>

#include "ze_ipcheck/newer_api.h"
#include "ze_ipcheck/result_name.hpp"

namespace ipcheck::ze {

// "ZE_RESULT_ERROR_INVALID_ARGUMENT": the table libze_ipcheck names its codes with too.
using ze_ipcheck::result_name;

#define IPCHECK_ZE_CORE_FUNCTIONS(X)                                                                                  \
  X(zeInit) X(zeDriverGet) X(zeDriverGetApiVersion) X(zeDriverGetProperties) X(zeDriverGetIpcProperties)              \
  X(zeDriverGetExtensionProperties) X(zeDriverGetExtensionFunctionAddress) X(zeDeviceGet) X(zeDeviceGetProperties)    \
  X(zeDeviceGetExternalMemoryProperties) X(zeContextCreate) X(zeContextDestroy) X(zeCommandListCreateImmediate)        \
  X(zeCommandListDestroy) X(zeCommandListAppendMemoryCopy) X(zeMemAllocDevice) X(zeMemAllocHost) X(zeMemAllocShared)  \
  X(zeMemFree) X(zeMemGetAllocProperties) X(zeMemGetIpcHandle) X(zeMemOpenIpcHandle) X(zeMemCloseIpcHandle)           \
  X(zePhysicalMemCreate) X(zePhysicalMemDestroy) X(zeVirtualMemReserve) X(zeVirtualMemFree)                           \
  X(zeVirtualMemQueryPageSize) X(zeVirtualMemMap) X(zeVirtualMemUnmap) X(zeEventPoolCreate) X(zeEventPoolDestroy)     \
  X(zeEventPoolGetIpcHandle) X(zeEventPoolOpenIpcHandle) X(zeEventPoolCloseIpcHandle) X(zeEventCreate)                \
  X(zeEventDestroy) X(zeEventHostSignal) X(zeEventHostSynchronize) X(zeEventQueryStatus) X(zeEventHostReset)

// A function newer than the loader's API version, and where it was found.
template <class Fn>
struct Newer {
  Fn fn = nullptr;
  const char* from = "absent";  // "loader", "driver extension" or "absent"
  bool via_driver = false;      // called with driver handles (translated from the loader's)
  explicit operator bool() const noexcept { return fn != nullptr; }
};

class Loader {
 public:
  Loader() = default;
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;
  ~Loader();

  // Opens libze_loader.so.1 and resolves the API 1.4 functions; "" or why not.
  std::string open();
  // Resolves the newer functions for `driver` (after zeInit).
  void resolve_newer(ze_driver_handle_t driver);
  // The loader's own version ("1.8.12"), "" when it does not say.
  std::string loader_version() const;
  // A loader handle as the driver knows it (for functions found as driver extensions).
  void* translate(zel_handle_type_t type, void* handle) const;

#define IPCHECK_ZE_MEMBER(name) decltype(&::name) name = nullptr;
  IPCHECK_ZE_CORE_FUNCTIONS(IPCHECK_ZE_MEMBER)
#undef IPCHECK_ZE_MEMBER

  Newer<ipcheck_pfnMemPutIpcHandle_t> zeMemPutIpcHandle;
  Newer<ipcheck_pfnEventPoolPutIpcHandle_t> zeEventPoolPutIpcHandle;
  Newer<ipcheck_pfnPhysicalMemGetProperties_t> zePhysicalMemGetProperties;
  Newer<ipcheck_pfnMemGetFileDescriptorFromIpcHandleExp_t> zeMemGetFileDescriptorFromIpcHandleExp;
  Newer<ipcheck_pfnMemGetIpcHandleFromFileDescriptorExp_t> zeMemGetIpcHandleFromFileDescriptorExp;
  Newer<ipcheck_pfnDriverGetLastErrorDescription_t> zeDriverGetLastErrorDescription;
  // Where each newer function was looked for and found, by name (also the counter-based
  // event IPC functions, which no verb uses yet).
  std::map<std::string, std::string> newer_found;

 private:
  template <class Fn>
  Newer<Fn> find(ze_driver_handle_t driver, const char* name);

  void* lib_ = nullptr;
  decltype(&::zelLoaderTranslateHandle) translate_ = nullptr;
  decltype(&::zelLoaderGetVersions) versions_ = nullptr;
};

}  // namespace ipcheck::ze
