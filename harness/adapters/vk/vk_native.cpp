// The `vk` adapter's native calls, for cases that need more than the verbs: mem_import (one
// import with the record's values changed), export_fd_info, cuda_import.
#include <algorithm>
#include <cstring>
#include <string>

#include "vk_adapter.hpp"
#include "vk_cuda_interop.hpp"

namespace ipcheck::vk_adapter {

Outcome VkAdapter::native(const std::string& what, const std::map<std::string, std::string>& args) {
  if (what == "mem_import") return native_import(args);
  if (what == "export_fd_info") return native_export_info(args);
  if (what == "cuda_import") return native_cuda_import(args);
  return Adapter::native(what, args);
}

// native("mem_import", {record: hex bytes of a vk export, fd: a descriptor of the caller,
//   size: +N | -N | =N (change allocationSize), memory_type: N | other | out_of_range,
//   handle_type: opaque_fd | dma_buf | N, keep: 1 (keep the memory; default: free it)}):
// one vkAllocateMemory import with the record's values, changed as asked. The descriptor is
// passed as it is, with Vulkan's ownership rule: a successful import owns it, after a
// failed one it is still the caller's (who can check whether the driver closed it).
Outcome VkAdapter::native_import(const std::map<std::string, std::string>& args) {
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
Outcome VkAdapter::native_export_info(const std::map<std::string, std::string>& args) {
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
Outcome VkAdapter::native_cuda_import(const std::map<std::string, std::string>& args) {
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

}  // namespace ipcheck::vk_adapter
