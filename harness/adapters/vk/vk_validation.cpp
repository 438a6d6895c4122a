// The `vk` adapter and the validation layer (VK_LAYER_KHRONOS_validation): the messenger's
// callback, which prints and collects every message, and call(), the outcome of a Vulkan call
// with what the layer said about it. See README.md, "Validation".
#include <cstdio>
#include <string>

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

}  // namespace ipcheck::vk_adapter
