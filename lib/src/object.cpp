#include "object.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "ipcref/defects.hpp"
#include "text.hpp"

namespace ipcref::detail {

using text::cat;

namespace {

// Data objects: the size is fixed (no importer's mapping is cut short) and nobody adds seals.
constexpr unsigned kDataSeals = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW;
// Control objects: besides, no write and no new writable mapping, by any descriptor.
constexpr unsigned kControlSeals = kDataSeals | F_SEAL_FUTURE_WRITE;
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
                      "ipcref::allow_importer(<this pid or an ancestor>), or send both descriptors "
                      "(handle::descriptor, handle::control_descriptor) by SCM_RIGHTS and pass them in "
                      "open_options (SECURITY.md)"));
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

// ---------------------------------------------------------------- who vouches for a descriptor

struct object_key {
  std::uint64_t dev = 0;
  std::uint64_t ino = 0;
  friend bool operator==(const object_key&, const object_key&) = default;
};
struct object_key_hash {
  std::size_t operator()(const object_key& k) const noexcept { return std::hash<std::uint64_t>()(k.ino * 31 + k.dev); }
};
object_key key_of(const struct stat& st) { return {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)}; }

// A copy of one export slot.
struct slot_fields {
  std::uint64_t token = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::uint64_t reserved = 0;
};
static_assert(sizeof(slot_fields) == sizeof(export_slot));

// What an importer read about one export: its object's header and its slot.
struct export_view {
  control_fields header{};
  slot_fields slot{};
};

std::atomic_ref<std::uint64_t> witness_at(void* control_page) noexcept {
  return std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(static_cast<char*>(control_page) + sys::page_size()));
}

// This process's own objects by data inode: a self-import reads its control page directly.
struct own_objects {
  std::mutex lock;
  std::unordered_map<object_key, const control_header*, object_key_hash> by_data;
};
own_objects& own() {
  static own_objects* o = new own_objects;  // never destroyed: usable from static destructors
  return *o;
}

// What an importer may keep between opens: nothing that holds a descriptor or a mapping
// (rb.close.no_leak), only facts. A memfd's name never changes, so a data object's
// control inode is a fact; where an exporter maps a control page is one only while its
// witness is intact, which every read checks.
struct located_control {
  std::uintptr_t page = 0;  // the exporter's address of its control page; the witness follows
  std::uint64_t witness = 0;
  control_fields header{};
};
struct location_key {
  std::uint32_t pid;
  std::uint8_t guard_kind;
  std::uint64_t guard;
  std::uint64_t control_ino;
  auto operator<=>(const location_key&) const = default;
};
struct import_caches {
  std::mutex lock;
  std::unordered_map<object_key, std::uint64_t, object_key_hash> control_of;  // 0: not an ipcref data object
  std::map<location_key, located_control> located;
};
import_caches& caches() {
  static import_caches* c = new import_caches;
  return *c;
}
constexpr std::size_t kCacheLimit = 1024;  // entries of each; both are emptied when full

// The control inode that the name of data memfd `fd` ("/memfd:ipcref-<kind>:<inode>") gives, or 0.
std::uint64_t control_inode_from_name(int fd) {
  char path[40];
  std::snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  char target[300];
  const ssize_t n = ::readlink(path, target, sizeof target - 1);
  if (n <= 0) return 0;
  std::string_view t(target, static_cast<std::size_t>(n));
  constexpr std::string_view kPrefix = "/memfd:ipcref-", kDeleted = " (deleted)";
  if (!t.starts_with(kPrefix)) return 0;
  if (t.ends_with(kDeleted)) t.remove_suffix(kDeleted.size());
  const auto colon = t.rfind(':');
  if (colon == std::string_view::npos || colon + 1 >= t.size() || t.size() - colon - 1 > 19) return 0;
  std::uint64_t ino = 0;
  for (char c : t.substr(colon + 1)) {
    if (c < '0' || c > '9') return 0;
    ino = ino * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return ino;
}

std::uint64_t control_inode_of(int fd, const struct stat& st) {
  const object_key k = key_of(st);
  auto& c = caches();
  {
    std::lock_guard lock(c.lock);
    if (auto it = c.control_of.find(k); it != c.control_of.end()) return it->second;
  }
  const std::uint64_t ino = S_ISREG(st.st_mode) ? control_inode_from_name(fd) : 0;
  std::lock_guard lock(c.lock);
  if (c.control_of.size() >= kCacheLimit) c.control_of.clear();
  c.control_of.emplace(k, ino);
  return ino;
}

[[noreturn]] void not_an_object(const record::fields& rec, record::kind kind, const char* verb) {
  sys::fail(errc::invalid, cat(verb, ": descriptor ", rec.fd, " of pid ", rec.pid, " is not an exported ",
                               record::kind_name(kind), " object (forged handle?, clause rb.open.confused_deputy)"));
}

[[noreturn]] void table_refused(const record::fields& rec, const char* verb, int err) {
  sys::fail(errc::permission_denied,
            cat(verb, ": reading the export table of exporter pid ", rec.pid, " was refused: ", sys::errno_text(err),
                ". Importers read it with process_vm_readv, which needs the ptrace access pidfd_getfd needs: have "
                "the exporter call ipcref::allow_importer(<this pid or an ancestor>), or send its control "
                "descriptor (handle::control_descriptor) by SCM_RIGHTS and pass it in "
                "open_options::control_descriptor (SECURITY.md)"));
}

[[noreturn]] void export_gone(const record::fields& rec, const char* verb) {
  sys::fail(errc::invalid, cat(verb, ": descriptor ", rec.fd, " of pid ", rec.pid,
                               " does not hold this export (its object was freed, or the bytes forged; clause "
                               "rb.put.revokes)"));
}

// Reads [ranges] of the exporter's memory; false when a range is no longer mapped there.
bool read_exporter(const record::fields& rec, std::span<const sys::remote_range> ranges, std::span<std::byte> out,
                   const char* verb) {
  std::size_t want = 0;
  for (const auto& r : ranges) want += r.length;
  const long got = sys::read_process(static_cast<pid_t>(rec.pid), ranges, out);
  if (got == static_cast<long>(want)) return true;
  if (got >= 0) return false;
  const int err = errno;
  if (err == EPERM || err == EACCES) table_refused(rec, verb, err);
  if (err == ESRCH) exporter_exited(rec, verb);
  if (err == EFAULT) return false;
  sys::fail(errc::invalid, cat(verb, ": process_vm_readv(pid ", rec.pid, ") failed: ", sys::errno_text(err)));
}

// The start of the exporter's read-write shared mapping of control memfd (dev, ino), from
// /proc/<pid>/maps; 0 when it has none.
std::uintptr_t find_control_page(const record::fields& rec, const struct stat& data, std::uint64_t control_ino,
                                 const char* verb) {
  const std::string path = cat("/proc/", rec.pid, "/maps");
  unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    const int err = errno;
    if (err == ENOENT || err == ESRCH) exporter_exited(rec, verb);
    if (err == EACCES || err == EPERM) table_refused(rec, verb, err);
    sys::fail(errc::invalid, cat(verb, ": cannot read ", path, ": ", sys::errno_text(err)));
  }
  // Line by line through a buffer on the stack: no allocation, whatever the map's size.
  const unsigned want_major = major(data.st_dev), want_minor = minor(data.st_dev);
  char buf[8192];
  std::size_t held = 0;
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf + held, sizeof buf - 1 - held);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    held += static_cast<std::size_t>(n);
    buf[held] = '\0';
    char* line = buf;
    for (char* eol; (eol = static_cast<char*>(std::memchr(line, '\n', held - static_cast<std::size_t>(line - buf))));
         line = eol + 1) {
      *eol = '\0';
      // start-end perms offset major:minor inode [path]
      unsigned long long start = 0, end = 0, offset = 0, inode = 0;
      unsigned maj = 0, min = 0;
      char perms[8] = {};
      if (std::sscanf(line, "%llx-%llx %7s %llx %x:%x %llu", &start, &end, perms, &offset, &maj, &min, &inode) == 7 &&
          inode == control_ino && maj == want_major && min == want_minor && offset == 0 &&
          std::string_view(perms) == "rw-s" && end - start == sys::page_size())
        return static_cast<std::uintptr_t>(start);
    }
    // Keep the partial last line; a line longer than the buffer (a huge path) is no control page.
    held -= static_cast<std::size_t>(line - buf);
    if (held == sizeof buf - 1) held = 0;
    std::memmove(buf, line, held);
  }
  return 0;
}

// Finds the exporter's control page (dev, control_ino) and reads its header and witness.
// The page is looked up again after the read: an exporter maps a control page once, for
// the life of its object, so the same mapping before and after is the one that was read.
std::optional<located_control> locate(const record::fields& rec, const struct stat& data, std::uint64_t control_ino,
                                      const char* verb) {
  located_control l;
  l.page = find_control_page(rec, data, control_ino, verb);
  if (!l.page) return std::nullopt;
  std::byte buf[sizeof(control_fields) + 8];
  const sys::remote_range ranges[] = {{l.page, sizeof(control_fields)}, {l.page + sys::page_size(), 8}};
  if (!read_exporter(rec, ranges, buf, verb)) return std::nullopt;
  std::memcpy(&l.header, buf, sizeof l.header);
  std::memcpy(&l.witness, buf + sizeof l.header, 8);
  if (l.witness == 0 || find_control_page(rec, data, control_ino, verb) != l.page) return std::nullopt;
  return l;
}

// The export's slot, read in the exporter's memory: the slot, then the witness (one call,
// in that order). A witness still intact after the slot means the object, and so the
// control page at that address, outlived the read of the slot.
export_view read_from_exporter(const record::fields& rec, const struct stat& data, std::uint64_t control_ino,
                               const char* verb) {
  const location_key key{rec.pid, static_cast<std::uint8_t>(rec.guard_type), rec.guard, control_ino};
  auto& c = caches();
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::optional<located_control> l;
    {
      std::lock_guard lock(c.lock);
      if (auto it = c.located.find(key); it != c.located.end()) l = it->second;
    }
    const bool cached = l.has_value();
    if (!cached) {
      l = locate(rec, data, control_ino, verb);
      if (!l) break;
      std::lock_guard lock(c.lock);
      if (c.located.size() >= kCacheLimit) c.located.clear();
      c.located[key] = *l;
    }
    export_view v;
    v.header = l->header;
    if (rec.slot >= l->header.slot_count || rec.slot >= slots_per_object()) return v;  // judged by the caller
    std::byte buf[sizeof(slot_fields) + 8];
    const sys::remote_range ranges[] = {
        {l->page + offsetof(control_header, slots) + rec.slot * sizeof(export_slot), sizeof(slot_fields)},
        {l->page + sys::page_size(), 8}};
    std::uint64_t witness = 0;
    if (read_exporter(rec, ranges, buf, verb)) {
      std::memcpy(&v.slot, buf, sizeof v.slot);
      std::memcpy(&witness, buf + sizeof v.slot, 8);
    }
    if (witness == l->witness) return v;
    // The object went away since its page was located: forget the place; look once more.
    {
      std::lock_guard lock(c.lock);
      c.located.erase(key);
    }
    if (!cached) break;
  }
  export_gone(rec, verb);
}

// The export's slot, read from the control descriptor the caller passed.
export_view read_from_descriptor(int control, const struct stat& data, std::uint64_t control_ino,
                                 const record::fields& rec, const char* verb) {
  struct stat st{};
  if (::fstat(control, &st) != 0 || static_cast<std::uint64_t>(st.st_dev) != static_cast<std::uint64_t>(data.st_dev) ||
      static_cast<std::uint64_t>(st.st_ino) != control_ino)
    sys::fail(errc::invalid, cat(verb, ": open_options::control_descriptor ", control,
                                 " is not the control object of the exported descriptor; pass the "
                                 "handle::control_descriptor sent with this handle"));
  export_view v;
  if (::pread(control, &v.header, sizeof v.header, 0) != static_cast<ssize_t>(sizeof v.header))
    sys::fail(errc::invalid, cat(verb, ": cannot read the control descriptor: ", sys::errno_text(errno)));
  if (rec.slot < v.header.slot_count && rec.slot < slots_per_object() &&
      ::pread(control, &v.slot, sizeof v.slot,
              static_cast<off_t>(offsetof(control_header, slots) + rec.slot * sizeof(export_slot))) !=
          static_cast<ssize_t>(sizeof v.slot))
    sys::fail(errc::invalid, cat(verb, ": cannot read the control descriptor: ", sys::errno_text(errno)));
  return v;
}

// The export's slot, read from this process's own control page.
export_view read_own(const struct stat& data, const record::fields& rec, record::kind kind, const char* verb) {
  auto& o = own();
  std::lock_guard lock(o.lock);
  auto it = o.by_data.find(key_of(data));
  if (it == o.by_data.end()) not_an_object(rec, kind, verb);
  export_view v;
  v.header = it->second->fields;
  if (rec.slot < v.header.slot_count) {
    const export_slot& s = it->second->slots[rec.slot];
    v.slot.token = s.token.load(std::memory_order_acquire);
    v.slot.offset = s.offset;
    v.slot.size = s.size;
  }
  return v;
}

// Seeded defect importer_writes_liveness: the slot's copy in the data object's first page,
// which an importer can write, decides whether the export is live.
slot_fields read_mirrored_slot(int fd, const record::fields& rec) {
  slot_fields s;
  if (rec.slot < slots_per_object())
    (void)::pread(fd, &s, sizeof s, static_cast<off_t>(offsetof(control_header, slots) + rec.slot * sizeof(export_slot)));
  return s;
}

// Checks the object behind `fd` is the one `rec` exported and that the export is live,
// before anything is mapped. Nothing an importer can write takes part (see object.hpp).
void prove_object(int fd, const record::fields& rec, record::kind kind, const char* verb, const open_options& opts,
                  std::uint64_t& payload_size, std::uint32_t& flags) {
  struct stat st{};
  if (::fstat(fd, &st) != 0) not_an_object(rec, kind, verb);
  export_view v;
  if (rec.pid == static_cast<std::uint32_t>(self().pid) && opts.control_descriptor < 0) {
    v = read_own(st, rec, kind, verb);
  } else {
    const std::uint64_t control_ino = control_inode_of(fd, st);
    if (control_ino == 0) not_an_object(rec, kind, verb);
    v = opts.control_descriptor >= 0 ? read_from_descriptor(opts.control_descriptor, st, control_ino, rec, verb)
                                     : read_from_exporter(rec, st, control_ino, verb);
  }
  if (defects::is(defects::id::importer_writes_liveness)) v.slot = read_mirrored_slot(fd, rec);
  const control_fields& h = v.header;
  if (h.magic != kControlMagic || h.kind != static_cast<std::uint32_t>(kind) ||
      h.data_dev != static_cast<std::uint64_t>(st.st_dev) || h.data_ino != static_cast<std::uint64_t>(st.st_ino))
    not_an_object(rec, kind, verb);
  if (rec.slot >= h.slot_count || rec.slot >= slots_per_object())
    sys::fail(errc::invalid, cat(verb, ": handle names export slot ", rec.slot, ", objects have ",
                                 slots_per_object(), " slots"));
  if (rec.offset > h.payload_size || rec.size > h.payload_size - rec.offset)
    sys::fail(errc::invalid, cat(verb, ": handle range [", rec.offset, ", ", rec.offset + rec.size,
                                 ") is outside the ", h.payload_size, "-byte object"));
  const bool range_matches = defects::is(defects::id::trust_record_range) ||
                             (v.slot.offset == rec.offset && v.slot.size == rec.size);
  if (!defects::is(defects::id::skip_token_check) && (v.slot.token != rec.token || !range_matches))
    sys::fail(errc::invalid, cat(verb, ": descriptor ", rec.fd, " of pid ", rec.pid,
                                 " does not hold this export (token mismatch: the handle was put, its "
                                 "allocation freed, or the bytes forged; clause rb.put.revokes)"));
  payload_size = h.payload_size;
  flags = h.flags;
}

}  // namespace

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
  // Seeded defect: the record's own kind byte decides which kind is opened.
  if (defects::is(defects::id::open_ignores_kind) && data.size() == record::size)
    kind = record::decode(data).object_kind;
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
  prove_object(out.fd.get(), out.rec, kind, verb, opts, out.payload_size, out.flags);
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
