// Exportable objects, the exporter's side (object.hpp says how objects and imports work):
// an object's two memfds made, mapped and sealed; exports published in and revoked from its
// control page; and this process's identity, which stamps every export. The importer's side,
// which proves an export live before it maps anything, is object_import.cpp (with what
// object_export_read.cpp reads of the export).
#include "object.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <mutex>
#include <new>
#include <sstream>

#include "ipcref/defects.hpp"
#include "object_impl.hpp"
#include "text.hpp"

namespace ipcref::detail {

using text::cat;

namespace {

// Data objects: the size is fixed (no importer's mapping is cut short) and nobody adds seals.
constexpr unsigned kDataSeals = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW;
// Control objects: besides, no write and no new writable mapping, by any descriptor.
constexpr unsigned kControlSeals = kDataSeals | F_SEAL_FUTURE_WRITE;
constexpr long kPidfsMagic = 0x50494446;

self_identity compute_self() {
  self_identity s;
  s.pid = ::getpid();
  unique_fd pidfd(sys::pidfd_open(s.pid));
  struct statfs fs{};
  struct stat st{};
  if (pidfd && ::fstatfs(pidfd.get(), &fs) == 0 && fs.f_type == kPidfsMagic &&
      ::fstat(pidfd.get(), &st) == 0) {
    s.kind = record::guard_kind::pidfs_inode;
    s.guard = st.st_ino;
  } else {
    s.kind = record::guard_kind::start_time;
    s.guard = process_start_time(s.pid);
  }
  return s;
}

// This process's identity, kept on a page the kernel zeroes in every child
// (MADV_WIPEONFORK): a child, however it was made (fork, _Fork, clone), finds it unset
// and computes its own, and the process that computed it reads it without a syscall.
struct identity_cache {
  std::atomic<std::uint32_t> ready;  // 0 on a fresh page and in every child
  self_identity id;
};

identity_cache* identity_page() {
  static identity_cache* const page = []() -> identity_cache* {
    void* p = ::mmap(nullptr, sys::page_size(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    if (::madvise(p, sys::page_size(), MADV_WIPEONFORK) != 0) {
      ::munmap(p, sys::page_size());
      return nullptr;
    }
    return new (p) identity_cache{};
  }();
  return page;
}

std::atomic_ref<std::uint64_t> witness_at(void* control_page) noexcept {
  return std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(static_cast<char*>(control_page) + sys::page_size()));
}

}  // namespace

// Start time of `pid` in clock ticks (field 22 of /proc/<pid>/stat); 0 when unreadable.
std::uint64_t process_start_time(pid_t pid) {
  std::ifstream in(cat("/proc/", pid, "/stat"));
  std::string line;
  if (!std::getline(in, line)) return 0;
  // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
  const auto close = line.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && (rest >> field); ++i)
    if (i == 22) return std::strtoull(field.c_str(), nullptr, 10);
  return 0;
}

const self_identity& self() {
  // Recomputed after fork: a child must never stamp its parent's identity.
  static std::mutex m;
  identity_cache* c = identity_page();
  if (c && c->ready.load(std::memory_order_acquire)) return c->id;
  std::lock_guard lock(m);
  if (c) {
    if (!c->ready.load(std::memory_order_relaxed)) {
      c->id = compute_self();
      c->ready.store(1, std::memory_order_release);
    }
    return c->id;
  }
  // Without MADV_WIPEONFORK (Linux before 4.14) only getpid tells a child from its parent.
  static self_identity cached;
  if (cached.pid != ::getpid()) cached = compute_self();
  return cached;
}

own_objects& own() {
  static own_objects* o = new own_objects;  // never destroyed: usable from static destructors
  return *o;
}

std::uint32_t slots_per_object() noexcept {
  return static_cast<std::uint32_t>((sys::page_size() - offsetof(control_header, slots)) / sizeof(export_slot));
}

std::uint64_t payload_file_offset() noexcept {
  return defects::is(defects::id::importer_writes_liveness) ? sys::page_size() : 0;
}

exportable::exportable(record::kind kind, std::size_t payload_bytes, std::uint32_t device, std::uint32_t flags)
    : kind_(kind), payload_(sys::round_up(payload_bytes, sys::page_size())) {
  const std::size_t page = sys::page_size();
  control_fd_.reset(sys::memfd_create("ipcref-control"));
  if (!control_fd_) sys::fail(errc::exhausted, cat("memfd_create failed: ", sys::errno_text(errno)));
  if (::ftruncate(control_fd_.get(), static_cast<off_t>(page)) != 0)
    sys::fail(errc::exhausted, cat("cannot size a control object: ", sys::errno_text(errno)));
  // The control page, then the private witness page, at consecutive addresses.
  void* region = ::mmap(nullptr, 2 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (region == MAP_FAILED) sys::fail(errc::exhausted, cat("cannot map a control object: ", sys::errno_text(errno)));
  control_map_ = sys::mapping(region, 2 * page);
  if (::mmap(region, page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, control_fd_.get(), 0) == MAP_FAILED ||
      ::mmap(static_cast<char*>(region) + page, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
             -1, 0) == MAP_FAILED)
    sys::fail(errc::exhausted, cat("cannot map a control object: ", sys::errno_text(errno)));
  struct stat control{};
  if (::fstat(control_fd_.get(), &control) != 0)
    sys::fail(errc::exhausted, cat("cannot stat a control object: ", sys::errno_text(errno)));

  // The data object's name binds it to its control page for good.
  data_fd_.reset(sys::memfd_create(cat("ipcref-", record::kind_name(kind), ":", control.st_ino).c_str()));
  if (!data_fd_) sys::fail(errc::exhausted, cat("memfd_create failed: ", sys::errno_text(errno)));
  if (::ftruncate(data_fd_.get(), static_cast<off_t>(payload_file_offset() + payload_)) != 0)
    sys::fail(errc::exhausted, cat("cannot size a ", payload_bytes, "-byte object: ", sys::errno_text(errno)));
  struct stat data{};
  if (::fstat(data_fd_.get(), &data) != 0)
    sys::fail(errc::exhausted, cat("cannot stat an object: ", sys::errno_text(errno)));

  control_fields& f = header()->fields;
  f.magic = kControlMagic;
  f.kind = static_cast<std::uint32_t>(kind);
  f.flags = flags;
  f.payload_size = payload_;
  f.device = device;
  f.slot_count = slots_per_object();
  f.data_dev = static_cast<std::uint64_t>(data.st_dev);
  f.data_ino = static_cast<std::uint64_t>(data.st_ino);
  // Only this process holds the witness: a child (fork, clone) finds the page zeroed.
  if (::madvise(static_cast<char*>(region) + page, page, MADV_WIPEONFORK) == 0) f.features |= kFeatureWitnessWipedOnFork;
  witness_at(control_map_.get()).store(sys::random_u64(), std::memory_order_release);
  if (defects::is(defects::id::importer_writes_liveness)) {
    void* m = ::mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_SHARED, data_fd_.get(), 0);
    if (m == MAP_FAILED) sys::fail(errc::exhausted, cat("cannot map an object header: ", sys::errno_text(errno)));
    mirror_map_ = sys::mapping(m, page);
    std::memcpy(m, &f, sizeof f);
  }
  // From here on only this process's mapping (made above, before the seal) writes the
  // control page; the data object's size is fixed, so no mapping of it is cut short.
  if (::fcntl(control_fd_.get(), F_ADD_SEALS, kControlSeals) != 0 ||
      ::fcntl(data_fd_.get(), F_ADD_SEALS, kDataSeals) != 0)
    sys::fail(errc::exhausted, cat("cannot seal an object: ", sys::errno_text(errno)));
  auto& o = own();
  std::lock_guard lock(o.lock);
  o.by_data[key_of(data)] = header();
}

exportable::~exportable() {
  if (!control_map_.get()) return;  // moved from
  revoke_all();
  {
    auto& o = own();
    std::lock_guard lock(o.lock);
    o.by_data.erase({header()->fields.data_dev, header()->fields.data_ino});
  }
  // Importers that cached where this page was stop trusting it from now on.
  witness_at(control_map_.get()).store(0, std::memory_order_release);
}

std::uint32_t exportable::flags() const noexcept { return header()->fields.flags; }

sys::mapping exportable::map_payload() const {
  void* p = ::mmap(nullptr, payload_, PROT_READ | PROT_WRITE, MAP_SHARED, data_fd_.get(),
                   static_cast<off_t>(payload_file_offset()));
  if (p == MAP_FAILED) sys::fail(errc::exhausted, cat("cannot map ", payload_, " bytes: ", sys::errno_text(errno)));
  return sys::mapping(p, payload_);
}

void exportable::mirror_slot(std::uint32_t slot) noexcept {
  if (!mirror_map_.get()) return;
  auto* m = static_cast<control_header*>(mirror_map_.get());
  const export_slot& s = header()->slots[slot];
  m->slots[slot].offset = s.offset;
  m->slots[slot].size = s.size;
  m->slots[slot].token.store(s.token.load(std::memory_order_relaxed), std::memory_order_release);
}

record::bytes exportable::publish(std::uint64_t offset, std::uint64_t size) {
  auto* h = header();
  for (std::uint32_t i = 0; i < h->fields.slot_count; ++i) {
    export_slot& s = h->slots[i];
    if (s.token.load(std::memory_order_relaxed) != 0) continue;
    record::fields f;
    f.object_kind = kind_;
    stamp_exporter(f);
    f.fd = data_fd_.get();
    f.token = sys::random_u64();
    f.size = size;
    f.offset = offset;
    f.device = h->fields.device;
    f.slot = i;
    s.offset = offset;
    s.size = size;
    s.token.store(f.token, std::memory_order_release);
    mirror_slot(i);
    return record::encode(f);
  }
  sys::fail(errc::exhausted, cat("get: all ", h->fields.slot_count, " export slots of this ", record::kind_name(kind_),
                                 " object are live; put handles that are no longer needed"));
}

bool exportable::owns(const record::fields& f) const noexcept {
  const auto* h = header();
  if (f.fd != data_fd_.get() || f.slot >= h->fields.slot_count || f.token == 0) return false;
  const export_slot& s = h->slots[f.slot];
  return s.token.load(std::memory_order_relaxed) == f.token;
}

bool exportable::revoke(const record::fields& f) noexcept {
  if (!owns(f)) return false;
  header()->slots[f.slot].token.store(0, std::memory_order_release);
  mirror_slot(f.slot);
  return true;
}

void exportable::revoke_all() noexcept {
  auto* h = header();
  for (std::uint32_t i = 0; i < h->fields.slot_count; ++i) {
    h->slots[i].token.store(0, std::memory_order_release);
    mirror_slot(i);
  }
}

std::size_t exportable::live_exports() const noexcept {
  std::size_t n = 0;
  const auto* h = header();
  for (std::uint32_t i = 0; i < h->fields.slot_count; ++i)
    n += h->slots[i].token.load(std::memory_order_relaxed) != 0;
  return n;
}

void stamp_exporter(record::fields& f) {
  const self_identity& me = self();
  f.pid = static_cast<std::uint32_t>(me.pid);
  f.guard_type = me.kind;
  f.guard = me.guard;
}

record::fields decode_own_handle(const handle& h, record::kind kind, const char* verb) {
  if (handle_access::is_put(h))
    sys::fail(errc::invalid, cat(verb, ": this handle was already put (or never came from get)"));
  if (auto problem = record::check(h.data(), kind, "rb.put.revokes"))
    sys::fail(errc::invalid, cat(verb, ": ", *problem));
  record::fields f = record::decode(h.data());
  const self_identity& me = self();
  if (f.pid != static_cast<std::uint32_t>(me.pid) || f.guard != me.guard)
    sys::fail(errc::invalid, cat(verb, ": handle was exported by pid ", f.pid, ", not by this process (",
                                 me.pid, "); only the exporter may put it"));
  return f;
}

}  // namespace ipcref::detail

namespace ipcref {

void allow_importer(pid_t pid) {
  if (pid <= 0) sys::fail(errc::invalid, text::cat("allow_importer: pid ", pid, " is not a process"));
  // Without Yama the call fails with EINVAL and nothing needs allowing.
  if (::prctl(PR_SET_PTRACER, static_cast<unsigned long>(pid), 0, 0, 0) != 0 && errno != EINVAL)
    sys::fail(errc::permission_denied, text::cat("allow_importer(", pid, "): ", sys::errno_text(errno)));
}

const char* exporter_guard_kind() {
  return detail::self().kind == record::guard_kind::pidfs_inode ? "pidfs_inode" : "start_time";
}

}  // namespace ipcref
