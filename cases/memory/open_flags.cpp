// ze.mem.open.flags: open flags beyond the defined bits are refused (Level Zero defines
// bits 0x1 and 0x2; with parameter validation the loader answers INVALID_ENUMERATION).
// cuda.mem.open.flags: what flags other than lazy peer access (0x1) do, observed.
#include "../common.hpp"

namespace ipcheck::catalog::memory_open_flags {
namespace {

constexpr std::uint64_t kSeed = 0xf1a9;

void producer(Role& r) {
  Owned mem = alloc_filled(r, kPage, kSeed, "ze.mem.open.flags");
  Exported h;
  Owned exported = export_memory(r, mem.get(), h, "ze.mem.open.flags");
  r.send_handle("consumer", "handle", h);
  r.barrier("consumer-done");
}

// Opens with `flags`; on success, says whether the mapping shows the export, then closes it.
std::string try_flags(Role& r, const Received& h, std::uint64_t flags) {
  auto res = r.adapter().mem_open(h.bytes, h.fd.get(), 0, flags);
  Owned mapped = keep_mapping(r, res);
  if (!res.ok()) {
    r.native_error("mem_open with flags " + hex(flags), res.outcome);
    return outcome_word(res.outcome);
  }
  return holds(r, mapped.get(), kPage, kSeed) ? "opens" : "opens_other_data";
}

void consumer(Role& r) {
  Received h = r.receive("handle");
  // Bits far above the two Level Zero defines (0x1, 0x2): the top bit and the one below it.
  for (std::uint64_t undefined : {0x80000000ull, 0x40000000ull}) {
    auto res = r.adapter().mem_open(h.bytes, h.fd.get(), 0, undefined);
    Owned leaked = keep_mapping(r, res);
    r.check_error(res.outcome, Errc::invalid, "ze.mem.open.flags", "mem_open with undefined flag bits " + hex(undefined));
  }
  for (std::uint64_t flags : {0x2ull, 0x80000000ull})
    r.observe("memory.open.flags." + hex(flags), try_flags(r, h, flags), "cuda.mem.open.flags");
  // The default flags still open: the refusals were about the flags, not the handle.
  SetupSteps setup(r);
  Owned mapped = open_received(r, h, "ze.mem.open.flags", "mem_open with default flags");
  verify(r, mapped.get(), kPage, kSeed, "ze.mem.open.flags", "default-flag mapping");
  r.barrier("consumer-done");
}

IPCHECK_CASE(Case("memory.open.flags", "Open flags beyond the defined bits are refused with invalid; other flags observed")
                 .clauses({"ze.mem.open.flags", "cuda.mem.open.flags"})
                 .role("producer", producer)
                 .role("consumer", consumer));

}  // namespace
}  // namespace ipcheck::catalog::memory_open_flags
