// The `vk` adapter and the validation layer (VK_LAYER_KHRONOS_validation): the messenger's
// callback, which prints and collects every message, call(), the outcome of a Vulkan call with
// what the layer said about it, and the layer's part of the instance's creation. See README.md, "Validation".
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "vk_adapter.hpp"

namespace ipcheck::vk_adapter {

VKAPI_ATTR VkBool32 VKAPI_CALL ValidationLog::on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                         VkDebugUtilsMessageTypeFlagsEXT,
                                                         const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  auto* self = static_cast<ValidationLog*>(user);
  Message m{severity, data && data->pMessageIdName ? data->pMessageIdName : "",
            data ? data->messageIdNumber : 0, data && data->pMessage ? data->pMessage : ""};
  const char* level = severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT     ? "error"
                      : severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT ? "warning"
                                                                                     : "info";
  std::fprintf(stderr, "vk validation %s: %s\n", level, m.text.c_str());
  std::lock_guard g(self->lock);
  if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) ++self->errors_total;
  else if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) ++self->warnings_total;
  self->pending.push_back(std::move(m));
  return VK_FALSE;  // the call goes on to the driver, as the layer's default does
}

std::vector<ValidationLog::Message> ValidationLog::drain() {
  std::lock_guard g(lock);
  std::vector<Message> out;
  out.swap(pending);
  return out;
}

// The outcome of a Vulkan call (decided by the runtime), with what the validation layer
// said about it: an error message fails the call even where the driver returned success.
Outcome VkAdapter::call(const char* function, VkResult r, const std::string& what) {
  std::string layer_text;
  std::int32_t layer_number = 0;
  if (validation_) {
    for (const auto& m : log_.drain()) {
      if (m.severity < VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) continue;
      if (layer_text.empty()) layer_number = m.number;
      layer_text += (layer_text.empty() ? "" : " | ") + m.text;
    }
  }
  if (r == VK_SUCCESS && layer_text.empty()) return Outcome::runtime_success(function);
  if (r == VK_SUCCESS)
    return Outcome::runtime_failure(function, Errc::invalid,
                                    std::string(function) + " returned VK_SUCCESS, but the validation layer " +
                                        "reported: " + layer_text,
                                    layer_number, "VALIDATION");
  std::string msg = std::string(function) + " gave " + vk::result_name(r);
  if (!what.empty()) msg = what + ": " + msg;
  if (!layer_text.empty()) msg += " (validation layer: " + layer_text + ")";
  return Outcome::runtime_failure(function, errc_of(r), msg, static_cast<long long>(r), vk::result_name(r));
}
// Messages a void call (vkGetBufferMemoryRequirements, vkCmdCopyBuffer) caused reach the
// outcome of the verb's next checked call.

// The validation layer this run asked for (validation=1, IPCHECK_VK_VALIDATION) or found named
// in VK_INSTANCE_LAYERS: its version for info(), the layer to enable (unless VK_INSTANCE_LAYERS
// enables it already) and VK_EXT_debug_utils for the messenger.
Outcome VkAdapter::find_validation_layer(bool layer_by_env, std::vector<const char*>& layers,
                                         std::vector<const char*>& extensions) {
  std::uint32_t n = 0;
  api_.vkEnumerateInstanceLayerProperties(&n, nullptr);
  std::vector<VkLayerProperties> lp(n);
  api_.vkEnumerateInstanceLayerProperties(&n, lp.data());
  for (const auto& l : lp)
    if (std::strcmp(l.layerName, "VK_LAYER_KHRONOS_validation") == 0)
      validation_layer_version_ = "VK_LAYER_KHRONOS_validation " + version_text(l.specVersion) + " implementation " +
                                  std::to_string(l.implementationVersion);
  if (validation_layer_version_.empty())
    return Outcome::failure(Errc::not_implemented,
                            "no validation layer: VK_LAYER_KHRONOS_validation is not installed (Debian: "
                            "vulkan-validationlayers), and this run asked for it");
  if (validation_requested_ && !layer_by_env) layers.push_back("VK_LAYER_KHRONOS_validation");
  extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  validation_ = true;
  return Outcome::success();
}

// The messenger's settings: warnings and errors of every type, collected in log_ (also chained
// into vkCreateInstance).
VkDebugUtilsMessengerCreateInfoEXT VkAdapter::messenger_info() {
  VkDebugUtilsMessengerCreateInfoEXT mi{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                   VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  mi.pfnUserCallback = &ValidationLog::on_message;
  mi.pUserData = &log_;
  return mi;
}

}  // namespace ipcheck::vk_adapter
