// Reading an export, on the importer's side (object.hpp says how objects and imports
// work): its object's header and its slot, in the exporter's memory (the control page found
// in /proc/<pid>/maps, then read with its witness), from a control descriptor passed with the
// handle, or in this process's own control page; and the caches of what an importer may keep
// between opens. What object_import.cpp proves an export live by.
#include "object_import_impl.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "text.hpp"

namespace ipcref::detail {

using sys::or_refusal;
using text::cat;

import_caches& caches() {
  static import_caches* c = new import_caches;
  return *c;
}

namespace {

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

}  // namespace

refusal not_an_object(const record::fields& rec, record::kind kind, const char* verb) {
  return {errc::invalid, cat(verb, ": descriptor ", rec.fd, " of pid ", rec.pid, " is not an exported ",
                             record::kind_name(kind), " object (forged handle?, clause rb.open.confused_deputy)")};
}

namespace {

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
}  // namespace


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
namespace {


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

}  // namespace

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

}  // namespace ipcref::detail
