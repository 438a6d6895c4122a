// sycl.mem.put.dpctl_pattern: dpctl's IPCMemoryHandle sequence across two processes. dpctl
// 0.22.1's libsyclinterface has no IPC calls (DPCTLIPCMem_* are on dpctl's master only, and no
// wheel on the index has dpctl.ipc); its master's IPCMemoryHandle.__init__ calls get and then
// put at once and keeps the handle's bytes, the bytes travel, and the other process opens them
// with their size on a device and later closes the mapping. The extension leaves the use of a
// handle's data after put undefined (sycl.mem.put.then_open), so this pattern works only
// where put revokes nothing: observed, never required.
#include "../common.hpp"

namespace ipcheck::catalog::memory_dpctl {
namespace {

constexpr std::size_t kBytes = 2 * kPage;
constexpr std::uint64_t kSeed = 0xd9c7;
constexpr const char* kClause = "sycl.mem.put.dpctl_pattern";

void producer(Role& r) {
  Owned mem = alloc_filled(r, kBytes, kSeed, kClause);
  Exported h;
  Owned exported = export_memory(r, mem.get(), h, kClause);
  // IPCMemoryHandle.__init__: put right after get; only the bytes are kept.
  put_or_skip(r, exported, kClause, "mem_put right after mem_get, as dpctl's IPCMemoryHandle does");
  // Only the bytes travel (dpctl pickles them): a descriptor the export carried is the
  // adapter's, closed by the put, and never sent.
  Exported bytes_only = h;
  bytes_only.fd = -1;
  r.send_handle("consumer", "handle", bytes_only);
  r.barrier("done");
}

// The consumer may die: opening a put handle is undefined, and a crash is a value to record.
void consumer(Role& r) {
  Received h = r.receive("handle");
  // IPCMemoryHandle.open(bytes, device, size): the bytes and their size, on device 0.
  auto res = r.adapter().mem_open(h.bytes, h.fd.get(), 0);
  Owned mapped = keep_mapping(r, res);
  if (!res.ok()) {
    r.native_error("mem_open of the bytes dpctl keeps after its put", res.outcome);
    r.observe("memory.dpctl_pattern", "refused: " + outcome_word(res.outcome), kClause);
    r.barrier("done");
    return;
  }
  const bool same = static_cast<bool>(holds(r, mapped.get(), kBytes, kSeed));
  r.observe("memory.dpctl_pattern", same ? "opens_and_reads_the_export" : "opens_other_memory", kClause);
  // close_mapping: the close of what opened.
  r.note("mem_close of the mapping (dpctl's close_mapping): " + outcome_word(mapped.reset()));
  r.barrier("done");
}

IPCHECK_CASE(Case("memory.put.dpctl_pattern",
                  "dpctl's IPCMemoryHandle: get, put at once, the kept bytes opened by size in another process, closed")
                 .clause(kClause)
                 .needs(needs_verb("mem_put", "mem_put right after mem_get, as dpctl's IPCMemoryHandle does"))
                 .expendable("consumer")
                 .role("producer", producer)
                 .role("consumer", consumer));

}  // namespace
}  // namespace ipcheck::catalog::memory_dpctl
