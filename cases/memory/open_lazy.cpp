// cuda.mem.open.lazy: CUDA documents one open flag, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS (0x1),
// and says it must be given; the adapters pass flags exactly as a case asks (the other
// cases ask for the API's plain open, kDefaultOpenFlags), so this case asks for 0x1 by
// name, and records beside it what flags 0 give (CUDA 13.0 on the H100: INVALID_VALUE).
// On other APIs bit 0x1 means something else (Level Zero: ZE_IPC_MEMORY_FLAG_BIAS_CACHED):
// the cuda clauses are observed there.
#include "../common.hpp"

namespace ipcheck::catalog::memory_open_lazy {
namespace {

constexpr const char* kLazy = "cuda.mem.open.lazy";
constexpr std::uint64_t kSeed = 0x1a2f;
constexpr std::uint64_t kLazyFlag = 0x1;

void producer(Role& r) {
  Owned mem = alloc_filled(r, kPage, kSeed, kLazy);
  Exported h;
  Owned exported = export_memory(r, mem.get(), h, kLazy);
  r.send_handle("consumer", "handle", h);
  r.barrier("consumer-done");
}

void consumer(Role& r) {
  Received h = r.receive("handle");
  {
    auto res = r.adapter().mem_open(h.bytes, h.fd.get(), 0, kLazyFlag);
    Owned mapped = keep_mapping(r, res);
    r.check_ok(res.outcome, kLazy, "mem_open with flags 0x1 (CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)");
    if (res.ok()) verify(r, mapped.get(), kPage, kSeed, kLazy, "the mapping opened with flags 0x1");
  }
  auto res = r.adapter().mem_open(h.bytes, h.fd.get(), 0, 0);
  Owned mapped = keep_mapping(r, res);
  if (!res.ok()) r.native_error("mem_open with flags 0", res.outcome);
  r.observe("memory.open.flags.0x0",
            !res.ok() ? outcome_word(res.outcome) + (res.outcome.native_name.empty() ? "" : " " + res.outcome.native_name)
            : holds(r, mapped.get(), kPage, kSeed) ? "opens" : "opens_other_data",
            kLazy);
  r.barrier("consumer-done");
}

IPCHECK_CASE(Case("memory.open.lazy_peer", "Open with the lazy peer-access flag (0x1) maps the export; flags 0 observed")
                 .clause(kLazy)
                 .role("producer", producer)
                 .role("consumer", consumer));

}  // namespace
}  // namespace ipcheck::catalog::memory_open_lazy
