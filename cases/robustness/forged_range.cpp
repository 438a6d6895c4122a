// rb.open.forged_range: a handle whose identity is still live (the export's token, pid,
// descriptor) but whose offset, size, device or kind field was changed, with its checksum
// made valid again where the layout has one, is refused, or maps exactly the exported
// range: never a byte outside the export. For every layout ipcheck knows: ref's ipcref/1
// records, our Level Zero driver's fd-first handles, the vk adapter's record, the cuda
// adapter's physical-memory record and what the fuzzer learned of CUDA's memory handle.
#include "forge.hpp"
#include "kinds.hpp"

namespace ipcheck::catalog::robustness_forged_range {
namespace {

constexpr const char* kClause = "rb.open.forged_range";
constexpr std::uint64_t kTargetSeed = 0xf0a1, kDecoySeed = 0xf0a2, kHiddenSeed = 0xf0a3;

struct Forgery {
  std::string name;
  std::vector<std::byte> bytes;
};

// The changes a field of `role` gets, from its value `v` and the export's size.
std::vector<std::pair<std::string, std::uint64_t>> changes_of(FieldRole role, std::uint64_t v, std::size_t page) {
  switch (role) {
    case FieldRole::offset:
      return {{"offset + 1", v + 1}, {"offset + 1 page", v + page}, {"offset - 1 page", v - page},
              {"offset + 1 GiB", v + (1ull << 30)}, {"offset all ones", ~0ull}};
    case FieldRole::size:
      return {{"size + 1", v + 1}, {"size + 1 page", v + page}, {"size x 2", v * 2},
              {"size / 2", v / 2}, {"size 0", 0}, {"size all ones", ~0ull}};
    case FieldRole::device: return {{"device + 1", v + 1}, {"device + 2", v + 2}, {"device all ones", ~0ull}};
    case FieldRole::kind: return {{"kind + 1", v + 1}, {"kind - 1", v - 1}, {"kind 0", 0}};
    default: return {};
  }
}

void producer(Role& r, HandleKind kind) {
  Target target = export_target(r, kind, kTargetSeed, kClause, 2 * kPage);
  Target decoy = export_target(r, kind, kDecoySeed, kClause, 2 * kPage);
  Owned hidden;
  if (kind == HandleKind::memory) hidden = alloc_filled(r, 2 * kPage, kHiddenSeed, kClause);  // never exported
  send_target(r, "consumer", "handle", target);
  r.barrier("consumer-done");
}

void consumer(Role& r, HandleKind kind, Cache cache) {
  ReceivedTarget t = receive_target(r, "handle");
  const HandleLayout* l = known_layout(r, kind_name(kind), t.handle.bytes.size());
  if (!l)
    r.skip("handle layout '" + r.adapter().info().layout_of(kind_name(kind)) +
           "' is opaque to ipcheck: no field of it is known to forge");
  std::vector<Forgery> forgeries;
  for (FieldRole role : {FieldRole::offset, FieldRole::size, FieldRole::device, FieldRole::kind}) {
    if (l->find(role) < 0) continue;
    const std::uint64_t v = field_value(*l, t.handle.bytes, role);
    for (const auto& [name, value] : changes_of(role, v, kPage)) {
      std::vector<std::byte> b = t.handle.bytes;
      if (!forge_field(*l, b, role, value) || b == t.handle.bytes) continue;
      forgeries.push_back({name + (l->has_checksum() ? " (checksum made valid)" : ""), std::move(b)});
    }
  }
  if (forgeries.empty())
    r.skip("layout '" + l->name + "' has no offset, size, device or kind field ipcheck knows");
  // The real handle opens and is the export: what the forgeries aim at is live; and the
  // forgeries meet a runtime that has opened the export (warm: closed again; held: still open).
  Opened real = warm_up(r, cache, kind, t.handle.bytes, t.handle.fd.get(), t.bytes, kTargetSeed, kClause);
  const ResourceCount before = count_resources();
  std::size_t refused = 0, exact = 0, wrong = 0;
  Evidence all = Evidence::tally();
  for (const auto& f : forgeries) {
    r.note("opening the export's handle with " + f.name + " (layout " + l->name + ")");
    Opened o = open_target(r, kind, f.bytes, t.handle.fd.get());
    all.with(o.outcome);
    if (!o.outcome.ok()) {
      if (o.outcome.code == Errc::device_lost)
      {
        ++wrong;
        r.check(false, Evidence::of(o.outcome), kClause,
                f.name + ": refused with " + o.outcome.describe() + ", which loses the process's context");
      }
      ++refused;
      continue;
    }
    // It opened: it must be exactly the export, every byte of it from its start.
    const Seen same = is_target(r, kind, o.object.get(), t.bytes, kTargetSeed);
    all.with(same.by);
    if (same) {
      ++exact;
      if (kind == HandleKind::memory) {
        // Past the export's end through the same mapping: never another object's bytes.
        for (std::uint64_t seed : {kDecoySeed, kHiddenSeed})
          if (holds(r, o.object.get() + t.bytes, kPage, seed)) {
            ++wrong;
            r.check(false, same.by, kClause, f.name + ": opened, and the page after the export holds another object's bytes");
          }
      }
      continue;
    }
    std::string what = "bytes that are not the export";
    if (kind == HandleKind::memory) {
      if (holds(r, o.object.get(), 2 * kPage, kDecoySeed)) what = "the decoy export";
      else if (holds(r, o.object.get(), 2 * kPage, kHiddenSeed)) what = "memory never exported";
      else if (holds(r, o.object.get(), kPage, kTargetSeed, kPage)) what = "the export shifted by a page";
    }
    ++wrong;
    r.check(false, same.by, kClause, f.name + ": opened and maps " + what);
  }
  r.check(wrong == 0, all, kClause,
          std::to_string(forgeries.size()) + " forged " + kind_name(kind) + " handles (layout " + l->name + "): " +
              std::to_string(refused) + " refused cleanly, " + std::to_string(exact) + " opened exactly the export, " +
              std::to_string(wrong) + " otherwise" + cache_words(cache, Cache::warm));
  check_no_growth(r, before, count_resources(), kClause, "after the forged opens");
  r.barrier("consumer-done");
}

void register_forged_range() {
  // The plain case is the warm one: the real handle is opened (and closed) before the forgeries.
  for (Cache cache : {Cache::warm, Cache::held})
    for (HandleKind kind : {HandleKind::memory, HandleKind::physical}) {
      const std::string name = kind_name(kind);
      register_case(Case("robustness.open.forged_range." + name + cache_suffix(cache, Cache::warm),
                         "A live " + name + " handle with its offset, size, device or kind changed (checksum valid) is "
                         "refused or maps exactly the export" + cache_words(cache, Cache::warm))
                        .clause(kClause)
                        .role("producer", [kind](Role& r) { producer(r, kind); })
                        .role("consumer", [kind, cache](Role& r) { consumer(r, kind, cache); })
                        .def);
    }
}

IPCHECK_CASE(register_forged_range);

}  // namespace
}  // namespace ipcheck::catalog::robustness_forged_range
