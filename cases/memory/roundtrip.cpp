// sycl.mem.roundtrip: data crosses both ways through one IPC mapping, at sizes that
// expose rounding (an odd size) and scale (64 MiB).
#include "../common.hpp"

namespace ipcheck::catalog {
namespace {

constexpr std::uint64_t kProducerSeed = 0x1001, kConsumerSeed = 0x2002;

void register_roundtrips() {
  for (std::size_t size : {kPage, kOddSize, k64MiB}) {
    const std::string name = size == kPage ? "page" : size == kOddSize ? "odd" : "64m";
    register_case(Case("memory.roundtrip." + name,
                       "Producer data reaches the consumer and the consumer's writes reach the producer (" +
                           size_name(size) + ")")
                      .clause("sycl.mem.roundtrip")
                      .steps("producer", {"after_export", "after_send"})
                      .steps("consumer", {"after_open", "before_close"})
                      .role("producer",
                            [size](Role& r) {
                              Owned mem = alloc_filled(r, size, kProducerSeed, "sycl.mem.roundtrip");
                              Exported h;
                              Owned exported = export_memory(r, mem.get(), h, "sycl.mem.roundtrip");
                              r.step("after_export");
                              r.send_handle("consumer", "handle", h);
                              r.step("after_send");
                              r.barrier("consumer-wrote");
                              verify(r, mem.get(), size, kConsumerSeed, "sycl.mem.roundtrip",
                                     "producer reads the consumer's writes");
                              r.barrier("producer-checked");
                              end_export(r, exported, "sycl.mem.roundtrip", "mem_put");
                              r.check_ok(mem.reset(), "sycl.mem.roundtrip", "free");
                            })
                      .role("consumer",
                            [size](Role& r) {
                              Received h = r.receive("handle");
                              Owned mapped = open_received(r, h, "sycl.mem.roundtrip", "mem_open");
                              r.step("after_open");
                              verify(r, mapped.get(), size, kProducerSeed, "sycl.mem.roundtrip",
                                     "consumer reads the producer's data");
                              fill(r, mapped.get(), size, kConsumerSeed, "sycl.mem.roundtrip", "consumer writes");
                              r.barrier("consumer-wrote");
                              r.barrier("producer-checked");
                              r.step("before_close");
                              r.check_ok(mapped.reset(), "sycl.mem.roundtrip", "mem_close");
                            })
                      .def);
  }
}

IPCHECK_CASE(register_roundtrips);

}  // namespace
}  // namespace ipcheck::catalog
