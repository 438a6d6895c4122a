// The `vk` adapter's set-up: options, the instance (with the validation layer where asked),
// the devices and what they offer, info(), and which memory type each kind of memory gets.
#include <sys/prctl.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "vk_adapter.hpp"

namespace ipcheck::vk_adapter {

Outcome VkAdapter::init(const AdapterConfig& config) {
  std::string library;
  for (const auto& [k, v] : config.options) {
    if (k == "loader") library = v;
    else if (k == "device") device_option_ = static_cast<int>(parse_u64(v, 0));
    else if (k == "staging") staging_ = v == "1" || v == "on";
    else if (k == "dedicated") force_dedicated_ = v == "1" || v == "on";
    else if (k == "validation") validation_requested_ = v == "1" || v == "on";
    else if (k == "identity") check_identity_ = !(v == "0" || v == "off");
    else
      return Outcome::failure(Errc::invalid, "vk: unknown adapter option '" + k +
                                                 "'; vk knows: loader, device, staging, dedicated, validation, identity");
  }
  validation_requested_ = validation_requested_ || env_on("IPCHECK_VK_VALIDATION");
  if (const char* l = std::getenv("IPCHECK_VK_LOADER"); l && *l && library.empty()) library = l;
  // Descriptors travel by SCM_RIGHTS unless the run asks for pidfd_getfd: that is how Vulkan
  // applications share them, and a record then names no descriptor number to take.
  scm_ = config.transport != "pidfd";

  if (std::string why = api_.open(library); !why.empty())
    return Outcome::failure(Errc::not_implemented, "no Vulkan loader: " + why);
  if (Outcome o = create_instance(); !o.ok()) return o;
  if (Outcome o = pick_devices(); !o.ok()) return o;
  if (!scm_ && config.runner_pid > 0)
    ::prctl(PR_SET_PTRACER, static_cast<unsigned long>(config.runner_pid), 0, 0, 0);
  return Outcome::success();
}

AdapterInfo VkAdapter::info() {
  AdapterInfo i;
  const Dev& d0 = devs_.front();
  i.driver_name = d0.driver_name.empty() ? d0.name : d0.driver_name;
  i.driver_version = d0.driver_info.empty() ? version_text(d0.props.driverVersion) : d0.driver_info;
  i.api_version = "Vulkan " + version_text(d0.props.apiVersion);
  for (std::size_t k = 0; k < devs_.size(); ++k) {
    DeviceInfo di;
    di.name = devs_[k].name;
    di.uuid = devs_[k].uuid;
    di.aspects = {{"ipc_memory", devs_[k].memory_ok},
                  {"ipc_physical_memory", false},
                  {"ipc_event", devs_[k].semaphore_ok}};
    i.devices.push_back(std::move(di));
  }
  i.handle_layout = FdRecord::kLayout;
  i.transport = scm_ ? "scm" : "pidfd";
  bool all_mapped = true;
  for (const auto& d : devs_) all_mapped = all_mapped && d.device_type_host_visible;
  i.opened_memory_is_host_mapping = all_mapped && !staging_;
  i.extra["loader"] = api_.path();
  if (const char* icd = std::getenv("VK_ICD_FILENAMES")) i.extra["VK_ICD_FILENAMES"] = icd;
  if (const char* icd = std::getenv("VK_DRIVER_FILES")) i.extra["VK_DRIVER_FILES"] = icd;
  i.extra["instance_api"] = version_text(instance_api_);
  i.extra["validation_layer"] = validation_ ? "on (" + validation_layer_version_ + ")" : "off";
  i.extra["driver_id"] = std::to_string(d0.driver_id);
  i.extra["conformance_version"] = d0.conformance;
  i.extra["device_driver_version_raw"] = hex(d0.props.driverVersion);
  i.extra["memory_types"] = d0.memory_types_text;
  i.extra["external_memory_fd"] = d0.ext_mem_fd ? "yes" : "no";
  i.extra["external_memory_dma_buf"] = d0.ext_dma_buf ? "yes" : "no";
  i.extra["external_semaphore_fd"] = d0.ext_sem_fd ? "yes" : "no";
  i.extra["timeline_semaphore"] = d0.timeline ? "yes" : "no";
  i.extra["opaque_fd_buffer_features"] = feature_text(d0.buffer_features);
  if (!d0.semaphore_ok) i.extra["events"] = d0.semaphore_why;
  i.extra["descriptor_identity"] = check_identity_ ? "checked (inode and device of the exported file)"
                                                   : "off: any descriptor reaches the driver";
  i.extra["staging"] = staging_ ? "on (every read and write through vkCmdCopyBuffer)" : "where not host visible";
  i.extra["phys"] = "not implemented: Vulkan has no virtual address reservation to map physical memory into";
  return i;
}

Outcome VkAdapter::create_instance() {
  instance_api_ = VK_API_VERSION_1_0;
  if (api_.vkEnumerateInstanceVersion) api_.vkEnumerateInstanceVersion(&instance_api_);
  if (instance_api_ < VK_API_VERSION_1_2)
    return Outcome::failure(Errc::not_implemented, "no usable Vulkan: the loader offers instance version " +
                                                       version_text(instance_api_) + "; the vk adapter needs 1.2");
  std::vector<const char*> layers, extensions;
  const char* env_layers = std::getenv("VK_INSTANCE_LAYERS");
  const bool layer_by_env = env_layers && std::strstr(env_layers, "VK_LAYER_KHRONOS_validation");
  if (validation_requested_ || layer_by_env) {
    if (Outcome o = find_validation_layer(layer_by_env, layers, extensions); !o.ok()) return o;
  }
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO, nullptr, "ipcheck", 1, "ipcheck", 1,
                        std::min<std::uint32_t>(instance_api_, VK_API_VERSION_1_3)};
  const VkDebugUtilsMessengerCreateInfoEXT mi = messenger_info();
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pNext = validation_ ? &mi : nullptr;  // also catches messages of vkCreateInstance itself
  ci.pApplicationInfo = &app;
  ci.enabledLayerCount = static_cast<std::uint32_t>(layers.size());
  ci.ppEnabledLayerNames = layers.data();
  ci.enabledExtensionCount = static_cast<std::uint32_t>(extensions.size());
  ci.ppEnabledExtensionNames = extensions.data();
  if (const VkResult r = api_.vkCreateInstance(&ci, nullptr, &instance_); r != VK_SUCCESS) {
    const std::string icd = std::getenv("VK_ICD_FILENAMES") ? std::string(" (VK_ICD_FILENAMES=") +
                                                                  std::getenv("VK_ICD_FILENAMES") + ")"
                                                            : "";
    return Outcome::failure(r == VK_ERROR_INCOMPATIBLE_DRIVER ? Errc::not_implemented : errc_of(r),
                            "no Vulkan driver: vkCreateInstance gave " + vk::result_name(r) + icd +
                                "; install an ICD (Debian: mesa-vulkan-drivers) or name one with VK_ICD_FILENAMES",
                            r, vk::result_name(r));
  }
  if (std::string missing = api_.load_instance(instance_, validation_); !missing.empty())
    return Outcome::failure(Errc::not_implemented, "no usable Vulkan: the loader answers no " + missing);
  if (validation_) {
    if (const VkResult r = api_.vkCreateDebugUtilsMessengerEXT(instance_, &mi, nullptr, &messenger_); r != VK_SUCCESS)
      return Outcome::failure(errc_of(r), "vkCreateDebugUtilsMessengerEXT gave " + vk::result_name(r), r,
                              vk::result_name(r));
  }
  return Outcome::success();
}

Outcome VkAdapter::pick_devices() {
  std::uint32_t n = 0;
  if (Outcome o = call("vkEnumeratePhysicalDevices", api_.vkEnumeratePhysicalDevices(instance_, &n, nullptr)); !o.ok())
    return o;
  if (n == 0) return Outcome::failure(Errc::not_implemented, "no Vulkan device: the driver enumerates none");
  std::vector<VkPhysicalDevice> phys(n);
  if (Outcome o = call("vkEnumeratePhysicalDevices", api_.vkEnumeratePhysicalDevices(instance_, &n, phys.data()));
      !o.ok())
    return o;
  phys.resize(n);
  if (device_option_ >= 0) {
    if (static_cast<std::uint32_t>(device_option_) >= n)
      return Outcome::failure(Errc::invalid, "vk: adapter option device=" + std::to_string(device_option_) +
                                                 " is not one of the " + std::to_string(n) + " devices");
    phys = {phys[static_cast<std::size_t>(device_option_)]};
  }
  for (VkPhysicalDevice p : phys) {
    Dev d;
    d.phys = p;
    if (Outcome o = open_device(d); !o.ok()) return o;
    devs_.push_back(std::move(d));
  }
  return Outcome::success();
}

// One physical device: what it is and offers, then a logical device with one queue that
// copies and a command buffer for staging copies.
Outcome VkAdapter::open_device(Dev& d) {
  describe_device(d);
  probe_external(d);
  if (Outcome o = pick_queue_family(d); !o.ok()) return o;
  if (Outcome o = create_device(d); !o.ok()) return o;
  return create_commands(d);
}

// Its properties, identity, driver, memory types, extensions and timeline semaphore feature.
void VkAdapter::describe_device(Dev& d) {
  api_.vkGetPhysicalDeviceProperties(d.phys, &d.props);
  d.name = d.props.deviceName;
  VkPhysicalDeviceDriverProperties drv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceIDProperties idp{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES, &drv};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &idp};
  api_.vkGetPhysicalDeviceProperties2(d.phys, &p2);
  d.uuid = uuid_text(idp.deviceUUID);
  std::memcpy(d.uuid_bytes, idp.deviceUUID, VK_UUID_SIZE);
  d.driver_name = drv.driverName;
  d.driver_info = drv.driverInfo;
  d.driver_id = drv.driverID;
  d.conformance = std::to_string(drv.conformanceVersion.major) + "." + std::to_string(drv.conformanceVersion.minor) +
                  "." + std::to_string(drv.conformanceVersion.subminor) + "." +
                  std::to_string(drv.conformanceVersion.patch);
  api_.vkGetPhysicalDeviceMemoryProperties(d.phys, &d.mem);
  for (std::uint32_t i = 0; i < d.mem.memoryTypeCount; ++i)
    d.memory_types_text += (i ? ", " : "") + std::to_string(i) + ":" + hex(d.mem.memoryTypes[i].propertyFlags) +
                           "@heap" + std::to_string(d.mem.memoryTypes[i].heapIndex);

  std::uint32_t n = 0;
  api_.vkEnumerateDeviceExtensionProperties(d.phys, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> ext(n);
  api_.vkEnumerateDeviceExtensionProperties(d.phys, nullptr, &n, ext.data());
  auto has = [&](const char* name) {
    return std::any_of(ext.begin(), ext.end(), [&](const auto& e) { return std::strcmp(e.extensionName, name) == 0; });
  };
  d.ext_mem_fd = has(VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME);
  d.ext_sem_fd = has(VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME);
  d.ext_dma_buf = has(VK_EXT_EXTERNAL_MEMORY_DMA_BUF_EXTENSION_NAME);
  VkPhysicalDeviceTimelineSemaphoreFeatures tl{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES};
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &tl};
  api_.vkGetPhysicalDeviceFeatures2(d.phys, &f2);
  d.timeline = tl.timelineSemaphore == VK_TRUE;
}

// Whether OPAQUE_FD buffers and timeline semaphores can be exported and imported (why not, when not).
void VkAdapter::probe_external(Dev& d) {
  if (d.ext_mem_fd) {
    VkPhysicalDeviceExternalBufferInfo bi{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_BUFFER_INFO, nullptr, 0,
                                          kBufferUsage, kMemHandle};
    VkExternalBufferProperties bp{VK_STRUCTURE_TYPE_EXTERNAL_BUFFER_PROPERTIES};
    api_.vkGetPhysicalDeviceExternalBufferProperties(d.phys, &bi, &bp);
    d.buffer_features = bp.externalMemoryProperties.externalMemoryFeatures;
    const bool both = (d.buffer_features & VK_EXTERNAL_MEMORY_FEATURE_EXPORTABLE_BIT) &&
                      (d.buffer_features & VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT);
    d.memory_ok = both;
    if (!both) d.memory_why = "OPAQUE_FD buffers are not both exportable and importable (" + feature_text(d.buffer_features) + ")";
  } else {
    d.memory_why = "the device lacks VK_KHR_external_memory_fd";
  }
  if (!d.ext_sem_fd) {
    d.semaphore_why = d.driver_name + " lacks VK_KHR_external_semaphore_fd: no semaphore can be exported as a descriptor";
  } else if (!d.timeline) {
    d.semaphore_why = d.driver_name + " has no timeline semaphores (a binary semaphore cannot be signaled from the host)";
  } else {
    VkSemaphoreTypeCreateInfo st{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO, nullptr, VK_SEMAPHORE_TYPE_TIMELINE, 0};
    VkPhysicalDeviceExternalSemaphoreInfo si{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_SEMAPHORE_INFO, &st, kSemHandle};
    VkExternalSemaphoreProperties sp{VK_STRUCTURE_TYPE_EXTERNAL_SEMAPHORE_PROPERTIES};
    api_.vkGetPhysicalDeviceExternalSemaphoreProperties(d.phys, &si, &sp);
    const auto want = VK_EXTERNAL_SEMAPHORE_FEATURE_EXPORTABLE_BIT | VK_EXTERNAL_SEMAPHORE_FEATURE_IMPORTABLE_BIT;
    d.semaphore_ok = (sp.externalSemaphoreFeatures & want) == want;
    if (!d.semaphore_ok) d.semaphore_why = "timeline semaphores are not exportable and importable as OPAQUE_FD";
  }
}

// The first queue family that copies.
Outcome VkAdapter::pick_queue_family(Dev& d) {
  std::uint32_t qn = 0;
  api_.vkGetPhysicalDeviceQueueFamilyProperties(d.phys, &qn, nullptr);
  std::vector<VkQueueFamilyProperties> qf(qn);
  api_.vkGetPhysicalDeviceQueueFamilyProperties(d.phys, &qn, qf.data());
  bool found = false;
  for (std::uint32_t i = 0; i < qn && !found; ++i)
    if (qf[i].queueFlags & (VK_QUEUE_TRANSFER_BIT | VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT)) {
      d.queue_family = i;
      found = true;
    }
  if (!found) return Outcome::failure(Errc::not_implemented, "vk: device '" + d.name + "' has no queue that copies");
  return Outcome::success();
}

// The logical device, with the external memory and semaphore extensions it offers; one whose
// functions the device does not answer takes memory_ok or semaphore_ok back.
Outcome VkAdapter::create_device(Dev& d) {
  std::vector<const char*> want;
  if (d.ext_mem_fd) want.push_back(VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME);
  if (d.ext_sem_fd) want.push_back(VK_KHR_EXTERNAL_SEMAPHORE_FD_EXTENSION_NAME);
  if (d.ext_dma_buf) want.push_back(VK_EXT_EXTERNAL_MEMORY_DMA_BUF_EXTENSION_NAME);
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, nullptr, 0, d.queue_family, 1, &priority};
  VkPhysicalDeviceTimelineSemaphoreFeatures tl_on{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES};
  tl_on.timelineSemaphore = d.timeline ? VK_TRUE : VK_FALSE;
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &tl_on};
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qi;
  dci.enabledExtensionCount = static_cast<std::uint32_t>(want.size());
  dci.ppEnabledExtensionNames = want.data();
  if (Outcome o = call("vkCreateDevice", api_.vkCreateDevice(d.phys, &dci, nullptr, &d.device)); !o.ok()) return o;
  if (std::string missing = api_.load_device(d.device, d.fn); !missing.empty())
    return Outcome::failure(Errc::not_implemented, "vk: the device answers no " + missing);
  if (d.ext_mem_fd && !d.fn.vkGetMemoryFdKHR) {
    d.memory_ok = false;
    d.memory_why = "VK_KHR_external_memory_fd is enabled, but vkGetMemoryFdKHR is not there";
  }
  if (d.semaphore_ok && (!d.fn.vkGetSemaphoreFdKHR || !d.fn.vkImportSemaphoreFdKHR)) {
    d.semaphore_ok = false;
    d.semaphore_why = "VK_KHR_external_semaphore_fd is enabled, but its functions are not there";
  }
  return Outcome::success();
}

// Its queue, and the command pool and buffer of staging copies.
Outcome VkAdapter::create_commands(Dev& d) {
  d.fn.vkGetDeviceQueue(d.device, d.queue_family, 0, &d.queue);
  VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, nullptr,
                             VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, d.queue_family};
  if (Outcome o = call("vkCreateCommandPool", d.fn.vkCreateCommandPool(d.device, &pi, nullptr, &d.pool)); !o.ok())
    return o;
  VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, nullptr, d.pool,
                                  VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
  if (Outcome o = call("vkAllocateCommandBuffers", d.fn.vkAllocateCommandBuffers(d.device, &cai, &d.cmd)); !o.ok())
    return o;
  // Which memory the adapter hands out for device allocations: host visible there or not.
  if (auto t = pick_type(d, ~0u, MemKind::device))
    d.device_type_host_visible = d.mem.memoryTypes[*t].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
  return Outcome::success();
}

std::string VkAdapter::feature_text(VkExternalMemoryFeatureFlags f) {
  std::string s;
  if (f & VK_EXTERNAL_MEMORY_FEATURE_DEDICATED_ONLY_BIT) s += "DEDICATED_ONLY ";
  if (f & VK_EXTERNAL_MEMORY_FEATURE_EXPORTABLE_BIT) s += "EXPORTABLE ";
  if (f & VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT) s += "IMPORTABLE ";
  if (!s.empty()) s.pop_back();
  return s.empty() ? "none" : s;
}

// device: device local first (host visible or not); host: host visible, not device local
// when there is such a type; shared: host visible and device local, else host visible.
std::optional<std::uint32_t> VkAdapter::pick_type(const Dev& d, std::uint32_t bits, MemKind kind) {
  auto find = [&](VkMemoryPropertyFlags need, VkMemoryPropertyFlags avoid) -> std::optional<std::uint32_t> {
    for (std::uint32_t i = 0; i < d.mem.memoryTypeCount; ++i) {
      const auto f = d.mem.memoryTypes[i].propertyFlags;
      if ((bits & (1u << i)) && (f & need) == need && !(f & avoid) &&
          !(f & VK_MEMORY_PROPERTY_PROTECTED_BIT) && !(f & VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT))
        return i;
    }
    return std::nullopt;
  };
  constexpr auto local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  constexpr auto visible = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  std::optional<std::uint32_t> t;
  switch (kind) {
    case MemKind::device: t = find(local, 0); break;
    case MemKind::host: t = find(visible, local); if (!t) t = find(visible, 0); break;
    case MemKind::shared: t = find(local | visible, 0); if (!t) t = find(visible, 0); break;
  }
  return t ? t : find(0, 0);
}

VkAdapter::Dev* VkAdapter::dev(int index) {
  if (index < 0 || static_cast<std::size_t>(index) >= devs_.size()) return nullptr;
  return &devs_[static_cast<std::size_t>(index)];
}

Outcome VkAdapter::bad_device(int index) const {
  return Outcome::failure(Errc::invalid, "device index " + std::to_string(index) + " is not one of the " +
                                             std::to_string(devs_.size()) + " devices");
}

}  // namespace ipcheck::vk_adapter
