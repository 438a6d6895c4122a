// rb.open.garbage: zero, random, truncated, extended and field-mutated handle bytes give a
// clean error; an open that succeeds anyway must map exactly the exported object. Some
// 2,500 variants per kind, from a fixed seed (a failure names its variant, reproducibly).
// Clean means the process can go on: a variant after which the process cannot use its
// device (device_lost, or a failed probe read) is a violation named context_lost, one that
// kills the process is one named killed, and the variants after it go to a fresh consumer
// process: each verdict comes from a process whose context was alive. Every byte of the
// handle changed alone is among them (checked); what the runtime answered is observed per
// family (garbage.<kind>.<family>), so a new driver's changes show in the diff. A handle
// that travels with a descriptor is also opened with the real bytes and descriptors that are
// not the export's (closed, out of range, /dev/null, a pipe, a socket, an eventfd, a plain
// memfd, another export's): they reach the runtime's import, not only ipcheck's record checks.
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>

#include "forge.hpp"
#include "kinds.hpp"

namespace ipcheck::catalog::robustness_garbage {
namespace {

using Clock = std::chrono::steady_clock;
using Bytes = std::vector<std::byte>;

constexpr const char* kClause = "rb.open.garbage";
constexpr std::uint64_t kTargetSeed = 0x6a7b, kDecoySeed = 0x6a7c;  // odd: a signaled event; even: clear
constexpr auto kSlowOpen = std::chrono::seconds(2);                 // one open this slow is a hang

// Where a variant's descriptor comes from, for handles that travel with one (the real
// handle bytes, another descriptor): what the runtime's import does with a descriptor that
// is not its export's.
enum class Descriptor : std::uint8_t { real, closed, out_of_range, dev_null, pipe, socket, eventfd, plain_memfd, decoy };

struct Variant {
  std::string family;
  std::string name;
  Bytes bytes;
  Descriptor fd = Descriptor::real;
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

// ---- Every variant is judged by a consumer whose process and context are alive. The
// producer hands the variants out in order to consumer0, consumer1, ...: each opens them
// one by one from where the last stopped and writes each verdict into a shared page
// (before an open, "in flight"; after it, what happened). A consumer whose context a
// variant broke (the open or the probe after it answers device_lost, or any failure of
// the probe) stops there; one killed by a signal stops wherever its last open began. The
// next consumer resumes after that variant, so nothing is counted after a lost context.
enum class State : std::uint8_t { untried = 0, in_flight, refused, opened_target, opened_wrong, context_lost, killed };

struct Verdict {
  State state;
  std::uint8_t by;    // reports::Decider of the deciding call
  std::uint8_t errc;  // Errc
  std::uint8_t pad = 0;
  std::uint32_t micros;  // how long the open took
  std::int64_t native;
  char native_name[40];
  char call[40];
  char detail[120];  // what a wrong open mapped; how the context was lost
};
static_assert(sizeof(Verdict) == 216);

struct SharedVerdicts {
  Verdict* v = nullptr;
  std::size_t n = 0;
  unique_fd fd;
  SharedVerdicts() = default;
  SharedVerdicts(const SharedVerdicts&) = delete;
  ~SharedVerdicts() {
    if (v) ::munmap(v, n * sizeof(Verdict));
  }
  bool map(std::size_t count) {
    n = count;
    void* p = ::mmap(nullptr, std::max<std::size_t>(1, n) * sizeof(Verdict), PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
    if (p == MAP_FAILED) return false;
    v = static_cast<Verdict*>(p);
    return true;
  }
};

void put_text(char* dst, std::size_t cap, const std::string& s) {
  const std::size_t n = std::min(cap - 1, s.size());
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

void record(Verdict& v, State st, const Outcome& o, const std::string& detail = {}) {
  v.by = static_cast<std::uint8_t>(Evidence::of(o).by);
  v.errc = static_cast<std::uint8_t>(o.code);
  v.native = o.native;
  put_text(v.native_name, sizeof v.native_name, o.native_name);
  put_text(v.call, sizeof v.call, o.call);
  put_text(v.detail, sizeof v.detail, detail);
  __atomic_store_n(&v.state, st, __ATOMIC_SEQ_CST);  // last: the producer may read after our death
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

void judge(Role& r, HandleKind kind, const std::vector<Variant>& variants, const SharedVerdicts& shared, int consumers_used) {
  struct Family {
    Evidence by = Evidence::tally();
    std::size_t tried = 0, refused = 0, opened_target = 0;
    std::map<std::string, std::size_t> codes, natives;
    std::vector<std::string> opened, wrong;
  };
  std::map<std::string, Family> families;
  std::vector<std::string> order;
  Evidence all = Evidence::tally();
  std::uint32_t slowest = 0;
  std::string slowest_name;
  std::size_t untried = 0;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const Variant& var = variants[i];
    const Verdict& v = shared.v[i];
    auto [it, fresh] = families.try_emplace(var.family);
    if (fresh) order.push_back(var.family);
    Family& f = it->second;
    if (v.state == State::untried || v.state == State::in_flight) {
      ++untried;
      continue;
    }
    ++f.tried;
    const std::string what = var.family + ": " + var.name;
    if (v.state == State::killed) {
      r.check(false, Evidence::harness(), kClause, "killed: " + what + ": " + v.detail);
      ++f.natives["killed"];
      continue;
    }
    const Evidence e = evidence_of(v);
    f.by.with(e);
    all.with(e);
    if (v.micros > slowest) {
      slowest = v.micros;
      slowest_name = what;
    }
    const std::string native = v.native_name[0] ? std::string(v.native_name)
                               : v.errc == 0   ? std::string("success")
                                               : std::string(errc_name(static_cast<Errc>(v.errc)));
    if (v.state == State::context_lost) {
      r.check(false, e, kClause, "context_lost: " + what + ": " + v.detail);
      ++f.natives["context_lost (" + native + ")"];
      continue;
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
  for (const auto& family : order) {
    const Family& t = families[family];
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
  r.check(untried == 0, kClause,
          untried == 0 ? "all " + std::to_string(variants.size()) + " variants judged by live consumers (" +
                             std::to_string(consumers_used) + " consumer processes)"
                       : std::to_string(untried) + " of " + std::to_string(variants.size()) +
                             " variants never judged: " + std::to_string(consumers_used) +
                             " consumer processes, the most this run starts (--param consumers, at most kMostConsumers in garbage.cpp), ended before them");
  char took[32];
  std::snprintf(took, sizeof took, "%.1f ms", slowest / 1000.0);
  r.check(slowest < std::chrono::duration_cast<std::chrono::microseconds>(kSlowOpen).count(), all, kClause,
          std::string("slowest open took ") + took + " (" + slowest_name + ")");
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

// The most consumer processes a case may start, one after another: each variant that
// breaks a context or kills a process costs one. Past it the rest go unjudged (a check says
// so). `--param consumers=N` lowers it (a quick run against a driver that loses many).
constexpr int kMostConsumers = 256;

int most_consumers(Role& r) {
  const long v = count_param(r, "consumers", kMostConsumers);
  if (v > kMostConsumers) {
    const std::string why = "--param consumers=" + std::to_string(v) + " is more than the case can start; give at most consumers=" +
                            std::to_string(kMostConsumers);
    r.check(false, "harness.param", why);
    throw RoleAbort{why};
  }
  return static_cast<int>(v);
}

// Hands the variants out in order to consumer0, consumer1, ... (on-demand roles: only as
// many start as the variants need). After the first lost process, the next consumer is
// readied (started, its runtime initialised, the real handle opened) while the current one
// works, so a lost context costs a hand-over, not a start.
class Handout {
 public:
  Handout(Role& r, const Target& target, const Target& decoy, const SharedVerdicts& shared, std::size_t total)
      : r_(r), target_(target), decoy_(decoy), shared_(shared), total_(total), most_(most_consumers(r)) {}

  void run() {
    ready(0);
    bool overlap = false;
    int c = 0;
    for (; next_ < total_ && c < most_; ++c) {
      give(c, next_);
      if (overlap && c + 1 < most_) ready(c + 1);
      const std::string how = r_.wait_exit(name(c));
      settle(name(c), how);
      overlap = overlap || next_ < total_;
      if (next_ < total_ && c + 1 < most_) ready(c + 1);
    }
    // One readied but not needed: it opens the real handle again and ends.
    if (c < most_ && readied_ > c) {
      give(c, total_);
      r_.wait_exit(name(c));
    }
  }
  int started() const { return readied_; }

 private:
  static std::string name(int c) { return "consumer" + std::to_string(c); }
  void ready(int c) {
    if (readied_ > c) return;
    send_target(r_, name(c), "handle", target_);
    send_target(r_, name(c), "decoy", decoy_);
    readied_ = c + 1;
  }
  void give(int c, std::size_t from) {
    const std::string text = std::to_string(from);
    r_.send(name(c), "verdicts", std::as_bytes(std::span(text)), shared_.fd.get());
  }
  // Where the consumer stopped: the first variant it never finished. One it died inside is
  // recorded as having killed it.
  void settle(const std::string& who, const std::string& how) {
    while (next_ < total_ && shared_.v[next_].state != State::untried && shared_.v[next_].state != State::in_flight) ++next_;
    if (next_ < total_ && shared_.v[next_].state == State::in_flight) {
      Verdict& v = shared_.v[next_];
      put_text(v.detail, sizeof v.detail, who + " ended (" + how + ") inside this open");
      v.state = State::killed;
      ++next_;
    }
    r_.note(who + " judged up to variant " + std::to_string(next_) + " of " + std::to_string(total_) + ", then " + how);
  }

  Role& r_;
  const Target& target_;
  const Target& decoy_;
  const SharedVerdicts& shared_;
  std::size_t total_;
  int most_;
  std::size_t next_ = 0;
  int readied_ = 0;
};

void producer(Role& r, HandleKind kind) {
  Target target = export_target(r, kind, kTargetSeed, kClause);
  Target decoy = export_target(r, kind, kDecoySeed, kClause);
  const std::vector<Variant> variants =
      all_variants(r, kind, target.handle.bytes, decoy.handle.bytes, target.handle.fd >= 0, decoy.handle.fd >= 0);
  if (!known_layout(r, kind_name(kind), target.handle.bytes.size()))
    r.note("handle layout '" + r.adapter().info().layout_of(kind_name(kind)) +
           "' is opaque to ipcheck: field-aware mutations skipped, blind ones only");
  SharedVerdicts shared;
  shared.fd.reset(::memfd_create("ipcheck-garbage-verdicts", MFD_CLOEXEC));
  if (!shared.fd || ::ftruncate(shared.fd.get(), static_cast<off_t>(std::max<std::size_t>(1, variants.size()) * sizeof(Verdict))) != 0 ||
      !shared.map(variants.size()))
    r.harness_error(std::string("the shared verdict page: memfd_create/ftruncate/mmap failed: ") + std::strerror(errno));
  Handout handout(r, target, decoy, shared, variants.size());
  handout.run();
  judge(r, kind, variants, shared, handout.started());
  check_every_byte(r, variants, shared, target.handle.bytes);
}

// The descriptor a variant names, made in the consumer (kept in `made` until after the open).
int descriptor(Role& r, Descriptor d, unique_fd& made, const ReceivedTarget& decoy, std::size_t bytes) {
  switch (d) {
    case Descriptor::real: break;
    case Descriptor::closed: {
      const int n = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      if (n >= 0) ::close(n);
      return n;
    }
    case Descriptor::out_of_range: return 1048575;
    case Descriptor::dev_null: made.reset(::open("/dev/null", O_RDWR | O_CLOEXEC)); break;
    case Descriptor::pipe: {
      int p[2];
      if (::pipe2(p, O_CLOEXEC) == 0) {
        made.reset(p[0]);
        ::close(p[1]);
      }
      break;
    }
    case Descriptor::socket: {
      int sv[2];
      if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0) {
        made.reset(sv[0]);
        ::close(sv[1]);
      }
      break;
    }
    case Descriptor::eventfd: made.reset(::eventfd(0, EFD_CLOEXEC)); break;
    case Descriptor::plain_memfd:
      made.reset(::memfd_create("ipcheck-garbage-plain", MFD_CLOEXEC));
      if (made && ::ftruncate(made.get(), static_cast<off_t>(std::max<std::size_t>(bytes, 4096))) != 0) made.reset();
      break;
    case Descriptor::decoy: made.reset(::fcntl(decoy.handle.fd.get(), F_DUPFD_CLOEXEC, 0)); break;
  }
  if (!made) r.harness_error(std::string("a descriptor for a garbage variant could not be made: ") + std::strerror(errno));
  return made.get();
}

// A probe of the consumer's own process after each open: a read of memory it allocated.
// Any failure means the variant before it left the process unable to use its device.
struct Probe {
  Owned mem;
  Outcome check(Role& r) {
    Bytes got(64);
    return r.adapter().read(mem.get(), got);
  }
};

void consumer(Role& r, HandleKind kind) {
  // Each consumer ends on its own (the producer waits for its exit before the next gets work).
  ReceivedTarget target = receive_target(r, "handle");
  ReceivedTarget decoy = receive_target(r, "decoy");
  const std::vector<Variant> variants = all_variants(r, kind, target.handle.bytes, decoy.handle.bytes,
                                                    target.handle.fd.get() >= 0, decoy.handle.fd.get() >= 0);
  const HandleLayout* layout = known_layout(r, kind_name(kind), target.handle.bytes.size());
  Probe probe;
  {
    // The real bytes open (so every refusal below is about the garbage), and the probe works.
    SetupSteps setup(r);
    Opened good = open_target(r, kind, target.handle.bytes, target.handle.fd.get());
    r.skip_if_unsupported(good.outcome, std::string(kind_name(kind)) + " open");
    r.require_ok(good.outcome, kClause, std::string("open of the real ") + kind_name(kind) + " handle");
    probe.mem = alloc_filled(r, 64, kTargetSeed, kClause);
    r.require_ok(probe.check(r), kClause, "the probe read before the garbage");
  }
  // Readied ahead of need: the work (where to start, and the verdict page) comes now.
  Received page = r.receive("verdicts");
  const std::size_t from = std::strtoull(
      std::string(reinterpret_cast<const char*>(page.bytes.data()), page.bytes.size()).c_str(), nullptr, 10);
  SharedVerdicts shared;
  shared.fd = std::move(page.fd);
  if (!shared.fd || !shared.map(variants.size()))
    r.harness_error(std::string("the shared verdict page did not map: ") + std::strerror(errno));
  const ResourceCount before = count_resources();
  std::size_t i = from;
  bool lost = false;
  for (; i < variants.size(); ++i) {
    const Variant& var = variants[i];
    Verdict& v = shared.v[i];
    __atomic_store_n(&v.state, State::in_flight, __ATOMIC_SEQ_CST);
    // Named first: if the open kills this process, the case's last output line says which variant.
    r.note("opening " + var.family + ": " + var.name);
    unique_fd made;
    const int fd = var.fd == Descriptor::real ? target.handle.fd.get() : descriptor(r, var.fd, made, decoy, target.bytes);
    const auto t0 = Clock::now();
    Opened o = open_target(r, kind, var.bytes, fd);
    v.micros = static_cast<std::uint32_t>(std::min<long long>(
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count(), 0xffffffffll));
    if (!o.outcome.ok()) {
      if (o.outcome.code == Errc::device_lost) {
        record(v, State::context_lost, o.outcome, "the open answered " + o.outcome.describe());
        lost = true;
      } else {
        record(v, State::refused, o.outcome);
      }
    } else if (is_target(r, kind, o.object.get(), target.bytes, kTargetSeed) ||
               (is_target(r, kind, o.object.get(), decoy.bytes, kDecoySeed) &&
                carries_token_of(layout, var.bytes, decoy.handle.bytes))) {
      // A field the implementation ignores, or mutations that rebuilt the decoy's handle.
      record(v, State::opened_target, o.outcome);
    } else if (is_target(r, kind, o.object.get(), decoy.bytes, kDecoySeed)) {
      record(v, State::opened_wrong, o.outcome, "opened the decoy export without its token");
    } else {
      record(v, State::opened_wrong, o.outcome, "opened " + describe_contents(r, kind, o.object.get(), target.bytes));
    }
    if (o.outcome.ok())
      if (const Outcome closed = o.object.reset(); !closed.ok())
        r.check_ok(closed, kClause, "close of what '" + var.name + "' opened");
    if (!lost)
      if (const Outcome p = probe.check(r); !p.ok()) {
        record(v, State::context_lost, p, "after it, a read of the consumer's own memory answered " + p.describe());
        lost = true;
      }
    if (lost) break;
  }
  if (lost) {
    // Nothing more is judged in this process: the producer hands the rest to a fresh one.
    r.note("context lost at variant " + std::to_string(i) + "; the next consumer resumes after it");
    probe.mem.release();
    return;
  }
  {
    Opened again = open_target(r, kind, target.handle.bytes, target.handle.fd.get());
    r.check_ok(again.outcome, kClause,
               std::string("open of the real ") + kind_name(kind) + " handle after " + std::to_string(i - from) +
                   " garbage opens (the process's context survived them)");
    if (again.outcome.ok())
      r.check(is_target(r, kind, again.object.get(), target.bytes, kTargetSeed), kClause,
              std::string("the real ") + kind_name(kind) + " handle, opened after the garbage, is still the export");
  }
  check_no_growth(r, before, count_resources(), kClause, "after " + std::to_string(i - from) + " garbage opens");
}

void register_garbage() {
  for (HandleKind kind : {HandleKind::memory, HandleKind::physical, HandleKind::event}) {
    const std::string name = kind_name(kind);
    register_case(Case("robustness.open.garbage." + name,
                       "Thousands of zero, random, truncated, extended and mutated " + name +
                           " handles: each refused cleanly or the export itself, judged in a live process")
                      .clause(kClause)
                      .role("producer", [kind](Role& r) { producer(r, kind); })
                      .on_demand_roles("consumer", kMostConsumers, [kind](Role& r) { consumer(r, kind); })
                      .expendable("consumer")
                      .param("consumers")
                      // A driver whose variants kill many processes needs many in turn; a
                      // hang is still caught within the run's inactivity limit.
                      .timeout(300)
                      .def);
  }
}

IPCHECK_CASE(register_garbage);

}  // namespace
}  // namespace ipcheck::catalog::robustness_garbage
