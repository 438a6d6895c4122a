// vk.sem.import.shared: a timeline semaphore shared between processes (where the driver
// offers VK_KHR_external_semaphore_fd); vk.cuda.import: CUDA imports a Vulkan memory export
// (on an NVIDIA GPU; elsewhere it skips with the reason).
#include "vk_common.hpp"

namespace ipcheck::catalog::vk_semaphore_cuda {
namespace {

using namespace vkcase;

constexpr std::uint64_t kSeed = 0x7602;

IPCHECK_CASE(Case("vk.semaphore.shared", "A timeline semaphore exported by fd: host signals seen on both sides")
                 .needs(needs_adapter("vk", kOnlyVk))
                 .events()
                 .clause("vk.sem.import.shared")
                 .role("producer",
                       [](Role& r) {
                         only_vk(r);
                         const char* c = "vk.sem.import.shared";
                         auto ev = r.adapter().event_create(0, {true, false});
                         r.skip_if_unsupported(ev.outcome, "event_create with IPC");
                         Owned event = Owned::event(r.adapter(), r.require(ev, c, "event_create"));
                         Exported h;
                         Owned exported = export_event(r, event.get(), h, c);
                         r.send_handle("consumer", "handle", h);
                         r.barrier("opened");
                         r.barrier("consumer-signaled");
                         auto w = r.adapter().event_wait(event.get(), kLongWait);
                         r.check(w.ok() && w.value, Evidence::of(w.outcome), c, "the consumer's signal is seen by the producer's wait");
                         r.check_ok(r.adapter().event_reset(event.get()), c, "reset on the producer");
                         r.barrier("reset");
                         r.barrier("done");
                       })
                 .role("consumer", [](Role& r) {
                   only_vk(r);
                   const char* c = "vk.sem.import.shared";
                   Received h = r.receive("handle");
                   Owned ev = open_event(r, h, c, "event_open");
                   r.barrier("opened");
                   r.check_ok(r.adapter().event_signal(ev.get()), c, "signal on the consumer");
                   r.barrier("consumer-signaled");
                   r.barrier("reset");
                   auto q = r.adapter().event_query(ev.get());
                   r.check(q.ok() && !q.value, Evidence::of(q.outcome), c, "the producer's reset is seen by the consumer's query");
                   r.check_ok(ev.reset(), c, "release of the opened semaphore");
                   r.barrier("done");
                 }));

IPCHECK_CASE(Case("vk.cuda.interop", "CUDA imports a Vulkan memory export (cuImportExternalMemory): bytes both ways")
                 .needs(needs_adapter("vk", kOnlyVk))
                 .clause("vk.cuda.import")
                 .role("producer",
                       [](Role& r) {
                         only_vk(r);
                         const char* c = "vk.cuda.import";
                         Owned mem = alloc_filled(r, 1 << 20, kSeed, c);
                         Exported h;
                         Owned exported = export_memory(r, mem.get(), h, c);
                         r.send_handle("consumer", "handle", h);
                         const Received verdict = r.receive("cuda");
                         if (!verdict.bytes.empty() && verdict.bytes[0] == std::byte{1})
                           verify(r, mem.get(), 1 << 20, kSeed + 1, c, "Vulkan reads what CUDA wrote");
                         r.barrier("done");
                       })
                 .role("consumer", [](Role& r) {
                   only_vk(r);
                   const char* c = "vk.cuda.import";
                   Received h = r.receive("handle");
                   const int fd = h.fd.get() >= 0 ? dup_of(h.fd.get()) : -1;
                   Outcome o = fd < 0 ? Outcome::failure(Errc::not_implemented, "no descriptor came by SCM_RIGHTS")
                                      : r.adapter().native("cuda_import", {{"record", hex_bytes(h.bytes)},
                                                                           {"fd", std::to_string(fd)},
                                                                           {"bytes", std::to_string(1 << 20)},
                                                                           {"read_seed", std::to_string(kSeed)},
                                                                           {"write_seed", std::to_string(kSeed + 1)}});
                   const bool ran = o.code != Errc::not_implemented && o.code != Errc::feature_not_supported;
                   if (!o.ok() && is_open(fd)) ::close(fd);  // a failed import leaves it to us
                   const std::byte flag{static_cast<unsigned char>(o.ok() ? 1 : 0)};
                   r.send("producer", "cuda", std::span<const std::byte>(&flag, 1));
                   if (!ran) {
                     r.barrier("done");
                     r.skip("CUDA/Vulkan interop: " + o.describe());
                   }
                   r.check_ok(o, c, "CUDA imports the Vulkan export and reads Vulkan's bytes");
                   r.barrier("done");
                 }));

}  // namespace
}  // namespace ipcheck::catalog::vk_semaphore_cuda
