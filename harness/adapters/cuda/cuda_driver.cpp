#include "ipcheck/cuda/cuda_driver.hpp"

#include <dlfcn.h>
#include <link.h>

#include <climits>
#include <cstdlib>

namespace ipcheck::cuda_api {

namespace {

// Where driver packages put libcuda when the loader's search path does not name it
// (containers that mount the driver, distributions with a lib64 layout).
const char* const kFallbackPaths[] = {
    "/usr/local/nvidia/lib64/libcuda.so.1",
    "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
    "/usr/lib64/libcuda.so.1",
    "/usr/lib/wsl/lib/libcuda.so.1",
};

std::string resolved_path(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_name || !*map->l_name) return fallback;
  char real[PATH_MAX];
  return ::realpath(map->l_name, real) ? std::string(real) : std::string(map->l_name);
}

}  // namespace

const char* known_result_name(CUresult r) {
  switch (r) {
#define IPCHECK_CUDA_RESULT_NAME(name, value) \
  case value: return #name;
    IPCHECK_CUDA_RESULTS(IPCHECK_CUDA_RESULT_NAME)
#undef IPCHECK_CUDA_RESULT_NAME
  }
  return nullptr;
}

std::unique_ptr<Driver> Driver::load(const std::string& library, std::string& error) {
  std::vector<std::string> candidates;
  if (!library.empty()) {
    candidates.push_back(library);
  } else {
    candidates.push_back("libcuda.so.1");
    for (const char* p : kFallbackPaths) candidates.push_back(p);
  }
  void* handle = nullptr;
  std::string first_error, tried;
  for (const auto& c : candidates) {
    handle = ::dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) break;
    const char* why = ::dlerror();
    if (first_error.empty()) first_error = why ? why : c + ": not found";
    tried += (tried.empty() ? "" : ", ") + c;
  }
  if (!handle) {
    error = "dlopen found no libcuda (tried " + tried + "; " + first_error + ")";
    return nullptr;
  }
  std::unique_ptr<Driver> d(new Driver);
  d->handle_ = handle;
  d->path_ = resolved_path(handle, candidates.front());
  std::string missing;
#define IPCHECK_CUDA_LOOKUP_CORE(name, symbol)                                 \
  d->name = reinterpret_cast<PFN_##name>(::dlsym(handle, symbol));             \
  if (!d->name) missing += (missing.empty() ? "" : ", ") + std::string(symbol);
  IPCHECK_CUDA_CORE_FUNCTIONS(IPCHECK_CUDA_LOOKUP_CORE)
#undef IPCHECK_CUDA_LOOKUP_CORE
#define IPCHECK_CUDA_LOOKUP_OPTIONAL(name, symbol)                 \
  d->name = reinterpret_cast<PFN_##name>(::dlsym(handle, symbol)); \
  if (!d->name) d->missing_optional_.push_back(symbol);
  IPCHECK_CUDA_OPTIONAL_FUNCTIONS(IPCHECK_CUDA_LOOKUP_OPTIONAL)
#undef IPCHECK_CUDA_LOOKUP_OPTIONAL
  if (!missing.empty()) {
    error = d->path_ + " lacks " + missing + " (a driver older than CUDA 11, or not libcuda at all)";
    ::dlclose(handle);  // nothing of it ran yet: safe to unload
    return nullptr;
  }
  return d;
}

std::string Driver::error_name(CUresult r) const {
  const char* name = nullptr;
  if (cuGetErrorName && cuGetErrorName(r, &name) == CUDA_SUCCESS && name) return name;
  // The toolkit's stub names nothing; codes the adapter knows keep their names anyway.
  if (const char* known = known_result_name(r)) return known;
  return "CUresult " + std::to_string(r);
}

std::string Driver::error_text(CUresult r) const {
  const char* text = nullptr;
  if (cuGetErrorString && cuGetErrorString(r, &text) == CUDA_SUCCESS && text) return text;
  return "no description from the driver";
}

}  // namespace ipcheck::cuda_api
