#include "machine_record.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string_view>

namespace ipcheck::machine_record {
namespace {

// "/sys/fs/cgroup/<path>/memory.events" of this process (cgroup v2: the "0::" line).
std::string memory_events_path() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("0::", 0) == 0) return "/sys/fs/cgroup" + line.substr(3) + "/memory.events";
  return {};
}

// Every record of the kernel's log buffer, one message a line; nullopt when it cannot be read
// (dmesg_restrict without CAP_SYSLOG, no /dev/kmsg).
std::optional<std::string> kernel_log() {
  const int fd = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[8192];
  for (int records = 0; records < 100000; ++records) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EPIPE) continue;  // a record overwritten while read: go on
    if (n <= 0) break;                       // EAGAIN: the end of the buffer
    // "<prio>,<seq>,<ts>,<flags>;<message>\n"
    std::string_view rec(buf, static_cast<std::size_t>(n));
    const auto semi = rec.find(';');
    if (semi == std::string_view::npos) continue;
    rec.remove_prefix(semi + 1);
    const auto nl = rec.find('\n');
    out.append(rec.substr(0, nl)).push_back('\n');
  }
  ::close(fd);
  return out;
}

}  // namespace

std::optional<std::uint64_t> oom_kills() {
  const std::string path = memory_events_path();
  if (path.empty()) return std::nullopt;
  std::ifstream in(path);
  std::string key;
  std::uint64_t value = 0;
  while (in >> key >> value)
    if (key == "oom_kill") return value;
  return std::nullopt;
}

std::string why_killed_from(pid_t pid, const std::optional<std::string>& log, std::optional<std::uint64_t> before,
                            std::optional<std::uint64_t> now) {
  if (log) {
    const std::string killed = "Killed process " + std::to_string(pid) + " ";
    const std::string named = ",pid=" + std::to_string(pid) + ",";
    std::istringstream lines(*log);
    std::string line;
    while (std::getline(lines, line))
      if (line.find(killed) != std::string::npos ||
          (line.find("oom-kill:") != std::string::npos && line.find(named) != std::string::npos))
        return "the kernel's log says so: " + line;
    return {};
  }
  if (before && now && *now > *before)
    return "the memory cgroup counted " + std::to_string(*now - *before) +
           " OOM kill(s) while it ran (memory.events oom_kill; the kernel log is not readable here)";
  return {};
}

std::string why_killed(pid_t pid, std::optional<std::uint64_t> before) {
  return why_killed_from(pid, kernel_log(), before, oom_kills());
}

}  // namespace ipcheck::machine_record
