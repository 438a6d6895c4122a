// sycl.mem.open.repeat, ze.mem.open.unique, sycl.mem.open.repeat_pointer: one handle
// opened several times in one process; each open has its own close.
#include <set>

#include "../common.hpp"

namespace ipcheck::catalog::memory_repeat_open {
namespace {

constexpr std::uint64_t kSeed = 0x3003;
constexpr int kOpens = 4;

void producer(Role& r) {
  Owned mem = alloc_filled(r, kPage, kSeed, "sycl.mem.open.repeat");
  Exported h;
  Owned exported = export_memory(r, mem.get(), h, "sycl.mem.open.repeat");
  r.send_handle("consumer", "handle", h);
  r.barrier("consumer-done");
}

void consumer(Role& r) {
  Received h = r.receive("handle");
  std::vector<Owned> maps;
  std::set<DevPtr> distinct;
  Evidence pointers = Evidence::tally();  // the pointers are what the runtime's opens returned
  for (int i = 0; i < kOpens; ++i) {
    auto res = r.adapter().mem_open(h.bytes, h.fd.get(), 0);
    pointers.with(res.outcome);
    SetupSteps setup(r);
    maps.push_back(Owned::mapping(r.adapter(), r.require(res, "sycl.mem.open.repeat", "open #" + std::to_string(i + 1))));
    distinct.insert(maps.back().get());
  }
  const bool unique = distinct.size() == static_cast<std::size_t>(kOpens);
  r.observe("memory.open.repeat_pointer", unique ? "unique" : distinct.size() == 1 ? "same" : "mixed",
            "sycl.mem.open.repeat_pointer");
  r.check(unique, pointers, "ze.mem.open.unique",
          std::to_string(kOpens) + " opens returned " + std::to_string(distinct.size()) + " distinct pointers");
  for (int i = 0; i < kOpens; ++i) verify(r, maps[i].get(), kPage, kSeed, "sycl.mem.open.repeat", "open #" + std::to_string(i + 1));
  // Closing the first must leave the others usable.
  r.check_ok(maps[0].reset(), "sycl.mem.open.repeat", "close of open #1");
  for (int i = 1; i < kOpens; ++i)
    verify(r, maps[i].get(), kPage, kSeed, "sycl.mem.open.repeat", "open #" + std::to_string(i + 1) + " after close #1");
  for (int i = 1; i < kOpens; ++i) r.check_ok(maps[i].reset(), "sycl.mem.open.repeat", "close of open #" + std::to_string(i + 1));
  r.barrier("consumer-done");
}

IPCHECK_CASE(Case("memory.open.repeat", "One handle opened four times: each open is closed on its own, the rest stay valid")
                 .clauses({"sycl.mem.open.repeat", "ze.mem.open.unique", "sycl.mem.open.repeat_pointer"})
                 .role("producer", producer)
                 .role("consumer", consumer));

}  // namespace
}  // namespace ipcheck::catalog::memory_repeat_open
