// cuda.mem.open.self: opening a handle in the process that exported it (CUDA refuses;
// others map the memory a second time). Observed, with the data checked when it opens.
#include "../common.hpp"

namespace ipcheck::catalog::memory_open_self {
namespace {

constexpr std::uint64_t kSeed = 0x5e1f;

void exporter(Role& r) {
  Owned mem = alloc_filled(r, kPage, kSeed, "cuda.mem.open.self");
  Exported h;
  Owned exported = export_memory(r, mem.get(), h, "cuda.mem.open.self");
  auto res = r.adapter().mem_open(h.bytes, h.fd, 0);
  Owned mapped = keep_mapping(r, res);
  if (!res.ok()) {
    r.native_error("mem_open in the exporting process", res.outcome);
    r.observe("memory.open.self", outcome_word(res.outcome), "cuda.mem.open.self");
    return;
  }
  std::string value = holds(r, mapped.get(), kPage, kSeed) ? "opens" : "opens_other_data";
  if (value == "opens" && mapped.get() == mem.get()) value = "opens_same_pointer";
  r.observe("memory.open.self", value, "cuda.mem.open.self");
  // A self-opened mapping is released by close, like any other.
  r.check_ok(mapped.reset(), "cuda.mem.open.self", "mem_close of the self-opened mapping");
}

IPCHECK_CASE(Case("memory.open.self", "Observes opening a handle in the process that exported it")
                 .clause("cuda.mem.open.self")
                 .role("exporter", exporter));

}  // namespace
}  // namespace ipcheck::catalog::memory_open_self
