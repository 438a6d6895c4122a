// Stress, rb.concurrent.open at scale: 32 consumers open and close one handle `cycles`
// times each (--param cycles=N, 1000 by default), all at once. Each consumer owns one page
// of the allocation: every cycle's fresh mapping must show what the previous cycle wrote
// through the previous mapping, and the shared page the producer wrote. Nothing grows.
#include "stress.hpp"

namespace ipcheck::catalog::stress_open_close {
namespace {

constexpr const char* kClause = "rb.concurrent.open";
constexpr int kConsumers = 32;
constexpr std::size_t kShared = kConsumers;  // the page index every consumer reads
constexpr std::size_t kBytes = (kConsumers + 1) * kPage;
constexpr std::uint64_t kSeed = 0x5c00, kConsumerSeed = 0x5d00;

// The pattern consumer `me` writes into its page at cycle `k`.
std::uint64_t seed_of(int me, long k) { return kConsumerSeed + static_cast<std::uint64_t>(me) * 1'000'003u + k; }

void producer(Role& r) {
  const long cycles = count_param(r, "cycles", 1000);
  Owned mem = alloc_filled(r, kBytes, kSeed, kClause);
  Exported h;
  Owned exported = export_memory(r, mem.get(), h, kClause);
  for (int i = 0; i < kConsumers; ++i) r.send_handle("consumer" + std::to_string(i), "handle", h);
  r.barrier("go");
  r.barrier("looped");
  // Each page holds its consumer's last write, made through its last mapping.
  int wrong = 0;
  Evidence by = Evidence::tally();
  for (int i = 0; i < kConsumers; ++i) {
    const Seen held = holds(r, mem.get() + i * kPage, kPage, seed_of(i, cycles - 1));
    by.with(held.by);
    wrong += !held.value;
  }
  r.check(wrong == 0, by, kClause,
          std::to_string(kConsumers - wrong) + " of " + std::to_string(kConsumers) +
              " pages hold their consumer's write of cycle " + std::to_string(cycles));
  verify(r, mem.get() + kShared * kPage, kPage, kSeed, kClause, "the shared page after every cycle", kShared * kPage);
}

void consumer(Role& r) {
  const long cycles = count_param(r, "cycles", 1000);
  const int me = r.index();
  const DevPtr mine = static_cast<DevPtr>(me) * kPage;
  Received h = r.receive("handle");
  GrowthWatch watch;
  r.barrier("go");
  long failures = 0, wrong = 0;
  std::string first, first_wrong;
  Evidence by = Evidence::tally();
  for (long k = 0; k < cycles; ++k) {
    auto res = r.adapter().mem_open(h.bytes, h.fd.get(), 0);
    by.with(res.outcome);
    if (!res.ok()) {
      if (!failures++) first = "open #" + std::to_string(k + 1) + ": " + res.outcome.describe();
      continue;
    }
    Owned mapped = Owned::mapping(r.adapter(), res.value);
    // The previous cycle's write (or the producer's fill) reached the object; the shared
    // page is intact. Then this cycle's write, through this mapping.
    const Seen mine_seen = k == 0 ? holds(r, mapped.get() + mine, kPage, kSeed, mine)
                                  : holds(r, mapped.get() + mine, kPage, seed_of(me, k - 1));
    const Seen shared_seen = holds(r, mapped.get() + kShared * kPage, kPage, kSeed, kShared * kPage);
    by.with(mine_seen.by).with(shared_seen.by);
    const bool mine_ok = mine_seen.value, shared_ok = shared_seen.value;
    if ((!mine_ok || !shared_ok) && !wrong++)
      first_wrong = "cycle " + std::to_string(k + 1) + ": " + (mine_ok ? "the shared page" : "this consumer's page") +
                    " reads wrong";
    if (!r.adapter().write(mapped.get() + mine, pattern(seed_of(me, k), kPage)).ok() && !failures++)
      first = "write #" + std::to_string(k + 1);
    const Outcome c = mapped.reset();
    by.with(c);
    if (!c.ok() && !failures++) first = "close #" + std::to_string(k + 1) + ": " + c.describe();
    if ((k + 1) % 100 == 0) watch.sample("after cycle " + std::to_string(k + 1));
    progress(r, k + 1, cycles, 250, "open/close cycles");
  }
  r.check(failures == 0, by, kClause,
          std::to_string(cycles) + " open/write/close cycles alongside " + std::to_string(kConsumers - 1) +
              " other consumers, " + std::to_string(failures) + " failed" + (first.empty() ? "" : " (first: " + first + ")"));
  r.check(wrong == 0, by, kClause,
          std::to_string(wrong) + " of " + std::to_string(cycles) + " mappings read wrong data" +
              (first_wrong.empty() ? "" : " (first: " + first_wrong + ")"));
  watch.check(r, kClause, std::to_string(cycles) + " cycles");
  r.barrier("looped");
}

IPCHECK_CASE(Case("stress.open_close",
                  "32 consumers open, check, write and close one handle 1000 times each (--param cycles=N), all at once")
                 .param("cycles", 100000)
                 .hidden()
                 .clause(kClause)
                 .timeout(600)
                 .role("producer", producer)
                 .roles("consumer", kConsumers, consumer));

}  // namespace
}  // namespace ipcheck::catalog::stress_open_close
