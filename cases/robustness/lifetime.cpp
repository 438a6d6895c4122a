// Handles outliving what they name: the exporter exited, the allocation freed, the export
// put; and a reallocation exported again must never be served from a stale mapping. The
// first three run cold and after one valid open of the export in the same consumer (warm:
// closed again; held: still open while the exporter exits, frees or puts): a runtime that
// remembers an export must not answer from what it remembered.
#include "kinds.hpp"

namespace ipcheck::catalog::robustness_lifetime {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kSeed = 0x11fe;  // odd: a signaled event

// --- rb.open.exporter_gone, for every kind of handle.

void gone_producer(Role& r, HandleKind kind) {
  Target t = export_target(r, kind, kSeed, kExporterGone);
  send_target(r, "consumer", "handle", t);
  receive_text(r, "received");
  // Returns: its objects are put and freed and the process exits.
}

void gone_consumer(Role& r, HandleKind kind, Cache cache) {
  ReceivedTarget t = receive_target(r, "handle");
  Opened held = warm_up(r, cache, kind, t.handle.bytes, t.handle.fd.get(), t.bytes, kSeed, kExporterGone);
  send_text(r, "producer", "received", "");
  const std::string how = r.wait_exit("producer");
  const auto t0 = Clock::now();
  Opened o = open_target(r, kind, t.handle.bytes, t.handle.fd.get());
  const auto took = Clock::now() - t0;
  r.skip_if_unsupported(o.outcome, std::string(kind_name(kind)) + " open");
  // Whichever way the descriptor travelled (fetched, or passed by SCM_RIGHTS and still held).
  check_clean_refusal(r, o.outcome, kExporterGone,
                      std::string(kind_name(kind)) + " open after the exporter ended (" + how + ")" +
                          (t.handle.fd ? ", its descriptor passed along" : "") + cache_words(cache),
                      std::string("robustness.open.exporter_gone.") + kind_name(kind));
  r.check(took < kPromptAfterDeath, Evidence::of(o.outcome), kExporterGone, "the open returned after " + ms(took));
}

void register_exporter_gone() {
  for (Cache cache : {Cache::cold, Cache::warm, Cache::held})
    for (HandleKind kind : {HandleKind::memory, HandleKind::physical, HandleKind::event}) {
      const std::string name = kind_name(kind);
      register_case(Case("robustness.open.exporter_gone." + name + cache_suffix(cache),
                         "Opening a " + name + " handle after its exporter exited is refused cleanly (code observed), "
                         "within 1 s" + cache_words(cache))
                        .clause(kExporterGone)
                        .role("producer", [kind](Role& r) { gone_producer(r, kind); })
                        .role("consumer", [kind, cache](Role& r) { gone_consumer(r, kind, cache); })
                        .def);
    }
}

IPCHECK_CASE(register_exporter_gone);

// --- rb.open.after_free: the export is still live (never put) when its memory is freed.
constexpr const char* kFreed = "rb.open.after_free";

void freed_producer(Role& r, Cache cache) {
  Owned mem = alloc_filled(r, kPage, kSeed, kFreed);
  Exported h;
  Owned exported = export_memory(r, mem.get(), h, kFreed);
  r.send_handle("consumer", "handle", h);
  if (cache != Cache::cold) receive_text(r, "opened");
  {
    SetupSteps setup(r);
    r.check_ok(mem.reset(), kFreed, "free while the export is live");
  }
  // The export's own end after the free: the API may or may not want it; recorded only.
  r.note("mem_put after the free: " + exported.reset().describe());
  send_text(r, "consumer", "freed", "");
  r.barrier("consumer-done");
}

void freed_consumer(Role& r, Cache cache) {
  Received h = r.receive("handle");
  Opened held = warm_up(r, cache, HandleKind::memory, h.bytes, h.fd.get(), kPage, kSeed, kFreed);
  if (cache != Cache::cold) send_text(r, "producer", "opened", "");
  receive_text(r, "freed");
  const auto t0 = Clock::now();
  auto res = r.adapter().mem_open(h.bytes, h.fd.get(), 0);
  const auto took = Clock::now() - t0;
  Owned mapped = keep_mapping(r, res);
  if (!res.ok()) r.native_error("mem_open after the free", res.outcome);
  r.check(!res.ok(), Evidence::of(res.outcome), kFreed,
          (res.ok() ? std::string("mem_open after the exporter freed the allocation succeeded") +
                          (holds(r, mapped.get(), kPage, kSeed) ? ", mapping the freed memory" : "")
                    : "mem_open after the free refused with " + res.outcome.describe()) +
              cache_words(cache));
  r.check(took < kPromptAfterDeath, Evidence::of(res.outcome), kFreed, "the open returned after " + ms(took));
  r.barrier("consumer-done");
}

void register_after_free() {
  for (Cache cache : {Cache::cold, Cache::warm, Cache::held})
    register_case(Case("robustness.open.after_free" + cache_suffix(cache),
                       "Opening a handle whose allocation the exporter freed fails cleanly" + cache_words(cache))
                      .clause(kFreed)
                      .role("producer", [cache](Role& r) { freed_producer(r, cache); })
                      .role("consumer", [cache](Role& r) { freed_consumer(r, cache); })
                      .def);
}

IPCHECK_CASE(register_after_free);

// --- rb.realloc.fresh: the consumer keeps the first mapping open while the producer frees,
// reallocates (often the same address and descriptor number) and exports again; after each
// round's open it reads every earlier mapping again (a cache that closed or replaced a live
// mapping under an earlier open shows there, not in the new open).
constexpr const char* kFresh = "rb.realloc.fresh";
constexpr int kRounds = 4;

void fresh_producer(Role& r) {
  for (int round = 0; round < kRounds; ++round) {
    Owned mem = alloc_filled(r, kPage, kSeed + 2 * round, kFresh);
    Exported h;
    Owned exported = export_memory(r, mem.get(), h, kFresh);
    r.note("round " + std::to_string(round) + ": allocation at " + hex(mem.get()));
    r.send_handle("consumer", "round" + std::to_string(round), h);
    receive_text(r, "opened" + std::to_string(round));
    // Put and free (members end in reverse), then the next round allocates again.
  }
  r.barrier("consumer-done");
}

// After round `round`'s open, every earlier mapping still shows its own round's bytes, or
// is refused (a read that fails: its memory was freed and the runtime says so); never a
// later round's: a cache that closed or replaced a live mapping under an earlier open.
void recheck_earlier(Role& r, const std::vector<Owned>& mappings, int round) {
  for (int earlier = 0; earlier < round; ++earlier) {
    const std::string what = "after round " + std::to_string(round) + "'s open, round " + std::to_string(earlier) +
                             "'s mapping";
    std::vector<std::byte> got(kPage);
    const Outcome o = r.adapter().read(mappings[earlier].get(), got);
    if (!o.ok()) {
      r.note(what + " is refused: " + o.describe());
      continue;
    }
    if (first_mismatch(got, kSeed + 2 * earlier) == static_cast<std::size_t>(-1)) {
      r.check(true, Evidence::of(o), kFresh, what + " still shows its own round's bytes");
      continue;
    }
    int later = -1;
    for (int k = earlier + 1; k <= round && later < 0; ++k)
      if (first_mismatch(got, kSeed + 2 * k) == static_cast<std::size_t>(-1)) later = k;
    r.check(false, Evidence::of(o), kFresh,
            later >= 0 ? what + " now shows round " + std::to_string(later) +
                             "'s bytes: a later open replaced a live mapping under it"
                       : what + " holds neither its own round's bytes nor a later one's (corrupt or foreign memory)");
  }
}

void fresh_consumer(Role& r) {
  std::vector<Owned> mappings;  // every mapping stays open while the producer reallocates
  Evidence pointers = Evidence::tally();
  for (int round = 0; round < kRounds; ++round) {
    Received h = r.receive("round" + std::to_string(round));
    mappings.push_back(open_received(r, h, kFresh, "mem_open, round " + std::to_string(round), pointers));
    verify(r, mappings.back().get(), kPage, kSeed + 2 * round, kFresh,
           "round " + std::to_string(round) + " maps the new allocation's contents");
    for (int earlier = 0; earlier < round; ++earlier)
      r.check(mappings[earlier].get() != mappings.back().get(), pointers, kFresh,
              "round " + std::to_string(round) + " got a pointer apart from round " + std::to_string(earlier) + "'s");
    recheck_earlier(r, mappings, round);
    send_text(r, "producer", "opened" + std::to_string(round), "");
  }
  for (int round = 0; round < kRounds; ++round)
    r.check_ok(mappings[round].reset(), kFresh, "mem_close, round " + std::to_string(round));
  r.barrier("consumer-done");
}

IPCHECK_CASE(Case("robustness.realloc.fresh",
                  "Free, reallocate and export again four times while old mappings stay open: each open shows the new data")
                 .clause(kFresh)
                 .role("producer", fresh_producer)
                 .role("consumer", fresh_consumer));

// --- rb.put.revokes, for every kind: after put the same bytes no longer open, and the
// object itself exports again.
constexpr const char* kRevokes = "rb.put.revokes";

void revokes_producer(Role& r, HandleKind kind, Cache cache) {
  Target t = export_target(r, kind, kSeed, kRevokes);
  r.send_handle("consumer", "put", t.handle);
  send_text(r, "consumer", "size", std::to_string(t.bytes));
  if (cache != Cache::cold) receive_text(r, "opened");
  put_or_skip(r, t.exported, kRevokes, "put");
  Exported again;
  Owned exported_again;
  switch (kind) {
    case HandleKind::memory: exported_again = export_memory(r, t.object.get(), again, kRevokes); break;
    case HandleKind::physical: exported_again = export_physical(r, t.object.get(), again, kRevokes); break;
    case HandleKind::event: exported_again = export_event(r, t.object.get(), again, kRevokes); break;
  }
  r.send_handle("consumer", "fresh", again);
  r.barrier("consumer-done");
}

void revokes_consumer(Role& r, HandleKind kind, Cache cache) {
  Received stale = r.receive("put");
  const std::size_t bytes = std::stoull(receive_text(r, "size"));
  Opened held = warm_up(r, cache, kind, stale.bytes, stale.fd.get(), bytes, kSeed, kRevokes);
  if (cache != Cache::cold) send_text(r, "producer", "opened", "");
  Received fresh = r.receive("fresh");
  Opened o = open_target(r, kind, stale.bytes, stale.fd.get());
  r.check_error(o.outcome, Errc::invalid, kRevokes,
                std::string(kind_name(kind)) + " open of the bytes of a put handle" + cache_words(cache));
  Opened ok = open_target(r, kind, fresh.bytes, fresh.fd.get());
  r.check_ok(ok.outcome, kRevokes, std::string(kind_name(kind)) + " open of the object's export after the put");
  if (ok.outcome.ok())
    r.check(is_target(r, kind, ok.object.get(), bytes, kSeed), kRevokes, "the new export maps the same object");
  r.barrier("consumer-done");
}

void register_revokes() {
  for (Cache cache : {Cache::cold, Cache::warm, Cache::held})
    for (HandleKind kind : {HandleKind::memory, HandleKind::physical, HandleKind::event}) {
      const std::string name = kind_name(kind);
      register_case(Case("robustness.put.revokes." + name + cache_suffix(cache),
                         "The bytes of a put " + name + " handle no longer open; a new export of the object does" +
                             cache_words(cache))
                        .clause(kRevokes)
                        .needs(needs_verb(put_verb(kind), "put"))
                        .role("producer", [kind, cache](Role& r) { revokes_producer(r, kind, cache); })
                        .role("consumer", [kind, cache](Role& r) { revokes_consumer(r, kind, cache); })
                        .def);
    }
}

IPCHECK_CASE(register_revokes);

}  // namespace
}  // namespace ipcheck::catalog::robustness_lifetime
