// sycl.phys.roundtrip: a physical object created with IPC, exported, opened and mapped in
// another process, carries data both ways; at one granule and at 64 MiB.
//
// Under `ipcheck run --inject` one role is killed (SIGKILL) at a protocol step; the
// survivors are judged by rb.consumer.crash (the producer keeps working, a new consumer
// opens and maps the object) and rb.producer.crash / rb.open.exporter_gone.
#include "../common.hpp"
#include "../robustness/kinds.hpp"

namespace ipcheck::catalog::physical_roundtrip {
namespace {

constexpr std::uint64_t kProducerSeed = 0x7101, kConsumerSeed = 0x7202, kSuccessorSeed = 0x7303;
constexpr const char* kClause = "sycl.phys.roundtrip";

// Unmaps, frees the range and closes (or releases) the object, each judged under `clause`.
void drop_view(Role& r, PhysicalView& view, Owned& pm, std::string_view clause, const std::string& pm_verb) {
  r.check_ok(view.mapping.reset(), clause, "vm_unmap");
  r.check_ok(view.reservation.reset(), clause, "vm_free");
  r.check_ok(pm.reset(), clause, pm_verb);
}

// ---- The producer outlives a consumer killed holding the opened object (rb.consumer.crash).
void outlive_consumer(Role& r, Owned& pm, PhysicalView& view, Owned& exported, const Exported& h, std::size_t bytes,
                      std::uint64_t expected_seed) {
  await_killed(r, "consumer", kConsumerCrash);
  verify(r, view.ptr(), bytes, expected_seed, kConsumerCrash, "the producer's mapping after the consumer was killed");
  r.send_handle("successor", "handle", h);
  send_text(r, "successor", "size", std::to_string(bytes));
  receive_text(r, "successor-wrote");
  verify(r, view.ptr(), bytes, kSuccessorSeed, kConsumerCrash, "the producer reads the successor's writes");
  send_text(r, "successor", "producer-checked", "");
  receive_text(r, "successor-closed");
  Exported h2;
  Owned second = export_physical(r, pm.get(), h2, kConsumerCrash);
  end_export(r, second, kConsumerCrash, "phys_put of a new export after the consumer was killed");
  end_export(r, exported, kConsumerCrash, "phys_put of the export the killed consumer held");
  drop_view(r, view, pm, kConsumerCrash, "phys_release of the object the killed consumer opened");
}

void producer(Role& r, std::size_t wanted) {
  const std::size_t bytes = granular(r, wanted);
  Owned pm = create_physical(r, bytes, true, kClause);
  PhysicalView view = map_physical(r, pm.get(), bytes, kClause);
  if (!fill(r, view.ptr(), bytes, kProducerSeed, kClause, "producer writes")) throw RoleAbort{"fill failed"};
  Exported h;
  Owned exported = export_physical(r, pm.get(), h, kClause);
  r.step("after_export");
  r.send_handle("consumer", "handle", h);
  send_text(r, "consumer", "size", std::to_string(bytes));
  r.step("after_send");
  if (killed_at(r, "consumer", "after_open"))
    return outlive_consumer(r, pm, view, exported, h, bytes, kProducerSeed);
  r.barrier("consumer-wrote");
  verify(r, view.ptr(), bytes, kConsumerSeed, kClause, "producer reads the consumer's writes");
  r.barrier("producer-checked");
  if (killed_at(r, "consumer", "before_close"))
    return outlive_consumer(r, pm, view, exported, h, bytes, kConsumerSeed);
  r.step("before_close");
  end_export(r, exported, kClause, "phys_put");
  drop_view(r, view, pm, kClause, "phys_release");
}

// ---- The consumer outlives a killed producer (rb.producer.crash, rb.open.exporter_gone).
void open_after_producer_death(Role& r, const Received& h) {
  check_open_after_death(r, "consumer: phys_open",
                         [&] { return open_target(r, HandleKind::physical, h.bytes, h.fd.get()).outcome; });
  r.send(std::string("successor"), "handle", h.bytes, h.fd.get());
}

void consumer(Role& r) {
  if (killed_at(r, "producer", "after_export")) return await_killed(r, "producer", kProducerCrash);
  Received h = r.receive("handle");
  const std::size_t bytes = std::stoull(receive_text(r, "size"));
  if (killed_at(r, "producer", "after_send")) {
    await_killed(r, "producer", kProducerCrash);
    return open_after_producer_death(r, h);
  }
  Owned pm = open_physical(r, h, kClause, "phys_open");
  r.step("after_open");
  PhysicalView view = map_physical(r, pm.get(), bytes, kClause);
  verify(r, view.ptr(), bytes, kProducerSeed, kClause, "consumer reads the producer's data");
  fill(r, view.ptr(), bytes, kConsumerSeed, kClause, "consumer writes");
  r.barrier("consumer-wrote");
  r.barrier("producer-checked");
  if (killed_at(r, "producer", "before_close")) {
    await_killed(r, "producer", kProducerCrash);
    // The opened object is this process's: what its mapping shows now is recorded.
    std::vector<std::byte> got(bytes);
    const Outcome read = r.adapter().read(view.ptr(), got);
    std::string seen = "read_" + outcome_word(read);
    if (read.ok()) seen = first_mismatch(got, kConsumerSeed) == static_cast<std::size_t>(-1) ? "readable_same" : "readable_changed";
    r.observe("physical.roundtrip.mapping_after_producer_kill", seen, kProducerCrash);
    open_after_producer_death(r, h);
    return drop_view(r, view, pm, kProducerCrash, "phys_close after the producer was killed");
  }
  r.step("before_close");
  drop_view(r, view, pm, kClause, "phys_close");
}

// ---- Started only under --inject: the process that comes after the killed one.
void successor(Role& r) {
  if (r.peer_killed("consumer")) {
    Received h = r.receive("handle");
    const std::size_t bytes = std::stoull(receive_text(r, "size"));
    Owned pm = open_physical(r, h, kConsumerCrash, "phys_open by a new consumer after the kill");
    PhysicalView view = map_physical(r, pm.get(), bytes, kConsumerCrash);
    verify(r, view.ptr(), bytes, killed_at(r, "consumer", "before_close") ? kConsumerSeed : kProducerSeed,
           kConsumerCrash, "the new consumer reads the producer's object");
    fill(r, view.ptr(), bytes, kSuccessorSeed, kConsumerCrash, "the new consumer writes");
    send_text(r, "producer", "successor-wrote", "");
    receive_text(r, "producer-checked");
    drop_view(r, view, pm, kConsumerCrash, "phys_close by the new consumer");
    send_text(r, "producer", "successor-closed", "");
    return;
  }
  await_killed(r, "producer", kProducerCrash);
  if (killed_at(r, "producer", "after_export")) return;  // no handle ever existed outside it
  Received h = r.receive("handle");
  check_open_after_death(r, "successor: phys_open",
                         [&] { return open_target(r, HandleKind::physical, h.bytes, h.fd.get()).outcome; });
}

void register_roundtrips() {
  for (std::size_t wanted : {std::size_t{1}, k64MiB}) {
    const std::string name = wanted == 1 ? "granule" : "64m";
    register_case(Case("physical.roundtrip." + name,
                       "Physical memory exported, opened and mapped in another process carries data both ways (" +
                           (wanted == 1 ? std::string("one granule") : size_name(wanted)) + ")")
                      .clause(kClause)
                      .steps("producer", {"after_export", "after_send", "before_close"})
                      .steps("consumer", {"after_open", "before_close"})
                      .role("producer", [wanted](Role& r) { producer(r, wanted); })
                      .role("consumer", consumer)
                      .injection_role("successor", successor)
                      .def);
  }
}

IPCHECK_CASE(register_roundtrips);

}  // namespace
}  // namespace ipcheck::catalog::physical_roundtrip
