// sycl.mem.put.keeps_open: put does not take away mappings other processes opened.
// sycl.mem.put.then_open: what opening the bytes after put does (undefined; observed).
#include "../common.hpp"

namespace ipcheck::catalog::memory_put {
namespace {

constexpr int kConsumers = 2;
constexpr std::size_t kSlice = kPage;
constexpr std::uint64_t kSeed = 0x9e70, kConsumerSeed = 0x9e80;

void keeps_open_producer(Role& r) {
  const std::size_t bytes = kSlice * kConsumers;
  Owned mem = alloc_filled(r, bytes, kSeed, "sycl.mem.put.keeps_open");
  Exported h;
  Owned exported = export_memory(r, mem.get(), h, "sycl.mem.put.keeps_open");
  for (int i = 0; i < kConsumers; ++i) r.send_handle("consumer" + std::to_string(i), "handle", h);
  r.barrier("opened");
  put_or_skip(r, exported, "sycl.mem.put.keeps_open",
              "mem_put while " + std::to_string(kConsumers) + " consumers hold mappings");
  r.barrier("put");
  r.barrier("read");
  r.barrier("written");
  // Each consumer wrote its slice after the put: the mappings still reach this memory.
  for (int i = 0; i < kConsumers; ++i)
    verify(r, mem.get() + i * kSlice, kSlice, kConsumerSeed + i, "sycl.mem.put.keeps_open",
           "producer reads consumer" + std::to_string(i) + "'s write made after put");
  r.barrier("closed");
}

void keeps_open_consumer(Role& r) {
  Received h = r.receive("handle");
  Owned mapped = open_received(r, h, "sycl.mem.put.keeps_open", "mem_open before put");
  r.barrier("opened");
  r.barrier("put");
  verify(r, mapped.get(), kSlice * kConsumers, kSeed, "sycl.mem.put.keeps_open", "the mapping still reads after put");
  r.barrier("read");
  fill(r, mapped.get() + r.index() * kSlice, kSlice, kConsumerSeed + r.index(), "sycl.mem.put.keeps_open",
       "write through the mapping after put");
  r.barrier("written");
  // Put does not close: the mapping must still be closed, and closing it succeeds.
  r.check_ok(mapped.reset(), "sycl.mem.put.keeps_open", "mem_close after put");
  r.barrier("closed");
}

IPCHECK_CASE(Case("memory.put.keeps_open", "Mappings opened in two consumers stay valid after put and still need their close")
                 .clause("sycl.mem.put.keeps_open")
                 .needs(needs_verb("mem_put", "mem_put while 2 consumers hold mappings"))
                 .role("producer", keeps_open_producer)
                 .roles("consumer", kConsumers, keeps_open_consumer));

// The prober may die: the spec calls the open undefined, and a crash is a value to record.
void then_open_producer(Role& r) {
  Owned mem = alloc_filled(r, kPage, kSeed, "sycl.mem.put.then_open");
  Exported h;
  Owned exported = export_memory(r, mem.get(), h, "sycl.mem.put.then_open");
  r.send_handle("prober", "handle", h);
  put_or_skip(r, exported, "sycl.mem.put.then_open", "mem_put before the prober opens");
  send_text(r, "prober", "put", "done");
  const std::string how = r.wait_exit("prober");
  if (how != "exit 0") {
    r.note("the prober ended by " + how + " after opening the bytes of a put handle");
    r.observe("memory.put.then_open", how.rfind("signal", 0) == 0 ? "crash" : "died", "sycl.mem.put.then_open");
  }
}

void then_open_prober(Role& r) {
  Received h = r.receive("handle");
  receive_text(r, "put");
  auto res = r.adapter().mem_open(h.bytes, h.fd.get(), 0);
  Owned mapped = keep_mapping(r, res);
  if (!res.ok()) {
    r.native_error("mem_open after put", res.outcome);
    r.observe("memory.put.then_open", outcome_word(res.outcome), "sycl.mem.put.then_open");
    return;
  }
  // It opened: say whether it maps the memory that was exported.
  const bool same = static_cast<bool>(holds(r, mapped.get(), kPage, kSeed));
  r.observe("memory.put.then_open", same ? "opens" : "opens_other_memory", "sycl.mem.put.then_open");
  r.note("mem_close of the mapping opened after put: " + outcome_word(mapped.reset()));
}

IPCHECK_CASE(Case("memory.put.then_open", "Observes what opening a handle's bytes after put does (undefined in SYCL)")
                 .clause("sycl.mem.put.then_open")
                 .needs(needs_verb("mem_put", "mem_put before the prober opens"))
                 .expendable("prober")
                 .role("producer", then_open_producer)
                 .role("prober", then_open_prober));

}  // namespace
}  // namespace ipcheck::catalog::memory_put
