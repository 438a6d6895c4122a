// Processes that die holding IPC objects: a consumer killed with mappings open must not
// disturb the producer (rb.consumer.crash); what a mapping sees when the producer is
// killed is observed, and new opens then fail cleanly (rb.producer.crash); so is a mapping
// of an opened physical object after its exporter is killed.
#include "kinds.hpp"

namespace ipcheck::catalog::robustness_crash {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kBytes = 4 * kPage;
constexpr std::uint64_t kSeed = 0xc4a5, kConsumerSeed = 0xc4a6, kAfterSeed = 0xc4a7;

// --- rb.consumer.crash

void victim(Role& r) {
  Received h = r.receive("handle");
  std::vector<Owned> maps;
  for (int i = 0; i < 3; ++i) maps.push_back(open_received(r, h, kConsumerCrash, "mem_open #" + std::to_string(i + 1)));
  // Page 1 carries this process's writes: the producer must still see them after the kill.
  fill(r, maps[0].get() + kPage, kPage, kConsumerSeed, kConsumerCrash, "consumer writes page 1");
  send_text(r, "producer", "holding", "");
  r.receive("never sent");  // killed here, three mappings open
}

void survivor(Role& r) {
  Owned mem = alloc_filled(r, kBytes, kSeed, kConsumerCrash);
  Exported h;
  Owned exported = export_memory(r, mem.get(), h, kConsumerCrash);
  r.send_handle("consumer", "handle", h);
  receive_text(r, "holding");
  r.kill("consumer");
  const std::string how = r.wait_exit("consumer");
  {
    SetupSteps setup(r);  // the runner's kill, not the runtime's doing
    r.require(how.rfind("signal", 0) == 0, kConsumerCrash, "the consumer died holding 3 mappings: " + how);
  }
  verify(r, mem.get(), kPage, kSeed, kConsumerCrash, "page 0 after the consumer's death");
  verify(r, mem.get() + kPage, kPage, kConsumerSeed, kConsumerCrash, "page 1 keeps the dead consumer's writes");
  // The export still serves a new process.
  r.send_handle("successor", "handle", h);
  receive_text(r, "successor-done");
  // And the producer's own verbs still work: a new export, put, free.
  Exported h2;
  Owned second = export_memory(r, mem.get(), h2, kConsumerCrash);
  end_export(r, second, kConsumerCrash, "mem_put of a new export after the consumer's death");
  end_export(r, exported, kConsumerCrash, "mem_put of the export the dead consumer held");
  r.check_ok(mem.reset(), kConsumerCrash, "free of the memory the dead consumer mapped");
}

void successor(Role& r) {
  Received h = r.receive("handle");
  Owned mapped = open_received(r, h, kConsumerCrash, "mem_open by a new consumer after the crash");
  verify(r, mapped.get(), kPage, kSeed, kConsumerCrash, "the new consumer reads page 0");
  verify(r, mapped.get() + kPage, kPage, kConsumerSeed, kConsumerCrash, "the new consumer reads the dead one's page 1");
  r.check_ok(mapped.reset(), kConsumerCrash, "mem_close by the new consumer");
  send_text(r, "producer", "successor-done", "");
}

IPCHECK_CASE(Case("robustness.consumer.crash",
                  "A consumer killed with three mappings open: the producer's memory, export, put and free work; a new consumer opens")
                 .clause(kConsumerCrash)
                 .role("producer", survivor)
                 .role("consumer", victim)
                 .role("successor", successor));

// --- rb.producer.crash (observed) and rb.open.exporter_gone (new opens after it).

void doomed(Role& r) {
  Owned mem = alloc_filled(r, kBytes, kSeed, kProducerCrash);
  Exported h;
  Owned exported = export_memory(r, mem.get(), h, kProducerCrash);
  r.send_handle("witness", "handle", h);
  r.send_handle("holder", "handle", h);
  r.receive("never sent");  // killed here, export live
}

// Opens again after the exporter's death: a clean refusal, promptly.
void open_after_death(Role& r, const Received& h, const std::string& who) {
  const auto t0 = Clock::now();
  auto res = r.adapter().mem_open(h.bytes, h.fd.get(), 0);
  const auto took = Clock::now() - t0;
  Owned mapped = keep_mapping(r, res);
  check_clean_refusal(r, res.outcome, kExporterGone,
                      who + ": mem_open after the exporter was killed" + (h.fd ? ", its descriptor passed along" : ""),
                      "robustness.producer.crash." + who + ".open");
  r.check(took < kPromptAfterDeath, Evidence::of(res.outcome), kExporterGone, who + ": the open returned after " + ms(took));
}

// What a mapping shows and takes after its producer's death: <name>.mapping (readable_same,
// readable_changed, read_<error>) and <name>.write.
void observe_after_death(Role& r, const std::string& name, DevPtr p, std::size_t bytes) {
  std::vector<std::byte> got(bytes);
  const Outcome read = r.adapter().read(p, got);
  std::string value = "read_" + outcome_word(read);
  if (read.ok()) value = first_mismatch(got, kSeed) == static_cast<std::size_t>(-1) ? "readable_same" : "readable_changed";
  r.observe(name + ".mapping", value, kProducerCrash);
  r.observe(name + ".write", outcome_word(r.adapter().write(p, pattern(kAfterSeed, kPage))), kProducerCrash);
}

// The holder may die reading its mapping: the witness records that.
void holder(Role& r) {
  Received h = r.receive("handle");
  Owned mapped = open_received(r, h, kProducerCrash, "mem_open before the producer's death");
  verify(r, mapped.get(), kBytes, kSeed, kProducerCrash, "the mapping before the producer's death");
  receive_text(r, "witness-ready");  // the witness holds the handle too before the kill
  r.kill("producer");
  r.note("producer ended: " + r.wait_exit("producer"));
  observe_after_death(r, "robustness.producer.crash", mapped.get(), kBytes);
  open_after_death(r, h, "holder");
  r.check_ok(mapped.reset(), kProducerCrash, "mem_close of the mapping after the producer's death");
}

void witness(Role& r) {
  Received h = r.receive("handle");
  send_text(r, "holder", "witness-ready", "");
  r.wait_exit("producer");
  open_after_death(r, h, "witness");
  const std::string how = r.wait_exit("holder");
  if (how.rfind("signal", 0) == 0) {
    r.note("the holder died using its mapping after the producer's death: " + how);
    r.observe("robustness.producer.crash.mapping", "crash", kProducerCrash);
  }
}

IPCHECK_CASE(Case("robustness.producer.crash",
                  "Observes a mapping after its producer is killed; new opens of its handle then fail with exporter_gone")
                 .clauses({kProducerCrash, kExporterGone})
                 .expendable("holder")
                 .role("producer", doomed)
                 .role("holder", holder)
                 .role("witness", witness));

// --- rb.producer.crash for physical memory: a mapping of an opened physical object (a
// virtual range the consumer reserved and mapped) when its exporter is killed. The import
// holds its own reference to the allocation, so the mapping may outlive the exporter; what
// it shows, and whether writing and unmapping still work, is observed.

constexpr const char* kRoundtrip = "sycl.phys.roundtrip";

void doomed_physical(Role& r) {
  Target t = export_target(r, HandleKind::physical, kSeed, kProducerCrash, kBytes);
  send_target(r, "holder", "handle", t);
  // Killed here, export live. A holder that could not map ends first: the barrier then
  // opens (no other role waits at it) and the producer ends cleanly.
  r.barrier("killed");
}

void physical_holder(Role& r) {
  ReceivedTarget t = receive_target(r, "handle");
  Opened o = open_target(r, HandleKind::physical, t.handle.bytes, t.handle.fd.get());
  r.skip_if_unsupported(o.outcome, "physical open");
  // Before the kill it is a plain round trip, judged as one.
  r.require_ok(o.outcome, kRoundtrip, "phys_open before the producer's death");
  PhysicalView view = map_physical(r, o.object.get(), t.bytes, kRoundtrip);
  r.require(verify(r, view.ptr(), t.bytes, kSeed, kRoundtrip, "the mapping before the producer's death"), kRoundtrip,
            "the mapping shows the producer's bytes before its death");
  r.kill("producer");
  r.note("producer ended: " + r.wait_exit("producer"));
  observe_after_death(r, "robustness.producer.crash.physical", view.ptr(), t.bytes);
  r.check_ok(view.mapping.reset(), kProducerCrash, "vm_unmap of the mapping after the producer's death");
  r.check_ok(o.object.reset(), kProducerCrash, "phys_close of the object after the producer's death");
}

void physical_witness(Role& r) {
  const std::string how = r.wait_exit("holder");
  if (how.rfind("signal", 0) == 0) {
    r.note("the holder died using its physical mapping after the producer's death: " + how);
    r.observe("robustness.producer.crash.physical.mapping", "crash", kProducerCrash);
  }
}

IPCHECK_CASE(Case("robustness.producer.crash.physical",
                  "Observes a mapping of an opened physical object after its exporter is killed; unmap and close still work")
                 .clauses({kProducerCrash, kRoundtrip})
                 .expendable("holder")
                 .role("producer", doomed_physical)
                 .role("holder", physical_holder)
                 .role("witness", physical_witness));

}  // namespace
}  // namespace ipcheck::catalog::robustness_crash
