// vk.mem.*: Vulkan's rules for OPAQUE_FD memory imports (VkImportMemoryFdInfoKHR and the
// valid-usage rules of VkMemoryAllocateInfo), on the vk adapter.
#include <sys/mman.h>

#include "vk_common.hpp"

namespace ipcheck::catalog::vk_import {
namespace {

using namespace vkcase;

constexpr std::uint64_t kSeed = 0x7601;

// Allocates and exports `bytes` filled with kSeed, sends the handle, waits for `done`.
void export_and_wait(Role& r, std::size_t bytes, const char* clause, const char* done = "done") {
  only_vk(r);
  Owned mem = alloc_filled(r, bytes, kSeed, clause);
  Exported h;
  Owned exported = export_memory(r, mem.get(), h, clause);
  r.send_handle("consumer", "handle", h);
  r.barrier(done);
}

// A descriptor of the export for a native call: the one received, or -1 (pidfd transport).
int descriptor_for(Role& r, const Received& h) {
  if (h.fd.get() < 0) r.skip("the native import needs the descriptor by SCM_RIGHTS (run with --transport scm, the vk default)");
  return dup_of(h.fd.get());
}

IPCHECK_CASE(Case("vk.export.fd", "Each vkGetMemoryFdKHR gives a new close-on-exec descriptor of the payload")
                 .needs(needs_adapter("vk", kOnlyVk))
                 .clause("vk.mem.export.fd")
                 .role("producer",
                       [](Role& r) {
                         only_vk(r);
                         Owned mem = alloc_filled(r, kPage, kSeed, "vk.mem.export.fd");
                         Exported a, b;
                         Owned ea = export_memory(r, mem.get(), a, "vk.mem.export.fd");
                         Owned eb = export_memory(r, mem.get(), b, "vk.mem.export.fd");
                         for (const Exported* e : {&a, &b})
                           r.check_ok(r.adapter().native("export_fd_info", {{"export", std::to_string(e->id)}}),
                                      "vk.mem.export.fd", "export " + std::to_string(e->id) + " is a new FD_CLOEXEC descriptor");
                         r.send_handle("consumer", "first", a);
                         r.send_handle("consumer", "second", b);
                         r.barrier("done");
                       })
                 .role("consumer", [](Role& r) {
                   only_vk(r);
                   Received a = r.receive("first");
                   Received b = r.receive("second");
                   // Two descriptors, one payload: both open to the producer's bytes.
                   Owned ma = open_received(r, a, "vk.mem.export.fd", "import of the first descriptor");
                   Owned mb = open_received(r, b, "vk.mem.export.fd", "import of the second descriptor");
                   verify(r, ma.get(), kPage, kSeed, "vk.mem.export.fd", "first export");
                   verify(r, mb.get(), kPage, kSeed, "vk.mem.export.fd", "second export");
                   r.check_ok(ma.reset(), "vk.mem.export.fd", "mem_close");
                   r.check_ok(mb.reset(), "vk.mem.export.fd", "mem_close");
                   r.barrier("done");
                 }));

IPCHECK_CASE(Case("vk.import.distinct", "Two imports of one payload are two memory objects sharing it")
                 .needs(needs_adapter("vk", kOnlyVk))
                 .clause("vk.mem.import.distinct")
                 .role("producer", [](Role& r) { export_and_wait(r, 2 * kPage, "vk.mem.import.distinct"); })
                 .role("consumer", [](Role& r) {
                   only_vk(r);
                   Received h = r.receive("handle");
                   Evidence by = Evidence::tally();  // the mappings are what vkMapMemory returned
                   Owned a = open_received(r, h, "vk.mem.import.distinct", "first import", by);
                   Owned b = open_received(r, h, "vk.mem.import.distinct", "second import", by);
                   r.check(a.get() != b.get(), by, "vk.mem.import.distinct",
                           "the imports are distinct objects (mappings at different addresses)");
                   verify(r, a.get(), 2 * kPage, kSeed, "vk.mem.import.distinct", "first import");
                   fill(r, a.get(), kPage, kSeed + 1, "vk.mem.import.distinct", "write through the first import");
                   verify(r, b.get(), kPage, kSeed + 1, "vk.mem.import.distinct", "the second import sees the write");
                   r.check_ok(a.reset(), "vk.mem.import.distinct", "free the first import");
                   verify(r, b.get() + kPage, kPage, kSeed, "vk.mem.import.distinct",
                          "the second import after the first was freed", kPage);
                   r.check_ok(b.reset(), "vk.mem.import.distinct", "free the second import");
                   r.barrier("done");
                 }));

IPCHECK_CASE(Case("vk.import.payload_reference", "An import keeps the payload after the exporter freed and closed it")
                 .needs(needs_adapter("vk", kOnlyVk))
                 .clause("vk.mem.import.payload_reference")
                 .role("producer",
                       [](Role& r) {
                         only_vk(r);
                         const char* c = "vk.mem.import.payload_reference";
                         Owned mem = alloc_filled(r, kPage, kSeed, c);
                         Exported h;
                         Owned exported = export_memory(r, mem.get(), h, c);
                         r.send_handle("consumer", "handle", h);
                         r.barrier("imported");
                         SetupSteps setup(r);  // the exporter letting go; the import's reads decide
                         r.check_ok(exported.reset(), c, "close the exported descriptor (mem_put)");
                         r.check_ok(mem.reset(), c, "vkFreeMemory of the exported memory");
                         r.barrier("freed");
                         r.barrier("done");
                       })
                 .role("consumer", [](Role& r) {
                   only_vk(r);
                   const char* c = "vk.mem.import.payload_reference";
                   Received h = r.receive("handle");
                   Owned m = open_received(r, h, c, "import");
                   h.fd.reset();
                   r.barrier("imported");
                   r.barrier("freed");
                   verify(r, m.get(), kPage, kSeed, c, "the import after the exporter let go");
                   r.check_ok(m.reset(), c, "free the import");
                   r.barrier("done");
                 }));

IPCHECK_CASE(Case("vk.import.consumes_fd", "A successful import owns its descriptor: vkFreeMemory releases it")
                 .needs(needs_adapter("vk", kOnlyVk))
                 .clause("vk.mem.import.consumes_fd")
                 .role("producer", [](Role& r) { export_and_wait(r, kPage, "vk.mem.import.consumes_fd"); })
                 .role("consumer", [](Role& r) {
                   only_vk(r);
                   const char* c = "vk.mem.import.consumes_fd";
                   Received h = r.receive("handle");
                   const std::string record = hex_bytes(h.bytes);
                   const int fd = descriptor_for(r, h);
                   const ResourceCount before = count_resources();
                   const Outcome o = r.adapter().native("mem_import", {{"record", record}, {"fd", std::to_string(fd)}});
                   r.skip_if_unsupported(o, "mem_import");
                   r.check_ok(o, c, "import of a descriptor, then vkFreeMemory");
                   if (o.ok()) {
                     r.check(!is_open(fd), Evidence::of(o), c,
                             "descriptor " + std::to_string(fd) + " is closed after the import was freed");
                   } else if (is_open(fd)) {
                     ::close(fd);  // a failed import left it to us
                   }
                   check_no_growth(r, before, count_resources(), c, "after import and free");
                   r.barrier("done");
                 }));

IPCHECK_CASE(Case("vk.import.invalid_handle", "A descriptor that is not this driver's export fails to import, and stays the application's")
                 .needs(needs_adapter("vk", kOnlyVk))
                 .clauses({"vk.mem.import.invalid_handle", "vk.mem.import.failed_keeps_fd"})
                 .role("producer", [](Role& r) { export_and_wait(r, kPage, "vk.mem.import.invalid_handle"); })
                 .role("consumer", [](Role& r) {
                   only_vk(r);
                   Received h = r.receive("handle");
                   const std::string record = hex_bytes(h.bytes);
                   // A memfd of the export's size: a file, but no Vulkan export.
                   unique_fd memfd(::memfd_create("ipcheck-not-an-export", MFD_CLOEXEC));
                   {
                     SetupSteps setup(r);
                     r.require(memfd.get() >= 0 && ::ftruncate(memfd.get(), 1 << 20) == 0,
                               "vk.mem.import.invalid_handle", "memfd_create and ftruncate of a 1 MiB file");
                   }
                   struct Try {
                     const char* name;
                     int fd;
                     const char* handle_type;
                   };
                   const int real = h.fd.get() >= 0 ? dup_of(h.fd.get()) : -1;
                   const Try tries[] = {{"a memfd as OPAQUE_FD", dup_of(memfd.get()), "opaque_fd"},
                                        {"the OPAQUE_FD export as DMA_BUF", real, "dma_buf"}};
                   for (const Try& t : tries) {
                     if (t.fd < 0) continue;
                     const Outcome o = r.adapter().native("mem_import", {{"record", record}, {"fd", std::to_string(t.fd)},
                                                                         {"handle_type", t.handle_type}});
                     if (o.code == Errc::not_implemented) {
                       r.note(std::string(t.name) + ": " + o.describe());
                       ::close(t.fd);
                       continue;
                     }
                     r.check(!o.ok() && o.native_name == "VK_ERROR_INVALID_EXTERNAL_HANDLE", Evidence::of(o),
                             "vk.mem.import.invalid_handle",
                             std::string(t.name) + ": " + (o.ok() ? "imported" : o.describe()));
                     r.observe(std::string("vk.import.invalid_handle.") + t.handle_type, o.ok() ? "imported" : o.native_name,
                               "vk.mem.import.invalid_handle");
                     if (o.ok()) continue;  // the import owns it
                     const bool kept = is_open(t.fd);
                     r.check(kept, Evidence::of(o), "vk.mem.import.failed_keeps_fd",
                             std::string(t.name) + ": the descriptor is " +
                                 (kept ? "still open after the failed import" : "closed by the driver although the import failed"));
                     if (kept) ::close(t.fd);
                   }
                   r.barrier("done");
                 }));

IPCHECK_CASE(Case("vk.import.mismatch", "Imports whose size or memory type differ from the export's (valid usage forbids them): what the driver does")
                 .needs(needs_adapter("vk", kOnlyVk))
                 .clause("vk.mem.import.match")
                 .role("producer", [](Role& r) { export_and_wait(r, 2 * kPage, "vk.mem.import.match"); })
                 .role("consumer", [](Role& r) {
                   only_vk(r);
                   Received h = r.receive("handle");
                   const std::string record = hex_bytes(h.bytes);
                   const std::pair<const char*, std::map<std::string, std::string>> tries[] = {
                       {"size_larger", {{"size", "+4096"}}},
                       {"size_smaller", {{"size", "-4096"}}},
                       {"memory_type_other", {{"memory_type", "other"}}}};
                   for (const auto& [name, change] : tries) {
                     const int fd = descriptor_for(r, h);
                     auto args = change;
                     args["record"] = record;
                     args["fd"] = std::to_string(fd);
                     const Outcome o = r.adapter().native("mem_import", args);
                     std::string value = o.ok() ? "imported" : o.code == Errc::not_implemented ? "not_applicable"
                                                                                                : o.native_name;
                     if (!o.ok() && o.code != Errc::not_implemented && !is_open(fd)) value += " (descriptor closed)";
                     r.observe(std::string("vk.import.") + name, value, "vk.mem.import.match");
                     r.note(std::string(name) + ": " + (o.ok() ? o.message : o.describe()));
                     if (!o.ok() && is_open(fd)) ::close(fd);
                   }
                   r.barrier("done");
                 }));

}  // namespace
}  // namespace ipcheck::catalog::vk_import
