// The system Vulkan loader (libvulkan.so.1) opened at run time: dlopen, vkGetInstanceProcAddr,
// then every instance and device function the `vk` adapter calls, looked up by name. No link
// dependency on the loader, so one ipcheck build runs with and without Vulkan.
#pragma once

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <string>
#include <vector>

namespace ipcheck::vk {

// X(name): functions the loader exports or vkGetInstanceProcAddr answers with a null instance.
#define IPCHECK_VK_GLOBAL_FUNCTIONS(X)    \
  X(vkCreateInstance)                     \
  X(vkEnumerateInstanceExtensionProperties) \
  X(vkEnumerateInstanceLayerProperties)   \
  X(vkEnumerateInstanceVersion)

#define IPCHECK_VK_INSTANCE_FUNCTIONS(X)           \
  X(vkDestroyInstance)                             \
  X(vkEnumeratePhysicalDevices)                    \
  X(vkGetPhysicalDeviceProperties)                 \
  X(vkGetPhysicalDeviceProperties2)                \
  X(vkGetPhysicalDeviceFeatures2)                  \
  X(vkGetPhysicalDeviceMemoryProperties)           \
  X(vkGetPhysicalDeviceQueueFamilyProperties)      \
  X(vkEnumerateDeviceExtensionProperties)          \
  X(vkGetPhysicalDeviceExternalBufferProperties)   \
  X(vkGetPhysicalDeviceExternalSemaphoreProperties) \
  X(vkCreateDevice)                                \
  X(vkGetDeviceProcAddr)

// Present only when VK_EXT_debug_utils is enabled (the validation layer runs).
#define IPCHECK_VK_DEBUG_FUNCTIONS(X) \
  X(vkCreateDebugUtilsMessengerEXT)   \
  X(vkDestroyDebugUtilsMessengerEXT)

#define IPCHECK_VK_DEVICE_FUNCTIONS(X) \
  X(vkDestroyDevice)                   \
  X(vkGetDeviceQueue)                  \
  X(vkDeviceWaitIdle)                  \
  X(vkAllocateMemory)                  \
  X(vkFreeMemory)                      \
  X(vkMapMemory)                       \
  X(vkUnmapMemory)                     \
  X(vkCreateBuffer)                    \
  X(vkDestroyBuffer)                   \
  X(vkGetBufferMemoryRequirements)     \
  X(vkBindBufferMemory)                \
  X(vkCreateCommandPool)               \
  X(vkDestroyCommandPool)              \
  X(vkAllocateCommandBuffers)          \
  X(vkResetCommandBuffer)              \
  X(vkBeginCommandBuffer)              \
  X(vkEndCommandBuffer)                \
  X(vkCmdCopyBuffer)                   \
  X(vkQueueSubmit)                     \
  X(vkQueueWaitIdle)                   \
  X(vkCreateSemaphore)                 \
  X(vkDestroySemaphore)                \
  X(vkGetSemaphoreCounterValue)        \
  X(vkSignalSemaphore)                 \
  X(vkWaitSemaphores)

// Extension functions: null when the device lacks the extension.
#define IPCHECK_VK_DEVICE_EXTENSION_FUNCTIONS(X) \
  X(vkGetMemoryFdKHR)                            \
  X(vkGetMemoryFdPropertiesKHR)                  \
  X(vkGetSemaphoreFdKHR)                         \
  X(vkImportSemaphoreFdKHR)

struct DeviceFns {
#define IPCHECK_VK_MEMBER(name) PFN_##name name = nullptr;
  IPCHECK_VK_DEVICE_FUNCTIONS(IPCHECK_VK_MEMBER)
  IPCHECK_VK_DEVICE_EXTENSION_FUNCTIONS(IPCHECK_VK_MEMBER)
#undef IPCHECK_VK_MEMBER
};

class Loader {
 public:
  Loader() = default;
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;
  // The loader is never unloaded: drivers keep threads and atexit handlers in it.
  ~Loader() = default;

  // Opens `library` (empty: libvulkan.so.1) and the global functions; empty, or why not.
  std::string open(const std::string& library);
  // Instance functions of `instance`; empty, or the first one missing.
  std::string load_instance(VkInstance instance, bool debug_utils);
  // Device functions of `device`; empty, or the first core one missing.
  std::string load_device(VkDevice device, DeviceFns& out) const;
  const std::string& path() const { return path_; }

  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
#define IPCHECK_VK_MEMBER(name) PFN_##name name = nullptr;
  IPCHECK_VK_GLOBAL_FUNCTIONS(IPCHECK_VK_MEMBER)
  IPCHECK_VK_INSTANCE_FUNCTIONS(IPCHECK_VK_MEMBER)
  IPCHECK_VK_DEBUG_FUNCTIONS(IPCHECK_VK_MEMBER)
#undef IPCHECK_VK_MEMBER

 private:
  void* handle_ = nullptr;
  std::string path_;
};

// "VK_ERROR_INVALID_EXTERNAL_HANDLE"; "VkResult -12345" for a code this build cannot name.
std::string result_name(VkResult r);

}  // namespace ipcheck::vk
