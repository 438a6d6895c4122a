// The `vk` adapter's class, shared by its source files (private to this folder: nothing outside
// harness/adapters/vk includes it). What each verb calls is in vk_adapter.cpp's opening comment
// and README.md; the definitions are split by role:
//
//   vk_adapter.cpp      small helpers, tear-down, the registration
//   vk_setup.cpp        init, info, instance and device set-up, memory type choice
//   vk_validation.cpp   the validation layer: enabling it, its messages, call()'s outcomes
//   vk_memory.cpp       the memory verbs, import, host access (mapping or staging copy)
//   vk_descriptors.cpp  exported and received descriptors: taking, checking, relocating
//   vk_events.cpp       the event verbs over timeline semaphores
//   vk_native.cpp       native(): mem_import, export_fd_info, cuda_import
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ipcheck/adapter.hpp"
#include "ipcheck/adapter_toolkit.hpp"
#include "ipcref/unique_fd.hpp"
#include "vk_loader.hpp"
#include "vk_record.hpp"

// Vulkan structures are written {sType} or {sType, pNext, ...} with the rest zeroed, as
// Vulkan code does everywhere: the warning about omitted members does not apply here (every
// source file of the adapter includes this header).
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace ipcheck::vk_adapter {

using ipcref::unique_fd;
using toolkit::hex;
using vk::FdRecord;

inline constexpr VkExternalMemoryHandleTypeFlagBits kMemHandle = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
inline constexpr VkExternalSemaphoreHandleTypeFlagBits kSemHandle = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT;
inline constexpr VkBufferUsageFlags kBufferUsage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
// Pointers for memory that is not host visible: above every user-space address, never mapped.
inline constexpr DevPtr kSyntheticBase = 1ull << 48;
inline constexpr DevPtr kSyntheticStride = 1ull << 38;

// Small helpers (vk_adapter.cpp).
Errc errc_of(VkResult r);
std::string uuid_text(const std::uint8_t* u);
std::string version_text(std::uint32_t v);
bool env_on(const char* name);
std::uint64_t parse_u64(const std::string& s, std::uint64_t fallback);
std::vector<std::byte> from_hex(const std::string& s);

// Messages of the validation layer, collected by the messenger and drained by each call
// (vk_validation.cpp).
struct ValidationLog {
  struct Message {
    VkDebugUtilsMessageSeverityFlagBitsEXT severity;
    std::string id;
    std::int32_t number = 0;
    std::string text;
  };
  std::mutex lock;
  std::vector<Message> pending;
  std::size_t errors_total = 0;
  std::size_t warnings_total = 0;

  static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                   VkDebugUtilsMessageTypeFlagsEXT,
                                                   const VkDebugUtilsMessengerCallbackDataEXT* data, void* user);
  std::vector<Message> drain();
};

class VkAdapter final : public Adapter {
 public:
  VkAdapter() { adapter_name_ = "vk"; }
  ~VkAdapter() override;

  // ---------------------------------------------------------------- set-up (vk_setup.cpp)

  Outcome init(const AdapterConfig& config) override;
  AdapterInfo info() override;
  std::size_t device_count() override { return devs_.size(); }

  // ---------------------------------------------------------------- memory (vk_memory.cpp)

  Result<DevPtr> alloc(int device, std::size_t bytes, MemKind kind) override;
  Outcome free(DevPtr p) override;
  Outcome write(DevPtr dst, std::span<const std::byte> src) override;
  Outcome read(DevPtr src, std::span<std::byte> dst) override;
  Result<Exported> mem_get(DevPtr p) override;
  Outcome mem_put(ObjectId export_id) override;
  Result<DevPtr> mem_open(std::span<const std::byte> bytes, int fd, int device, std::uint64_t flags) override;
  Outcome mem_close(DevPtr p) override;

  // ---------------------------------------------------------------- events (vk_events.cpp)

  Result<ObjectId> event_create(int device, EventFlags flags) override;
  Result<Exported> event_get(ObjectId ev) override;
  Outcome event_put(ObjectId export_id) override;
  Result<ObjectId> event_open(std::span<const std::byte> bytes, int fd, int device) override;
  Outcome event_signal(ObjectId ev) override;
  Outcome event_reset(ObjectId ev) override;
  Result<bool> event_query(ObjectId ev) override;
  Result<bool> event_wait(ObjectId ev, std::chrono::nanoseconds timeout) override;
  Outcome event_retain(ObjectId ev) override;
  Outcome event_release(ObjectId ev) override;

  // ---------------------------------------------------------------- native calls (vk_native.cpp)

  Outcome native(const std::string& what, const std::map<std::string, std::string>& args) override;

 private:
  struct Dev {
    VkPhysicalDevice phys = VK_NULL_HANDLE;
    VkDevice device = VK_NULL_HANDLE;
    vk::DeviceFns fn;
    VkQueue queue = VK_NULL_HANDLE;
    std::uint32_t queue_family = 0;
    VkCommandPool pool = VK_NULL_HANDLE;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    VkPhysicalDeviceProperties props{};
    VkPhysicalDeviceMemoryProperties mem{};
    std::string name, uuid, driver_name, driver_info, conformance, memory_types_text;
    std::uint8_t uuid_bytes[VK_UUID_SIZE] = {};
    std::uint32_t driver_id = 0;
    bool ext_mem_fd = false, ext_sem_fd = false, ext_dma_buf = false, timeline = false;
    VkExternalMemoryFeatureFlags buffer_features = 0;
    bool memory_ok = false, semaphore_ok = false;
    bool device_type_host_visible = true;  // every memory type the adapter picks is host visible
    std::string memory_why, semaphore_why;
  };
  struct Mem {
    int device = 0;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    VkBuffer buffer = VK_NULL_HANDLE;
    bool buffer_bound = false;
    VkDeviceSize size = 0;   // allocationSize
    VkDeviceSize bytes = 0;  // what the caller asked for (alloc) or the record's size (import)
    VkDeviceSize buffer_size = 0;
    std::uint32_t type = 0;
    bool dedicated = false, exportable = false, imported = false;
    void* map = nullptr;
    DevPtr base = 0;
    DevPtr opened_at = 0;  // imported: the pointer mem_open returned (base + the record's offset)
  };
  struct Export {
    unique_fd fd;
    int driver_fd = -1;   // the number vkGetMemoryFdKHR returned
    bool cloexec = false;  // whether the driver's descriptor was close-on-exec
    bool fresh = true;
  };
  struct Ev {
    int device = 0;
    VkSemaphore semaphore = VK_NULL_HANDLE;
    bool exportable = false, imported = false;
    int refs = 1;
  };
  struct Import {
    std::uint64_t size = 0, buffer_size = 0;
    std::uint32_t memory_type = 0, handle_type = 0;
    bool dedicated = false;
  };

  // ---- calls and validation (vk_validation.cpp)

  Outcome call(const char* function, VkResult r, const std::string& what = {});
  Outcome find_validation_layer(bool layer_by_env, std::vector<const char*>& layers,
                                std::vector<const char*>& extensions);
  VkDebugUtilsMessengerCreateInfoEXT messenger_info();

  // ---- set-up (vk_setup.cpp)

  Outcome create_instance();
  Outcome pick_devices();
  Outcome open_device(Dev& d);
  void describe_device(Dev& d);
  void probe_external(Dev& d);
  Outcome pick_queue_family(Dev& d);
  Outcome create_device(Dev& d);
  Outcome create_commands(Dev& d);
  static std::string feature_text(VkExternalMemoryFeatureFlags f);
  static std::optional<std::uint32_t> pick_type(const Dev& d, std::uint32_t bits, MemKind kind);
  Dev* dev(int index);
  Outcome bad_device(int index) const;

  // ---- memory objects (vk_memory.cpp)

  Mem* containing(DevPtr p);
  Outcome finish_memory(Dev& d, Mem& m, const char* what);
  Outcome release_memory(Mem& m);
  Result<DevPtr> import_memory(Dev& d, int device, const Import& im, unique_fd& fd);
  Outcome make_transfer_buffer(Dev& d, Mem& m);
  Outcome transfer(DevPtr p, std::size_t n, const std::byte* in, std::byte* out);
  Outcome staged(Mem& m, std::size_t off, std::size_t n, const std::byte* in, std::byte* out);
  Outcome importable(const Dev& d, const FdRecord& rec);
  bool import_supported(const Dev& d, std::uint32_t handle_type);

  // ---- descriptors (vk_descriptors.cpp)

  static bool keep_or_forget(unique_fd& fd);
  Outcome take_descriptor(const FdRecord& rec, int received, unique_fd& out);
  Outcome fetch_descriptor(const FdRecord& rec, int received, unique_fd& out);
  static void identity(int fd, FdRecord& rec);
  Outcome relocate(unique_fd& fd, bool cloexec);
  static std::uint64_t own_start_time() { return toolkit::own_start_time(); }

  // ---- semaphores (vk_events.cpp)

  Outcome no_events(const Dev& d) const;
  Ev* event(ObjectId id);
  Outcome unknown(const char* verb, ObjectId id) const;
  Outcome create_semaphore(Dev& d, bool exportable, VkSemaphore& out);
  Outcome destroy_semaphore(Ev& e);
  Outcome counter(Ev& e, std::uint64_t& v);
  Outcome advance(ObjectId ev, bool to_signaled, const char* verb);

  // ---- native calls (vk_native.cpp)

  Outcome native_import(const std::map<std::string, std::string>& args);
  Outcome native_export_info(const std::map<std::string, std::string>& args);
  Outcome native_cuda_import(const std::map<std::string, std::string>& args);

  vk::Loader api_;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  std::uint32_t instance_api_ = 0;
  ValidationLog log_;
  bool validation_ = false, validation_requested_ = false;
  std::string validation_layer_version_;
  bool scm_ = false, staging_ = false, force_dedicated_ = false, check_identity_ = true;
  int device_option_ = -1;
  std::vector<Dev> devs_;
  std::map<DevPtr, Mem> mems_;  // by base pointer
  std::map<ObjectId, Export> mem_exports_;
  std::map<ObjectId, unique_fd> sem_exports_;
  std::map<ObjectId, Ev> events_;
  ObjectId next_id_ = 1;
  DevPtr synthetic_next_ = 0;
  toolkit::ExportFdNumbers export_numbers_;
};

}  // namespace ipcheck::vk_adapter
