// rb.concurrent.open: eight consumers open, check and close one handle at the same time,
// then each writes its own page through it; data is right everywhere and nothing leaks.
#include "kinds.hpp"

namespace ipcheck::catalog::robustness_concurrent {
namespace {

constexpr const char* kClause = "rb.concurrent.open";
constexpr int kConsumers = 8;
constexpr int kRounds = 25;
constexpr std::size_t kBytes = kConsumers * kPage;
constexpr std::uint64_t kSeed = 0xcc00;

void producer(Role& r) {
  Owned mem = alloc_filled(r, kBytes, kSeed, kClause);
  Exported h;
  Owned exported = export_memory(r, mem.get(), h, kClause);
  for (int i = 0; i < kConsumers; ++i) r.send_handle("consumer" + std::to_string(i), "handle", h);
  r.barrier("go");
  r.barrier("looped");
  r.barrier("written");
  for (int i = 0; i < kConsumers; ++i)
    verify(r, mem.get() + i * kPage, kPage, kSeed + 1 + i, kClause,
           "page " + std::to_string(i) + " holds consumer" + std::to_string(i) + "'s write");
  r.barrier("checked");
  r.barrier("closed");  // the memory outlives every mapping
}

void consumer(Role& r) {
  const int me = r.index();
  Received h = r.receive("handle");
  const ResourceCount before = count_resources();
  r.barrier("go");
  // All at once: each round opens, checks this consumer's page and closes.
  int failures = 0, wrong = 0;
  std::string first;
  Evidence by = Evidence::tally();
  for (int round = 0; round < kRounds; ++round) {
    auto res = r.adapter().mem_open(h.bytes, h.fd.get(), 0);
    by.with(res.outcome);
    if (!res.ok()) {
      if (!failures++) first = "open #" + std::to_string(round) + ": " + res.outcome.describe();
      continue;
    }
    Owned mapped = Owned::mapping(r.adapter(), res.value);
    const Seen right = holds(r, mapped.get() + me * kPage, kPage, kSeed, me * kPage);
    by.with(right.by);
    if (!right) ++wrong;
    const Outcome c = mapped.reset();
    by.with(c);
    if (!c.ok() && !failures++) first = "close #" + std::to_string(round) + ": " + c.describe();
  }
  r.check(failures == 0, by, kClause,
          std::to_string(kRounds) + " concurrent opens and closes, " + std::to_string(failures) + " failed" +
              (first.empty() ? "" : " (first: " + first + ")"));
  r.check(wrong == 0, by, kClause, std::to_string(wrong) + " of " + std::to_string(kRounds) + " mappings read wrong data");
  Owned mapped = open_received(r, h, kClause, "mem_open for the write");
  r.barrier("looped");
  fill(r, mapped.get() + me * kPage, kPage, kSeed + 1 + me, kClause, "write this consumer's page");
  r.barrier("written");
  r.barrier("checked");
  // Every consumer's page, written concurrently, reads back through this mapping too.
  for (int i = 0; i < kConsumers; ++i)
    verify(r, mapped.get() + i * kPage, kPage, kSeed + 1 + i, kClause, "page " + std::to_string(i) + " seen by consumer" + std::to_string(me));
  r.check_ok(mapped.reset(), kClause, "mem_close");
  r.barrier("closed");
  check_no_growth(r, before, count_resources(), kClause, "after the concurrent opens and closes");
}

IPCHECK_CASE(Case("robustness.concurrent.open",
                  "Eight consumers open, check and close one handle 25 times at once, then write their own pages")
                 .clause(kClause)
                 .role("producer", producer)
                 .roles("consumer", kConsumers, consumer));

}  // namespace
}  // namespace ipcheck::catalog::robustness_concurrent
