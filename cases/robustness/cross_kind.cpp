// rb.open.cross_kind: a handle of one kind (memory, physical, event) given to another
// kind's open is refused with invalid, in every direction; it never opens, as it is or with
// its kind field relabelled (where ipcheck knows the layout). Cold, and after one valid
// open of each handle as its own kind (warm: closed again; held: still open).
#include <map>

#include "forge.hpp"
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

// A handle of kind `from` with its kind field set to `as`'s value (the checksum made valid),
// where ipcheck knows both layouts' kind field: it passes a kind check made on the bytes, so
// only what the runtime knows of the exported object can tell it. Empty where it cannot be made.
std::vector<std::byte> relabelled(Role& r, const ReceivedTarget& from, HandleKind from_kind, const ReceivedTarget& as,
                                  HandleKind as_kind) {
  const HandleLayout* lf = known_layout(r, kind_name(from_kind), from.handle.bytes.size());
  const HandleLayout* la = known_layout(r, kind_name(as_kind), as.handle.bytes.size());
  if (!lf || !la || lf->find(FieldRole::kind) < 0 || la->find(FieldRole::kind) < 0 || lf->name != la->name) return {};
  std::vector<std::byte> b = from.handle.bytes;
  if (!forge_field(*lf, b, FieldRole::kind, field_value(*la, as.handle.bytes, FieldRole::kind)) ||
      b == from.handle.bytes)
    return {};
  return b;
}

void consumer(Role& r, Cache cache) {
  const std::string available = receive_text(r, "kinds");
  std::map<HandleKind, ReceivedTarget> handles;
  for (HandleKind k : kKinds)
    if (available.find(kind_name(k)) != std::string::npos) handles.emplace(k, receive_target(r, kind_name(k)));
  if (handles.size() < 2) r.skip("cross-kind opens need two kinds of handle; this adapter exports only " + available);
  // Warm: each real handle opened once as its own kind first (and kept open, held).
  std::vector<Opened> held;
  for (const auto& [kind, h] : handles)
    held.push_back(warm_up(r, cache, kind, h.handle.bytes, h.handle.fd.get(), h.bytes, kSeed, kClause));
  std::size_t judged = 0;
  for (const auto& [from, h] : handles)
    for (HandleKind as : kKinds) {
      if (as == from) continue;
      struct Attempt {
        std::string what;
        std::vector<std::byte> bytes;
      };
      std::vector<Attempt> attempts{{std::string("a ") + kind_name(from) + " handle opened as " + kind_name(as),
                                     h.handle.bytes}};
      if (auto it = handles.find(as); it != handles.end())
        if (auto b = relabelled(r, h, from, it->second, as); !b.empty())
          attempts.push_back({std::string("a ") + kind_name(from) + " handle relabelled " + kind_name(as) +
                                  " (kind field, checksum valid) opened as " + kind_name(as),
                              std::move(b)});
      for (const auto& a : attempts) {
        r.note("opening " + a.what);  // a crash's last line names the direction
        Opened o = open_target(r, as, a.bytes, h.handle.fd.get());
        if (o.outcome.code == Errc::not_implemented) {
          r.note(a.what + ": " + o.outcome.describe());
          continue;
        }
        ++judged;
        r.check_error(o.outcome, Errc::invalid, kClause, a.what + cache_words(cache));
        if (&a == &attempts.front())
          r.observe("robustness.open.cross_kind." + std::string(kind_name(from)) + "_as_" + kind_name(as),
                    o.outcome.ok() ? "opened"
                                   : outcome_word(o.outcome) +
                                         (o.outcome.native_name.empty() ? "" : " " + o.outcome.native_name));
      }
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

void register_cross_kind() {
  for (Cache cache : {Cache::cold, Cache::warm, Cache::held})
    register_case(Case("robustness.open.cross_kind" + cache_suffix(cache),
                       "Memory, physical and event handles given to each other kind's open, as they are and "
                       "relabelled, are refused with invalid" + cache_words(cache))
                      .clause(kClause)
                      .events()
                      .role("producer", producer)
                      .role("consumer", [cache](Role& r) { consumer(r, cache); })
                      .def);
}

IPCHECK_CASE(register_cross_kind);

}  // namespace
}  // namespace ipcheck::catalog::robustness_cross_kind
