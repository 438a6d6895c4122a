// sycl.phys.roundtrip: a physical object created with IPC, exported, opened and mapped in
// another process, carries data both ways; at one granule and at 64 MiB.
#include "../common.hpp"

namespace ipcheck::catalog {
namespace {

constexpr std::uint64_t kProducerSeed = 0x7101, kConsumerSeed = 0x7202;
constexpr const char* kClause = "sycl.phys.roundtrip";

void register_roundtrips() {
  for (std::size_t wanted : {std::size_t{1}, k64MiB}) {
    const std::string name = wanted == 1 ? "granule" : "64m";
    register_case(Case("physical.roundtrip." + name,
                       "Physical memory exported, opened and mapped in another process carries data both ways (" +
                           (wanted == 1 ? std::string("one granule") : size_name(wanted)) + ")")
                      .clause(kClause)
                      .steps("producer", {"after_export"})
                      .steps("consumer", {"after_open"})
                      .role("producer",
                            [wanted](Role& r) {
                              const std::size_t bytes = granular(r, wanted);
                              Owned pm = create_physical(r, bytes, true, kClause);
                              PhysicalView view = map_physical(r, pm.get(), bytes, kClause);
                              if (!fill(r, view.ptr(), bytes, kProducerSeed, kClause, "producer writes"))
                                throw RoleAbort{"fill failed"};
                              Exported h;
                              Owned exported = export_physical(r, pm.get(), h, kClause);
                              r.step("after_export");
                              r.send_handle("consumer", "handle", h);
                              send_text(r, "consumer", "size", std::to_string(bytes));
                              r.barrier("consumer-wrote");
                              verify(r, view.ptr(), bytes, kConsumerSeed, kClause, "producer reads the consumer's writes");
                              r.barrier("producer-checked");
                              end_export(r, exported, kClause, "phys_put");
                              r.check_ok(view.mapping.reset(), kClause, "vm_unmap");
                              r.check_ok(view.reservation.reset(), kClause, "vm_free");
                              r.check_ok(pm.reset(), kClause, "phys_release");
                            })
                      .role("consumer", [](Role& r) {
                        Received h = r.receive("handle");
                        const std::size_t bytes = std::stoull(receive_text(r, "size"));
                        Owned pm = open_physical(r, h, kClause, "phys_open");
                        r.step("after_open");
                        PhysicalView view = map_physical(r, pm.get(), bytes, kClause);
                        verify(r, view.ptr(), bytes, kProducerSeed, kClause, "consumer reads the producer's data");
                        fill(r, view.ptr(), bytes, kConsumerSeed, kClause, "consumer writes");
                        r.barrier("consumer-wrote");
                        r.barrier("producer-checked");
                        r.check_ok(view.mapping.reset(), kClause, "vm_unmap");
                        r.check_ok(view.reservation.reset(), kClause, "vm_free");
                        r.check_ok(pm.reset(), kClause, "phys_close");
                      })
                      .def);
  }
}

IPCHECK_CASE(register_roundtrips);

}  // namespace
}  // namespace ipcheck::catalog
