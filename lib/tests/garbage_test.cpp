// rb.open.garbage: over 100,000 random and field-mutated records against memory, physical
// and event open. Seeded and reproducible (IPCREF_GARBAGE_SEED overrides the seed). Oracle:
// no crash; every failure is an ipcref::exception with a sensible code; every success maps
// exactly the export the record names; descriptors and mappings are unchanged afterwards.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <sstream>
#include <vector>

#include "ipcref/ipcref.hpp"
#include "support/audit.hpp"
#include "support/devices.hpp"
#include "support/owned.hpp"
#include "support/pattern.hpp"
#include "support/peer_process.hpp"

namespace {

using namespace ipcref;
using namespace ipcref_test;
namespace mem = ipcref::ipc::memory;
namespace phys = ipcref::ipc::physical_memory;
namespace ev = ipcref::ipc::event;

constexpr std::uint64_t kDefaultSeed = 0x1bc7ef00d5eedull;
constexpr int kRecordsPerOpener = 36000;
constexpr record::kind kKinds[] = {record::kind::memory, record::kind::physical_memory, record::kind::event};

// A genuine export that mutations start from, and what a correct open of it shows.
struct seed_export {
  record::bytes bytes;
  record::fields fields;
  std::uint64_t canary = 0;  // memory and physical: the pattern seed of its contents
  std::size_t skip = 0;      // where in that pattern the export starts (interior exports)
  bool signaled = false;     // event: its state
  const char* origin = "";
};

bool same_export(const record::fields& a, const record::fields& b) {
  return a.object_kind == b.object_kind && a.pid == b.pid && a.guard_type == b.guard_type && a.guard == b.guard &&
         a.fd == b.fd && a.token == b.token && a.size == b.size && a.offset == b.offset && a.slot == b.slot;
}

std::string hex_of(std::span<const std::byte> b) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (std::byte x : b) {
    s += digits[static_cast<unsigned>(x) >> 4];
    s += digits[static_cast<unsigned>(x) & 15];
  }
  return s;
}

class garbage_run {
 public:
  garbage_run(const context& ctx, std::uint64_t seed) : ctx_(ctx), dev_(ipc_device()), rng_(seed) {}

  std::vector<seed_export> seeds;
  std::map<std::string, std::size_t> outcomes;  // "opener: code" -> count
  std::vector<std::string> findings;            // the first few oracle violations
  std::size_t violations = 0;
  std::size_t tried = 0;

  // Makes one record with the strategy of round `i` for `opener`, opens it, judges it.
  void one(record::kind opener, int i) {
    std::vector<std::byte> data;
    std::string how;
    bool checksum_broken = false;
    const int strategy = i % 10;
    const seed_export& base = pick_seed(opener);
    if (strategy <= 5) {
      const auto layout = record::layout();
      const record::field_desc& f = layout[static_cast<std::size_t>(i / 10) % layout.size()];
      const bool reseal = (i / 10 / layout.size()) % 2 == 0;
      record::bytes b = base.bytes;
      how = std::string("field ") + f.name + (reseal ? " resealed" : "") + " of " + base.origin;
      mutate_field(b, f);
      if (reseal) record::reseal(b);
      checksum_broken = !reseal && b != base.bytes;
      data.assign(b.begin(), b.end());
    } else if (strategy == 6) {
      record::bytes b = base.bytes;
      const int n = 1 + static_cast<int>(rng_() % 4);
      for (int k = 0; k < n; ++k) b[rng_() % 56] = static_cast<std::byte>(rng_());
      const bool reseal = rng_() % 2;
      if (reseal) record::reseal(b);
      checksum_broken = !reseal && b != base.bytes;
      how = std::string("bytes") + (reseal ? " resealed" : "") + " of " + base.origin;
      data.assign(b.begin(), b.end());
    } else if (strategy == 7) {
      data.resize(record::size);
      for (auto& x : data) x = static_cast<std::byte>(rng_());
      how = "random bytes";
    } else if (strategy == 8) {
      data = framed_random(opener);
      how = "framed random";
    } else {
      std::size_t len = rng_() % 200;
      if (len == record::size) len = 0;
      data.resize(len);
      for (std::size_t k = 0; k < len; ++k)
        data[k] = k < record::size ? base.bytes[k] : static_cast<std::byte>(rng_());
      how = "length " + std::to_string(len);
    }
    judge(opener, data, how, checksum_broken);
  }

  void add_seed(const record::bytes& b, std::uint64_t canary, std::size_t skip, bool signaled, const char* origin) {
    seeds.push_back({b, record::decode(b), canary, skip, signaled, origin});
  }

 private:
  // Mostly an export of the opener's kind, sometimes another kind's.
  const seed_export& pick_seed(record::kind opener) {
    std::vector<const seed_export*> same, other;
    for (const auto& s : seeds) (s.fields.object_kind == opener ? same : other).push_back(&s);
    const auto& from = (rng_() % 10 < 8 || other.empty()) ? same : other;
    return *from[rng_() % from.size()];
  }

  void mutate_field(record::bytes& b, const record::field_desc& f) {
    std::uint64_t v = 0;
    for (std::size_t k = 0; k < f.width; ++k) v |= static_cast<std::uint64_t>(b[f.offset + k]) << (8 * k);
    const std::uint64_t mask = f.width == 8 ? ~0ull : (1ull << (8 * f.width)) - 1;
    switch (rng_() % 8) {
      case 0: v = rng_(); break;
      case 1: v ^= 1ull << (rng_() % (8 * f.width)); break;
      case 2: v = 0; break;
      case 3: v = ~0ull; break;
      case 4: v += (rng_() % 2) ? 1 : mask; break;  // +1 or -1 within the width
      case 5: {
        // The same field of another export: a plausible value from a neighbour.
        const seed_export& o = seeds[rng_() % seeds.size()];
        v = 0;
        for (std::size_t k = 0; k < f.width; ++k) v |= static_cast<std::uint64_t>(o.bytes[f.offset + k]) << (8 * k);
        break;
      }
      case 6: v = rng_() % 9; break;
      default: v = (1ull << (8 * f.width - 1)) | (rng_() % 2 ? 0 : 4096); break;
    }
    v &= mask;
    for (std::size_t k = 0; k < f.width; ++k) b[f.offset + k] = static_cast<std::byte>((v >> (8 * k)) & 0xff);
  }

  // Random fields inside a valid frame (magic, version, kind, guard kind, checksum), with
  // pids and descriptors that exist, so that open goes past check() to the kernel.
  std::vector<std::byte> framed_random(record::kind opener) {
    const seed_export& s = seeds[rng_() % seeds.size()];
    record::fields f;
    f.object_kind = rng_() % 4 ? opener : kKinds[rng_() % 3];
    f.guard_type = rng_() % 2 ? record::guard_kind::pidfs_inode : record::guard_kind::start_time;
    f.pid = rng_() % 2 ? s.fields.pid : static_cast<std::uint32_t>(1 + rng_() % 32768);
    f.guard = rng_() % 2 ? s.fields.guard : rng_();
    if (rng_() % 2) f.guard_type = s.fields.guard_type;
    f.fd = static_cast<std::int32_t>(rng_() % 64);
    f.token = rng_() % 4 ? rng_() | 1 : s.fields.token;
    f.size = rng_() % 2 ? s.fields.size : 1 + rng_() % (1 << 20);
    f.offset = rng_() % 2 ? 0 : rng_() % (1 << 20);
    f.device = static_cast<std::uint32_t>(rng_() % 4);
    f.slot = static_cast<std::uint32_t>(rng_() % 130);
    const record::bytes b = record::encode(f);
    return {b.begin(), b.end()};
  }

  void finding(const std::string& what, std::span<const std::byte> data, const std::string& how) {
    ++violations;
    if (findings.size() < 10) findings.push_back(what + " [" + how + "] bytes " + hex_of(data));
  }

  void judge(record::kind opener, std::span<const std::byte> data, const std::string& how, bool checksum_broken) {
    ++tried;
    const char* verb = opener == record::kind::memory ? "memory::open: "
                       : opener == record::kind::physical_memory ? "physical_memory::open: "
                                                                 : "event::open: ";
    try {
      open_and_check(opener, data, how);
      ++outcomes[std::string(record::kind_name(opener)) + ": opened"];
      if (checksum_broken) finding("opened a record with a broken checksum", data, how);
    } catch (const ipcref::exception& e) {
      const errc code = e.code_value();
      ++outcomes[std::string(record::kind_name(opener)) + ": " + errc_name(code)];
      const std::string msg = e.what();
      // Sensible: invalid bytes are `invalid`; a record naming a process that is not the
      // exporter is `exporter_gone`. Nothing else can happen to a garbage record here.
      if (code != errc::invalid && code != errc::exporter_gone)
        finding(std::string("code ") + errc_name(code) + ": " + msg, data, how);
      else if (checksum_broken && code != errc::invalid)
        finding(std::string("broken checksum gave ") + errc_name(code), data, how);
      if (msg.rfind(verb, 0) != 0) finding("message does not name the verb: " + msg, data, how);
    }
  }

  // Opens `data` with `opener`; on success checks it is exactly one seed export, then closes.
  void open_and_check(record::kind opener, std::span<const std::byte> data, const std::string& how) {
    if (opener == record::kind::memory) {
      opened_ptr p(mem::open(data, ctx_, dev_), ctx_);
      const seed_export* s = matching_seed(opener, data, how);
      if (!s) return;
      const std::size_t n = std::min<std::size_t>(s->fields.size, 4096);
      std::vector<unsigned char> expected(s->skip + n);
      fill_pattern(expected.data(), expected.size(), s->canary);
      if (get_pointer_info(p.get(), ctx_).size != s->fields.size ||
          std::memcmp(p.get(), expected.data() + s->skip, n) != 0)
        finding("opened memory that is not the named export's", data, how);
    } else if (opener == record::kind::physical_memory) {
      physical_ref pm(phys::open(data, ctx_, dev_), ctx_);
      const seed_export* s = matching_seed(opener, data, how);
      if (!s) return;
      reserved_range r(ctx_, physical_size(pm.get()));
      r.map(pm.get(), r.size(), access::read_only);
      if (physical_size(pm.get()) != s->fields.size || find_mismatch(r.get(), 4096, s->canary) != SIZE_MAX)
        finding("opened a physical object that is not the named export's", data, how);
    } else {
      event_ref e(ev::open(data, ctx_, dev_), ctx_);
      const seed_export* s = matching_seed(opener, data, how);
      if (!s) return;
      if (event_query(e.get()) != s->signaled) finding("opened an event that is not the named export's", data, how);
    }
  }

  const seed_export* matching_seed(record::kind opener, std::span<const std::byte> data, const std::string& how) {
    if (data.size() != record::size) {
      finding("opened a record of the wrong length", data, how);
      return nullptr;
    }
    const record::fields f = record::decode(data);
    for (const auto& s : seeds)
      if (s.fields.object_kind == opener && same_export(s.fields, f)) return &s;
    finding("opened a record that names no export", data, how);
    return nullptr;
  }

  context ctx_;
  device dev_;
  std::mt19937_64 rng_;
};

// The run's seed: IPCREF_GARBAGE_SEED when set, else the default.
std::uint64_t garbage_seed() {
  std::uint64_t seed = kDefaultSeed;
  if (const char* s = std::getenv("IPCREF_GARBAGE_SEED"); s && *s) seed = std::strtoull(s, nullptr, 0);
  return seed;
}

// A handle's bytes as a record. (Not record_of: cross_process_test.cpp has one, and the
// unity builds compile both files in one translation unit.)
record::bytes as_record(std::span<const std::byte> d) {
  record::bytes b{};
  std::copy(d.begin(), d.end(), b.begin());
  return b;
}

// What the measured rounds did, and this process's descriptors, mappings and ipcref
// resources before and after them.
struct measured_rounds {
  std::size_t tried = 0;
  double seconds = 0;
  process_audit before, after;
  resource_counts rc_before, rc_after;
};

// Warms up (lazy state of the library, the allocator, exceptions), then takes the baseline
// and runs kRecordsPerOpener records through each opener.
measured_rounds run_rounds(garbage_run& run) {
  for (record::kind k : kKinds)
    for (int i = 0; i < 20; ++i) run.one(k, i);
  measured_rounds m;
  m.before = audit_self();
  m.rc_before = get_resource_counts();
  const std::size_t tried_before = run.tried;

  const auto start = std::chrono::steady_clock::now();
  for (record::kind k : kKinds)
    for (int i = 0; i < kRecordsPerOpener; ++i) run.one(k, i);
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  m.tried = run.tried - tried_before;

  m.after = audit_self();
  m.rc_after = get_resource_counts();
  return m;
}

// Prints the run's summary (records, time, seed, every outcome's count) and keeps the
// records, time and seed as test properties.
void report(const garbage_run& run, const measured_rounds& m, std::uint64_t seed) {
  std::ostringstream summary;
  summary << "rb.open.garbage: " << m.tried << " records in " << m.seconds << " s (seed 0x" << std::hex << seed
          << std::dec << ")";
  for (const auto& [what, n] : run.outcomes) summary << "; " << what << " " << n;
  std::printf("%s\n", summary.str().c_str());
  testing::Test::RecordProperty("records", static_cast<int>(m.tried));
  testing::Test::RecordProperty("seconds", std::to_string(m.seconds));
  testing::Test::RecordProperty("seed", std::to_string(seed));
}

// Enough records, the oracle held for every one, and every opener met every outcome.
void expect_oracle_held(garbage_run& run, std::size_t tried) {
  EXPECT_GE(tried, 100000u);
  EXPECT_EQ(run.violations, 0u);
  for (const std::string& f : run.findings) ADD_FAILURE() << f;
  // Every outcome kind shows up: the generator reaches past check() into the kernel paths.
  for (const char* k : {"memory", "physical_memory", "event"}) {
    EXPECT_GT(run.outcomes[std::string(k) + ": invalid"], 0u) << k;
    EXPECT_GT(run.outcomes[std::string(k) + ": exporter_gone"], 0u) << k;
    EXPECT_GT(run.outcomes[std::string(k) + ": opened"], 0u) << k;
  }
}

// The rounds left nothing behind: descriptors, mappings and ipcref's resources are as before.
void expect_nothing_left(const measured_rounds& m) {
  EXPECT_EQ(m.after.descriptors, m.before.descriptors) << describe_change(m.before, m.after);
  EXPECT_EQ(m.after.ipcref_mappings, m.before.ipcref_mappings) << describe_change(m.before, m.after);
  EXPECT_EQ(m.after.mappings, m.before.mappings) << describe_change(m.before, m.after);
  EXPECT_EQ(m.rc_after.open_mappings, m.rc_before.open_mappings);
  EXPECT_EQ(m.rc_after.physical_objects, m.rc_before.physical_objects);
  EXPECT_EQ(m.rc_after.events, m.rc_before.events);
  EXPECT_EQ(m.rc_after.reservations, m.rc_before.reservations);
  EXPECT_EQ(m.rc_after.live_exports, m.rc_before.live_exports);
}

TEST(Garbage, rb_open_garbage) {
  const std::uint64_t seed = garbage_seed();
  context ctx;
  const device dev = ipc_device();
  const std::size_t gran = physical_granularity();

  // Exports of this process (the self path) and of a peer (pidfd_open + pidfd_getfd).
  usm_ptr a(malloc_device(3 * 4096 + 17, dev, ctx), ctx);
  fill_pattern(a.get(), 3 * 4096 + 17, 101);
  handle ha = mem::get(a.get(), ctx);
  handle ha_interior = mem::get(a.as<char>() + 4096, ctx);
  physical_ref pm(physical_create(ctx, dev, 2 * gran, true), ctx);
  reserved_range pm_view(ctx, 2 * gran);
  pm_view.map(pm.get(), 2 * gran);
  fill_pattern(pm_view.get(), 2 * gran, 102);
  handle hp = phys::get(pm.get(), ctx);
  event_ref e(event_create(ctx, dev, {true, false}), ctx);
  handle he = ev::get(e.get(), ctx);

  peer_process peer;
  const std::uint64_t peer_mem = peer.must(op::alloc, 1, 5 * 4096, 201).msg.a;
  const peer_reply peer_ha = peer.must(op::mem_get, peer_mem);
  const std::uint64_t peer_pm = peer.must(op::phys_create, gran, 1).msg.a;
  peer.must(op::fill, peer.must(op::phys_map, peer_pm, gran).msg.a, gran, 202);
  const peer_reply peer_hp = peer.must(op::phys_get, peer_pm);
  const std::uint64_t peer_ev = peer.must(op::event_create, 1).msg.a;
  peer.must(op::event_signal, peer_ev);
  const peer_reply peer_he = peer.must(op::event_get, peer_ev);

  garbage_run run(ctx, seed);
  run.add_seed(as_record(ha.data()), 101, 0, false, "own memory");
  run.add_seed(as_record(ha_interior.data()), 101, 4096, false, "own interior memory");
  run.add_seed(as_record(hp.data()), 102, 0, false, "own physical");
  run.add_seed(as_record(he.data()), 0, 0, false, "own event");
  run.add_seed(as_record(peer_ha.bytes()), 201, 0, false, "peer memory");
  run.add_seed(as_record(peer_hp.bytes()), 202, 0, false, "peer physical");
  run.add_seed(as_record(peer_he.bytes()), 0, 0, true, "peer event");

  const measured_rounds m = run_rounds(run);
  report(run, m, seed);
  expect_oracle_held(run, m.tried);
  expect_nothing_left(m);
}

}  // namespace
