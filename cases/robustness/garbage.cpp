// rb.open.garbage: zero, random, truncated, extended and field-mutated handle bytes give a
// clean error; an open that succeeds anyway must map exactly the exported object. Some
// 2,500 variants per kind, from a fixed seed (a failure names its variant, reproducibly).
// Clean means the process can go on: device_lost is no refusal, and the real handle must
// still open once every variant was tried (a runtime's sticky error shows there).
#include <algorithm>
#include <map>
#include <random>

#include "forge.hpp"
#include "kinds.hpp"

namespace ipcheck::catalog {
namespace {

using Clock = std::chrono::steady_clock;
using Bytes = std::vector<std::byte>;

constexpr const char* kClause = "rb.open.garbage";
constexpr std::uint64_t kTargetSeed = 0x6a7b, kDecoySeed = 0x6a7c;  // odd: a signaled event; even: clear
constexpr auto kSlowOpen = std::chrono::seconds(2);                 // one open this slow is a hang

struct Variant {
  std::string family;
  std::string name;
  Bytes bytes;
};

class Generator {
 public:
  Generator(const Bytes& good, const Bytes& decoy) : good_(good), decoy_(decoy) {}

  std::vector<Variant> blind() {
    const std::size_t n = good_.size();
    for (std::size_t len : {std::size_t{0}, std::size_t{1}, std::size_t{8}, n - 1, n, n + 1, 2 * n, std::size_t{4096}}) {
      add("zero", "zero x" + std::to_string(len), Bytes(len, std::byte{0}));
      add("zero", "ones x" + std::to_string(len), Bytes(len, std::byte{0xff}));
    }
    for (int i = 0; i < 400; ++i) add("random", "random length #" + std::to_string(i), random_bytes(rng_() % (2 * n + 9)));
    for (int i = 0; i < 600; ++i) add("random", "random x" + std::to_string(n) + " #" + std::to_string(i), random_bytes(n));
    for (std::size_t len = 0; len < n; ++len) add("truncated", "first " + std::to_string(len) + " bytes", {good_.begin(), good_.begin() + len});
    for (std::size_t extra = 1; extra <= 64; ++extra) {
      Bytes b = good_;
      const Bytes tail = random_bytes(extra);
      b.insert(b.end(), tail.begin(), tail.end());
      add("extended", "plus " + std::to_string(extra) + " random bytes", b);
    }
    Bytes twice = good_;
    twice.insert(twice.end(), good_.begin(), good_.end());
    add("extended", "twice", twice);
    for (std::size_t bit = 0; bit < 8 * n; ++bit) {
      Bytes b = good_;
      b[bit / 8] ^= std::byte(1u << (bit % 8));
      add("bit flip", "bit " + std::to_string(bit), b);
    }
    for (std::size_t i = 0; i < n; ++i)
      for (unsigned v : {0x00u, 0xffu, 0x100u}) {
        Bytes b = good_;
        b[i] = v == 0x100u ? std::byte(static_cast<unsigned>(b[i]) + 1) : std::byte(v);
        add("byte set", "byte " + std::to_string(i) + (v == 0x100u ? " +1" : " = " + hex(v)), b);
      }
    // Eight bytes of another export spliced in at every offset.
    for (std::size_t i = 0; decoy_.size() == n && i + 8 <= n; ++i) {
      Bytes b = good_;
      std::copy(decoy_.begin() + i, decoy_.begin() + i + 8, b.begin() + i);
      add("splice", "decoy bytes " + std::to_string(i) + ".." + std::to_string(i + 8), b);
    }
    return std::move(out_);
  }

  // A known layout (ipcref/1, our Level Zero driver's fd-first handles, what the fuzzer
  // learned of CUDA's): every field set to boundaries and to the decoy's value, resealed
  // where the layout has a checksum (so the framing check passes and the deeper checks must
  // catch it) and not resealed.
  std::vector<Variant> fields(const HandleLayout& l) {
    const bool sealable = l.has_checksum();
    for (std::size_t fi = 0; fi < l.fields.size(); ++fi) {
      const auto& f = l.fields[fi];
      if (f.role == FieldRole::checksum || f.role == FieldRole::descriptor) continue;
      const int i = static_cast<int>(fi);
      const std::uint64_t mask = width_mask(f.width);
      const std::uint64_t orig = l.get(good_, i), theirs = decoy_.size() >= l.size ? l.get(decoy_, i) : orig;
      const std::uint64_t top = std::uint64_t{1} << (8 * f.width - 1);
      for (std::uint64_t v : std::initializer_list<std::uint64_t>{0, 1, 2, 3, mask, mask - 1, orig + 1, orig - 1,
                                                                  orig ^ top, theirs, rng_()}) {
        v &= mask;
        if (v == orig) continue;
        Bytes b = good_;
        l.set(b, i, v);
        add("field", f.name + " = " + hex(v) + (sealable ? " (unsealed)" : ""), b);
        if (!sealable) continue;
        l.reseal(b);
        add("field resealed", f.name + " = " + hex(v), b);
      }
    }
    // Several fields at once, resealed.
    std::vector<int> mutable_fields;
    for (std::size_t fi = 0; fi < l.fields.size(); ++fi)
      if (l.fields[fi].role != FieldRole::checksum && l.fields[fi].role != FieldRole::descriptor)
        mutable_fields.push_back(static_cast<int>(fi));
    for (int n = 0; n < 400 && !mutable_fields.empty(); ++n) {
      Bytes b = good_;
      std::string name;
      for (int k = 0; k < 1 + static_cast<int>(rng_() % 3); ++k) {
        const int i = mutable_fields[rng_() % mutable_fields.size()];
        const std::uint64_t v = rng_() % 2 || decoy_.size() < l.size ? rng_() : l.get(decoy_, i);
        l.set(b, i, v);
        name += (name.empty() ? "" : ", ") + l.fields[static_cast<std::size_t>(i)].name;
      }
      l.reseal(b);
      add(sealable ? "fields resealed" : "fields", name + " #" + std::to_string(n), b);
    }
    return std::move(out_);
  }

 private:
  void add(std::string family, std::string name, Bytes b) {
    if (b == good_) return;  // identical to the real handle: nothing to judge
    out_.push_back({std::move(family), std::move(name), std::move(b)});
  }
  Bytes random_bytes(std::size_t n) {
    Bytes b(n);
    for (auto& x : b) x = static_cast<std::byte>(rng_());
    return b;
  }
  const Bytes& good_;
  const Bytes& decoy_;
  std::mt19937_64 rng_{0x1badb002};
  std::vector<Variant> out_;
};

struct FamilyTally {
  Evidence by = Evidence::tally();           // who answered each open of the family
  std::size_t tried = 0, opened_target = 0;  // opened the export the bytes identify
  std::vector<std::string> opened;           // the first few of those, by name
  std::map<std::string, std::size_t> codes;
  std::vector<std::string> wrong;  // opened something other than the export
};

// With a layout that has a token: whether forged bytes carry the export token of `handle`.
// Without one there is nothing to tell, so opening another export counts as identified.
bool carries_token_of(const HandleLayout* l, const Bytes& forged, const Bytes& handle) {
  if (!l || l->find(FieldRole::token) < 0) return true;
  if (forged.size() < l->size || handle.size() < l->size) return false;
  return field_value(*l, forged, FieldRole::token) == field_value(*l, handle, FieldRole::token);
}

// What a wrongly opened memory object holds, to tell a shifted view of the export from
// other memory: "zero-filled memory", "the export's data from its byte 64 on", ...
std::string describe_contents(Role& r, HandleKind kind, ObjectId opened, std::size_t bytes) {
  if (kind != HandleKind::memory) return std::string("a ") + kind_name(kind) + " object that is not the export";
  Bytes got(bytes);
  if (const Outcome o = r.adapter().read(opened, got); !o.ok()) return "a mapping that cannot be read (" + outcome_word(o) + ")";
  if (std::all_of(got.begin(), got.end(), [](std::byte b) { return b == std::byte{0}; }))
    return "zero-filled memory, not the export's data";
  const Bytes want = pattern(kTargetSeed, bytes);
  const auto head = std::search(got.begin(), got.end(), want.begin(), want.begin() + 16);
  if (head != got.end()) return "the export's data, starting " + std::to_string(head - got.begin()) + " bytes into the mapping";
  const auto at = std::search(want.begin(), want.end(), got.begin(), got.begin() + 16);
  if (at != want.end()) return "the export's data from its byte " + std::to_string(at - want.begin()) + " on (a wrong offset)";
  return "memory holding something else (first bytes " + hex(static_cast<unsigned>(got[0])) + " " +
         hex(static_cast<unsigned>(got[1])) + " ...)";
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : "; ") + x;
  return s;
}

void producer(Role& r, HandleKind kind) {
  Target target = export_target(r, kind, kTargetSeed, kClause);
  Target decoy = export_target(r, kind, kDecoySeed, kClause);
  send_target(r, "consumer", "handle", target);
  send_target(r, "consumer", "decoy", decoy);
  r.barrier("consumer-done");
}

void consumer(Role& r, HandleKind kind) {
  ReceivedTarget target = receive_target(r, "handle");
  ReceivedTarget decoy = receive_target(r, "decoy");
  Generator gen(target.handle.bytes, decoy.handle.bytes);
  std::vector<Variant> variants = gen.blind();
  const HandleLayout* layout = known_layout(r, kind_name(kind), target.handle.bytes.size());
  if (layout) {
    auto more = gen.fields(*layout);
    variants.insert(variants.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  } else {
    r.note("handle layout '" + r.adapter().info().layout_of(kind_name(kind)) +
           "' is opaque to ipcheck: field-aware mutations skipped, blind ones only");
  }
  // The real bytes open (so every refusal below is about the garbage), then the garbage.
  {
    SetupSteps setup(r);
    Opened good = open_target(r, kind, target.handle.bytes, target.handle.fd.get());
    r.skip_if_unsupported(good.outcome, std::string(kind_name(kind)) + " open");
    r.require_ok(good.outcome, kClause, std::string("open of the real ") + kind_name(kind) + " handle");
  }
  Evidence all = Evidence::tally();
  const ResourceCount before = count_resources();
  std::map<std::string, FamilyTally> tally;
  std::vector<std::string> order;
  Clock::duration slowest{};
  std::string slowest_name;
  for (const auto& v : variants) {
    auto [it, fresh] = tally.try_emplace(v.family);
    if (fresh) order.push_back(v.family);
    FamilyTally& t = it->second;
    ++t.tried;
    // Named first: if the open kills this process, the case's last output line says which variant.
    r.note("opening " + v.family + ": " + v.name);
    const auto t0 = Clock::now();
    Opened o = open_target(r, kind, v.bytes, target.handle.fd.get());
    const auto took = Clock::now() - t0;
    t.by.with(o.outcome);
    all.with(o.outcome);
    if (took > slowest) {
      slowest = took;
      slowest_name = v.family + ": " + v.name;
    }
    if (!o.outcome.ok()) {
      ++t.codes[errc_name(o.outcome.code)];
      continue;
    }
    // It opened: acceptable only when it maps the export the bytes still identify (a
    // field the implementation ignores, or mutations that rebuilt the decoy's handle).
    if (is_target(r, kind, o.object.get(), target.bytes, kTargetSeed) ||
        (is_target(r, kind, o.object.get(), decoy.bytes, kDecoySeed) &&
         carries_token_of(layout, v.bytes, decoy.handle.bytes))) {
      if (++t.opened_target <= 4) t.opened.push_back(v.name);
    } else if (is_target(r, kind, o.object.get(), decoy.bytes, kDecoySeed)) {
      t.wrong.push_back(v.name + " (opened the decoy export without its token)");
    } else {
      t.wrong.push_back(v.name + " (opened " + describe_contents(r, kind, o.object.get(), target.bytes) + ")");
    }
    const Outcome closed = o.object.reset();
    if (!closed.ok()) r.check_ok(closed, kClause, "close of what '" + v.name + "' opened");
  }
  for (const auto& family : order) {
    const FamilyTally& t = tally[family];
    std::string codes;
    std::size_t refused = 0;
    for (const auto& [c, n] : t.codes) {
      codes += (codes.empty() ? "" : ", ") + c + " " + std::to_string(n);
      refused += n;
    }
    std::string wrong;
    for (std::size_t i = 0; i < t.wrong.size() && i < 5; ++i) wrong += (i ? "; " : "") + t.wrong[i];
    r.check(t.wrong.empty(), t.by, kClause,
            family + ": " + std::to_string(t.tried) + " variants, " + std::to_string(refused) + " refused (" +
                (codes.empty() ? "none" : codes) + ")" +
                (t.opened_target ? ", " + std::to_string(t.opened_target) + " opened the export they identify (" +
                                       join(t.opened) + (t.opened_target > t.opened.size() ? ", ..." : "") + ")"
                                 : "") +
                (t.wrong.empty() ? "" : "; " + std::to_string(t.wrong.size()) + " opened other memory, first: " + wrong));
  }
  r.check(slowest < kSlowOpen, all, kClause, "slowest open took " + ms(slowest) + " (" + slowest_name + ")");
  for (const auto& family : order)
    if (const auto n = tally[family].codes.count("device_lost") ? tally[family].codes["device_lost"] : 0)
      r.check(false, tally[family].by, kClause,
              family + ": " + std::to_string(n) + " variants answered device_lost: garbage must be refused with an error "
                                                  "that leaves the process usable, not by losing its context");
  {
    Opened again = open_target(r, kind, target.handle.bytes, target.handle.fd.get());
    r.check_ok(again.outcome, kClause,
               std::string("open of the real ") + kind_name(kind) + " handle after " + std::to_string(variants.size()) +
                   " garbage opens (the process's context survived them)");
    if (again.outcome.ok())
      r.check(is_target(r, kind, again.object.get(), target.bytes, kTargetSeed), kClause,
              std::string("the real ") + kind_name(kind) + " handle, opened after the garbage, is still the export");
  }
  check_no_growth(r, before, count_resources(), kClause,
                  "after " + std::to_string(variants.size()) + " garbage opens");
  r.barrier("consumer-done");
}

void register_garbage() {
  for (HandleKind kind : {HandleKind::memory, HandleKind::physical, HandleKind::event}) {
    const std::string name = kind_name(kind);
    register_case(Case("robustness.open.garbage." + name,
                       "Thousands of zero, random, truncated, extended and mutated " + name +
                           " handles: each refused cleanly or the export itself")
                      .clause(kClause)
                      .role("producer", [kind](Role& r) { producer(r, kind); })
                      .role("consumer", [kind](Role& r) { consumer(r, kind); })
                      .def);
  }
}

IPCHECK_CASE(register_garbage);

}  // namespace
}  // namespace ipcheck::catalog
