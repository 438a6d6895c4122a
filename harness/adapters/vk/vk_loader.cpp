#include "vk_loader.hpp"

#include <dlfcn.h>
#include <link.h>

#include <climits>
#include <cstdlib>

namespace ipcheck::vk {

std::string Loader::open(const std::string& library) {
  const std::string name = library.empty() ? "libvulkan.so.1" : library;
  handle_ = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char* why = ::dlerror();
    return "dlopen(" + name + ") failed: " + (why ? why : "not found") + " (install libvulkan1)";
  }
  link_map* map = nullptr;
  char real[PATH_MAX];
  path_ = name;
  if (::dlinfo(handle_, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name)
    path_ = ::realpath(map->l_name, real) ? std::string(real) : std::string(map->l_name);
  vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(::dlsym(handle_, "vkGetInstanceProcAddr"));
  if (!vkGetInstanceProcAddr) return path_ + " exports no vkGetInstanceProcAddr: not a Vulkan loader";
#define IPCHECK_VK_LOOKUP(name) name = reinterpret_cast<PFN_##name>(vkGetInstanceProcAddr(nullptr, #name));
  IPCHECK_VK_GLOBAL_FUNCTIONS(IPCHECK_VK_LOOKUP)
#undef IPCHECK_VK_LOOKUP
  if (!vkCreateInstance || !vkEnumerateInstanceExtensionProperties || !vkEnumerateInstanceLayerProperties)
    return path_ + " answers no vkCreateInstance: not a Vulkan loader";
  return {};
}

std::string Loader::load_instance(VkInstance instance, bool debug_utils) {
  std::string missing;
#define IPCHECK_VK_LOOKUP(name)                                                          \
  name = reinterpret_cast<PFN_##name>(vkGetInstanceProcAddr(instance, #name));           \
  if (!name) missing += (missing.empty() ? "" : ", ") + std::string(#name);
  IPCHECK_VK_INSTANCE_FUNCTIONS(IPCHECK_VK_LOOKUP)
  if (debug_utils) {
    IPCHECK_VK_DEBUG_FUNCTIONS(IPCHECK_VK_LOOKUP)
  }
#undef IPCHECK_VK_LOOKUP
  return missing;
}

std::string Loader::load_device(VkDevice device, DeviceFns& out) const {
  std::string missing;
#define IPCHECK_VK_LOOKUP(name)                                                        \
  out.name = reinterpret_cast<PFN_##name>(vkGetDeviceProcAddr(device, #name));         \
  if (!out.name) missing += (missing.empty() ? "" : ", ") + std::string(#name);
  IPCHECK_VK_DEVICE_FUNCTIONS(IPCHECK_VK_LOOKUP)
#undef IPCHECK_VK_LOOKUP
#define IPCHECK_VK_LOOKUP_OPTIONAL(name) out.name = reinterpret_cast<PFN_##name>(vkGetDeviceProcAddr(device, #name));
  IPCHECK_VK_DEVICE_EXTENSION_FUNCTIONS(IPCHECK_VK_LOOKUP_OPTIONAL)
#undef IPCHECK_VK_LOOKUP_OPTIONAL
  return missing;
}

std::string result_name(VkResult r) {
  switch (r) {
#define IPCHECK_VK_RESULT(name) \
  case name: return #name;
    IPCHECK_VK_RESULT(VK_SUCCESS)
    IPCHECK_VK_RESULT(VK_NOT_READY)
    IPCHECK_VK_RESULT(VK_TIMEOUT)
    IPCHECK_VK_RESULT(VK_EVENT_SET)
    IPCHECK_VK_RESULT(VK_EVENT_RESET)
    IPCHECK_VK_RESULT(VK_INCOMPLETE)
    IPCHECK_VK_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    IPCHECK_VK_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    IPCHECK_VK_RESULT(VK_ERROR_INITIALIZATION_FAILED)
    IPCHECK_VK_RESULT(VK_ERROR_DEVICE_LOST)
    IPCHECK_VK_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
    IPCHECK_VK_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
    IPCHECK_VK_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    IPCHECK_VK_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
    IPCHECK_VK_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    IPCHECK_VK_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
    IPCHECK_VK_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
    IPCHECK_VK_RESULT(VK_ERROR_FRAGMENTED_POOL)
    IPCHECK_VK_RESULT(VK_ERROR_UNKNOWN)
    IPCHECK_VK_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
    IPCHECK_VK_RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    IPCHECK_VK_RESULT(VK_ERROR_FRAGMENTATION)
    IPCHECK_VK_RESULT(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
#undef IPCHECK_VK_RESULT
    default: break;
  }
  return "VkResult " + std::to_string(static_cast<int>(r));
}

}  // namespace ipcheck::vk
