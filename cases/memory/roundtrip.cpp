// sycl.mem.roundtrip: data crosses both ways through one IPC mapping, at sizes that
// expose rounding (an odd size) and scale (64 MiB).
//
// Under `ipcheck run --inject` one role is killed (SIGKILL) at a protocol step and the
// survivors are judged as the robustness clauses say: a killed consumer leaves the producer
// working and a new consumer (the successor) completes the round trip (rb.consumer.crash);
// after a killed producer, what the consumer's mapping shows is observed and new opens fail
// cleanly (rb.producer.crash, rb.open.exporter_gone).
#include "../common.hpp"
#include "../robustness/kinds.hpp"

namespace ipcheck::catalog::memory_roundtrip {
namespace {

constexpr const char* kClause = "sycl.mem.roundtrip";
constexpr std::uint64_t kProducerSeed = 0x1001, kConsumerSeed = 0x2002, kSuccessorSeed = 0x3003;

// ---- The producer outlives a consumer killed holding its mapping (rb.consumer.crash).
void outlive_consumer(Role& r, Owned& mem, Owned& exported, const Exported& h, std::size_t size,
                      std::uint64_t expected_seed) {
  await_killed(r, "consumer", kConsumerCrash);
  verify(r, mem.get(), size, expected_seed, kConsumerCrash, "the producer's memory after the consumer was killed");
  // The export the dead consumer held serves a new process, both ways.
  r.send_handle("successor", "handle", h);
  receive_text(r, "successor-wrote");
  verify(r, mem.get(), size, kSuccessorSeed, kConsumerCrash, "the producer reads the successor's writes");
  send_text(r, "successor", "producer-checked", "");
  receive_text(r, "successor-closed");
  // The producer's own verbs still work: a new export and its put, the old put, free.
  Exported h2;
  Owned second = export_memory(r, mem.get(), h2, kConsumerCrash);
  end_export(r, second, kConsumerCrash, "mem_put of a new export after the consumer was killed");
  end_export(r, exported, kConsumerCrash, "mem_put of the export the killed consumer held");
  r.check_ok(mem.reset(), kConsumerCrash, "free of the memory the killed consumer mapped");
}

void producer(Role& r, std::size_t size) {
  Owned mem = alloc_filled(r, size, kProducerSeed, kClause);
  Exported h;
  Owned exported = export_memory(r, mem.get(), h, kClause);
  r.step("after_export");
  r.send_handle("consumer", "handle", h);
  r.step("after_send");
  if (killed_at(r, "consumer", "after_open"))
    return outlive_consumer(r, mem, exported, h, size, kProducerSeed);
  r.barrier("consumer-wrote");
  verify(r, mem.get(), size, kConsumerSeed, kClause, "producer reads the consumer's writes");
  r.barrier("producer-checked");
  if (killed_at(r, "consumer", "before_close"))
    return outlive_consumer(r, mem, exported, h, size, kConsumerSeed);
  r.step("before_close");
  end_export(r, exported, kClause, "mem_put");
  r.check_ok(mem.reset(), kClause, "free");
}

// ---- The consumer outlives a killed producer (rb.producer.crash, rb.open.exporter_gone).
// New opens of the handle fail cleanly: in this process, and in a fresh one (the successor).
void open_after_producer_death(Role& r, const Received& h) {
  check_open_after_death(r, "consumer: mem_open",
                         [&] { return open_target(r, HandleKind::memory, h.bytes, h.fd.get()).outcome; });
  r.send(std::string("successor"), "handle", h.bytes, h.fd.get());
}

void outlive_producer(Role& r, const Received& h, Owned& mapped, std::size_t size) {
  await_killed(r, "producer", kProducerCrash);
  // What the mapping shows once its exporter is gone is the runtime's choice: recorded.
  std::vector<std::byte> got(size);
  const Outcome read = r.adapter().read(mapped.get(), got);
  std::string seen = "read_" + outcome_word(read);
  if (read.ok()) seen = first_mismatch(got, kConsumerSeed) == static_cast<std::size_t>(-1) ? "readable_same" : "readable_changed";
  r.observe("memory.roundtrip.mapping_after_producer_kill", seen, kProducerCrash);
  open_after_producer_death(r, h);
  r.check_ok(mapped.reset(), kProducerCrash, "mem_close of the mapping after the producer was killed");
}

void consumer(Role& r, std::size_t size) {
  if (killed_at(r, "producer", "after_export")) {
    // Killed before it sent anything: no handle comes, and its export dies with it.
    await_killed(r, "producer", kProducerCrash);
    return;
  }
  Received h = r.receive("handle");
  if (killed_at(r, "producer", "after_send")) {
    await_killed(r, "producer", kProducerCrash);
    return open_after_producer_death(r, h);
  }
  Owned mapped = open_received(r, h, kClause, "mem_open");
  r.step("after_open");
  verify(r, mapped.get(), size, kProducerSeed, kClause, "consumer reads the producer's data");
  fill(r, mapped.get(), size, kConsumerSeed, kClause, "consumer writes");
  r.barrier("consumer-wrote");
  r.barrier("producer-checked");
  if (killed_at(r, "producer", "before_close")) return outlive_producer(r, h, mapped, size);
  r.step("before_close");
  r.check_ok(mapped.reset(), kClause, "mem_close");
}

// ---- Started only under --inject: the process that comes after the killed one.
void successor(Role& r, std::size_t size) {
  if (r.peer_killed("consumer")) {
    // A new consumer opens the export the killed one held and completes the round trip.
    Received h = r.receive("handle");
    Owned mapped = open_received(r, h, kConsumerCrash, "mem_open by a new consumer after the kill");
    verify(r, mapped.get(), size, killed_at(r, "consumer", "before_close") ? kConsumerSeed : kProducerSeed,
           kConsumerCrash, "the new consumer reads the producer's memory");
    fill(r, mapped.get(), size, kSuccessorSeed, kConsumerCrash, "the new consumer writes");
    send_text(r, "producer", "successor-wrote", "");
    receive_text(r, "producer-checked");
    r.check_ok(mapped.reset(), kConsumerCrash, "mem_close by the new consumer");
    send_text(r, "producer", "successor-closed", "");
    return;
  }
  await_killed(r, "producer", kProducerCrash);
  if (killed_at(r, "producer", "after_export")) return;  // no handle ever existed outside it
  // A process that never opened the handle opens it after the producer's death.
  Received h = r.receive("handle");
  check_open_after_death(r, "successor: mem_open",
                         [&] { return open_target(r, HandleKind::memory, h.bytes, h.fd.get()).outcome; });
}

void register_roundtrips() {
  for (std::size_t size : {kPage, kOddSize, k64MiB}) {
    const std::string name = size == kPage ? "page" : size == kOddSize ? "odd" : "64m";
    register_case(Case("memory.roundtrip." + name,
                       "Producer data reaches the consumer and the consumer's writes reach the producer (" +
                           size_name(size) + ")")
                      .clause(kClause)
                      .steps("producer", {"after_export", "after_send", "before_close"})
                      .steps("consumer", {"after_open", "before_close"})
                      .role("producer", [size](Role& r) { producer(r, size); })
                      .role("consumer", [size](Role& r) { consumer(r, size); })
                      .injection_role("successor", [size](Role& r) { successor(r, size); })
                      .def);
  }
}

IPCHECK_CASE(register_roundtrips);

}  // namespace
}  // namespace ipcheck::catalog::memory_roundtrip
