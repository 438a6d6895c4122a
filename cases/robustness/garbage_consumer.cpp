// rb.open.garbage's consumer (the case: garbage.cpp): opens the variants one by one from
// where the producer says, writing down before each open that it is in flight and after it
// what happened, and stops at the first variant that breaks its context; a consumer that
// got through its share opens the real handle once more.
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "forge.hpp"
#include "garbage_impl.hpp"

namespace ipcheck::catalog::robustness_garbage {
namespace {

using Clock = std::chrono::steady_clock;

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

void record(Verdict& v, State st, const Outcome& o, const std::string& detail = {}) {
  v.by = static_cast<std::uint8_t>(Evidence::of(o).by);
  v.errc = static_cast<std::uint8_t>(o.code);
  v.native = o.native;
  put_text(v.native_name, sizeof v.native_name, o.native_name);
  put_text(v.call, sizeof v.call, o.call);
  put_text(v.detail, sizeof v.detail, detail);
  __atomic_store_n(&v.state, st, __ATOMIC_SEQ_CST);  // last: the producer may read after our death
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

// The real bytes open (so every refusal below is about the garbage), and the probe works.
// Returns what opened when the case holds it open through the garbage (Cache::held).
Opened open_real_and_probe(Role& r, HandleKind kind, Cache cache, const ReceivedTarget& target, Probe& probe) {
  SetupSteps setup(r);
  Opened good = open_target(r, kind, target.handle.bytes, target.handle.fd.get());
  r.skip_if_unsupported(good.outcome, std::string(kind_name(kind)) + " open");
  r.require_ok(good.outcome, kClause, std::string("open of the real ") + kind_name(kind) + " handle");
  // Its contents (an event: its signal, settled) are the export's, so later opens need not wait.
  if (!r.check(is_target(r, kind, good.object.get(), target.bytes, kTargetSeed), kClause,
               std::string("the real ") + kind_name(kind) + " handle opens the export"))
    throw RoleAbort{"the real handle does not open the export"};
  probe.mem = alloc_filled(r, 64, kTargetSeed, kClause);
  r.require_ok(probe.check(r), kClause, "the probe read before the garbage");
  if (cache == Cache::held) return good;
  r.check_ok(good.object.reset(), kClause, std::string("close of the real ") + kind_name(kind) + " handle");
  return {};
}

// The verdict on an open of a variant that succeeded: the export the bytes identify, or
// something else.
void record_opened(Role& r, HandleKind kind, const Variant& var, Verdict& v, const Outcome& outcome, ObjectId opened,
                   const ReceivedTarget& target, const ReceivedTarget& decoy, const HandleLayout* layout) {
  // The real handle was seen signaled before the garbage (open_real_and_probe): a signal that
  // has completed needs no second of settling, and a wrong event (the decoy, which is never
  // signaled) would cost the whole second each time.
  constexpr auto settle = std::chrono::milliseconds(20);
  if (is_target(r, kind, opened, target.bytes, kTargetSeed, settle) ||
      (is_target(r, kind, opened, decoy.bytes, kDecoySeed, settle) && carries_token_of(layout, var.bytes, decoy.handle.bytes))) {
    // A field the implementation ignores, or mutations that rebuilt the decoy's handle.
    record(v, State::opened_target, outcome);
  } else if (is_target(r, kind, opened, decoy.bytes, kDecoySeed, settle)) {
    record(v, State::opened_wrong, outcome, "opened the decoy export without its token");
  } else {
    record(v, State::opened_wrong, outcome, "opened " + describe_contents(r, kind, opened, target.bytes));
  }
}

// Opens one variant, writes its verdict down, closes what opened and probes the process:
// true when the variant lost this process's context (nothing more is judged here).
bool open_variant(Role& r, HandleKind kind, const Variant& var, Verdict& v, const ReceivedTarget& target,
                  const ReceivedTarget& decoy, const HandleLayout* layout, Probe& probe) {
  bool lost = false;
  __atomic_store_n(&v.state, State::in_flight, __ATOMIC_SEQ_CST);
  // (Which variant a killed process was in is on the verdict page: in_flight, set above.)
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
  } else {
    record_opened(r, kind, var, v, o.outcome, o.object.get(), target, decoy, layout);
  }
  if (o.outcome.ok())
    if (const Outcome closed = o.object.reset(); !closed.ok())
      r.check_ok(closed, kClause, "close of what '" + var.name + "' opened");
  if (!lost)
    if (const Outcome p = probe.check(r); !p.ok()) {
      record(v, State::context_lost, p, "after it, a read of the consumer's own memory answered " + p.describe());
      lost = true;
    }
  return lost;
}

// After `opens` garbage opens, the real handle still opens the export.
void check_survived(Role& r, HandleKind kind, const ReceivedTarget& target, std::size_t opens) {
  Opened again = open_target(r, kind, target.handle.bytes, target.handle.fd.get());
  r.check_ok(again.outcome, kClause,
             std::string("open of the real ") + kind_name(kind) + " handle after " + std::to_string(opens) +
                 " garbage opens (the process's context survived them)");
  if (again.outcome.ok())
    r.check(is_target(r, kind, again.object.get(), target.bytes, kTargetSeed), kClause,
            std::string("the real ") + kind_name(kind) + " handle, opened after the garbage, is still the export");
}

}  // namespace

void consumer(Role& r, HandleKind kind, Cache cache) {
  // Each consumer ends on its own (the producer waits for its exit before the next gets work).
  ReceivedTarget target = receive_target(r, "handle");
  ReceivedTarget decoy = receive_target(r, "decoy");
  const std::vector<Variant> variants = all_variants(r, kind, target.handle.bytes, decoy.handle.bytes,
                                                    target.handle.fd.get() >= 0, decoy.handle.fd.get() >= 0);
  const HandleLayout* layout = known_layout(r, kind_name(kind), target.handle.bytes.size());
  Probe probe;
  Opened held = open_real_and_probe(r, kind, cache, target, probe);
  // Readied ahead of need: the work (where to start, and the verdict page) comes now.
  Received page = r.receive("verdicts");
  // "FROM TO": this consumer's share of its lane.
  const std::string share(reinterpret_cast<const char*>(page.bytes.data()), page.bytes.size());
  char* rest = nullptr;
  const std::size_t from = std::strtoull(share.c_str(), &rest, 10);
  const std::size_t to = std::min<std::size_t>(std::strtoull(rest, nullptr, 10), variants.size());
  SharedVerdicts shared;
  shared.fd = std::move(page.fd);
  if (!shared.fd || !shared.map(variants.size()))
    r.harness_error(std::string("the shared verdict page did not map: ") + std::strerror(errno));
  const ResourceCount before = count_resources();
  std::size_t i = from;
  bool lost = false;
  auto said = Clock::now();
  for (; i < to; ++i) {
    lost = open_variant(r, kind, variants[i], shared.v[i], target, decoy, layout, probe);
    if (lost) break;
    // A line a second shows the runner this consumer is alive (a hung open is silent).
    if (Clock::now() - said > std::chrono::seconds(1)) {
      said = Clock::now();
      r.note("judged up to variant " + std::to_string(i + 1) + " of " + std::to_string(to));
    }
  }
  if (lost) {
    // Nothing more is judged in this process: the producer hands the rest to a fresh one.
    r.note("context lost at variant " + std::to_string(i) + "; the next consumer resumes after it");
    probe.mem.release();
    held.object.release();
    return;
  }
  check_survived(r, kind, target, i - from);
  check_no_growth(r, before, count_resources(), kClause, "after " + std::to_string(i - from) + " garbage opens");
}

}  // namespace ipcheck::catalog::robustness_garbage
