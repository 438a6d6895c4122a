// rb.open.input_unchanged: an open leaves its input as it was handed over, for every kind.
// The consumer keeps a copy of the handle bytes it received, opens, and compares afterwards
// what the runtime was handed: the caller's bytes themselves, or, where the adapter passes
// the runtime something else (ur: a copy of the bytes; ze's physical import: a descriptor of
// its own), that (Adapter::last_open_input). A runtime that writes into its input corrupts a
// handle its caller may open again, or pass on to another process.
#include "kinds.hpp"

namespace ipcheck::catalog::robustness_input_unchanged {
namespace {

constexpr const char* kClause = "rb.open.input_unchanged";
constexpr std::uint64_t kSeed = 0x1c01;  // odd: a signaled event

const char* open_verb(HandleKind k) {
  switch (k) {
    case HandleKind::memory: return "mem_open";
    case HandleKind::physical: return "phys_open";
    case HandleKind::event: return "event_open";
  }
  return "unknown";
}

std::string hex_byte(std::byte b) {
  static constexpr char kDigits[] = "0123456789abcdef";
  const auto v = static_cast<unsigned>(b);
  return std::string("0x") + kDigits[v >> 4] + kDigits[v & 0xf];
}

// "" when `now` equals `before`, else where and how it differs.
std::string difference(std::span<const std::byte> before, std::span<const std::byte> now) {
  if (before.size() != now.size())
    return "it is " + std::to_string(now.size()) + " bytes now, " + std::to_string(before.size()) + " when handed over";
  std::size_t first = before.size(), count = 0;
  for (std::size_t k = 0; k < before.size(); ++k)
    if (before[k] != now[k]) {
      if (first == before.size()) first = k;
      ++count;
    }
  if (count == 0) return {};
  return std::to_string(count) + " of its " + std::to_string(before.size()) + " bytes changed, the first at offset " +
         std::to_string(first) + " (" + hex_byte(before[first]) + " became " + hex_byte(now[first]) + ")";
}

void producer(Role& r, HandleKind kind) {
  Target t = export_target(r, kind, kSeed, kClause);
  send_target(r, "consumer", "handle", t);
  r.barrier("consumer-done");
}

void consumer(Role& r, HandleKind kind) {
  ReceivedTarget t = receive_target(r, "handle");
  const std::vector<std::byte> received = t.handle.bytes;  // the bytes as they came
  // The open is given t.handle.bytes themselves: the buffer an adapter that passes the
  // caller's bytes hands the runtime.
  Opened o = open_target(r, kind, t.handle.bytes, t.handle.fd.get());
  const char* verb = open_verb(kind);
  const Adapter::OpenInput in = r.adapter().last_open_input(verb, t.handle.bytes);
  const std::string what = in.what.empty() ? "the handle bytes given to " + std::string(verb) : in.what;
  const std::string diff = difference(in.handed.empty() ? std::span<const std::byte>(received) : in.handed, in.now);
  r.check(diff.empty(), Evidence::of(o.outcome), kClause,
          what + (diff.empty() ? " read as handed over after the " : ": " + diff + " by the ") +
              (o.outcome.ok() ? "successful " : "refused ") + verb +
              (o.outcome.ok() ? std::string() : " (" + o.outcome.describe() + ")"));
  // The open itself is the set-up this check stands on: the export must open and be itself.
  SetupSteps setup(r);
  r.require_ok(o.outcome, kClause, std::string(verb) + " of the received " + kind_name(kind) + " handle");
  r.check(is_target(r, kind, o.object.get(), t.bytes, kSeed), kClause,
          std::string("the opened ") + kind_name(kind) + " object is the export");
  r.barrier("consumer-done");
}

void register_input_unchanged() {
  for (HandleKind kind : {HandleKind::memory, HandleKind::physical, HandleKind::event}) {
    const std::string name = kind_name(kind);
    register_case(Case("robustness.open.input_unchanged." + name,
                       "An open of a " + name + " handle leaves the bytes it was handed (or the adapter's copy, or "
                       "its import descriptor) unchanged")
                      .clause(kClause)
                      .role("producer", [kind](Role& r) { producer(r, kind); })
                      .role("consumer", [kind](Role& r) { consumer(r, kind); })
                      .def);
  }
}

IPCHECK_CASE(register_input_unchanged);

}  // namespace
}  // namespace ipcheck::catalog::robustness_input_unchanged
