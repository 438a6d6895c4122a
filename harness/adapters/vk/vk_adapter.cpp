// The `vk` adapter: ipcheck's verbs over Vulkan's external memory and external semaphores,
// through the system loader (libvulkan.so.1, opened at run time).
//
// Claims the sycl and vk profiles (rb.* is judged on every adapter). It runs against whatever
// ICD the loader finds; CTest names Mesa's lavapipe with VK_ICD_FILENAMES so that every
// machine tests the same driver, and the lent NVIDIA machines run NVIDIA's.
//
//   alloc        vkCreateBuffer (transfer src/dst, VkExternalMemoryBufferCreateInfo) for the
//                memory requirements, vkAllocateMemory with VkExportMemoryAllocateInfo
//                (OPAQUE_FD; dedicated to that buffer when the driver says DEDICATED_ONLY),
//                vkBindBufferMemory, vkMapMemory when the memory type is host visible
//   mem_get      vkGetMemoryFdKHR; the bytes are a record (vk_record.hpp, "vk-fd/1") with the
//                allocation size, memory type, handle type, offset and dedicated-buffer size
//   mem_open     vkAllocateMemory with VkImportMemoryFdInfoKHR (size and type from the record),
//                then vkMapMemory where host visible; the descriptor passed is a duplicate,
//                whose ownership a successful import transfers to the driver
//   mem_close    vkUnmapMemory, vkDestroyBuffer, vkFreeMemory
//   write/read   host access through the vkMapMemory mapping, or vkCmdCopyBuffer through a
//                host-visible staging buffer (memory that is not host visible, or staging=1)
//   event_*      timeline semaphores exported with vkGetSemaphoreFdKHR (OPAQUE_FD) and
//                imported with vkImportSemaphoreFdKHR, where the device offers
//                VK_KHR_external_semaphore_fd; otherwise every event verb answers
//                not_implemented with that reason. An event is signaled while the
//                semaphore's value is odd: signal and reset each advance it by one
//                (vkSignalSemaphore), query reads it (vkGetSemaphoreCounterValue), wait waits for
//                the next value (vkWaitSemaphores).
//   phys_*       not_implemented: Vulkan has no virtual address reservation to map into.
//
// Validation (VK_LAYER_KHRONOS_validation, switched on with IPCHECK_VK_VALIDATION=1 or named
// in VK_INSTANCE_LAYERS): a VK_EXT_debug_utils messenger collects the layer's messages; each
// Vulkan call drains them. An error-severity message makes that call's outcome a failure
// decided by the runtime stack (Errc::invalid, native name "VALIDATION", the message id as
// native code, the VUID and text in the message), also when the driver returned VK_SUCCESS.
// Every message is printed on standard error, so the role's output keeps it. See README.md.
//
// This file: small helpers, tear-down and the registration. The class is declared in
// vk_adapter.hpp, which also says which file defines what.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "vk_adapter.hpp"

namespace ipcheck::vk_adapter {


Errc errc_of(VkResult r) {
  switch (r) {
    case VK_SUCCESS: return Errc::success;
    case VK_ERROR_INVALID_EXTERNAL_HANDLE:
    case VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS: return Errc::invalid;
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_TOO_MANY_OBJECTS:
    case VK_ERROR_OUT_OF_POOL_MEMORY:
    case VK_ERROR_FRAGMENTATION:
    case VK_ERROR_FRAGMENTED_POOL: return Errc::exhausted;
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_FORMAT_NOT_SUPPORTED: return Errc::feature_not_supported;
    case VK_ERROR_INCOMPATIBLE_DRIVER:
    case VK_ERROR_LAYER_NOT_PRESENT: return Errc::not_implemented;
    case VK_ERROR_DEVICE_LOST: return Errc::device_lost;
    case VK_TIMEOUT:
    case VK_NOT_READY: return Errc::timeout;
    default: return Errc::other;
  }
}


std::string uuid_text(const std::uint8_t* u) {
  std::string s;
  char b[4];
  for (unsigned i = 0; i < VK_UUID_SIZE; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    std::snprintf(b, sizeof b, "%02x", u[i]);
    s += b;
  }
  return s;
}

std::string version_text(std::uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

std::uint64_t parse_u64(const std::string& s, std::uint64_t fallback) {
  if (s.empty()) return fallback;
  char* end = nullptr;
  const auto v = std::strtoull(s.c_str(), &end, 0);
  return end && *end == '\0' ? v : fallback;
}

std::vector<std::byte> from_hex(const std::string& s) {
  std::vector<std::byte> out;
  for (std::size_t i = 0; i + 1 < s.size(); i += 2)
    out.push_back(static_cast<std::byte>(std::strtoul(s.substr(i, 2).c_str(), nullptr, 16)));
  return out;
}

VkAdapter::~VkAdapter() {
  // Objects the case left behind go back to the driver before the process ends.
  for (auto& [id, e] : events_) destroy_semaphore(e);
  events_.clear();
  for (auto& [base, m] : mems_) release_memory(m);
  mems_.clear();
  sem_exports_.clear();
  mem_exports_.clear();
  for (auto& d : devs_) {
    if (!d.device) continue;
    if (d.pool) d.fn.vkDestroyCommandPool(d.device, d.pool, nullptr);
    d.fn.vkDestroyDevice(d.device, nullptr);
  }
  if (messenger_) api_.vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
  if (instance_) api_.vkDestroyInstance(instance_, nullptr);
  if (validation_) {
    for (const auto& m : log_.drain())
      if (m.severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)
        std::fprintf(stderr, "vk validation error at tear-down (outside any verb): %s\n", m.text.c_str());
  }
}

namespace {


const AdapterRegistration registered_vk{{"vk",
                               "Vulkan external memory and semaphores through the system loader (lavapipe in CI, "
                               "NVIDIA's driver on the GPU machines)",
                               {"sycl", "vk"},
                               [] { return std::unique_ptr<Adapter>(new VkAdapter); },
                               {"loader", "device", "staging", "dedicated", "validation", "identity"},
                               {"loader"},
                               [](const std::string& key, const std::string& value) -> std::string {
                                 if (key == "loader") return value.empty() ? "give the loader library's path" : "";
                                 if (key == "device") return option_whole_number(value, 255);
                                 return option_one_of(value, {"1", "on", "0", "off"});
                               },
                               {}}};  // lavapipe runs on the CPU; NVIDIA's driver starts a Vulkan instance cheaply

}  // namespace

}  // namespace ipcheck::vk_adapter
