// rb.open.cross_kind: a handle of one kind (memory, physical, event) given to another
// kind's open is refused with invalid, in every direction; it never opens.
#include <map>

#include "kinds.hpp"

namespace ipcheck::catalog::robustness_cross_kind {
namespace {

constexpr const char* kClause = "rb.open.cross_kind";
constexpr std::uint64_t kSeed = 0xc0de;  // odd: a signaled event
constexpr HandleKind kKinds[] = {HandleKind::memory, HandleKind::physical, HandleKind::event};

// Exports one target of every kind the adapter has; a kind it lacks is named, not fatal.
void producer(Role& r) {
  std::vector<Target> targets;
  std::string available, why;
  for (HandleKind k : kKinds) {
    if (auto t = try_export_target(r, k, kSeed, kClause, why)) {
      targets.push_back(std::move(*t));
      available += std::string(available.empty() ? "" : ",") + kind_name(k);
    } else {
      r.note("not exported: " + why);
    }
  }
  send_text(r, "consumer", "kinds", available);
  for (const Target& t : targets) send_target(r, "consumer", kind_name(t.kind), t);
  r.barrier("consumer-done");
}

void consumer(Role& r) {
  const std::string available = receive_text(r, "kinds");
  std::map<HandleKind, ReceivedTarget> handles;
  for (HandleKind k : kKinds)
    if (available.find(kind_name(k)) != std::string::npos) handles.emplace(k, receive_target(r, kind_name(k)));
  if (handles.size() < 2) r.skip("cross-kind opens need two kinds of handle; this adapter exports only " + available);
  std::size_t judged = 0;
  for (const auto& [from, h] : handles)
    for (HandleKind as : kKinds) {
      if (as == from) continue;
      const std::string what = std::string("a ") + kind_name(from) + " handle opened as " + kind_name(as);
      r.note("opening " + what);  // a crash's last line names the direction
      Opened o = open_target(r, as, h.handle.bytes, h.handle.fd.get());
      if (o.outcome.code == Errc::not_implemented) {
        r.note(what + ": " + o.outcome.describe());
        continue;
      }
      ++judged;
      r.check_error(o.outcome, Errc::invalid, kClause, what);
      r.observe("robustness.open.cross_kind." + std::string(kind_name(from)) + "_as_" + kind_name(as),
                o.outcome.ok() ? "opened" : outcome_word(o.outcome) + (o.outcome.native_name.empty() ? "" : " " + o.outcome.native_name));
    }
  if (judged == 0) r.skip("no cross-kind open could be made: every open verb but its own kind's is missing");
  // The real handles still open as their own kind: the refusals were about the kind.
  SetupSteps setup(r);
  for (const auto& [kind, h] : handles) {
    Opened o = open_target(r, kind, h.handle.bytes, h.handle.fd.get());
    r.require_ok(o.outcome, kClause, std::string("the ") + kind_name(kind) + " handle opens as " + kind_name(kind));
  }
  r.barrier("consumer-done");
}

IPCHECK_CASE(Case("robustness.open.cross_kind",
                  "Memory, physical and event handles given to each other kind's open are refused with invalid")
                 .clause(kClause)
                 .events()
                 .role("producer", producer)
                 .role("consumer", consumer));

}  // namespace
}  // namespace ipcheck::catalog::robustness_cross_kind
