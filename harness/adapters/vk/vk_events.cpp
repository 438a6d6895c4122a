// The `vk` adapter's event verbs over timeline semaphores: an event is signaled while the
// semaphore's value is odd; signal and reset each advance it by one.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "vk_adapter.hpp"

namespace ipcheck::vk_adapter {

Result<ObjectId> VkAdapter::event_create(int device, EventFlags flags) {
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

Result<Exported> VkAdapter::event_get(ObjectId ev) {
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

Outcome VkAdapter::event_put(ObjectId export_id) {
  auto it = sem_exports_.find(export_id);
  if (it == sem_exports_.end())
    return Outcome::failure(Errc::invalid, "event_put: export id " + std::to_string(export_id) + " is not a live export");
  sem_exports_.erase(it);
  return Outcome::success();
}

Result<ObjectId> VkAdapter::event_open(std::span<const std::byte> bytes, int fd, int device) {
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

Outcome VkAdapter::event_signal(ObjectId ev) { return advance(ev, true, "event_signal"); }

Outcome VkAdapter::event_reset(ObjectId ev) { return advance(ev, false, "event_reset"); }

Result<bool> VkAdapter::event_query(ObjectId ev) {
  Ev* e = event(ev);
  if (!e) return {unknown("event_query", ev)};
  std::uint64_t v = 0;
  Outcome o = counter(*e, v);
  return {o, o.ok() && (v & 1)};
}

Result<bool> VkAdapter::event_wait(ObjectId ev, std::chrono::nanoseconds timeout) {
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

Outcome VkAdapter::event_retain(ObjectId ev) {
  Ev* e = event(ev);
  if (!e) return unknown("event_retain", ev);
  ++e->refs;
  return Outcome::success();
}

Outcome VkAdapter::event_release(ObjectId ev) {
  Ev* e = event(ev);
  if (!e) return unknown("event_release", ev);
  if (--e->refs > 0) return Outcome::success();
  Outcome o = destroy_semaphore(*e);
  events_.erase(ev);
  return o;
}

Outcome VkAdapter::no_events(const Dev& d) const {
  return Outcome::failure(Errc::not_implemented, "vk: no IPC events on '" + d.name + "': " + d.semaphore_why);
}

VkAdapter::Ev* VkAdapter::event(ObjectId id) {
  auto it = events_.find(id);
  return it == events_.end() ? nullptr : &it->second;
}

Outcome VkAdapter::unknown(const char* verb, ObjectId id) const {
  return Outcome::failure(Errc::invalid, std::string(verb) + ": " + std::to_string(id) +
                                             " is not a live event of this adapter (released already?)");
}

Outcome VkAdapter::create_semaphore(Dev& d, bool exportable, VkSemaphore& out) {
  VkExportSemaphoreCreateInfo exp{VK_STRUCTURE_TYPE_EXPORT_SEMAPHORE_CREATE_INFO, nullptr,
                                  static_cast<VkExternalSemaphoreHandleTypeFlags>(kSemHandle)};
  VkSemaphoreTypeCreateInfo st{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO, exportable ? &exp : nullptr,
                               VK_SEMAPHORE_TYPE_TIMELINE, 0};
  VkSemaphoreCreateInfo ci{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, &st, 0};
  return call("vkCreateSemaphore", d.fn.vkCreateSemaphore(d.device, &ci, nullptr, &out));
}

Outcome VkAdapter::destroy_semaphore(Ev& e) {
  if (!e.semaphore) return Outcome::success();
  Dev& d = devs_[static_cast<std::size_t>(e.device)];
  d.fn.vkDestroySemaphore(d.device, e.semaphore, nullptr);
  e.semaphore = VK_NULL_HANDLE;
  return call("vkDestroySemaphore", VK_SUCCESS);
}

Outcome VkAdapter::counter(Ev& e, std::uint64_t& v) {
  Dev& d = devs_[static_cast<std::size_t>(e.device)];
  return call("vkGetSemaphoreCounterValue", d.fn.vkGetSemaphoreCounterValue(d.device, e.semaphore, &v));
}

// Signal (odd) or reset (even): one step of the shared counter, when it is not there already.
Outcome VkAdapter::advance(ObjectId ev, bool to_signaled, const char* verb) {
  Ev* e = event(ev);
  if (!e) return unknown(verb, ev);
  std::uint64_t v = 0;
  if (Outcome o = counter(*e, v); !o.ok()) return o;
  if (((v & 1) != 0) == to_signaled) return Outcome::runtime_success("vkGetSemaphoreCounterValue");
  Dev& d = devs_[static_cast<std::size_t>(e->device)];
  VkSemaphoreSignalInfo si{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO, nullptr, e->semaphore, v + 1};
  return call("vkSignalSemaphore", d.fn.vkSignalSemaphore(d.device, &si));
}

}  // namespace ipcheck::vk_adapter
