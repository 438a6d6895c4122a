// rb.open.garbage's variants and its judge (the case: garbage.cpp). The variants: zero,
// random, truncated, extended, bit-flipped, byte-set and spliced handle bytes, every field of
// a known layout set to boundaries (resealed and not), and the real bytes beside descriptors
// that are not the export's; from a fixed seed, so producer and consumers compute the same
// list. The judge: what the consumers wrote down in the shared verdict page, per family.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>

#include "forge.hpp"
#include "garbage_impl.hpp"

namespace ipcheck::catalog::robustness_garbage {
namespace {

constexpr auto kSlowOpen = std::chrono::seconds(2);  // one open this slow is a hang

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

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : "; ") + x;
  return s;
}

// The evidence a verdict rests on, rebuilt from what the consumer wrote down.
Evidence evidence_of(const Verdict& v) {
  Outcome o;
  o.by = v.by == static_cast<std::uint8_t>(reports::Decider::runtime) ? Decided::runtime : Decided::adapter;
  o.call = v.call;
  o.native = v.native;
  o.native_name = v.native_name;
  Evidence e = Evidence::of(o);
  if (v.by == static_cast<std::uint8_t>(reports::Decider::harness)) e.with(Evidence::harness());
  return e;
}

// With a handle that travels with a descriptor: the real bytes beside descriptors that are
// not the export's, so they reach the runtime's import (not only ipcheck's record checks).
void add_descriptor_variants(std::vector<Variant>& out, const Bytes& good, bool with_decoy) {
  const std::pair<Descriptor, const char*> kinds[] = {
      {Descriptor::closed, "a descriptor number just closed"},
      {Descriptor::out_of_range, "descriptor number 1048575 (none open)"},
      {Descriptor::dev_null, "/dev/null"},
      {Descriptor::pipe, "a pipe's read end"},
      {Descriptor::socket, "a Unix socket"},
      {Descriptor::eventfd, "an eventfd"},
      {Descriptor::plain_memfd, "a zero-filled memfd of the export's size"},
      {Descriptor::decoy, "the descriptor of another export (the decoy), with this handle's bytes"},
  };
  for (const auto& [d, name] : kinds)
    if (d != Descriptor::decoy || with_decoy) out.push_back({"descriptor", name, good, d});
}

}  // namespace

// `target_fd`, `decoy_fd`: whether each handle came with a descriptor (the scm transport).
// A handle whose layout names a descriptor (taken by pidfd_getfd on the other transport)
// gets the descriptor variants too: an open given a descriptor uses it.
std::vector<Variant> all_variants(Role& r, HandleKind kind, const Bytes& good, const Bytes& decoy, bool target_fd,
                                  bool decoy_fd) {
  Generator gen(good, decoy);
  std::vector<Variant> variants = gen.blind();
  const HandleLayout* layout = known_layout(r, kind_name(kind), good.size());
  if (target_fd || (layout && (layout->find(FieldRole::descriptor) >= 0 || layout->find(FieldRole::fd) >= 0)))
    add_descriptor_variants(variants, good, decoy_fd);
  if (layout) {
    auto more = gen.fields(*layout);
    variants.insert(variants.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  }
  return variants;
}

namespace {

// What the variants of one family came to.
struct Family {
  Evidence by = Evidence::tally();
  std::size_t tried = 0, refused = 0, opened_target = 0;
  std::map<std::string, std::size_t> codes, natives;
  std::vector<std::string> opened, wrong;
};

// The verdicts of every variant, counted per family (in the order the families first appear).
struct Judged {
  std::map<std::string, Family> families;
  std::vector<std::string> order;
  Evidence all = Evidence::tally();
  std::uint32_t slowest = 0;
  std::string slowest_name;
  std::size_t untried = 0;
};

// One judged verdict into its family's counts; a variant that killed its consumer or lost
// its context is a failed check of its own.
void count_verdict(Role& r, const Variant& var, const Verdict& v, Family& f, Judged& j) {
  ++f.tried;
  const std::string what = var.family + ": " + var.name;
  if (v.state == State::killed) {
    r.check(false, Evidence::harness(), kClause, "killed: " + what + ": " + v.detail);
    ++f.natives["killed"];
    return;
  }
  const Evidence e = evidence_of(v);
  f.by.with(e);
  j.all.with(e);
  if (v.micros > j.slowest) {
    j.slowest = v.micros;
    j.slowest_name = what;
  }
  const std::string native = v.native_name[0] ? std::string(v.native_name)
                             : v.errc == 0   ? std::string("success")
                                             : std::string(errc_name(static_cast<Errc>(v.errc)));
  if (v.state == State::context_lost) {
    r.check(false, e, kClause, "context_lost: " + what + ": " + v.detail);
    ++f.natives["context_lost (" + native + ")"];
    return;
  }
  if (v.state == State::refused) {
    ++f.refused;
    ++f.codes[errc_name(static_cast<Errc>(v.errc))];
    ++f.natives[native];
  } else if (v.state == State::opened_target) {
    ++f.natives["opened the export"];
    if (++f.opened_target <= 4) f.opened.push_back(var.name);
  } else {
    ++f.natives["opened other memory"];
    f.wrong.push_back(var.name + " (" + v.detail + ")");
  }
}

Judged count_verdicts(Role& r, const std::vector<Variant>& variants, const SharedVerdicts& shared) {
  Judged j;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const Variant& var = variants[i];
    const Verdict& v = shared.v[i];
    auto [it, fresh] = j.families.try_emplace(var.family);
    if (fresh) j.order.push_back(var.family);
    if (v.state == State::untried || v.state == State::in_flight) {
      ++j.untried;
      continue;
    }
    count_verdict(r, var, v, it->second, j);
  }
  return j;
}

// One family's observation (what the runtime answered) and check (nothing opened other memory).
void check_family(Role& r, HandleKind kind, const std::string& family, const Family& t) {
  std::string codes, natives;
  for (const auto& [c, n] : t.codes) codes += (codes.empty() ? "" : ", ") + c + " " + std::to_string(n);
  for (const auto& [c, n] : t.natives) natives += (natives.empty() ? "" : ", ") + c + " " + std::to_string(n);
  std::string wrong;
  for (std::size_t i = 0; i < t.wrong.size() && i < 5; ++i) wrong += (i ? "; " : "") + t.wrong[i];
  // What the runtime answered, per family: a new driver's changes show in the diff.
  r.observe(std::string("garbage.") + kind_name(kind) + "." + family, natives.empty() ? "none judged" : natives, kClause);
  r.check(t.wrong.empty(), t.by, kClause,
          family + ": " + std::to_string(t.tried) + " variants judged, " + std::to_string(t.refused) + " refused (" +
              (codes.empty() ? "none" : codes) + ")" +
              (t.opened_target ? ", " + std::to_string(t.opened_target) + " opened the export they identify (" +
                                     join(t.opened) + (t.opened_target > t.opened.size() ? ", ..." : "") + ")"
                               : "") +
              (t.wrong.empty() ? "" : "; " + std::to_string(t.wrong.size()) + " opened other memory, first: " + wrong));
}

}  // namespace

void judge(Role& r, HandleKind kind, const std::vector<Variant>& variants, const SharedVerdicts& shared, int consumers_used) {
  Judged j = count_verdicts(r, variants, shared);
  for (const auto& family : j.order) check_family(r, kind, family, j.families[family]);
  r.check(j.untried == 0, kClause,
          j.untried == 0 ? "all " + std::to_string(variants.size()) + " variants judged by live consumers (" +
                               std::to_string(consumers_used) + " consumer processes)"
                         : std::to_string(j.untried) + " of " + std::to_string(variants.size()) +
                               " variants never judged: " + std::to_string(consumers_used) +
                               " consumer processes, the most this run starts (--param consumers, at most kMostConsumers in garbage.cpp), ended before them");
  char took[32];
  std::snprintf(took, sizeof took, "%.1f ms", j.slowest / 1000.0);
  r.check(j.slowest < std::chrono::duration_cast<std::chrono::microseconds>(kSlowOpen).count(), j.all, kClause,
          std::string("slowest open took ") + took + " (" + j.slowest_name + ")");
}

// Every byte of the handle changed alone (one byte differs from the real handle, same
// length) was judged by a live consumer: the coverage the clause promises, checked.
void check_every_byte(Role& r, const std::vector<Variant>& variants, const SharedVerdicts& shared, const Bytes& good) {
  std::vector<bool> judged(good.size(), false);
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const Bytes& b = variants[i].bytes;
    if (b.size() != good.size()) continue;
    std::size_t diffs = 0, at = 0;
    for (std::size_t k = 0; k < b.size(); ++k)
      if (b[k] != good[k]) ++diffs, at = k;
    if (diffs == 1 && shared.v[i].state != State::untried && shared.v[i].state != State::in_flight) judged[at] = true;
  }
  std::string missing;
  for (std::size_t k = 0; k < judged.size(); ++k)
    if (!judged[k]) missing += (missing.empty() ? "" : ", ") + std::to_string(k);
  r.check(missing.empty(), kClause,
          missing.empty() ? "every one of the handle's " + std::to_string(good.size()) + " bytes was changed alone and judged"
                          : "bytes never changed alone and judged: " + missing);
}

}  // namespace ipcheck::catalog::robustness_garbage
