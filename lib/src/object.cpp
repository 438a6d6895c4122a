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
#include <new>
#include <mutex>
#include <sstream>

#include "ipcref/defects.hpp"
#include "text.hpp"

namespace ipcref::detail {

using text::cat;

namespace {

constexpr unsigned kSeals = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW;
constexpr long kPidfsMagic = 0x50494446;

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

struct self_identity {
  pid_t pid = 0;
  record::guard_kind kind = record::guard_kind::pidfs_inode;
  std::uint64_t guard = 0;
};

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

// Proves that `pidfd` (for `rec.pid`) is still the process that exported `rec`.
void check_guard(int pidfd, const record::fields& rec, const char* verb) {
  if (defects::is(defects::id::skip_pid_guard)) return;
  bool same = false;
  if (rec.guard_type == record::guard_kind::pidfs_inode) {
    struct stat st{};
    same = ::fstat(pidfd, &st) == 0 && st.st_ino == rec.guard;
  } else {
    same = process_start_time(static_cast<pid_t>(rec.pid)) == rec.guard &&
           sys::pidfd_send_signal(pidfd, 0) == 0;  // still alive after the read: the read was its
  }
  if (!same)
    sys::fail(errc::exporter_gone,
              cat(verb, ": exporter pid ", rec.pid, " has exited and the pid now belongs to another process "
                  "(identity guard mismatch, clause rb.open.pid_reuse); export the memory again"));
}

[[noreturn]] void exporter_exited(const record::fields& rec, const char* verb) {
  if (defects::is(defects::id::hang_exporter_gone))
    for (;;) ::pause();
  sys::fail(errc::exporter_gone, cat(verb, ": exporter pid ", rec.pid,
                                     " has exited; handles die with their exporter (clause rb.open.exporter_gone)"));
}

// A pidfd of the exporter `rec` names, proven by its identity guard to be that process still.
unique_fd exporter_pidfd(const record::fields& rec, const char* verb) {
  unique_fd pidfd(sys::pidfd_open(static_cast<pid_t>(rec.pid)));
  if (!pidfd) {
    if (errno == ESRCH) exporter_exited(rec, verb);
    sys::fail(errno == EMFILE ? errc::exhausted : errc::invalid,
              cat(verb, ": pidfd_open(", rec.pid, ") failed: ", sys::errno_text(errno)));
  }
  check_guard(pidfd.get(), rec, verb);
  return pidfd;
}

// Handles die with their exporter whichever way the descriptor travelled: a descriptor
// received by SCM_RIGHTS outlives its sender, the export it stood for does not.
void require_exporter_alive(const record::fields& rec, const char* verb) {
  if (rec.pid == static_cast<std::uint32_t>(self().pid)) return;
  exporter_pidfd(rec, verb);
}

unique_fd fetch_descriptor(const record::fields& rec, const char* verb, const open_options& opts) {
  if (opts.descriptor >= 0) {
    require_exporter_alive(rec, verb);
    unique_fd fd(::fcntl(opts.descriptor, F_DUPFD_CLOEXEC, 0));
    if (!fd)
      sys::fail(errno == EMFILE ? errc::exhausted : errc::invalid,
                cat(verb, ": open_options::descriptor ", opts.descriptor, " is unusable: ", sys::errno_text(errno),
                    "; pass the descriptor received with this handle"));
    return fd;
  }
  const self_identity& me = self();
  if (rec.pid == static_cast<std::uint32_t>(me.pid)) {
    if (rec.guard_type != me.kind || rec.guard != me.guard)
      sys::fail(errc::exporter_gone, cat(verb, ": handle names this process's pid ", rec.pid,
                                         " but a process that has exited (identity guard mismatch)"));
    unique_fd fd(::fcntl(rec.fd, F_DUPFD_CLOEXEC, 0));
    if (!fd)
      sys::fail(errno == EMFILE ? errc::exhausted : errc::invalid,
                cat(verb, ": this process has no descriptor ", rec.fd,
                    " (the export was freed, or the handle is forged)"));
    return fd;
  }
  const unique_fd pidfd = exporter_pidfd(rec, verb);
  unique_fd fd(sys::pidfd_getfd(pidfd.get(), rec.fd));
  if (!fd) {
    const int err = errno;
    switch (err) {
      case ESRCH: exporter_exited(rec, verb);
      case EBADF:
        sys::fail(errc::invalid, cat(verb, ": exporter pid ", rec.pid, " has no descriptor ", rec.fd,
                                     " (the allocation was freed, or the handle is forged)"));
      case EPERM:
      case EACCES:
        sys::fail(errc::permission_denied,
                  cat(verb, ": pidfd_getfd on exporter pid ", rec.pid, " was refused: ", sys::errno_text(err),
                      ". Yama ptrace_scope or a security module forbids it: have the exporter call "
                      "ipcref::allow_importer(<this pid or an ancestor>), or send the descriptor by "
                      "SCM_RIGHTS and pass it in open_options::descriptor"));
      case EMFILE:
      case ENFILE:
        sys::fail(errc::exhausted, cat(verb, ": no descriptor left to receive the export: ", sys::errno_text(err)));
      default:
        sys::fail(errc::invalid, cat(verb, ": pidfd_getfd(pid ", rec.pid, ", fd ", rec.fd,
                                     ") failed: ", sys::errno_text(err)));
    }
  }
  return fd;
}

// Checks the object behind `fd` is the one `rec` exported, before anything is mapped.
void prove_object(int fd, const record::fields& rec, record::kind kind, const char* verb,
                  std::uint64_t& payload_size, std::uint32_t& flags) {
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0 || static_cast<unsigned>(seals) != kSeals)
    sys::fail(errc::invalid, cat(verb, ": descriptor ", rec.fd, " of pid ", rec.pid,
                                 " is not an exported ipcref object (not a sealed memfd; "
                                 "forged handle?, clause rb.open.confused_deputy)"));
  if (rec.slot >= slots_per_object())
    sys::fail(errc::invalid, cat(verb, ": handle names export slot ", rec.slot, ", objects have ",
                                 slots_per_object(), " slots"));
  const std::size_t need = offsetof(object_header, slots) + (rec.slot + 1) * sizeof(export_slot);
  alignas(object_header) unsigned char buf[4096];
  if (need > sizeof buf || ::pread(fd, buf, need, 0) != static_cast<ssize_t>(need))
    sys::fail(errc::invalid, cat(verb, ": descriptor ", rec.fd, " of pid ", rec.pid,
                                 " has no readable object header (forged handle?)"));
  const auto* h = reinterpret_cast<const object_header*>(buf);
  if (h->magic != kObjectMagic || h->kind != static_cast<std::uint32_t>(kind))
    sys::fail(errc::invalid, cat(verb, ": descriptor ", rec.fd, " of pid ", rec.pid, " is not an exported ",
                                 record::kind_name(kind), " object (clause rb.open.confused_deputy)"));
  if (rec.offset > h->payload_size || rec.size > h->payload_size - rec.offset)
    sys::fail(errc::invalid, cat(verb, ": handle range [", rec.offset, ", ", rec.offset + rec.size,
                                 ") is outside the ", h->payload_size, "-byte object"));
  if (!defects::is(defects::id::skip_token_check)) {
    const export_slot& s = h->slots[rec.slot];
    if (s.token.load(std::memory_order_relaxed) != rec.token || s.offset != rec.offset || s.size != rec.size)
      sys::fail(errc::invalid, cat(verb, ": descriptor ", rec.fd, " of pid ", rec.pid,
                                   " does not hold this export (token mismatch: the handle was put, its "
                                   "allocation freed, or the bytes forged; clause rb.put.revokes)"));
  }
  payload_size = h->payload_size;
  flags = h->flags;
}

}  // namespace

std::uint32_t slots_per_object() noexcept {
  return static_cast<std::uint32_t>((sys::page_size() - offsetof(object_header, slots)) / sizeof(export_slot));
}

std::uint64_t payload_file_offset() noexcept { return sys::page_size(); }

exportable::exportable(record::kind kind, std::size_t payload_bytes, std::uint32_t device, std::uint32_t flags)
    : kind_(kind), payload_(sys::round_up(payload_bytes, sys::page_size())) {
  fd_.reset(sys::memfd_create(cat("ipcref-", record::kind_name(kind)).c_str()));
  if (!fd_) sys::fail(errc::exhausted, cat("memfd_create failed: ", sys::errno_text(errno)));
  const auto total = static_cast<off_t>(payload_file_offset() + payload_);
  if (::ftruncate(fd_.get(), total) != 0)
    sys::fail(errc::exhausted, cat("cannot size a ", payload_bytes, "-byte object: ", sys::errno_text(errno)));
  void* hdr = ::mmap(nullptr, sys::page_size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd_.get(), 0);
  if (hdr == MAP_FAILED) sys::fail(errc::exhausted, cat("cannot map an object header: ", sys::errno_text(errno)));
  header_map_ = sys::mapping(hdr, sys::page_size());
  auto* h = header();
  h->magic = kObjectMagic;
  h->kind = static_cast<std::uint32_t>(kind);
  h->flags = flags;
  h->payload_size = payload_;
  h->device = device;
  h->slot_count = slots_per_object();
  // Sealed size: an importer's mapping can never be cut short under it.
  if (::fcntl(fd_.get(), F_ADD_SEALS, kSeals) != 0)
    sys::fail(errc::exhausted, cat("cannot seal an object: ", sys::errno_text(errno)));
}

exportable::~exportable() {
  if (header_map_.get()) revoke_all();
}

std::uint32_t exportable::flags() const noexcept { return header()->flags; }

sys::mapping exportable::map_payload() const {
  void* p = ::mmap(nullptr, payload_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_.get(),
                   static_cast<off_t>(payload_file_offset()));
  if (p == MAP_FAILED) sys::fail(errc::exhausted, cat("cannot map ", payload_, " bytes: ", sys::errno_text(errno)));
  return sys::mapping(p, payload_);
}

record::bytes exportable::publish(std::uint64_t offset, std::uint64_t size) {
  auto* h = header();
  for (std::uint32_t i = 0; i < h->slot_count; ++i) {
    export_slot& s = h->slots[i];
    if (s.token.load(std::memory_order_relaxed) != 0) continue;
    record::fields f;
    f.object_kind = kind_;
    stamp_exporter(f);
    f.fd = fd_.get();
    f.token = sys::random_u64();
    f.size = size;
    f.offset = offset;
    f.device = h->device;
    f.slot = i;
    s.offset = offset;
    s.size = size;
    s.token.store(f.token, std::memory_order_release);
    return record::encode(f);
  }
  sys::fail(errc::exhausted, cat("get: all ", h->slot_count, " export slots of this ", record::kind_name(kind_),
                                 " object are live; put handles that are no longer needed"));
}

bool exportable::owns(const record::fields& f) const noexcept {
  const auto* h = header();
  if (f.fd != fd_.get() || f.slot >= h->slot_count || f.token == 0) return false;
  const export_slot& s = h->slots[f.slot];
  return s.token.load(std::memory_order_relaxed) == f.token;
}

bool exportable::revoke(const record::fields& f) noexcept {
  if (!owns(f)) return false;
  header()->slots[f.slot].token.store(0, std::memory_order_release);
  return true;
}

void exportable::revoke_all() noexcept {
  auto* h = header();
  for (std::uint32_t i = 0; i < h->slot_count; ++i) h->slots[i].token.store(0, std::memory_order_release);
}

std::size_t exportable::live_exports() const noexcept {
  std::size_t n = 0;
  const auto* h = header();
  for (std::uint32_t i = 0; i < h->slot_count; ++i) n += h->slots[i].token.load(std::memory_order_relaxed) != 0;
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

imported_object import_object(std::span<const std::byte> data, record::kind kind, const char* verb,
                              const char* size_clause, const open_options& opts) {
  std::array<std::byte, record::size> resized{};
  if (data.size() != record::size) {
    if (defects::is(defects::id::crash_on_truncated) && data.size() < record::size) {
      // Reads the missing tail from the page after the caller's bytes.
      volatile const std::byte* past = data.data() + (1ul << 40);
      (void)*past;
    }
    if (defects::is(defects::id::skip_size_check)) {
      std::memcpy(resized.data(), data.data(), std::min(data.size(), record::size));
      data = resized;
    }
  }
  // Seeded defect: a runtime whose import of garbage leaves a sticky error behind.
  static bool context_lost = false;
  if (defects::is(defects::id::lose_context_on_garbage) && context_lost)
    sys::fail(errc::device_lost, cat(verb, ": the context was lost by an earlier malformed handle"));
  if (auto problem = record::check(data, kind, size_clause)) {
    if (defects::is(defects::id::lose_context_on_garbage)) {
      context_lost = true;
      sys::fail(errc::device_lost, cat(verb, ": ", *problem, "; the context is lost"));
    }
    sys::fail(errc::invalid, cat(verb, ": ", *problem));
  }
  imported_object out;
  out.rec = record::decode(data);
  // Every field is judged: a device index this platform does not have is a forged record.
  if (out.rec.device >= platform_device_count())
    sys::fail(errc::invalid, cat(verb, ": handle names device ", out.rec.device, ", this platform has ",
                                 platform_device_count(), " devices (forged or foreign handle)"));
  out.fd = fetch_descriptor(out.rec, verb, opts);
  prove_object(out.fd.get(), out.rec, kind, verb, out.payload_size, out.flags);
  return out;
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
