// rb.revoke.tamper: nothing an importer can write makes a put or freed export open again.
// The consumer is the hostile importer, with nothing but what it was handed: it snapshots
// every page of it (its mapping, as wide as the kernel made it, read directly where it is a
// host mapping; the whole content of a descriptor that came with the handle), the producer puts the
// export, the consumer writes every snapshot back (memcpy or the adapter's write; pwrite) and opens
// the stale bytes; then the producer frees the object, and the consumer does it all again.
// Nothing the consumer was handed may reach the producer's memory beyond the exported
// object: a decoy allocation it never exported must be nowhere in sight.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <unordered_set>
#include <utility>

#include "kinds.hpp"

namespace ipcheck::catalog::robustness_tamper {
namespace {

constexpr const char* kTamper = "rb.revoke.tamper";
constexpr std::uint64_t kSeed = 0x7a3e;  // even: a clear event
constexpr std::uint64_t kDecoySeed = 0xdec0;
constexpr std::size_t kBytes = 2 * kPage;
constexpr std::size_t kDecoyBytes = 2 * kPage;
constexpr std::size_t kLargestDescriptor = 64ull << 20;  // what the consumer reads of a descriptor, at most

std::uintptr_t page_down(std::uintptr_t v) { return v / kPage * kPage; }
std::uintptr_t page_up(std::uintptr_t v) { return (v + kPage - 1) / kPage * kPage; }

// The shared file mapping of this process that holds `p` (/proc/self/maps): its extent and
// whether it is writable; an empty one when `p` is in none (device memory, say).
struct HostMapping {
  std::uintptr_t start = 0, end = 0;
  bool writable = false;
  explicit operator bool() const { return start != 0; }
};
HostMapping shared_mapping_around(std::uintptr_t p) {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    unsigned long long start = 0, end = 0;
    char perms[8] = {};
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %7s %*s %*s %*s %n", &start, &end, perms, &path_at) < 3) continue;
    if (p < start || p >= end) continue;
    const bool file = path_at > 0 && static_cast<std::size_t>(path_at) < line.size();
    if (perms[3] == 's' && file && perms[0] == 'r') return {start, end, perms[1] == 'w'};
    return {};
  }
  return {};
}

// Whether an aligned word of `bytes` is a word of the decoy's pattern.
bool holds_decoy(std::span<const std::byte> bytes) {
  static const std::unordered_set<std::uint64_t> words = [] {
    std::unordered_set<std::uint64_t> w;
    const auto decoy = pattern(kDecoySeed, kDecoyBytes);
    for (std::size_t i = 0; i + 8 <= decoy.size(); i += 8) {
      std::uint64_t v = 0;
      std::memcpy(&v, decoy.data() + i, 8);
      w.insert(v);
    }
    return w;
  }();
  for (std::size_t i = 0; i + 8 <= bytes.size(); i += 8) {
    std::uint64_t v = 0;
    std::memcpy(&v, bytes.data() + i, 8);
    if (words.count(v)) return true;
  }
  return false;
}

void tamper_producer(Role& r, HandleKind kind) {
  // Never exported: none of its bytes may reach the consumer.
  Owned decoy = alloc_filled(r, kDecoyBytes, kDecoySeed, kTamper);
  Target t = export_target(r, kind, kSeed, kTamper, kBytes);
  send_target(r, "consumer", "handle", t);
  receive_text(r, "snapshots-taken");
  put_or_skip(r, t.exported, kTamper, "put");
  send_text(r, "consumer", "put", "");
  receive_text(r, "checked-after-put");
  {
    SetupSteps setup(r);
    r.check_ok(t.object.reset(), kTamper, std::string("free the exported ") + kind_name(kind) + " object");
  }
  send_text(r, "consumer", "freed", "");
  r.barrier("consumer-done");
}

// What the consumer was handed, page by page, and how to write it back.
struct Handed {
  DevPtr region = 0;  // the mapping, as wide as the kernel made it
  bool host = false;  // a host mapping of this process, read and written directly, as an attacker would
  bool writable = false;
  std::vector<std::byte> region_copy;
  std::vector<std::byte> descriptor_copy;
  bool event_signaled = false;
};

void write_back(Role& r, const Handed& h, int fd, ObjectId event, const std::string& after) {
  SetupSteps setup(r);  // the attack's steps; what the stale open answers decides
  if (h.region && h.host) {
    if (h.writable)
      std::memcpy(reinterpret_cast<void*>(h.region), h.region_copy.data(), h.region_copy.size());
    r.note("the mapping's snapshot after " + after + ": " +
           (h.writable ? "written back" : "not written back (the mapping is read-only)"));
  } else if (h.region) {
    r.require_ok(r.adapter().write(h.region, h.region_copy), kTamper, "write the mapping's snapshot back after " + after);
  }
  if (fd >= 0) {
    const ssize_t n = ::pwrite(fd, h.descriptor_copy.data(), h.descriptor_copy.size(), 0);
    r.note("pwrite of the descriptor's snapshot after " + after + ": " +
           (n == static_cast<ssize_t>(h.descriptor_copy.size()) ? std::string("written")
                                                                : "refused (" + std::string(std::strerror(errno)) + ")"));
  }
  if (event) {
    // An importer writes its event's shared state: signal, then back to the snapshot's.
    r.require_ok(r.adapter().event_signal(event), kTamper, "signal the opened event after " + after);
    if (!h.event_signaled) r.require_ok(r.adapter().event_reset(event), kTamper, "reset the opened event after " + after);
  }
}

void expect_refused(Role& r, HandleKind kind, const ReceivedTarget& t, const std::string& after) {
  Opened o = open_target(r, kind, t.handle.bytes, t.handle.fd.get());
  const std::string what = std::string(kind_name(kind)) + " open of the stale handle after " + after +
                           " and every snapshot written back" + (t.handle.fd ? " (its descriptor passed along)" : "");
  if (o.outcome.ok() && kind != HandleKind::event)
    r.observe("reopened_" + after + "_is_target",
              is_target(r, kind, o.object.get(), t.bytes, kSeed) ? "yes" : "no", kTamper);
  r.check_error(o.outcome, Errc::invalid, kTamper, what);
}

// Snapshots every page of the mapping at `ptr` into `h`: the kernel's whole extent where it
// is a host mapping of this process (read and written directly, as a hostile importer would),
// else the export's pages through the adapter. A mapping wider than the export is recorded;
// what decides is whether any of it is the producer's other memory (the decoy) and whether
// writing it back revives the export. Adds what it took to `handed`.
void snapshot_mapping(Role& r, const ReceivedTarget& t, DevPtr ptr, const Evidence& handed_by, Handed& h,
                      std::string& handed) {
  std::uintptr_t lo = page_down(ptr), hi = page_up(ptr + t.bytes);
  const HostMapping around = shared_mapping_around(ptr);
  if (around) {
    r.observe("mapping_extent",
              size_name(around.end - around.start) + " for a " + size_name(t.bytes) + " export" +
                  (around.start >= lo && around.end <= hi ? " (its pages only)" : " (wider than the export)"),
              kTamper);
    h.host = true;
    h.writable = around.writable;
    lo = around.start;
    hi = around.end;
  }
  h.region = lo;
  h.region_copy.resize(hi - lo);
  Outcome read = Outcome::success();
  if (h.host) {
    std::memcpy(h.region_copy.data(), reinterpret_cast<const void*>(lo), hi - lo);
  } else {
    read = r.adapter().read(h.region, h.region_copy);
    SetupSteps setup(r);
    r.require_ok(read, kTamper, "snapshot the mapping (" + size_name(hi - lo) + ")");
  }
  r.check(!holds_decoy(h.region_copy), h.host ? handed_by : Evidence::of(read), kTamper,
          "the mapping (" + size_name(hi - lo) + ") holds no byte of the producer's unexported decoy");
  handed += "mapping " + size_name(hi - lo);
}

// Snapshots the whole content of the descriptor `fd` that came with the handle into `h` (up to
// kLargestDescriptor); adds what it took to `handed`.
void snapshot_descriptor(Role& r, HandleKind kind, const ReceivedTarget& t, int fd, const Evidence& handed_by,
                         Handed& h, std::string& handed) {
  struct stat st{};
  {
    SetupSteps setup(r);
    r.require(::fstat(fd, &st) == 0, kTamper, "fstat of the descriptor that came with the handle");
  }
  const std::size_t size = static_cast<std::size_t>(st.st_size);
  if (kind != HandleKind::event)
    r.observe("descriptor_size", size_name(size) + " for a " + size_name(t.bytes) + " export", kTamper);
  h.descriptor_copy.resize(std::min(size, kLargestDescriptor));
  const ssize_t n = ::pread(fd, h.descriptor_copy.data(), h.descriptor_copy.size(), 0);
  h.descriptor_copy.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  r.check(!holds_decoy(h.descriptor_copy), handed_by, kTamper,
          "the descriptor holds no byte of the producer's unexported decoy");
  handed += std::string(handed.empty() ? "" : ", ") + "descriptor " + size_name(h.descriptor_copy.size());
}

void tamper_consumer(Role& r, HandleKind kind) {
  ReceivedTarget t = receive_target(r, "handle");
  Opened opened = open_target(r, kind, t.handle.bytes, t.handle.fd.get());
  r.skip_if_unsupported(opened.outcome, std::string(kind_name(kind)) + " open");
  {
    SetupSteps setup(r);
    r.require_ok(opened.outcome, kTamper, std::string(kind_name(kind)) + " open of the export");
  }
  // What the runtime handed over (its mapping, its descriptor) is the runtime's doing.
  const Evidence handed_by = Evidence::of(opened.outcome);

  // The export as this process sees it: a mapping of `bytes` at `ptr` (none for events).
  PhysicalView view;
  DevPtr ptr = 0;
  if (kind == HandleKind::memory) ptr = opened.object.get();
  if (kind == HandleKind::physical) {
    view = map_physical(r, opened.object.get(), t.bytes, kTamper);
    ptr = view.ptr();
  }
  const ObjectId event = kind == HandleKind::event ? opened.object.get() : 0;

  Handed h;
  std::string handed;
  // Every page of the mapping, the whole content of the descriptor, the event's state.
  if (ptr) snapshot_mapping(r, t, ptr, handed_by, h, handed);
  const int fd = t.handle.fd.get();
  if (fd >= 0) snapshot_descriptor(r, kind, t, fd, handed_by, h, handed);
  if (event) {
    h.event_signaled = static_cast<bool>(query(r, event, kTamper, "query the opened event"));
    handed += std::string(handed.empty() ? "" : ", ") + "event state";
  }
  r.observe("handed", handed.empty() ? "nothing" : handed, kTamper);
  send_text(r, "producer", "snapshots-taken", "");

  receive_text(r, "put");
  write_back(r, h, fd, event, "put");
  expect_refused(r, kind, t, "put");
  send_text(r, "producer", "checked-after-put", "");

  receive_text(r, "freed");
  write_back(r, h, fd, event, "free");
  expect_refused(r, kind, t, "free");
  r.barrier("consumer-done");
}

void register_tamper() {
  for (HandleKind kind : {HandleKind::memory, HandleKind::physical, HandleKind::event}) {
    const std::string name = kind_name(kind);
    register_case(Case("robustness.revoke.tamper." + name,
                       std::string(kind == HandleKind::event ? "An" : "A") + " " + name +
                           " export's consumer writes back every page it was handed (mapping, descriptor) after put "
                           "and after free: the stale handle stays refused, and nothing beyond the object was in reach")
                      .clause(kTamper)
                      .needs(needs_verb(put_verb(kind), "put"))
                      .role("producer", [kind](Role& r) { tamper_producer(r, kind); })
                      .role("consumer", [kind](Role& r) { tamper_consumer(r, kind); })
                      .def);
  }
}

IPCHECK_CASE(register_tamper);

}  // namespace
}  // namespace ipcheck::catalog::robustness_tamper
