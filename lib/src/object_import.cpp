// Importing an exported object (object.hpp says how objects and imports work): the
// descriptor fetched (pidfd_getfd, or the one passed) from an exporter its identity guard
// proves to be the process that exported it, and the export proven live before anything is
// mapped, read in the exporter's memory, from a control descriptor, or in this process's own
// control page. The exporter's side is object.cpp.
#include "object.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "ipcref/defects.hpp"
#include "object_impl.hpp"
#include "text.hpp"

namespace ipcref::detail {

using sys::or_refusal;
using text::cat;

namespace {

// A check's answer: nothing when it holds, else why the open is refused.
using refused = std::optional<refusal>;

refusal exporter_exited(const record::fields& rec, const char* verb) {
  if (defects::is(defects::id::hang_exporter_gone))
    for (;;) ::pause();
  return {errc::exporter_gone,
          cat(verb, ": exporter pid ", rec.pid, " has exited; handles die with their exporter (clause rb.open.exporter_gone)")};
}

// Proves that `pidfd` (for `rec.pid`) is still the process that exported `rec`.
refused check_guard(int pidfd, const record::fields& rec, const char* verb) {
  if (defects::is(defects::id::skip_pid_guard)) return std::nullopt;
  bool same = false;
  if (rec.guard_type == record::guard_kind::pidfs_inode) {
    struct stat st{};
    same = ::fstat(pidfd, &st) == 0 && st.st_ino == rec.guard;
  } else {
    same = process_start_time(static_cast<pid_t>(rec.pid)) == rec.guard &&
           sys::pidfd_send_signal(pidfd, 0) == 0;  // still alive after the read: the read was its
  }
  if (same) return std::nullopt;
  return refusal{errc::exporter_gone,
                 cat(verb, ": exporter pid ", rec.pid, " has exited and the pid now belongs to another process "
                     "(identity guard mismatch, clause rb.open.pid_reuse); export the memory again")};
}

// A pidfd of the exporter `rec` names, proven by its identity guard to be that process still.
or_refusal<unique_fd> exporter_pidfd(const record::fields& rec, const char* verb) {
  unique_fd pidfd(sys::pidfd_open(static_cast<pid_t>(rec.pid)));
  if (!pidfd) {
    const int err = errno;
    if (err == ESRCH) return exporter_exited(rec, verb);
    return refusal{err == EMFILE ? errc::exhausted : errc::invalid,
                   cat(verb, ": pidfd_open(", rec.pid, ") failed: ", sys::errno_text(err))};
  }
  if (refused r = check_guard(pidfd.get(), rec, verb)) return std::move(*r);
  return pidfd;
}

// Handles die with their exporter whichever way the descriptor travelled: a descriptor
// received by SCM_RIGHTS outlives its sender, the export it stood for does not.
refused require_exporter_alive(const record::fields& rec, const char* verb) {
  if (rec.pid == static_cast<std::uint32_t>(self().pid)) return std::nullopt;
  if (auto pidfd = exporter_pidfd(rec, verb); !pidfd) return std::move(pidfd.error());
  return std::nullopt;
}

// Why pidfd_getfd(exporter, rec.fd) failed with `err`.
refusal getfd_refused(const record::fields& rec, const char* verb, int err) {
  switch (err) {
    case ESRCH: return exporter_exited(rec, verb);
    case EBADF:
      return {errc::invalid, cat(verb, ": exporter pid ", rec.pid, " has no descriptor ", rec.fd,
                                 " (the allocation was freed, or the handle is forged)")};
    case EPERM:
    case EACCES:
      return {errc::permission_denied,
              cat(verb, ": pidfd_getfd on exporter pid ", rec.pid, " was refused: ", sys::errno_text(err),
                  ". Yama ptrace_scope or a security module forbids it: have the exporter call "
                  "ipcref::allow_importer(<this pid or an ancestor>), or send both descriptors "
                  "(handle::descriptor, handle::control_descriptor) by SCM_RIGHTS and pass them in "
                  "open_options (SECURITY.md)")};
    case EMFILE:
    case ENFILE:
      return {errc::exhausted, cat(verb, ": no descriptor left to receive the export: ", sys::errno_text(err))};
    default:
      return {errc::invalid,
              cat(verb, ": pidfd_getfd(pid ", rec.pid, ", fd ", rec.fd, ") failed: ", sys::errno_text(err))};
  }
}

or_refusal<unique_fd> fetch_descriptor(const record::fields& rec, const char* verb, const open_options& opts) {
  if (opts.descriptor >= 0) {
    if (refused r = require_exporter_alive(rec, verb)) return std::move(*r);
    unique_fd fd(::fcntl(opts.descriptor, F_DUPFD_CLOEXEC, 0));
    if (!fd) {
      const int err = errno;
      return refusal{err == EMFILE ? errc::exhausted : errc::invalid,
                     cat(verb, ": open_options::descriptor ", opts.descriptor, " is unusable: ", sys::errno_text(err),
                         "; pass the descriptor received with this handle")};
    }
    return fd;
  }
  const self_identity& me = self();
  if (rec.pid == static_cast<std::uint32_t>(me.pid)) {
    if (rec.guard_type != me.kind || rec.guard != me.guard)
      return refusal{errc::exporter_gone, cat(verb, ": handle names this process's pid ", rec.pid,
                                              " but a process that has exited (identity guard mismatch)")};
    unique_fd fd(::fcntl(rec.fd, F_DUPFD_CLOEXEC, 0));
    if (!fd)
      return refusal{errno == EMFILE ? errc::exhausted : errc::invalid,
                     cat(verb, ": this process has no descriptor ", rec.fd,
                         " (the export was freed, or the handle is forged)")};
    return fd;
  }
  auto pidfd = exporter_pidfd(rec, verb);
  if (!pidfd) return std::move(pidfd.error());
  unique_fd fd(sys::pidfd_getfd(pidfd->get(), rec.fd));
  if (!fd) return getfd_refused(rec, verb, errno);
  return fd;
}

// ---------------------------------------------------------------- who vouches for a descriptor

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
// An exporter's descriptor whose export this process has proven (the fast path's key).
struct proven_key {
  std::uint32_t pid;
  std::int32_t fd;
  std::uint8_t guard_kind;
  std::uint64_t guard;
  friend bool operator==(const proven_key&, const proven_key&) = default;
};
struct proven_key_hash {
  std::size_t operator()(const proven_key& k) const noexcept {
    return std::hash<std::uint64_t>()((std::uint64_t{k.pid} << 32 | static_cast<std::uint32_t>(k.fd)) ^
                                      (k.guard * 0x9e3779b97f4a7c15ull) ^ k.guard_kind);
  }
};
struct import_caches {
  std::mutex lock;
  std::unordered_map<object_key, std::uint64_t, object_key_hash> control_of;  // 0: not an ipcref data object
  std::map<location_key, located_control> located;
  std::unordered_map<proven_key, located_control, proven_key_hash> proven;
};
import_caches& caches() {
  static import_caches* c = new import_caches;
  return *c;
}
constexpr std::size_t kCacheLimit = 1024;  // entries of each; each is emptied when full

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

refusal not_an_object(const record::fields& rec, record::kind kind, const char* verb) {
  return {errc::invalid, cat(verb, ": descriptor ", rec.fd, " of pid ", rec.pid, " is not an exported ",
                             record::kind_name(kind), " object (forged handle?, clause rb.open.confused_deputy)")};
}

refusal table_refused(const record::fields& rec, const char* verb, int err) {
  return {errc::permission_denied,
          cat(verb, ": reading the export table of exporter pid ", rec.pid, " was refused: ", sys::errno_text(err),
              ". Importers read it with process_vm_readv, which needs the ptrace access pidfd_getfd needs: have "
              "the exporter call ipcref::allow_importer(<this pid or an ancestor>), or send its control "
              "descriptor (handle::control_descriptor) by SCM_RIGHTS and pass it in "
              "open_options::control_descriptor (SECURITY.md)")};
}

refusal export_gone(const record::fields& rec, const char* verb) {
  return {errc::invalid, cat(verb, ": descriptor ", rec.fd, " of pid ", rec.pid,
                             " does not hold this export (its object was freed, or the bytes forged; clause "
                             "rb.put.revokes)")};
}

// Reads [ranges] of the exporter's memory; false when a range is no longer mapped there.
or_refusal<bool> read_exporter(const record::fields& rec, std::span<const sys::remote_range> ranges,
                               std::span<std::byte> out, const char* verb) {
  std::size_t want = 0;
  for (const auto& r : ranges) want += r.length;
  const long got = sys::read_process(static_cast<pid_t>(rec.pid), ranges, out);
  if (got == static_cast<long>(want)) return true;
  if (got >= 0) return false;
  const int err = errno;
  if (err == EPERM || err == EACCES) return table_refused(rec, verb, err);
  if (err == ESRCH) return exporter_exited(rec, verb);
  if (err == EFAULT) return false;
  return refusal{errc::invalid, cat(verb, ": process_vm_readv(pid ", rec.pid, ") failed: ", sys::errno_text(err))};
}

// The start of the exporter's read-write shared mapping of control memfd (dev, ino), from
// /proc/<pid>/maps; 0 when it has none.
or_refusal<std::uintptr_t> find_control_page(const record::fields& rec, const struct stat& data,
                                             std::uint64_t control_ino, const char* verb) {
  const std::string path = cat("/proc/", rec.pid, "/maps");
  unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    const int err = errno;
    if (err == ENOENT || err == ESRCH) return exporter_exited(rec, verb);
    if (err == EACCES || err == EPERM) return table_refused(rec, verb, err);
    return refusal{errc::invalid, cat(verb, ": cannot read ", path, ": ", sys::errno_text(err))};
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
  return std::uintptr_t{0};
}

// Finds the exporter's control page (dev, control_ino) and reads its header and witness.
// The page is looked up again after the read: an exporter maps a control page once, for
// the life of its object, so the same mapping before and after is the one that was read.
or_refusal<std::optional<located_control>> locate(const record::fields& rec, const struct stat& data,
                                                  std::uint64_t control_ino, const char* verb) {
  const std::optional<located_control> none;
  located_control l;
  auto page = find_control_page(rec, data, control_ino, verb);
  if (!page) return std::move(page.error());
  l.page = *page;
  if (!l.page) return none;
  std::byte buf[sizeof(control_fields) + 8];
  const sys::remote_range ranges[] = {{l.page, sizeof(control_fields)}, {l.page + sys::page_size(), 8}};
  auto read = read_exporter(rec, ranges, buf, verb);
  if (!read) return std::move(read.error());
  if (!*read) return none;
  std::memcpy(&l.header, buf, sizeof l.header);
  std::memcpy(&l.witness, buf + sizeof l.header, 8);
  if (l.witness == 0) return none;
  auto again = find_control_page(rec, data, control_ino, verb);
  if (!again) return std::move(again.error());
  if (*again != l.page) return none;
  return std::optional<located_control>(l);
}

// The export's slot, then its object's witness (on the page after the control page at
// `page`), read in the exporter's memory with one call; both stay zero unless the read is whole.
or_refusal<bool> read_slot_and_witness(const record::fields& rec, std::uintptr_t page, slot_fields& slot,
                                       std::uint64_t& witness, const char* verb) {
  std::byte buf[sizeof(slot_fields) + 8];
  const sys::remote_range ranges[] = {
      {page + offsetof(control_header, slots) + rec.slot * sizeof(export_slot), sizeof(slot_fields)},
      {page + sys::page_size(), 8}};
  auto read = read_exporter(rec, ranges, buf, verb);
  if (read && *read) {
    std::memcpy(&slot, buf, sizeof slot);
    std::memcpy(&witness, buf + sizeof slot, 8);
  }
  return read;
}

// The export's slot, read in the exporter's memory: the slot, then the witness (one call,
// in that order). A witness still intact after the slot means the object, and so the
// control page at that address, outlived the read of the slot.
or_refusal<export_view> read_from_exporter(const record::fields& rec, const struct stat& data,
                                           std::uint64_t control_ino, const char* verb,
                                           std::optional<located_control>& read_at) {
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
      auto found = locate(rec, data, control_ino, verb);
      if (!found) return std::move(found.error());
      l = *found;
      if (!l) break;
      std::lock_guard lock(c.lock);
      if (c.located.size() >= kCacheLimit) c.located.clear();
      c.located[key] = *l;
    }
    export_view v;
    v.header = l->header;
    if (rec.slot >= l->header.slot_count || rec.slot >= slots_per_object()) return v;  // judged by the caller
    std::uint64_t witness = 0;
    if (auto read = read_slot_and_witness(rec, l->page, v.slot, witness, verb); !read) return std::move(read.error());
    if (witness == l->witness) {
      read_at = *l;
      return v;
    }
    // The object went away since its page was located: forget the place; look once more.
    {
      std::lock_guard lock(c.lock);
      c.located.erase(key);
    }
    if (!cached) break;
  }
  return export_gone(rec, verb);
}

// ---------------------------------------------------------------- the fast path (object.hpp)

// The seeded defects that live in the proof: a build with one of them switched on takes the
// whole proof on every open, where they are.
bool proof_defect_active() noexcept {
  using defects::id;
  return defects::is(id::skip_token_check) || defects::is(id::skip_pid_guard) ||
         defects::is(id::importer_writes_liveness) || defects::is(id::trust_record_range);
}

proven_key proven_key_of(const record::fields& rec) {
  return {rec.pid, rec.fd, static_cast<std::uint8_t>(rec.guard_type), rec.guard};
}

// Remembers that descriptor rec.fd of exporter rec (pid and guard) was proven to be the data
// object whose control page and witness `at` holds; only when its exporter wipes the witness
// in its children (else a child at the exporter's reused pid could show it).
void remember_proven(const record::fields& rec, const located_control& at) {
  if (!(at.header.features & kFeatureWitnessWipedOnFork)) return;
  auto& c = caches();
  std::lock_guard lock(c.lock);
  if (c.proven.size() >= kCacheLimit) c.proven.clear();
  c.proven.insert_or_assign(proven_key_of(rec), at);
}

// An export of a descriptor proven before, proven again by the slot and the witness alone;
// nothing when it is not (the caller then takes the whole proof).
std::optional<imported_object> import_proven(const record::fields& rec, record::kind kind, const char* verb) {
  if (proof_defect_active()) return std::nullopt;
  const proven_key key = proven_key_of(rec);
  auto& c = caches();
  located_control l;
  {
    std::lock_guard lock(c.lock);
    auto it = c.proven.find(key);
    if (it == c.proven.end()) return std::nullopt;
    l = it->second;
  }
  const control_fields& h = l.header;
  const bool kind_differs = h.kind != static_cast<std::uint32_t>(kind) && !defects::is(defects::id::fast_no_kind);
  if (kind_differs || rec.slot >= h.slot_count || rec.slot >= slots_per_object() ||
      rec.offset > h.payload_size || rec.size > h.payload_size - rec.offset)
    return std::nullopt;
  unique_fd fd;
  {
    // The identity guard, as the whole proof takes it: the witness proves the memory is the
    // exporter's, not that the process at its pid is the exporter (a process that shares its
    // memory, clone(CLONE_VM), wipes nothing and may take its pid once it exits).
    unique_fd pidfd(sys::pidfd_open(static_cast<pid_t>(rec.pid)));
    if (!pidfd || check_guard(pidfd.get(), rec, verb)) return std::nullopt;
    fd.reset(sys::pidfd_getfd(pidfd.get(), rec.fd));
  }
  if (!fd) return std::nullopt;
  // The descriptor is the object still: an exporter that closed ipcref's descriptor behind its
  // back, its number now another file's, must not have that file mapped.
  struct stat st{};
  if (!defects::is(defects::id::fast_no_identity) &&
      (::fstat(fd.get(), &st) != 0 || static_cast<std::uint64_t>(st.st_dev) != h.data_dev ||
       static_cast<std::uint64_t>(st.st_ino) != h.data_ino))
    return std::nullopt;
  // The slot, then the witness: taken after the descriptor, so that a live object then was
  // a live object when the descriptor was taken. A refused read leaves the witness zero.
  slot_fields slot;
  std::uint64_t witness = 0;
  (void)read_slot_and_witness(rec, l.page, slot, witness, verb);
  if (witness != l.witness) {
    std::lock_guard lock(c.lock);
    c.proven.erase(key);
    return std::nullopt;
  }
  const bool range_differs = (slot.offset != rec.offset || slot.size != rec.size) &&
                             !defects::is(defects::id::fast_token_only);
  if ((slot.token != rec.token || range_differs) && !defects::is(defects::id::fast_witness_only)) return std::nullopt;
  imported_object out;
  out.fd = std::move(fd);
  out.rec = rec;
  out.payload_size = h.payload_size;
  out.flags = h.flags;
  return out;
}

// The export's slot, read from the control descriptor the caller passed.
or_refusal<export_view> read_from_descriptor(int control, const struct stat& data, std::uint64_t control_ino,
                                             const record::fields& rec, const char* verb) {
  struct stat st{};
  if (::fstat(control, &st) != 0 || static_cast<std::uint64_t>(st.st_dev) != static_cast<std::uint64_t>(data.st_dev) ||
      static_cast<std::uint64_t>(st.st_ino) != control_ino)
    return refusal{errc::invalid, cat(verb, ": open_options::control_descriptor ", control,
                                      " is not the control object of the exported descriptor; pass the "
                                      "handle::control_descriptor sent with this handle")};
  export_view v;
  if (::pread(control, &v.header, sizeof v.header, 0) != static_cast<ssize_t>(sizeof v.header))
    return refusal{errc::invalid, cat(verb, ": cannot read the control descriptor: ", sys::errno_text(errno))};
  if (rec.slot < v.header.slot_count && rec.slot < slots_per_object() &&
      ::pread(control, &v.slot, sizeof v.slot,
              static_cast<off_t>(offsetof(control_header, slots) + rec.slot * sizeof(export_slot))) !=
          static_cast<ssize_t>(sizeof v.slot))
    return refusal{errc::invalid, cat(verb, ": cannot read the control descriptor: ", sys::errno_text(errno))};
  return v;
}

// The export's slot, read from this process's own control page.
or_refusal<export_view> read_own(const struct stat& data, const record::fields& rec, record::kind kind,
                                 const char* verb) {
  auto& o = own();
  std::lock_guard lock(o.lock);
  auto it = o.by_data.find(key_of(data));
  if (it == o.by_data.end()) return not_an_object(rec, kind, verb);
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

// The export's object header and slot, from wherever this importer may read them.
// `read_at`: where in the exporter the slot was read, when it was read there.
or_refusal<export_view> read_export(int fd, const struct stat& st, const record::fields& rec, record::kind kind,
                                    const char* verb, const open_options& opts,
                                    std::optional<located_control>& read_at) {
  if (rec.pid == static_cast<std::uint32_t>(self().pid) && opts.control_descriptor < 0)
    return read_own(st, rec, kind, verb);
  const std::uint64_t control_ino = control_inode_of(fd, st);
  if (control_ino == 0) return not_an_object(rec, kind, verb);
  return opts.control_descriptor >= 0 ? read_from_descriptor(opts.control_descriptor, st, control_ino, rec, verb)
                                      : read_from_exporter(rec, st, control_ino, verb, read_at);
}

// Checks the object behind `fd` is the one `rec` exported and that the export is live,
// before anything is mapped. Nothing an importer can write takes part (see object.hpp).
refused prove_object(int fd, const record::fields& rec, record::kind kind, const char* verb, const open_options& opts,
                     std::uint64_t& payload_size, std::uint32_t& flags) {
  struct stat st{};
  if (::fstat(fd, &st) != 0) return not_an_object(rec, kind, verb);
  std::optional<located_control> read_at;
  auto view = read_export(fd, st, rec, kind, verb, opts, read_at);
  if (!view) return std::move(view.error());
  export_view& v = *view;
  if (defects::is(defects::id::importer_writes_liveness)) v.slot = read_mirrored_slot(fd, rec);
  const control_fields& h = v.header;
  if (h.magic != kControlMagic || h.kind != static_cast<std::uint32_t>(kind) ||
      h.data_dev != static_cast<std::uint64_t>(st.st_dev) || h.data_ino != static_cast<std::uint64_t>(st.st_ino))
    return not_an_object(rec, kind, verb);
  if (rec.slot >= h.slot_count || rec.slot >= slots_per_object())
    return refusal{errc::invalid,
                   cat(verb, ": handle names export slot ", rec.slot, ", objects have ", slots_per_object(), " slots")};
  if (rec.offset > h.payload_size || rec.size > h.payload_size - rec.offset)
    return refusal{errc::invalid, cat(verb, ": handle range [", rec.offset, ", ", rec.offset + rec.size,
                                      ") is outside the ", h.payload_size, "-byte object")};
  const bool range_matches = defects::is(defects::id::trust_record_range) ||
                             (v.slot.offset == rec.offset && v.slot.size == rec.size);
  if (!defects::is(defects::id::skip_token_check) && (v.slot.token != rec.token || !range_matches))
    return refusal{errc::invalid, cat(verb, ": descriptor ", rec.fd, " of pid ", rec.pid,
                                      " does not hold this export (token mismatch: the handle was put, its "
                                      "allocation freed, or the bytes forged; clause rb.put.revokes)")};
  payload_size = h.payload_size;
  flags = h.flags;
  // Only a descriptor taken from the exporter's rec.fd proves what that number holds (one
  // passed by SCM_RIGHTS says nothing of it).
  if (read_at && opts.descriptor < 0) remember_proven(rec, *read_at);
  return std::nullopt;
}

}  // namespace

or_refusal<imported_object> try_import_object(std::span<const std::byte> data, record::kind kind, const char* verb,
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
    return refusal{errc::device_lost, cat(verb, ": the context was lost by an earlier malformed handle")};
  if (auto problem = record::check(data, kind, size_clause)) {
    if (defects::is(defects::id::lose_context_on_garbage)) {
      context_lost = true;
      return refusal{errc::device_lost, cat(verb, ": ", *problem, "; the context is lost")};
    }
    return refusal{errc::invalid, cat(verb, ": ", *problem)};
  }
  imported_object out;
  out.rec = record::decode(data);
  // Every field is judged: a device index this platform does not have is a forged record.
  if (out.rec.device >= platform_device_count())
    return refusal{errc::invalid, cat(verb, ": handle names device ", out.rec.device, ", this platform has ",
                                      platform_device_count(), " devices (forged or foreign handle)")};
  if (opts.descriptor < 0 && opts.control_descriptor < 0 && out.rec.pid != static_cast<std::uint32_t>(self().pid))
    if (auto proven = import_proven(out.rec, kind, verb)) return std::move(*proven);
  auto fd = fetch_descriptor(out.rec, verb, opts);
  if (!fd) return std::move(fd.error());
  out.fd = std::move(*fd);
  if (refused r = prove_object(out.fd.get(), out.rec, kind, verb, opts, out.payload_size, out.flags))
    return std::move(*r);
  return out;
}

imported_object import_object(std::span<const std::byte> data, record::kind kind, const char* verb,
                              const char* size_clause, const open_options& opts) {
  return try_import_object(data, kind, verb, size_clause, opts).take();
}

}  // namespace ipcref::detail
