#include "ze_loader.hpp"

#include <dlfcn.h>

#include <cstring>
#include <vector>

namespace ipcheck::ze {

Loader::~Loader() {
  // The loader is never closed: drivers keep threads and static state that outlive us.
}

std::string Loader::open() {
  lib_ = ::dlopen("libze_loader.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib_) {
    const char* e = ::dlerror();
    return std::string("libze_loader.so.1 cannot be loaded (") + (e ? e : "unknown error") +
           "); install the Level Zero loader (Debian: libze1)";
  }
  std::string missing;
#define IPCHECK_ZE_RESOLVE(name)                                                 \
  name = reinterpret_cast<decltype(name)>(::dlsym(lib_, #name));                 \
  if (!name) missing += (missing.empty() ? "" : ", ") + std::string(#name);
  IPCHECK_ZE_CORE_FUNCTIONS(IPCHECK_ZE_RESOLVE)
#undef IPCHECK_ZE_RESOLVE
  translate_ = reinterpret_cast<decltype(translate_)>(::dlsym(lib_, "zelLoaderTranslateHandle"));
  versions_ = reinterpret_cast<decltype(versions_)>(::dlsym(lib_, "zelLoaderGetVersions"));
  if (!missing.empty()) return "libze_loader.so.1 lacks Level Zero 1.4 functions: " + missing;
  return {};
}

template <class Fn>
Newer<Fn> Loader::find(ze_driver_handle_t driver, const char* name) {
  Newer<Fn> n;
  if (void* p = ::dlsym(lib_, name)) {
    n.fn = reinterpret_cast<Fn>(p);
    n.from = "loader";
  } else if (void* q = nullptr; zeDriverGetExtensionFunctionAddress(driver, name, &q) == ZE_RESULT_SUCCESS && q) {
    n.fn = reinterpret_cast<Fn>(q);
    n.from = "driver extension";
    n.via_driver = true;
  }
  newer_found[name] = n.from;
  return n;
}

void Loader::resolve_newer(ze_driver_handle_t driver) {
  zeMemPutIpcHandle = find<ipcheck_pfnMemPutIpcHandle_t>(driver, "zeMemPutIpcHandle");
  zeEventPoolPutIpcHandle = find<ipcheck_pfnEventPoolPutIpcHandle_t>(driver, "zeEventPoolPutIpcHandle");
  zePhysicalMemGetProperties = find<ipcheck_pfnPhysicalMemGetProperties_t>(driver, "zePhysicalMemGetProperties");
  zeMemGetFileDescriptorFromIpcHandleExp =
      find<ipcheck_pfnMemGetFileDescriptorFromIpcHandleExp_t>(driver, "zeMemGetFileDescriptorFromIpcHandleExp");
  zeMemGetIpcHandleFromFileDescriptorExp =
      find<ipcheck_pfnMemGetIpcHandleFromFileDescriptorExp_t>(driver, "zeMemGetIpcHandleFromFileDescriptorExp");
  zeDriverGetLastErrorDescription =
      find<ipcheck_pfnDriverGetLastErrorDescription_t>(driver, "zeDriverGetLastErrorDescription");
  // Counter-based event IPC (Level Zero 1.15; Intel's experimental zex* before it): recorded
  // for the report, so a run says whether the driver could share events that way.
  for (const char* name : {"zeEventCounterBasedGetIpcHandle", "zeEventCounterBasedOpenIpcHandle",
                           "zeEventCounterBasedCloseIpcHandle", "zexCounterBasedEventGetIpcHandle",
                           "zexCounterBasedEventOpenIpcHandle", "zexCounterBasedEventCloseIpcHandle"})
    find<void*>(driver, name);
}

std::string Loader::loader_version() const {
  if (!versions_) return {};
  size_t n = 0;
  if (versions_(&n, nullptr) != ZE_RESULT_SUCCESS || n == 0) return {};
  std::vector<zel_component_version_t> v(n);
  if (versions_(&n, v.data()) != ZE_RESULT_SUCCESS) return {};
  for (const auto& c : v)
    if (std::strcmp(c.component_name, "loader") == 0)
      return std::to_string(c.component_lib_version.major) + "." + std::to_string(c.component_lib_version.minor) + "." +
             std::to_string(c.component_lib_version.patch);
  return {};
}

void* Loader::translate(zel_handle_type_t type, void* handle) const {
  void* out = handle;
  if (translate_ && handle && translate_(type, handle, &out) != ZE_RESULT_SUCCESS) out = handle;
  return out;
}

}  // namespace ipcheck::ze
