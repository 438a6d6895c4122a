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
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>

#include "ipcheck/adapter.hpp"
#include "ipcheck/adapter_toolkit.hpp"
#include "ipcref/unique_fd.hpp"
#include "vk_cuda_interop.hpp"
#include "vk_loader.hpp"
#include "vk_record.hpp"

// Vulkan structures are written {sType} or {sType, pNext, ...} with the rest zeroed, as
// Vulkan code does everywhere: the warning about omitted members does not apply here.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace ipcheck::vk_adapter {
namespace {

using ipcref::unique_fd;
using vk::FdRecord;

constexpr VkExternalMemoryHandleTypeFlagBits kMemHandle = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT;
constexpr VkExternalSemaphoreHandleTypeFlagBits kSemHandle = VK_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD_BIT;
constexpr VkBufferUsageFlags kBufferUsage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
// Pointers for memory that is not host visible: above every user-space address, never mapped.
constexpr DevPtr kSyntheticBase = 1ull << 48;
constexpr DevPtr kSyntheticStride = 1ull << 38;

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

using toolkit::hex;

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

// Messages of the validation layer, collected by the messenger and drained by each call.
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

  std::vector<Message> drain() {
    std::lock_guard g(lock);
    std::vector<Message> out;
    out.swap(pending);
    return out;
  }
};

class VkAdapter final : public Adapter {
 public:
  VkAdapter() { adapter_name_ = "vk"; }

  ~VkAdapter() override {
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

  // ---------------------------------------------------------------- set-up

  Outcome init(const AdapterConfig& config) override {
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

  AdapterInfo info() override {
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

  std::size_t device_count() override { return devs_.size(); }

  // ---------------------------------------------------------------- memory

  Result<DevPtr> alloc(int device, std::size_t bytes, MemKind kind) override {
    Dev* d = dev(device);
    if (!d) return {bad_device(device)};
    if (bytes == 0) return {Outcome::failure(Errc::invalid, "alloc: 0 bytes (Vulkan allocations are not empty)")};
    Mem m;
    m.device = device;
    m.exportable = d->memory_ok;
    const auto ext_buffer = VkExternalMemoryBufferCreateInfo{VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
                                                             nullptr, static_cast<VkExternalMemoryHandleTypeFlags>(kMemHandle)};
    VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bi.pNext = m.exportable ? &ext_buffer : nullptr;
    bi.size = bytes;
    bi.usage = kBufferUsage;
    bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    if (Outcome o = call("vkCreateBuffer", d->fn.vkCreateBuffer(d->device, &bi, nullptr, &m.buffer)); !o.ok()) return {o};
    VkMemoryRequirements req{};
    d->fn.vkGetBufferMemoryRequirements(d->device, m.buffer, &req);
    const std::optional<std::uint32_t> type = pick_type(*d, req.memoryTypeBits, kind);
    if (!type) {
      d->fn.vkDestroyBuffer(d->device, m.buffer, nullptr);
      return {Outcome::failure(Errc::feature_not_supported,
                               std::string("alloc: no memory type of device ") + std::to_string(device) + " suits " +
                                   mem_kind_name(kind) + " memory (memoryTypeBits " + hex(req.memoryTypeBits) + ")")};
    }
    m.type = *type;
    m.size = req.size;
    m.bytes = bytes;
    m.dedicated = m.exportable && (force_dedicated_ || (d->buffer_features & VK_EXTERNAL_MEMORY_FEATURE_DEDICATED_ONLY_BIT));
    m.buffer_size = m.dedicated ? bytes : 0;
    VkExportMemoryAllocateInfo exp{VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO, nullptr,
                                   static_cast<VkExternalMemoryHandleTypeFlags>(kMemHandle)};
    VkMemoryDedicatedAllocateInfo ded{VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO, nullptr, VK_NULL_HANDLE,
                                      m.buffer};
    if (m.dedicated) exp.pNext = &ded;
    VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, m.exportable ? &exp : nullptr, m.size, m.type};
    if (Outcome o = call("vkAllocateMemory", d->fn.vkAllocateMemory(d->device, &ai, nullptr, &m.memory),
                         "alloc " + std::to_string(m.size) + " bytes of memory type " + std::to_string(m.type));
        !o.ok()) {
      d->fn.vkDestroyBuffer(d->device, m.buffer, nullptr);
      if (m.memory) d->fn.vkFreeMemory(d->device, m.memory, nullptr);
      return {o};
    }
    if (Outcome o = finish_memory(*d, m, "vkAllocateMemory"); !o.ok()) return {o};
    const DevPtr p = m.base;
    mems_.emplace(p, std::move(m));
    return {Outcome::runtime_success("vkAllocateMemory"), p};
  }

  Outcome free(DevPtr p) override {
    auto it = mems_.find(p);
    if (it == mems_.end() || it->second.imported)
      return Outcome::failure(Errc::invalid, "free: " + hex(p) + " is not an allocation of this adapter" +
                                                 (it != mems_.end() ? " (it was opened: close it)" : ""));
    Outcome o = release_memory(it->second);
    mems_.erase(it);
    return o;
  }

  Outcome write(DevPtr dst, std::span<const std::byte> src) override { return transfer(dst, src.size(), src.data(), nullptr); }
  Outcome read(DevPtr src, std::span<std::byte> dst) override { return transfer(src, dst.size(), nullptr, dst.data()); }

  Result<Exported> mem_get(DevPtr p) override {
    Mem* m = containing(p);
    if (!m) return {Outcome::failure(Errc::invalid, "mem_get: " + hex(p) + " is in no allocation of this adapter")};
    Dev& d = devs_[static_cast<std::size_t>(m->device)];
    if (!d.memory_ok)
      return {Outcome::failure(Errc::feature_not_supported, "mem_get: device " + std::to_string(m->device) +
                                                                " cannot export memory: " + d.memory_why)};
    if (!m->exportable)
      return {Outcome::failure(Errc::invalid, "mem_get: " + hex(p) + " is " +
                                                  (m->imported ? "imported memory, allocated without VkExportMemoryAllocateInfo"
                                                               : "not exportable") +
                                                  " (VUID-VkMemoryGetFdInfoKHR-handleType-00671); nothing was called")};
    VkMemoryGetFdInfoKHR gi{VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR, nullptr, m->memory, kMemHandle};
    int raw = -1;
    if (Outcome o = call("vkGetMemoryFdKHR", d.fn.vkGetMemoryFdKHR(d.device, &gi, &raw)); !o.ok()) {
      if (raw >= 0) ::close(raw);
      return {o};
    }
    unique_fd fd(raw);
    Export x;
    x.driver_fd = raw;
    const int fl = ::fcntl(raw, F_GETFD);
    x.cloexec = fl >= 0 && (fl & FD_CLOEXEC);
    x.fresh = true;
    // A new descriptor is none of the earlier exports' (still open, at their relocated numbers).
    for (const auto& [id, other] : mem_exports_)
      if (other.fd.get() == raw) x.fresh = false;
    if (Outcome o = relocate(fd, x.cloexec); !o.ok()) return {o};
    FdRecord rec;
    rec.kind = FdRecord::memory;
    rec.pid = static_cast<std::uint32_t>(::getpid());
    rec.fd = fd.get();
    rec.start_time = own_start_time();
    rec.size = m->size;
    rec.offset = p - m->base;
    rec.memory_type = m->type;
    rec.handle_type = kMemHandle;
    rec.flags = m->dedicated ? static_cast<std::uint32_t>(FdRecord::dedicated) : 0u;
    rec.device = static_cast<std::uint32_t>(m->device);
    rec.buffer_size = m->buffer_size;
    identity(fd.get(), rec);
    Exported e;
    e.id = next_id_++;
    e.bytes = rec.encode();
    e.fd = scm_ ? fd.get() : -1;
    x.fd = std::move(fd);
    mem_exports_.emplace(e.id, std::move(x));
    return {Outcome::runtime_success("vkGetMemoryFdKHR"), std::move(e)};
  }

  // Vulkan has no put: the export is the descriptor, and closing the exporter's copy is all
  // there is (a copy already sent, or imported, keeps the payload alive).
  Outcome mem_put(ObjectId export_id) override {
    auto it = mem_exports_.find(export_id);
    if (it == mem_exports_.end())
      return Outcome::failure(Errc::invalid, "mem_put: export id " + std::to_string(export_id) + " is not a live export");
    mem_exports_.erase(it);
    return Outcome::success();
  }

  Result<DevPtr> mem_open(std::span<const std::byte> bytes, int fd, int device, std::uint64_t flags) override {
    flags = open_flags(flags, 0);  // the API's plain open asks for nothing
    Dev* d = dev(device);
    if (!d) return {bad_device(device)};
    if (flags != 0)
      return {Outcome::failure(Errc::invalid, "mem_open: flags " + hex(flags) +
                                                  ": a Vulkan import has no open flags; nothing was called")};
    std::string why;
    const auto rec = FdRecord::decode(bytes, why);
    if (!rec) return {Outcome::failure(Errc::invalid, "mem_open: " + why)};
    if (rec->kind != FdRecord::memory)
      return {Outcome::failure(Errc::invalid, "mem_open: the record is a semaphore export, not memory")};
    if (Outcome o = importable(*d, *rec); !o.ok()) return {o};
    if (!d->memory_ok)
      return {Outcome::failure(Errc::feature_not_supported, "mem_open: device " + std::to_string(device) +
                                                                " cannot import memory: " + d->memory_why)};
    unique_fd local;
    if (Outcome o = take_descriptor(*rec, fd, local); !o.ok()) return {o};
    Import im;
    im.size = rec->size;
    im.memory_type = rec->memory_type;
    im.handle_type = rec->handle_type;
    im.dedicated = rec->flags & FdRecord::dedicated;
    im.buffer_size = rec->buffer_size;
    return import_memory(*d, device, im, local);
  }

  Outcome mem_close(DevPtr p) override {
    auto it = std::find_if(mems_.begin(), mems_.end(), [&](const auto& kv) { return kv.second.imported && kv.second.opened_at == p; });
    if (it == mems_.end())
      return Outcome::failure(Errc::invalid, "mem_close: " + hex(p) + " is not an open mapping of this adapter "
                                             "(closed already, or never opened); nothing was called");
    Outcome o = release_memory(it->second);
    mems_.erase(it);
    return o;
  }

  // ---------------------------------------------------------------- events (timeline semaphores)

  Result<ObjectId> event_create(int device, EventFlags flags) override {
    Dev* d = dev(device);
    if (!d) return {bad_device(device)};
    if (!d->semaphore_ok) return {no_events(*d)};
    if (flags.profiling)
      return {Outcome::failure(Errc::not_implemented,
                               "event_create: Vulkan semaphores have no profiling (timestamps are query pools)")};
    Ev e;
    e.device = device;
    e.exportable = flags.ipc;
    if (Outcome o = create_semaphore(*d, e.exportable, e.semaphore); !o.ok()) return {o};
    const ObjectId id = next_id_++;
    events_.emplace(id, e);
    return {Outcome::runtime_success("vkCreateSemaphore"), id};
  }

  Result<Exported> event_get(ObjectId ev) override {
    Ev* e = event(ev);
    if (!e) return {unknown("event_get", ev)};
    Dev& d = devs_[static_cast<std::size_t>(e->device)];
    if (!e->exportable)
      return {Outcome::failure(Errc::invalid, std::string("event_get: the semaphore was ") +
                                                  (e->imported ? "imported" : "created without the IPC flag") +
                                                  ", without VkExportSemaphoreCreateInfo "
                                                  "(VUID-VkSemaphoreGetFdInfoKHR-handleType-01132); nothing was called")};
    VkSemaphoreGetFdInfoKHR gi{VK_STRUCTURE_TYPE_SEMAPHORE_GET_FD_INFO_KHR, nullptr, e->semaphore, kSemHandle};
    int raw = -1;
    if (Outcome o = call("vkGetSemaphoreFdKHR", d.fn.vkGetSemaphoreFdKHR(d.device, &gi, &raw)); !o.ok()) {
      if (raw >= 0) ::close(raw);
      return {o};
    }
    unique_fd fd(raw);
    const int fl = ::fcntl(raw, F_GETFD);
    if (Outcome o = relocate(fd, fl >= 0 && (fl & FD_CLOEXEC)); !o.ok()) return {o};
    FdRecord rec;
    rec.kind = FdRecord::semaphore;
    rec.pid = static_cast<std::uint32_t>(::getpid());
    rec.fd = fd.get();
    rec.start_time = own_start_time();
    rec.memory_type = VK_SEMAPHORE_TYPE_TIMELINE;
    rec.handle_type = kSemHandle;
    rec.flags = FdRecord::timeline;
    rec.device = static_cast<std::uint32_t>(e->device);
    identity(fd.get(), rec);
    Exported x;
    x.id = next_id_++;
    x.bytes = rec.encode();
    x.fd = scm_ ? fd.get() : -1;
    sem_exports_.emplace(x.id, std::move(fd));
    return {Outcome::runtime_success("vkGetSemaphoreFdKHR"), std::move(x)};
  }

  Outcome event_put(ObjectId export_id) override {
    auto it = sem_exports_.find(export_id);
    if (it == sem_exports_.end())
      return Outcome::failure(Errc::invalid, "event_put: export id " + std::to_string(export_id) + " is not a live export");
    sem_exports_.erase(it);
    return Outcome::success();
  }

  Result<ObjectId> event_open(std::span<const std::byte> bytes, int fd, int device) override {
    Dev* d = dev(device);
    if (!d) return {bad_device(device)};
    if (!d->semaphore_ok) return {no_events(*d)};
    std::string why;
    const auto rec = FdRecord::decode(bytes, why);
    if (!rec) return {Outcome::failure(Errc::invalid, "event_open: " + why)};
    if (rec->kind != FdRecord::semaphore)
      return {Outcome::failure(Errc::invalid, "event_open: the record is a memory export, not a semaphore")};
    unique_fd local;
    if (Outcome o = take_descriptor(*rec, fd, local); !o.ok()) return {o};
    Ev e;
    e.device = device;
    e.imported = true;
    if (Outcome o = create_semaphore(*d, false, e.semaphore); !o.ok()) return {o};
    VkImportSemaphoreFdInfoKHR ii{VK_STRUCTURE_TYPE_IMPORT_SEMAPHORE_FD_INFO_KHR, nullptr, e.semaphore, 0,
                                  static_cast<VkExternalSemaphoreHandleTypeFlagBits>(rec->handle_type), local.get()};
    if (Outcome o = call("vkImportSemaphoreFdKHR", d->fn.vkImportSemaphoreFdKHR(d->device, &ii)); !o.ok()) {
      destroy_semaphore(e);
      keep_or_forget(local);
      return {o};
    }
    (void)local.release();  // a successful import owns the descriptor
    const ObjectId id = next_id_++;
    events_.emplace(id, e);
    return {Outcome::runtime_success("vkImportSemaphoreFdKHR"), id};
  }

  Outcome event_signal(ObjectId ev) override { return advance(ev, true, "event_signal"); }
  Outcome event_reset(ObjectId ev) override { return advance(ev, false, "event_reset"); }

  Result<bool> event_query(ObjectId ev) override {
    Ev* e = event(ev);
    if (!e) return {unknown("event_query", ev)};
    std::uint64_t v = 0;
    Outcome o = counter(*e, v);
    return {o, o.ok() && (v & 1)};
  }

  Result<bool> event_wait(ObjectId ev, std::chrono::nanoseconds timeout) override {
    Ev* e = event(ev);
    if (!e) return {unknown("event_wait", ev)};
    std::uint64_t v = 0;
    if (Outcome o = counter(*e, v); !o.ok()) return {o};
    if (v & 1) return {Outcome::runtime_success("vkGetSemaphoreCounterValue"), true};
    Dev& d = devs_[static_cast<std::size_t>(e->device)];
    const std::uint64_t want = v + 1;
    VkSemaphoreWaitInfo wi{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO, nullptr, 0, 1, &e->semaphore, &want};
    const auto ns = static_cast<std::uint64_t>(std::max<std::chrono::nanoseconds::rep>(0, timeout.count()));
    const VkResult r = d.fn.vkWaitSemaphores(d.device, &wi, ns);
    if (r == VK_TIMEOUT) {
      Outcome o = call("vkWaitSemaphores", VK_SUCCESS);  // a timeout is an answer, not an error
      return {o, false};
    }
    Outcome o = call("vkWaitSemaphores", r);
    if (!o.ok()) return {o};
    // The value moved past `v`: odd is signaled; an even value means a reset came in between.
    std::uint64_t now = 0;
    Outcome q = counter(*e, now);
    return {q, q.ok() && (now & 1)};
  }

  Outcome event_retain(ObjectId ev) override {
    Ev* e = event(ev);
    if (!e) return unknown("event_retain", ev);
    ++e->refs;
    return Outcome::success();
  }

  Outcome event_release(ObjectId ev) override {
    Ev* e = event(ev);
    if (!e) return unknown("event_release", ev);
    if (--e->refs > 0) return Outcome::success();
    Outcome o = destroy_semaphore(*e);
    events_.erase(ev);
    return o;
  }

  // ---------------------------------------------------------------- native calls

  Outcome native(const std::string& what, const std::map<std::string, std::string>& args) override {
    if (what == "mem_import") return native_import(args);
    if (what == "export_fd_info") return native_export_info(args);
    if (what == "cuda_import") return native_cuda_import(args);
    return Adapter::native(what, args);
  }

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

  // ---- calls and validation

  // The outcome of a Vulkan call (decided by the runtime), with what the validation layer
  // said about it: an error message fails the call even where the driver returned success.
  Outcome call(const char* function, VkResult r, const std::string& what = {}) {
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

  // ---- set-up

  Outcome create_instance() {
    instance_api_ = VK_API_VERSION_1_0;
    if (api_.vkEnumerateInstanceVersion) api_.vkEnumerateInstanceVersion(&instance_api_);
    if (instance_api_ < VK_API_VERSION_1_2)
      return Outcome::failure(Errc::not_implemented, "no usable Vulkan: the loader offers instance version " +
                                                         version_text(instance_api_) + "; the vk adapter needs 1.2");
    std::vector<const char*> layers, extensions;
    const char* env_layers = std::getenv("VK_INSTANCE_LAYERS");
    const bool layer_by_env = env_layers && std::strstr(env_layers, "VK_LAYER_KHRONOS_validation");
    if (validation_requested_ || layer_by_env) {
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
    }
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO, nullptr, "ipcheck", 1, "ipcheck", 1,
                          std::min<std::uint32_t>(instance_api_, VK_API_VERSION_1_3)};
    VkDebugUtilsMessengerCreateInfoEXT mi{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    mi.pfnUserCallback = &ValidationLog::on_message;
    mi.pUserData = &log_;
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

  Outcome pick_devices() {
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

  Outcome open_device(Dev& d) {
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

  static std::string feature_text(VkExternalMemoryFeatureFlags f) {
    std::string s;
    if (f & VK_EXTERNAL_MEMORY_FEATURE_DEDICATED_ONLY_BIT) s += "DEDICATED_ONLY ";
    if (f & VK_EXTERNAL_MEMORY_FEATURE_EXPORTABLE_BIT) s += "EXPORTABLE ";
    if (f & VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT) s += "IMPORTABLE ";
    if (!s.empty()) s.pop_back();
    return s.empty() ? "none" : s;
  }

  // device: device local first (host visible or not); host: host visible, not device local
  // when there is such a type; shared: host visible and device local, else host visible.
  static std::optional<std::uint32_t> pick_type(const Dev& d, std::uint32_t bits, MemKind kind) {
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

  // ---- memory objects

  Dev* dev(int index) {
    if (index < 0 || static_cast<std::size_t>(index) >= devs_.size()) return nullptr;
    return &devs_[static_cast<std::size_t>(index)];
  }
  Outcome bad_device(int index) const {
    return Outcome::failure(Errc::invalid, "device index " + std::to_string(index) + " is not one of the " +
                                               std::to_string(devs_.size()) + " devices");
  }

  Mem* containing(DevPtr p) {
    auto it = mems_.upper_bound(p);
    if (it == mems_.begin()) return nullptr;
    --it;
    Mem& m = it->second;
    if (p >= m.base && p < m.base + m.size) return &m;
    return nullptr;
  }

  // Maps host-visible memory and gives the object its pointer (or a synthetic one).
  Outcome finish_memory(Dev& d, Mem& m, const char* what) {
    const bool visible = d.mem.memoryTypes[m.type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
    if (m.buffer && !m.buffer_bound) {
      if (Outcome o = call("vkBindBufferMemory", d.fn.vkBindBufferMemory(d.device, m.buffer, m.memory, 0),
                           std::string(what) + ": bind the transfer buffer");
          !o.ok()) {
        release_memory(m);
        return o;
      }
      m.buffer_bound = true;
    }
    if (visible) {
      if (Outcome o = call("vkMapMemory", d.fn.vkMapMemory(d.device, m.memory, 0, VK_WHOLE_SIZE, 0, &m.map)); !o.ok()) {
        m.map = nullptr;
        release_memory(m);
        return o;
      }
      m.base = reinterpret_cast<DevPtr>(m.map);
    } else {
      m.base = kSyntheticBase + synthetic_next_++ * kSyntheticStride;
    }
    return Outcome::success();
  }

  Outcome release_memory(Mem& m) {
    Dev& d = devs_[static_cast<std::size_t>(m.device)];
    if (m.map) d.fn.vkUnmapMemory(d.device, m.memory);
    if (m.buffer) d.fn.vkDestroyBuffer(d.device, m.buffer, nullptr);
    if (m.memory) d.fn.vkFreeMemory(d.device, m.memory, nullptr);
    m.map = nullptr;
    m.buffer = VK_NULL_HANDLE;
    m.memory = VK_NULL_HANDLE;
    return call("vkFreeMemory", VK_SUCCESS);
  }

  // The import itself: vkAllocateMemory with VkImportMemoryFdInfoKHR (and the dedicated
  // buffer the record describes). `fd` is this process's descriptor: released when a
  // successful import took it (or a failed one closed it), left to the caller otherwise.
  Result<DevPtr> import_memory(Dev& d, int device, const Import& im, unique_fd& fd) {
    Mem m;
    m.device = device;
    m.imported = true;
    m.size = im.size;
    m.bytes = im.size;
    m.type = im.memory_type;
    m.dedicated = im.dedicated;
    m.buffer_size = im.buffer_size;
    VkExternalMemoryBufferCreateInfo ext_buffer{VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO, nullptr,
                                                im.handle_type};
    if (m.dedicated) {
      VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, &ext_buffer};
      bi.size = im.buffer_size;
      bi.usage = kBufferUsage;
      if (Outcome o = call("vkCreateBuffer", d.fn.vkCreateBuffer(d.device, &bi, nullptr, &m.buffer),
                           "mem_open: the dedicated buffer the record describes");
          !o.ok())
        return {o};
    }
    VkImportMemoryFdInfoKHR ii{VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR, nullptr,
                               static_cast<VkExternalMemoryHandleTypeFlagBits>(im.handle_type), fd.get()};
    VkMemoryDedicatedAllocateInfo ded{VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO, nullptr, VK_NULL_HANDLE, m.buffer};
    if (m.dedicated) ii.pNext = &ded;
    VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, &ii, m.size, m.type};
    const VkResult r = d.fn.vkAllocateMemory(d.device, &ai, nullptr, &m.memory);
    if (r == VK_SUCCESS) (void)fd.release();  // the driver owns it now
    Outcome o = call("vkAllocateMemory", r,
                     "mem_open: import of " + std::to_string(m.size) + " bytes, memory type " + std::to_string(m.type));
    if (!o.ok()) {
      // The layer may flag an import the driver accepted: that memory is still ours to free.
      if (m.memory) d.fn.vkFreeMemory(d.device, m.memory, nullptr);
      if (m.buffer) d.fn.vkDestroyBuffer(d.device, m.buffer, nullptr);
      if (validation_) log_.drain();
      if (r != VK_SUCCESS) {
        if (keep_or_forget(fd)) o.message += " (the driver closed the descriptor although the import failed)";
      }
      return {o};
    }
    if (!m.dedicated && staging_) {
      // The copy path needs a buffer on the memory; made now so that close finds it bound.
      if (Outcome b = make_transfer_buffer(d, m); !b.ok()) {
        release_memory(m);
        return {b};
      }
    }
    if (Outcome f = finish_memory(d, m, "mem_open"); !f.ok()) return {f};
    // The whole allocation, as CUDA does for an interior pointer: the record's offset is not
    // bound to the export (no token), so the importer never moves by it.
    m.opened_at = m.base;
    const DevPtr p = m.opened_at;
    mems_.emplace(m.base, std::move(m));
    return {Outcome::runtime_success("vkAllocateMemory"), p};
  }

  // A descriptor that a failed import should have left to us: still ours (closed by `fd`'s
  // destructor), or closed by the driver already (true: forgotten, so nothing closes a number
  // some later descriptor may take).
  static bool keep_or_forget(unique_fd& fd) {
    if (!fd) return false;
    if (::fcntl(fd.get(), F_GETFD) < 0 && errno == EBADF) {
      (void)fd.release();
      return true;
    }
    return false;
  }

  Outcome make_transfer_buffer(Dev& d, Mem& m) {
    if (m.buffer) return Outcome::success();
    VkExternalMemoryBufferCreateInfo ext_buffer{VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO, nullptr,
                                                static_cast<VkExternalMemoryHandleTypeFlags>(kMemHandle)};
    VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, (m.imported || m.exportable) ? &ext_buffer : nullptr};
    bi.size = m.size;
    bi.usage = kBufferUsage;
    if (Outcome o = call("vkCreateBuffer", d.fn.vkCreateBuffer(d.device, &bi, nullptr, &m.buffer)); !o.ok()) return o;
    VkMemoryRequirements req{};
    d.fn.vkGetBufferMemoryRequirements(d.device, m.buffer, &req);
    if (!(req.memoryTypeBits & (1u << m.type)) || req.size > m.size) {
      d.fn.vkDestroyBuffer(d.device, m.buffer, nullptr);
      m.buffer = VK_NULL_HANDLE;
      return Outcome::failure(Errc::not_implemented, "vk: a transfer buffer of " + std::to_string(m.size) +
                                                         " bytes does not fit memory type " + std::to_string(m.type));
    }
    if (m.memory) {
      if (Outcome o = call("vkBindBufferMemory", d.fn.vkBindBufferMemory(d.device, m.buffer, m.memory, 0)); !o.ok())
        return o;
      m.buffer_bound = true;
    }
    return Outcome::success();
  }

  // Host access: through the mapping, or a copy through a staging buffer.
  Outcome transfer(DevPtr p, std::size_t n, const std::byte* in, std::byte* out) {
    const char* verb = in ? "write" : "read";
    Mem* m = containing(p);
    if (!m || p + n > m->base + m->size || p + n < p)
      return Outcome::failure(Errc::invalid, std::string(verb) + ": " + std::to_string(n) + " bytes at " + hex(p) +
                                                 " are not inside one allocation or open mapping of this adapter");
    if (n == 0) return Outcome::success();
    const std::size_t off = static_cast<std::size_t>(p - m->base);
    if (m->map && !staging_) {
      if (in) std::memcpy(static_cast<std::byte*>(m->map) + off, in, n);
      else std::memcpy(out, static_cast<const std::byte*>(m->map) + off, n);
      // The bytes land in the payload vkMapMemory mapped: the runtime decides what they reach.
      return Outcome::runtime_success("vkMapMemory");
    }
    return staged(*m, off, n, in, out);
  }

  Outcome staged(Mem& m, std::size_t off, std::size_t n, const std::byte* in, std::byte* out) {
    Dev& d = devs_[static_cast<std::size_t>(m.device)];
    if (Outcome o = make_transfer_buffer(d, m); !o.ok()) return o;
    // A host-visible staging buffer of n bytes.
    Mem s;
    s.device = m.device;
    VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bi.size = n;
    bi.usage = kBufferUsage;
    if (Outcome o = call("vkCreateBuffer", d.fn.vkCreateBuffer(d.device, &bi, nullptr, &s.buffer)); !o.ok()) return o;
    VkMemoryRequirements req{};
    d.fn.vkGetBufferMemoryRequirements(d.device, s.buffer, &req);
    auto t = pick_type(d, req.memoryTypeBits, MemKind::host);
    if (!t || !(d.mem.memoryTypes[*t].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)) {
      d.fn.vkDestroyBuffer(d.device, s.buffer, nullptr);
      return Outcome::failure(Errc::not_implemented, "vk: no host-visible memory type for a staging buffer");
    }
    s.type = *t;
    s.size = req.size;
    VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, nullptr, s.size, s.type};
    if (Outcome o = call("vkAllocateMemory", d.fn.vkAllocateMemory(d.device, &ai, nullptr, &s.memory)); !o.ok()) {
      release_memory(s);
      return o;
    }
    if (Outcome o = finish_memory(d, s, "staging"); !o.ok()) return o;
    if (in) std::memcpy(s.map, in, n);
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, nullptr,
                                   VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    Outcome o = call("vkResetCommandBuffer", d.fn.vkResetCommandBuffer(d.cmd, 0));
    if (o.ok()) o = call("vkBeginCommandBuffer", d.fn.vkBeginCommandBuffer(d.cmd, &begin));
    if (o.ok()) {
      const VkBufferCopy region{in ? 0 : off, in ? off : 0, n};
      d.fn.vkCmdCopyBuffer(d.cmd, in ? s.buffer : m.buffer, in ? m.buffer : s.buffer, 1, &region);
      o = call("vkEndCommandBuffer", d.fn.vkEndCommandBuffer(d.cmd));
    }
    if (o.ok()) {
      VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
      si.commandBufferCount = 1;
      si.pCommandBuffers = &d.cmd;
      o = call("vkQueueSubmit", d.fn.vkQueueSubmit(d.queue, 1, &si, VK_NULL_HANDLE),
               std::string(in ? "write" : "read") + " of " + std::to_string(n) + " bytes through a staging buffer");
    }
    if (o.ok()) o = call("vkQueueWaitIdle", d.fn.vkQueueWaitIdle(d.queue));
    if (o.ok() && out) std::memcpy(out, s.map, n);
    const Outcome freed = release_memory(s);
    if (o.ok() && !freed.ok()) return freed;
    return o.ok() ? Outcome::runtime_success("vkCmdCopyBuffer") : o;
  }

  // ---- descriptors

  // A descriptor of the export in this process: a duplicate of the one received by
  // SCM_RIGHTS, or the exporter's taken with pidfd_getfd (dup in the exporter itself).
  Outcome take_descriptor(const FdRecord& rec, int received, unique_fd& out) {
    if (Outcome o = fetch_descriptor(rec, received, out); !o.ok()) return o;
    if (!check_identity_) return Outcome::success();  // identity=off: any descriptor reaches the driver
    struct stat st{};
    if (::fstat(out.get(), &st) != 0 || static_cast<std::uint64_t>(st.st_ino) != rec.ino ||
        static_cast<std::uint64_t>(st.st_dev) != rec.dev) {
      out.reset();
      return Outcome::failure(Errc::invalid, "the descriptor " + std::string(received >= 0 ? "received" : "taken") +
                                                 " is not the exported file the record names (inode " +
                                                 std::to_string(rec.ino) + "); nothing was imported",
                              EBADF, "EBADF");
    }
    return Outcome::success();
  }

  Outcome fetch_descriptor(const FdRecord& rec, int received, unique_fd& out) {
    if (received < 0 && scm_)
      return Outcome::failure(Errc::invalid, "no descriptor came with the bytes: with --transport scm (the vk "
                                             "default) the export's descriptor travels by SCM_RIGHTS");
    if (received >= 0) {
      out.reset(::fcntl(received, F_DUPFD_CLOEXEC, 0));
      if (!out)
        return Outcome::failure(Errc::invalid, "the received descriptor " + std::to_string(received) +
                                                   " is unusable: " + std::strerror(errno), errno, "errno");
      return Outcome::success();
    }
    const int pid = static_cast<int>(rec.pid);
    if (pid == ::getpid()) {
      if (rec.start_time != own_start_time())
        return Outcome::failure(Errc::exporter_gone, "the record names this pid with another start time (pid reused)");
      out.reset(::fcntl(rec.fd, F_DUPFD_CLOEXEC, 0));
      if (!out)
        return Outcome::failure(Errc::invalid, "this process has no descriptor " + std::to_string(rec.fd) +
                                                   " (the export was put)", errno, "EBADF");
      return Outcome::success();
    }
    return toolkit::take_exporter_fd({pid, rec.fd, rec.start_time}, "", out);
  }

  static void identity(int fd, FdRecord& rec) {
    struct stat st{};
    if (::fstat(fd, &st) == 0) {
      rec.ino = static_cast<std::uint64_t>(st.st_ino);
      rec.dev = static_cast<std::uint64_t>(st.st_dev);
    }
  }

  // What the importer can check itself before the driver sees a record: Vulkan makes these
  // the application's duty (valid usage), and the record is input from another process.
  Outcome importable(const Dev& d, const FdRecord& rec) {
    if (rec.size == 0)
      return Outcome::failure(Errc::invalid, "the record's allocation size is 0 (VUID-VkMemoryAllocateInfo-allocationSize-00638: "
                                             "greater than 0); nothing was imported");
    if (rec.memory_type >= d.mem.memoryTypeCount)
      return Outcome::failure(Errc::invalid, "the record's memory type " + std::to_string(rec.memory_type) + " is not one of the " +
                                                 std::to_string(d.mem.memoryTypeCount) +
                                                 " types of this device (VUID-vkAllocateMemory-pAllocateInfo-01714); "
                                                 "nothing was imported");
    if (!import_supported(d, rec.handle_type))
      return Outcome::failure(Errc::invalid, "the record's handle type " + hex(rec.handle_type) +
                                                 " is not importable for buffers on this device "
                                                 "(VUID-VkImportMemoryFdInfoKHR-handleType-00667); nothing was imported");
    if ((rec.flags & FdRecord::dedicated) && (rec.buffer_size == 0 || rec.buffer_size > rec.size))
      return Outcome::failure(Errc::invalid, "the record's dedicated buffer of " + std::to_string(rec.buffer_size) +
                                                 " bytes does not fit its allocation of " + std::to_string(rec.size) +
                                                 "; nothing was imported");
    return Outcome::success();
  }

  bool import_supported(const Dev& d, std::uint32_t handle_type) {
    if (handle_type == 0 || (handle_type & (handle_type - 1)) != 0) return false;  // one bit
    if (handle_type != VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT &&
        !(handle_type == VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT && d.ext_dma_buf))
      return false;
    VkPhysicalDeviceExternalBufferInfo bi{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_BUFFER_INFO, nullptr, 0,
                                          kBufferUsage, static_cast<VkExternalMemoryHandleTypeFlagBits>(handle_type)};
    VkExternalBufferProperties bp{VK_STRUCTURE_TYPE_EXTERNAL_BUFFER_PROPERTIES};
    api_.vkGetPhysicalDeviceExternalBufferProperties(d.phys, &bi, &bp);
    return bp.externalMemoryProperties.externalMemoryFeatures & VK_EXTERNAL_MEMORY_FEATURE_IMPORTABLE_BIT;
  }

  // Moves an exported descriptor to a number never used for one before (a put record then
  // names a closed number), keeping the driver's close-on-exec flag as it was.
  Outcome relocate(unique_fd& fd, bool cloexec) {
    if (const int err = export_numbers_.place(fd); err != 0)
      return Outcome::failure(Errc::exhausted, std::string("fcntl(F_DUPFD) of an exported descriptor failed: ") +
                                                   std::strerror(err), err, "errno");
    if (!cloexec) ::fcntl(fd.get(), F_SETFD, 0);
    return Outcome::success();
  }

  static std::uint64_t own_start_time() { return toolkit::own_start_time(); }

  // ---- semaphores

  Outcome no_events(const Dev& d) const {
    return Outcome::failure(Errc::not_implemented, "vk: no IPC events on '" + d.name + "': " + d.semaphore_why);
  }
  Ev* event(ObjectId id) {
    auto it = events_.find(id);
    return it == events_.end() ? nullptr : &it->second;
  }
  Outcome unknown(const char* verb, ObjectId id) const {
    return Outcome::failure(Errc::invalid, std::string(verb) + ": " + std::to_string(id) +
                                               " is not a live event of this adapter (released already?)");
  }

  Outcome create_semaphore(Dev& d, bool exportable, VkSemaphore& out) {
    VkExportSemaphoreCreateInfo exp{VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO, nullptr,
                                    static_cast<VkExternalSemaphoreHandleTypeFlags>(kSemHandle)};
    VkSemaphoreTypeCreateInfo st{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO, exportable ? &exp : nullptr,
                                 VK_SEMAPHORE_TYPE_TIMELINE, 0};
    VkSemaphoreCreateInfo ci{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, &st, 0};
    return call("vkCreateSemaphore", d.fn.vkCreateSemaphore(d.device, &ci, nullptr, &out));
  }

  Outcome destroy_semaphore(Ev& e) {
    if (!e.semaphore) return Outcome::success();
    Dev& d = devs_[static_cast<std::size_t>(e.device)];
    d.fn.vkDestroySemaphore(d.device, e.semaphore, nullptr);
    e.semaphore = VK_NULL_HANDLE;
    return call("vkDestroySemaphore", VK_SUCCESS);
  }

  Outcome counter(Ev& e, std::uint64_t& v) {
    Dev& d = devs_[static_cast<std::size_t>(e.device)];
    return call("vkGetSemaphoreCounterValue", d.fn.vkGetSemaphoreCounterValue(d.device, e.semaphore, &v));
  }

  // Signal (odd) or reset (even): one step of the shared counter, when it is not there already.
  Outcome advance(ObjectId ev, bool to_signaled, const char* verb) {
    Ev* e = event(ev);
    if (!e) return unknown(verb, ev);
    std::uint64_t v = 0;
    if (Outcome o = counter(*e, v); !o.ok()) return o;
    if (((v & 1) != 0) == to_signaled) return Outcome::runtime_success("vkGetSemaphoreCounterValue");
    Dev& d = devs_[static_cast<std::size_t>(e->device)];
    VkSemaphoreSignalInfo si{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, nullptr, e->semaphore, v + 1};
    return call("vkSignalSemaphore", d.fn.vkSignalSemaphore(d.device, &si));
  }

  // ---- native calls

  // native("mem_import", {record: hex bytes of a vk export, fd: a descriptor of the caller,
  //   size: +N | -N | =N (change allocationSize), memory_type: N | other | out_of_range,
  //   handle_type: opaque_fd | dma_buf | N, keep: 1 (keep the memory; default: free it)}):
  // one vkAllocateMemory import with the record's values, changed as asked. The descriptor is
  // passed as it is, with Vulkan's ownership rule: a successful import owns it, after a
  // failed one it is still the caller's (who can check whether the driver closed it).
  Outcome native_import(const std::map<std::string, std::string>& args) {
    auto arg = [&](const char* k) { auto it = args.find(k); return it == args.end() ? std::string() : it->second; };
    std::string why;
    const auto rec = FdRecord::decode(from_hex(arg("record")), why);
    if (!rec) return Outcome::failure(Errc::invalid, "mem_import: record: " + why);
    const int fd = static_cast<int>(parse_u64(arg("fd"), static_cast<std::uint64_t>(-1)));
    Dev* d = dev(0);
    if (!d || !d->memory_ok) return Outcome::failure(Errc::feature_not_supported, "mem_import: no memory import here");
    Import im;
    im.size = rec->size;
    im.memory_type = rec->memory_type;
    im.handle_type = rec->handle_type;
    im.dedicated = rec->flags & FdRecord::dedicated;
    im.buffer_size = rec->buffer_size;
    if (const std::string s = arg("size"); !s.empty()) {
      const std::uint64_t v = parse_u64(s.substr(1), 0);
      im.size = s[0] == '+' ? im.size + v : s[0] == '-' ? im.size - std::min(v, im.size) : v;
    }
    if (const std::string t = arg("memory_type"); t == "other") {
      // Another valid type than the export's (a mismatch the importer cannot see).
      if (d->mem.memoryTypeCount < 2)
        return Outcome::failure(Errc::not_implemented, "mem_import: '" + d->name + "' has one memory type: no other "
                                                       "type to import with");
      im.memory_type = (rec->memory_type + 1) % d->mem.memoryTypeCount;
    } else if (t == "out_of_range") {
      im.memory_type = d->mem.memoryTypeCount;
    } else if (!t.empty()) {
      im.memory_type = static_cast<std::uint32_t>(parse_u64(t, im.memory_type));
    }
    if (const std::string h = arg("handle_type"); h == "dma_buf") {
      im.handle_type = VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT;
    } else if (h == "opaque_fd") {
      im.handle_type = kMemHandle;
    } else if (!h.empty()) {
      im.handle_type = static_cast<std::uint32_t>(parse_u64(h, im.handle_type));
    }
    if (im.handle_type == VK_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF_BIT_EXT && !d->ext_dma_buf)
      return Outcome::failure(Errc::not_implemented, "mem_import: handle_type dma_buf needs "
                                                     "VK_EXT_external_memory_dma_buf, which '" + d->name + "' lacks");
    unique_fd borrowed(fd);
    Result<DevPtr> r = import_memory(*d, 0, im, borrowed);
    (void)borrowed.release();  // still the caller's after a failed import (unless the driver closed it)
    if (!r.ok()) return r.outcome;
    Outcome o = r.outcome;
    o.message = "imported " + std::to_string(im.size) + " bytes of memory type " + std::to_string(im.memory_type) +
                " at " + hex(r.value);
    if (arg("keep") != "1") {
      Outcome closed = mem_close(r.value);
      if (!closed.ok()) return closed;
    }
    return o;
  }

  // native("export_fd_info", {export: id}): whether the descriptor vkGetMemoryFdKHR gave for
  // that export was close-on-exec and new (the runtime's answer, judged by the adapter).
  Outcome native_export_info(const std::map<std::string, std::string>& args) {
    auto it = args.find("export");
    const ObjectId id = it == args.end() ? 0 : parse_u64(it->second, 0);
    auto x = mem_exports_.find(id);
    if (x == mem_exports_.end())
      return Outcome::failure(Errc::invalid, "export_fd_info: export id " + std::to_string(id) + " is not a live export");
    if (!x->second.cloexec)
      return Outcome::runtime_failure("vkGetMemoryFdKHR", Errc::other,
                                      "descriptor " + std::to_string(x->second.driver_fd) + " lacks FD_CLOEXEC", 0,
                                      "FD_CLOEXEC");
    if (!x->second.fresh)
      return Outcome::runtime_failure("vkGetMemoryFdKHR", Errc::other,
                                      "descriptor " + std::to_string(x->second.driver_fd) +
                                          " is the number of a live earlier export", 0, "reused");
    Outcome o = Outcome::runtime_success("vkGetMemoryFdKHR");
    o.message = "descriptor " + std::to_string(x->second.driver_fd) + ": new, FD_CLOEXEC";
    return o;
  }

  // native("cuda_import", {record, fd, read_seed, write_seed}): CUDA imports the Vulkan export
  // (cuImportExternalMemory, OPAQUE_FD, dedicated as recorded), checks its bytes against
  // pattern(read_seed), writes pattern(write_seed) over them, and lets go.
  Outcome native_cuda_import(const std::map<std::string, std::string>& args) {
    auto arg = [&](const char* k) { auto it = args.find(k); return it == args.end() ? std::string() : it->second; };
    std::string why;
    const auto rec = FdRecord::decode(from_hex(arg("record")), why);
    if (!rec) return Outcome::failure(Errc::invalid, "cuda_import: record: " + why);
    const int fd = static_cast<int>(parse_u64(arg("fd"), static_cast<std::uint64_t>(-1)));
    vk::CudaImportRequest req;
    req.fd = fd;
    req.size = rec->size;
    req.offset = rec->offset;
    req.dedicated = rec->flags & FdRecord::dedicated;
    req.bytes = static_cast<std::size_t>(parse_u64(arg("bytes"), rec->size - rec->offset));
    req.read_seed = parse_u64(arg("read_seed"), 0);
    req.write_seed = parse_u64(arg("write_seed"), 0);
    std::memcpy(req.uuid, devs_[std::min<std::size_t>(rec->device, devs_.size() - 1)].uuid_bytes, sizeof req.uuid);
    return vk::cuda_import(req);
  }

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

const AdapterRegistration registered_vk{{"vk",
                               "Vulkan external memory and semaphores through the system loader (lavapipe in CI, "
                               "NVIDIA's driver on the GPU machines)",
                               {"sycl", "vk"},
                               [] { return std::unique_ptr<Adapter>(new VkAdapter); },
                               {"loader", "device", "staging", "dedicated", "validation", "identity"}}};

}  // namespace
}  // namespace ipcheck::vk_adapter
