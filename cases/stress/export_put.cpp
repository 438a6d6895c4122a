// Stress, exports without end: `cycles` get/put cycles on one allocation (--param
// cycles=N, 10000 by default), far more than an object has export slots, so a put that
// does not give its slot back runs out. Every `every`-th export (--param every=N, 10)
// crosses to the consumer: it opens and reads fresh data through it, and after the put
// the same bytes no longer open (rb.put.revokes). Nothing grows on either side.
#include "stress.hpp"

namespace ipcheck::catalog::stress_export_put {
namespace {

constexpr const char* kClause = "rb.put.revokes";
constexpr std::size_t kPages = 16;
constexpr std::uint64_t kSeed = 0xe900;

// The consumer's answers carry who decided them: "<answer>\n<runtime|adapter>".
std::string with_decider(const std::string& answer, const Outcome& o) {
  return answer + "\n" + (o.from_runtime() ? "runtime" : "adapter");
}
std::string answer_of(const std::string& text, Evidence& by) {
  const auto nl = text.find('\n');
  if (nl != std::string::npos && text.substr(nl + 1) != "runtime") by.with(Evidence::adapter());
  return text.substr(0, nl);
}

// Export number `i` that crosses shows pattern(seed_of(i)) in page page_of(i).
std::uint64_t seed_of(long i) { return kSeed + 1 + static_cast<std::uint64_t>(i); }
std::size_t page_of(long i, long every) { return static_cast<std::size_t>(i / every) % kPages; }
long crossings(long cycles, long every) { return (cycles + every - 1) / every; }

void producer(Role& r) {
  const long cycles = count_param(r, "cycles", 10000), every = count_param(r, "every", 10);
  Owned mem = alloc_filled(r, kPages * kPage, kSeed, kClause);
  GrowthWatch watch;
  long failures = 0, opened = 0, refused = 0;
  std::string first;
  Evidence by = Evidence::tally(), crossing = Evidence::tally();
  for (long i = 0; i < cycles; ++i) {
    auto res = r.adapter().mem_get(mem.get());
    by.with(res.outcome);
    r.skip_if_unsupported(res.outcome, "mem_get");
    if (!res.ok()) {
      if (!failures++) first = "get #" + std::to_string(i + 1) + ": " + res.outcome.describe();
      continue;
    }
    Owned exported = Owned::mem_export(r.adapter(), res.value.id);
    const bool crosses = i % every == 0;
    if (crosses) {
      const std::size_t page = page_of(i, every);
      fill(r, mem.get() + page * kPage, kPage, seed_of(i), kClause, "write page " + std::to_string(page));
      r.send_handle("consumer", "handle", res.value);
      const std::string answer = answer_of(receive_text(r, "opened"), crossing);
      if (answer == "ok") ++opened;
      else if (!failures++) first = "export #" + std::to_string(i + 1) + " in the consumer: " + answer;
    }
    const Outcome put = exported.reset();
    by.with(put);
    if (put.code == Errc::not_implemented) r.skip("mem_put: " + put.describe());
    if (!put.ok() && !failures++) first = "put #" + std::to_string(i + 1) + ": " + put.describe();
    if (crosses) {
      send_text(r, "consumer", "put", "");
      const std::string stale = answer_of(receive_text(r, "stale"), crossing);
      if (stale == errc_name(Errc::invalid)) ++refused;
      else if (!failures++) first = "the bytes of put export #" + std::to_string(i + 1) + " opened again: " + stale;
    }
    if ((i + 1) % 500 == 0) watch.sample("after cycle " + std::to_string(i + 1));
    progress(r, i + 1, cycles, 2000, "export/put cycles");
  }
  const long crossed = crossings(cycles, every);
  r.check(failures == 0, by, kClause,
          std::to_string(cycles) + " get/put cycles, " + std::to_string(failures) + " failed" +
              (first.empty() ? "" : " (first: " + first + ")"));
  r.check(opened == crossed && refused == crossed, crossing, kClause,
          std::to_string(opened) + " of " + std::to_string(crossed) + " exports opened in the consumer with fresh data, " +
              std::to_string(refused) + " of them refused (invalid) once put");
  watch.check(r, kClause, "the producer after " + std::to_string(cycles) + " exports");
  r.check_ok(mem.reset(), kClause, "free after every export was put");
}

void consumer(Role& r) {
  const long cycles = count_param(r, "cycles", 10000), every = count_param(r, "every", 10);
  const long crossed = crossings(cycles, every);
  GrowthWatch watch;
  for (long j = 0; j < crossed; ++j) {
    const long i = j * every;
    Received h = r.receive("handle");
    {
      auto res = r.adapter().mem_open(h.bytes, h.fd.get(), 0);
      Owned mapped = keep_mapping(r, res);
      std::string answer = res.ok() ? "ok" : "open failed: " + res.outcome.describe();
      const std::size_t page = page_of(i, every);
      if (res.ok() && !holds(r, mapped.get() + page * kPage, kPage, seed_of(i)))
        answer = "page " + std::to_string(page) + " does not hold what the producer wrote before this export";
      const Outcome c = mapped.reset();
      if (answer == "ok" && !c.ok()) answer = "close failed: " + c.describe();
      send_text(r, "producer", "opened", with_decider(answer, res.outcome));
    }
    receive_text(r, "put");
    auto again = r.adapter().mem_open(h.bytes, h.fd.get(), 0);
    Owned kept = keep_mapping(r, again);
    send_text(r, "producer", "stale", with_decider(outcome_word(again.outcome), again.outcome));
    kept.reset();
    h.fd.reset();
    if ((j + 1) % 50 == 0) watch.sample("after export " + std::to_string(i + 1));
  }
  watch.check(r, kClause, "the consumer after " + std::to_string(crossed) + " opens and stale opens");
}

IPCHECK_CASE(Case("stress.export_put",
                  "10000 get/put cycles on one allocation (--param cycles=N); every 10th export opens in a consumer, then is refused once put")
                 .param("cycles", 1000000)
                 .param("every", 1000000)
                 .hidden()
                 .clause(kClause)
                 .timeout(600)
                 .role("producer", producer)
                 .role("consumer", consumer));

}  // namespace
}  // namespace ipcheck::catalog::stress_export_put
