// sycl.mem.open.size, ur.mem.open.size: a handle of the wrong byte count fails with
// invalid, and the right bytes still open afterwards (so the failures were not a broken handle).
#include "../common.hpp"

namespace ipcheck::catalog::memory_open_size {
namespace {

void producer(Role& r) {
  Owned mem = alloc_filled(r, kPage, 0x4004, "sycl.mem.open.size");
  Exported h;
  Owned exported = export_memory(r, mem.get(), h, "sycl.mem.open.size");
  r.send_handle("consumer", "handle", h);
  r.barrier("consumer-done");
}

void consumer(Role& r) {
  Received h = r.receive("handle");
  const std::vector<std::byte>& good = h.bytes;
  struct Variant {
    std::string name;
    std::vector<std::byte> bytes;
  };
  std::vector<Variant> variants{{"empty", {}},
                                {"one byte short", {good.begin(), good.end() - 1}},
                                {"one byte long", good},
                                {"huge (1 MiB)", good}};
  variants[2].bytes.push_back(std::byte{0});
  variants[3].bytes.resize(1 << 20, std::byte{0x5a});
  for (const auto& v : variants) {
    auto res = r.adapter().mem_open(v.bytes, h.fd.get(), 0);
    Owned leaked = keep_mapping(r, res);
    const std::string what = "open with " + v.name + " (" + std::to_string(v.bytes.size()) + " bytes)";
    r.check_error(res.outcome, Errc::invalid, "sycl.mem.open.size", what);
    // UR states it for any size other than the handle's own: UR_RESULT_ERROR_INVALID_VALUE.
    if (!v.bytes.empty()) r.check_error(res.outcome, Errc::invalid, "ur.mem.open.size", what);
  }
  // Supporting, not deciding: the refusals above were about the byte count.
  SetupSteps setup(r);
  Owned ok = open_received(r, h, "sycl.mem.open.size", "open with the exact bytes after the bad ones");
  verify(r, ok.get(), kPage, 0x4004, "sycl.mem.open.size", "the exact bytes still map the export");
  r.barrier("consumer-done");
}

IPCHECK_CASE(Case("memory.open.size", "Opening with empty, one short, one long and huge byte counts fails with invalid")
                 .clauses({"sycl.mem.open.size", "ur.mem.open.size"})
                 .role("producer", producer)
                 .role("consumer", consumer));

}  // namespace
}  // namespace ipcheck::catalog::memory_open_size
