// Forged handles (ipcref/1 only): records resealed so their framing is sound, naming
// another descriptor of the exporter (rb.open.confused_deputy) or another live process
// that took an exited exporter's pid (rb.open.pid_reuse). The confused-deputy forgeries
// meet a consumer that opened both real handles (closed again; `.held`: still open), and
// where the record names the exporter's descriptor, the exporter then puts another file at
// that number (a close-all loop or a dup2 behind its runtime's back): the real bytes must
// not map that file.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "forge.hpp"
#include "kinds.hpp"

namespace ipcheck::catalog::robustness_forged {
namespace {

constexpr std::uint64_t kTargetSeed = 0xcd01, kDecoySeed = 0xcd02, kHiddenSeed = 0xcd03, kBystanderSeed = 0xcd05;
constexpr int kScanFds = 256;  // descriptor numbers of the exporter tried in forgeries

struct Forgery {
  std::string name;
  std::vector<std::byte> bytes;
  int fd = -1;  // descriptor passed along (-1: the implementation fetches the one the record names)
};

// --- rb.open.confused_deputy
constexpr const char* kDeputy = "rb.open.confused_deputy";

// The exporter's side of the replaced descriptor: descriptor `fd` (the export's, as its
// record names it) now holds a memfd of pattern(kHiddenSeed); says "1" when it does.
void replace_descriptor(Role& r, int fd) {
  const std::vector<std::byte> bytes = pattern(kHiddenSeed, 2 * kPage);
  unique_fd other(::memfd_create("ipcheck-not-the-export", MFD_CLOEXEC));
  const bool done = other && ::write(other.get(), bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()) &&
                    ::dup3(other.get(), fd, O_CLOEXEC) == fd;
  if (!done) r.note(std::string("the export's descriptor could not be replaced: ") + std::strerror(errno));
  send_text(r, "consumer", "replaced", done ? "1" : "0");
}

void deputy_producer(Role& r) {
  Target target = export_target(r, HandleKind::memory, kTargetSeed, kDeputy, 2 * kPage);
  Target decoy = export_target(r, HandleKind::memory, kDecoySeed, kDeputy, 2 * kPage);
  // Never exported: no handle may ever reach it.
  Owned hidden = alloc_filled(r, 2 * kPage, kHiddenSeed, kDeputy);
  send_target(r, "consumer", "handle", target);
  send_target(r, "consumer", "decoy", decoy);
  // Where the decoy and the hidden allocation lie from the export, for layouts whose handle
  // names a range of a larger object (CUDA's: an offset into a 2 MiB chunk).
  const auto delta = [&](DevPtr p) { return std::to_string(static_cast<long long>(p - target.object.get())); };
  send_text(r, "consumer", "deltas", delta(decoy.object.get()) + " " + delta(hidden.get()));
  if (const std::string replace = receive_text(r, "replace"); !replace.empty()) replace_descriptor(r, std::stoi(replace));
  r.barrier("consumer-done");
}

// Layouts with an offset field but no ipcref record (CUDA's memory handle as learned): the
// export's handle with its offset moved onto the decoy export and onto memory never
// exported, as the fuzzer's confused-deputy findings did.
void deputy_by_offset(Role& r, const ReceivedTarget& target, const HandleLayout& l, long long to_decoy,
                      long long to_hidden) {
  const std::uint64_t offset = field_value(l, target.handle.bytes, FieldRole::offset);
  struct Aim {
    const char* name;
    long long delta;
    std::uint64_t seed;
  };
  std::size_t refused = 0, wrong = 0;
  Evidence by = Evidence::tally();
  for (const Aim& aim : {Aim{"the decoy export", to_decoy, kDecoySeed}, Aim{"memory never exported", to_hidden, kHiddenSeed}}) {
    std::vector<std::byte> b = target.handle.bytes;
    if (!forge_field(l, b, FieldRole::offset, offset + static_cast<std::uint64_t>(aim.delta))) continue;
    r.note(std::string("opening the export's handle with its offset moved onto ") + aim.name);
    Opened o = open_target(r, HandleKind::memory, b, target.handle.fd.get());
    by.with(o.outcome);
    if (!o.outcome.ok()) {
      ++refused;
      if (o.outcome.code == Errc::device_lost) {
        ++wrong;
        r.check(false, Evidence::of(o.outcome), kDeputy,
                std::string("offset moved onto ") + aim.name + ": refused with " + o.outcome.describe() +
                    ", which loses the process's context");
      }
      continue;
    }
    const Seen reached = is_target(r, HandleKind::memory, o.object.get(), 2 * kPage, aim.seed);
    by.with(reached.by);
    if (reached) {
      ++wrong;
      r.check(false, reached.by, kDeputy,
              std::string("the export's handle with its offset moved onto ") + aim.name + " (layout " + l.name +
                  ") opened and maps it");
    }
  }
  r.check(wrong == 0, by, kDeputy,
          "2 offset forgeries (layout " + l.name + "): " + std::to_string(refused) + " refused, " +
              std::to_string(wrong) + " reached another object");
}

// Both real handles open what they name: the objects the forgeries aim at are live. What
// opened, for a held case to keep open.
std::vector<Opened> check_real_handles(Role& r, const ReceivedTarget& target, const ReceivedTarget& decoy, Cache cache) {
  std::vector<Opened> held;
  for (auto* t : {&target, &decoy})
    held.push_back(warm_up(r, cache, HandleKind::memory, t->handle.bytes, t->handle.fd.get(), t->bytes,
                           t == &target ? kTargetSeed : kDecoySeed, kDeputy));
  return held;
}

// The exporter put another file (pattern kHiddenSeed) at the descriptor number the export's
// record names, after this process opened the export: the real bytes now name that file,
// which was never exported. Refused, or the export (a runtime that kept its own reference):
// never the file.
void check_replaced_descriptor(Role& r, const ReceivedTarget& target, const Record& a, Cache cache) {
  send_text(r, "producer", "replace", std::to_string(a.fd));
  if (receive_text(r, "replaced") != "1") {
    r.note("the exporter could not replace its descriptor: the replaced-descriptor open is not judged");
    return;
  }
  const std::string what = "the real handle, opened after the exporter put another file at its descriptor " +
                           std::to_string(a.fd) + cache_words(cache, Cache::warm);
  Opened o = open_target(r, HandleKind::memory, target.handle.bytes, -1);
  if (!o.outcome.ok()) {
    check_clean_refusal(r, o.outcome, kDeputy, what, "robustness.open.confused_deputy.replaced");
    return;
  }
  const bool other = static_cast<bool>(is_target(r, HandleKind::memory, o.object.get(), 2 * kPage, kHiddenSeed));
  r.check(!other, Evidence::of(o.outcome), kDeputy,
          what + (other ? ": opened and maps that file" : ": opened, and does not map that file"));
}

// The export's record `a` resealed with parts of the decoy's record `d` and with every other
// descriptor number of the exporter, and the export's bytes with the decoy's passed descriptor.
std::vector<Forgery> deputy_forgeries(const ReceivedTarget& target, const ReceivedTarget& decoy, const Record& a,
                                      const Record& d) {
  std::vector<Forgery> forgeries;
  // An fd-first handle needs a descriptor with it: the export's own, so that only the
  // forged record can lead the driver astray. A record handle names its descriptor.
  const int passed = load_le(target.handle.bytes.data(), 4) == ipcref::record::magic ? -1 : target.handle.fd.get();
  auto forge = [&](std::string name, Record f, int fd = -1) {
    forgeries.push_back({std::move(name), encode_record(f, target.handle.bytes), fd < 0 ? passed : fd});
  };
  Record f = a;
  f.fd = d.fd;
  forge("the export's token, the decoy's descriptor", f);
  f.slot = d.slot;
  f.offset = d.offset;
  f.size = d.size;
  forge("the export's token, the decoy's descriptor, slot and range", f);
  f = d;
  f.token = a.token;
  forge("the decoy's record with the export's token", f);
  f = a;
  f.size = a.size + kPage;
  forge("the export's range one page longer", f);
  f = a;
  f.offset = a.offset + kPage;
  forge("the export's range one page further", f);
  for (int fd = 0; fd < kScanFds; ++fd) {
    if (fd == a.fd) continue;
    f = a;
    f.fd = fd;
    forge("the export's token naming exporter descriptor " + std::to_string(fd), f);
  }
  // With descriptors passed by SCM_RIGHTS: the export's bytes with the decoy's descriptor.
  if (decoy.handle.fd) forgeries.push_back({"the export's bytes with the decoy's passed descriptor", target.handle.bytes,
                                            decoy.handle.fd.get()});
  return forgeries;
}

// Opens every forgery: each must be refused or open the export its token names.
void open_forgeries(Role& r, const std::vector<Forgery>& forgeries) {
  std::size_t refused = 0, identified = 0, deputies = 0;
  std::map<std::string, std::size_t> codes;
  Evidence by = Evidence::tally();
  for (const auto& g : forgeries) {
    r.note("opening " + g.name);  // a crash's last output line names the forgery
    Opened o = open_target(r, HandleKind::memory, g.bytes, g.fd);
    by.with(o.outcome);
    if (!o.outcome.ok()) {
      ++refused;
      ++codes[errc_name(o.outcome.code)];
      continue;
    }
    // The export its token names is the object the bytes identify: not a confused deputy
    // (an fd-first driver opens the descriptor that came with the bytes, whatever the
    // record's fd field says). Anything else is.
    const Seen is_export = is_target(r, HandleKind::memory, o.object.get(), 2 * kPage, kTargetSeed);
    by.with(is_export.by);
    if (is_export) {
      ++identified;
      continue;
    }
    std::string what = "something the exporter never exported under it";
    if (is_target(r, HandleKind::memory, o.object.get(), 2 * kPage, kDecoySeed)) what = "the decoy export";
    else if (is_target(r, HandleKind::memory, o.object.get(), 2 * kPage, kHiddenSeed)) what = "memory never exported";
    ++deputies;
    r.check(false, Evidence::of(o.outcome), kDeputy, "forged handle (" + g.name + ") opened and maps " + what);
  }
  std::string tally;
  for (const auto& [c, n] : codes) tally += (tally.empty() ? "" : ", ") + c + " " + std::to_string(n);
  r.check(deputies == 0, by, kDeputy,
          std::to_string(forgeries.size()) + " forged handles: " + std::to_string(refused) + " refused (" + tally + "), " +
              std::to_string(identified) + " opened the export their token names, " + std::to_string(deputies) +
              " opened another object");
}

void deputy_consumer(Role& r, Cache cache) {
  ReceivedTarget target = receive_target(r, "handle");
  ReceivedTarget decoy = receive_target(r, "decoy");
  const std::string deltas = receive_text(r, "deltas");
  if (!forgeable(r)) {
    const HandleLayout* l = known_layout(r, "memory", target.handle.bytes.size());
    if (!l || l->find(FieldRole::offset) < 0)
      r.skip("handle layout '" + r.adapter().info().handle_layout +
             "' is neither an ipcref record nor a layout with a known offset field: cannot forge");
    const auto space = deltas.find(' ');
    {
      std::vector<Opened> held = check_real_handles(r, target, decoy, cache);
      deputy_by_offset(r, target, *l, std::stoll(deltas.substr(0, space)), std::stoll(deltas.substr(space + 1)));
    }
    send_text(r, "producer", "replace", "");
    r.barrier("consumer-done");
    return;
  }
  const Record a = decode_record(r, target.handle.bytes, kDeputy);
  const Record d = decode_record(r, decoy.handle.bytes, kDeputy);
  std::vector<Opened> held = check_real_handles(r, target, decoy, cache);
  const std::vector<Forgery> forgeries = deputy_forgeries(target, decoy, a, d);
  const ResourceCount before = count_resources();
  open_forgeries(r, forgeries);
  check_no_growth(r, before, count_resources(), kDeputy, "after the forged opens");
  // A record that names the exporter's descriptor (no descriptor travels with it).
  if (!target.handle.fd && load_le(target.handle.bytes.data(), 4) == ipcref::record::magic)
    check_replaced_descriptor(r, target, a, cache);
  else
    send_text(r, "producer", "replace", "");
  r.barrier("consumer-done");
}

void register_deputy() {
  // The plain case is the warm one: both real handles are opened (and closed) before the forgeries.
  for (Cache cache : {Cache::warm, Cache::held})
    register_case(Case("robustness.open.confused_deputy" + cache_suffix(cache, Cache::warm),
                       "Records resealed to name the exporter's other descriptors, a decoy export and unexported "
                       "memory, or a descriptor the exporter replaced, never open them" + cache_words(cache, Cache::warm))
                      .clause(kDeputy)
                      .role("producer", deputy_producer)
                      .role("consumer", [cache](Role& r) { deputy_consumer(r, cache); })
                      .def);
}

IPCHECK_CASE(register_deputy);

// --- rb.open.pid_reuse: the bystander is a live exporter too, so skipping the identity
// guard would map its memory.
constexpr const char* kReuse = "rb.open.pid_reuse";

void reuse_producer(Role& r) {
  Target t = export_target(r, HandleKind::memory, kTargetSeed, kReuse);
  send_target(r, "consumer", "exited", t);
  receive_text(r, "received");
  // Ends here: its pid is "exited"; the bystander plays the process that took the pid.
}

void reuse_bystander(Role& r) {
  Target t = export_target(r, HandleKind::memory, kBystanderSeed, kReuse);
  send_target(r, "consumer", "bystander", t);
  r.barrier("consumer-done");
}

// A layout that names the exporter's pid but is no ipcref record (CUDA's learned layout:
// pid at bytes 8..11): the exited exporter's handle with that field set to the bystander's
// pid is what the handle looks like once the pid was reused by another exporter. Refused,
// or never the bystander's memory.
void reuse_by_layout(Role& r, const HandleLayout& l, const ReceivedTarget& exited, const ReceivedTarget& bystander) {
  send_text(r, "producer", "received", "");
  r.note("producer ended: " + r.wait_exit("producer"));
  const std::uint32_t pid = static_cast<std::uint32_t>(r.pid_of("bystander"));
  {
    SetupSteps setup(r);  // the layout read where the bystander's handle names its pid
    r.require(field_value(l, bystander.handle.bytes, FieldRole::pid) == pid, kReuse,
              "the bystander's handle names its pid " + std::to_string(pid) + " where layout '" + l.name + "' says");
  }
  std::vector<std::byte> forged = exited.handle.bytes;
  forge_field(l, forged, FieldRole::pid, pid);
  const std::string name = "the exited exporter's handle with its pid field (" + l.name + ") naming the bystander";
  Opened o = open_target(r, HandleKind::memory, forged, -1);
  if (o.outcome.ok()) {
    const bool reached = static_cast<bool>(is_target(r, HandleKind::memory, o.object.get(), bystander.bytes, kBystanderSeed));
    r.check(!reached, Evidence::of(o.outcome), kReuse,
            name + " opened and " + (reached ? "maps the bystander's memory" : "maps something other than the bystander's memory"));
    if (!reached) r.observe("robustness.open.pid_reuse.layout", "opened_not_bystander", kReuse);
  } else {
    check_clean_refusal(r, o.outcome, kReuse, name, "robustness.open.pid_reuse.refusal");
  }
  SetupSteps setup(r);
  Opened real = open_target(r, HandleKind::memory, bystander.handle.bytes, bystander.handle.fd.get());
  r.check_ok(real.outcome, kReuse, "open of the bystander's real handle");
  if (real.outcome.ok())
    r.check(is_target(r, HandleKind::memory, real.object.get(), bystander.bytes, kBystanderSeed), kReuse,
            "the bystander's real handle maps its memory");
  r.barrier("consumer-done");
}

void reuse_consumer(Role& r) {
  if (!forgeable(r)) {
    ReceivedTarget exited = receive_target(r, "exited");
    ReceivedTarget bystander = receive_target(r, "bystander");
    const HandleLayout* l = known_layout(r, "memory", exited.handle.bytes.size());
    if (l && l->find(FieldRole::pid) >= 0 && l->find(FieldRole::guard) < 0)
      return reuse_by_layout(r, *l, exited, bystander);
    send_text(r, "producer", "received", "");
  }
  need_forgeable(r);
  if (r.adapter().info().handle_layout != "ipcref/1")
    r.skip("handle layout '" + r.adapter().info().handle_layout +
           "' carries its descriptor with the handle (SCM_RIGHTS): no pid names the exporter, so a reused pid "
           "cannot lead an open anywhere");
  ReceivedTarget exited = receive_target(r, "exited");
  ReceivedTarget bystander = receive_target(r, "bystander");
  send_text(r, "producer", "received", "");
  r.note("producer ended: " + r.wait_exit("producer"));
  const Record old = decode_record(r, exited.handle.bytes, kReuse);
  const Record live = decode_record(r, bystander.handle.bytes, kReuse);
  {
    SetupSteps setup(r);  // ipcheck reading the record it forges from
    r.require(live.pid == static_cast<std::uint32_t>(r.pid_of("bystander")), kReuse,
              "the bystander's handle names its pid " + std::to_string(r.pid_of("bystander")));
  }

  // The bystander's own record, but with the exited exporter's identity guard: what a
  // handle of the exited exporter looks like once its pid names the bystander.
  Record forged = live;
  forged.guard_type = old.guard_type;
  forged.guard = old.guard;
  if (forged.guard_type == live.guard_type && forged.guard == live.guard) {
    // Start-time guards of processes started in the same tick are equal: any other value.
    forged.guard = live.guard + 1;
    r.note("the exporters' guards are equal (same start tick); the forgery uses guard + 1");
  }
  const int passed = -1;  // record handles name their descriptor
  std::vector<Forgery> forgeries{{"the bystander's export under the exited exporter's guard",
                                  encode_record(forged, bystander.handle.bytes), passed}};
  // The exited exporter's record pointed at the bystander's pid.
  Record moved = old;
  moved.pid = live.pid;
  forgeries.push_back({"the exited exporter's record naming the bystander's pid", encode_record(moved, exited.handle.bytes), passed});
  moved.fd = live.fd;
  forgeries.push_back({"the exited exporter's record naming the bystander's pid and descriptor",
                       encode_record(moved, exited.handle.bytes), passed});

  for (const auto& g : forgeries) {
    Opened o = open_target(r, HandleKind::memory, g.bytes, g.fd);
    if (o.outcome.ok()) {
      const bool reached = static_cast<bool>(is_target(r, HandleKind::memory, o.object.get(), bystander.bytes, kBystanderSeed));
      r.check(false, Evidence::of(o.outcome), kReuse, g.name + " opened" + (reached ? " and maps the bystander's memory" : ""));
      continue;
    }
    check_clean_refusal(r, o.outcome, kReuse, g.name, "robustness.open.pid_reuse.refusal");
  }
  // The bystander is reachable by its real handle: the refusals were the guard's doing.
  SetupSteps setup(r);
  Opened real = open_target(r, HandleKind::memory, bystander.handle.bytes, bystander.handle.fd.get());
  r.check_ok(real.outcome, kReuse, "open of the bystander's real handle");
  if (real.outcome.ok())
    r.check(is_target(r, HandleKind::memory, real.object.get(), bystander.bytes, kBystanderSeed), kReuse,
            "the bystander's real handle maps its memory");
  r.barrier("consumer-done");
}

IPCHECK_CASE(Case("robustness.open.pid_reuse",
                  "A handle of an exited exporter whose pid now names a live exporter is refused, never reaching it")
                 .clause(kReuse)
                 .role("producer", reuse_producer)
                 .role("bystander", reuse_bystander)
                 .role("consumer", reuse_consumer));

}  // namespace
}  // namespace ipcheck::catalog::robustness_forged
