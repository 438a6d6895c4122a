// The `vk` adapter's descriptors: taking an export's descriptor (received by SCM_RIGHTS, or
// the exporter's with pidfd_getfd), checking it is the file the record names, moving an
// exported one to a fresh number, and what a failed import left behind.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "vk_adapter.hpp"

namespace ipcheck::vk_adapter {

// A descriptor that a failed import should have left to us: still ours (closed by `fd`'s
// destructor), or closed by the driver already (true: forgotten, so nothing closes a number
// some later descriptor may take).
bool VkAdapter::keep_or_forget(unique_fd& fd) {
  if (!fd) return false;
  if (::fcntl(fd.get(), F_GETFD) < 0 && errno == EBADF) {
    (void)fd.release();
    return true;
  }
  return false;
}

// A descriptor of the export in this process: a duplicate of the one received by
// SCM_RIGHTS, or the exporter's taken with pidfd_getfd (dup in the exporter itself).
Outcome VkAdapter::take_descriptor(const FdRecord& rec, int received, unique_fd& out) {
  if (Outcome o = fetch_descriptor(rec, received, out); !o.ok()) return o;
  if (!check_identity_) return Outcome::success();  // identity=off: any descriptor reaches the driver
  struct stat st{};
  if (::fstat(out.get(), &st) != 0 || static_cast<std::uint64_t>(st.st_ino) != rec.ino ||
      static_cast<std::uint64_t>(st.st_dev) != rec.dev) {
    out.reset();
    return Outcome::failure(Errc::invalid, "the descriptor " + std::string(received >= 0 ? "received" : "taken") +
                                               " is not the exported file the record names (inode " +
                                               std::to_string(rec.ino) + "); nothing was imported",
                            EBADF, "EBADF");
  }
  return Outcome::success();
}

Outcome VkAdapter::fetch_descriptor(const FdRecord& rec, int received, unique_fd& out) {
  if (received < 0 && scm_)
    return Outcome::failure(Errc::invalid, "no descriptor came with the bytes: with --transport scm (the vk "
                                           "default) the export's descriptor travels by SCM_RIGHTS");
  if (received >= 0) {
    out.reset(::fcntl(received, F_DUPFD_CLOEXEC, 0));
    if (!out)
      return Outcome::failure(Errc::invalid, "the received descriptor " + std::to_string(received) +
                                                 " is unusable: " + std::strerror(errno), errno, "errno");
    return Outcome::success();
  }
  const int pid = static_cast<int>(rec.pid);
  if (pid == ::getpid()) {
    if (rec.start_time != own_start_time())
      return Outcome::failure(Errc::exporter_gone, "the record names this pid with another start time (pid reused)");
    out.reset(::fcntl(rec.fd, F_DUPFD_CLOEXEC, 0));
    if (!out)
      return Outcome::failure(Errc::invalid, "this process has no descriptor " + std::to_string(rec.fd) +
                                                 " (the export was put)", errno, "EBADF");
    return Outcome::success();
  }
  return toolkit::take_exporter_fd({pid, rec.fd, rec.start_time}, "", out);
}

void VkAdapter::identity(int fd, FdRecord& rec) {
  struct stat st{};
  if (::fstat(fd, &st) == 0) {
    rec.ino = static_cast<std::uint64_t>(st.st_ino);
    rec.dev = static_cast<std::uint64_t>(st.st_dev);
  }
}

// Moves an exported descriptor to a number never used for one before (a put record then
// names a closed number), keeping the driver's close-on-exec flag as it was.
Outcome VkAdapter::relocate(unique_fd& fd, bool cloexec) {
  if (const int err = export_numbers_.place(fd); err != 0)
    return Outcome::failure(Errc::exhausted, std::string("fcntl(F_DUPFD) of an exported descriptor failed: ") +
                                                 std::strerror(err), err, "errno");
  if (!cloexec) ::fcntl(fd.get(), F_SETFD, 0);
  return Outcome::success();
}

}  // namespace ipcheck::vk_adapter
