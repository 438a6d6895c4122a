// The case whose cost `ipcheck bench` reports as the harness's overhead per two-role case:
// the smallest body that still goes through every part of a real case (two role processes,
// hello and start, a message relayed by the runner, a judged check, a barrier, the audit).
// Hidden: never listed or run with the catalog; only the harness benchmark names it.
#include "ipcheck/case.hpp"

namespace ipcheck::bench {
namespace {

std::vector<std::byte> greeting() {
  const char text[] = "hello";
  const auto* p = reinterpret_cast<const std::byte*>(text);
  return {p, p + sizeof text - 1};
}

// The clause is the harness's own (profile "harness"), judged but never part of the catalog.
IPCHECK_CASE(Case("bench.two_roles", "Two roles exchange a message and meet at a barrier (harness overhead)")
                 .hidden()
                 .clause("harness.bench.two_roles")
                 .role("producer",
                       [](Role& r) {
                         r.send("consumer", "greeting", greeting());
                         r.barrier("met");
                       })
                 .role("consumer", [](Role& r) {
                   const Received m = r.receive("greeting");
                   r.check(m.bytes == greeting(), "harness.bench.two_roles", "the greeting arrived intact");
                   r.barrier("met");
                 }));

}  // namespace
}  // namespace ipcheck::bench
