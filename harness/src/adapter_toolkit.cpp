#include "ipcheck/adapter_toolkit.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

namespace ipcheck::toolkit {

Errc errc_from_errno(int err) noexcept {
  switch (err) {
    case ESRCH: return Errc::exporter_gone;
    case EPERM:
    case EACCES: return Errc::permission_denied;
    case EMFILE:
    case ENFILE:
    case ENOMEM: return Errc::exhausted;
    case ENOSYS: return Errc::not_implemented;
    default: return Errc::invalid;
  }
}

const char* errno_name(int err) noexcept {
  const char* name = ::strerrorname_np(err);
  return name ? name : "errno";
}

std::string hex(std::uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "%#llx", static_cast<unsigned long long>(v));
  return b;
}

std::uint64_t process_start_time(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return 0;
  // Field 2 (comm) may hold spaces and parentheses: count fields after the last ')'.
  const auto close = line.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i) {
    if (!(rest >> field)) return 0;
    if (i == 22) return std::strtoull(field.c_str(), nullptr, 10);
  }
  return 0;
}

std::uint64_t own_start_time() {
  static std::mutex lock;
  static pid_t read_for = 0;
  static std::uint64_t start_time = 0;
  std::lock_guard<std::mutex> g(lock);
  const pid_t pid = ::getpid();
  if (pid != read_for || start_time == 0) {
    start_time = process_start_time(pid);
    read_for = pid;
  }
  return start_time;
}

Outcome take_exporter_fd(const ExporterFd& from, const std::string& context, ipcref::unique_fd& out) {
  ipcref::unique_fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, from.pid, 0)));
  if (!pidfd) {
    const int err = errno;
    return Outcome::failure(errc_from_errno(err),
                            context + "pidfd_open(" + std::to_string(from.pid) + ") failed: " + std::strerror(err) +
                                (err == ESRCH ? " (the exporter has exited)" : ""),
                            err, errno_name(err));
  }
  if (from.start_time && process_start_time(from.pid) != *from.start_time)
    return Outcome::failure(Errc::exporter_gone, context + "pid " + std::to_string(from.pid) +
                                                     " is no longer the exporter (its start time differs: the pid "
                                                     "was reused)");
  out.reset(static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd.get(), from.fd, 0)));
  if (!out) {
    const int err = errno;
    const Errc c = errc_from_errno(err);
    const std::string fix =
        err == EBADF ? " (not open in the exporter: put already, or a forged record)"
        : c == Errc::permission_denied
            ? " (ptrace access refused: Yama ptrace_scope or a security module; run with --transport scm)"
            : "";
    return Outcome::failure(c, context + "pidfd_getfd(pid " + std::to_string(from.pid) + ", fd " +
                                   std::to_string(from.fd) + ") failed: " + std::strerror(err) + fix,
                            err, errno_name(err));
  }
  return Outcome::success();
}

int ExportFdNumbers::place(ipcref::unique_fd& fd) {
  if (next_ == 0) {
    rlimit lim{};
    const rlim_t soft = ::getrlimit(RLIMIT_NOFILE, &lim) == 0 ? lim.rlim_cur : 1024;
    next_ = static_cast<int>(std::min<rlim_t>(soft / 2, 4096));
    end_ = static_cast<int>(std::min<rlim_t>(soft, 16384));
  }
  if (next_ < 64 || next_ >= end_) return 0;
  const int moved = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, next_);
  if (moved < 0) return errno == EINVAL || errno == EMFILE ? 0 : errno;
  next_ = moved + 1;
  fd.reset(moved);
  return 0;
}

}  // namespace ipcheck::toolkit
