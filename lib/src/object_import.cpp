// Importing an exported object (object.hpp says how objects and imports work): the
// descriptor fetched (pidfd_getfd, or the one passed) from an exporter its identity guard
// proves to be the process that exported it, and the export proven live before anything is
// mapped, from what object_export_read.cpp reads of it (in the exporter's memory, from a
// control descriptor, or in this process's own control page). The exporter's side is
// object.cpp.
#include "object.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <mutex>
#include <optional>

#include "ipcref/defects.hpp"
#include "object_import_impl.hpp"
#include "text.hpp"

namespace ipcref::detail {

using sys::or_refusal;
using text::cat;

refusal exporter_exited(const record::fields& rec, const char* verb) {
  if (defects::is(defects::id::hang_exporter_gone))
    for (;;) ::pause();
  return {errc::exporter_gone,
          cat(verb, ": exporter pid ", rec.pid, " has exited; handles die with their exporter (clause rb.open.exporter_gone)")};
}

namespace {

// A check's answer: nothing when it holds, else why the open is refused.
using refused = std::optional<refusal>;

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
