#include "ipcheck/audit.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <set>
#include <string_view>

namespace ipcheck {

namespace {

// Mappings worth tracking: shared ones and those of devices, memfds, dma-bufs and other
// special files. Private anonymous and library mappings change with the allocator and
// the dynamic loader and say nothing about IPC objects.
bool tracked_mapping(std::string_view perms, std::string_view path) {
  if (perms.size() >= 4 && perms[3] == 's') return true;
  return path.starts_with("/memfd:") || path.starts_with("/dev/") || path.starts_with("anon_inode:") ||
         path.find("dmabuf") != std::string_view::npos || path.starts_with("/drm");
}

// The whole of a (proc) file; empty when it cannot be read.
std::string read_whole(const char* path, std::string* error = nullptr) {
  std::string out;
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (error) *error = std::string("cannot open ") + path + ": " + std::strerror(errno);
    return out;
  }
  std::size_t used = 0;
  for (;;) {
    out.resize(used + 16384);
    const ssize_t n = ::read(fd, out.data() + used, 16384);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    used += static_cast<std::size_t>(n);
  }
  ::close(fd);
  out.resize(used);
  return out;
}

// The next whitespace-separated word of `line`, which loses it.
std::string_view next_word(std::string_view& line) {
  const auto b = line.find_first_not_of(" \t");
  if (b == std::string_view::npos) {
    line = {};
    return {};
  }
  const auto e = line.find_first_of(" \t", b);
  const std::string_view w = line.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b);
  line = e == std::string_view::npos ? std::string_view() : line.substr(e);
  return w;
}

}  // namespace

ProcSnapshot take_proc_snapshot() {
  ProcSnapshot s;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    const int own = ::dirfd(d);
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      const int fd = std::atoi(e->d_name);
      if (fd == own) continue;
      char target[512];
      const ssize_t n = ::readlinkat(own, e->d_name, target, sizeof target - 1);
      s.fds[fd] = n > 0 ? std::string(target, static_cast<std::size_t>(n)) : "?";
    }
    ::closedir(d);
  } else {
    s.error = std::string("cannot open /proc/self/fd: ") + std::strerror(errno);
    return s;
  }
  // One read loop and string views: a role takes two snapshots, and streams cost more
  // than the kernel's own work here.
  const std::string maps = read_whole("/proc/self/maps", &s.error);
  if (!s.error.empty()) {
    s.fds.clear();
    return s;
  }
  std::string_view rest(maps);
  while (!rest.empty()) {
    const auto eol = rest.find('\n');
    std::string_view line = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 1);
    // start-end perms offset dev inode [path]; the path may hold spaces ("(deleted)").
    const std::string_view range = next_word(line), perms = next_word(line);
    for (int i = 0; i < 3; ++i) next_word(line);  // offset, dev, inode
    const auto at = line.find_first_not_of(" \t");
    const std::string_view path = at == std::string_view::npos ? std::string_view() : line.substr(at);
    if (tracked_mapping(perms, path)) {
      std::string item;
      item.reserve(range.size() + perms.size() + path.size() + 2);
      item.append(range).append(" ").append(perms).append(" ").append(path);
      s.mappings.push_back(std::move(item));
    }
  }
  return s;
}

std::vector<LeakItem> diff_snapshots(const ProcSnapshot& before, const ProcSnapshot& after) {
  std::vector<LeakItem> out;
  for (const auto& [fd, target] : after.fds) {
    auto it = before.fds.find(fd);
    if (it == before.fds.end() || it->second != target)
      out.push_back({"fd", "fd " + std::to_string(fd) + " -> " + target});
  }
  std::set<std::string> had(before.mappings.begin(), before.mappings.end());
  for (const auto& m : after.mappings)
    if (!had.count(m)) out.push_back({"mapping", m});
  return out;
}

std::size_t count_open_fds() {
  std::size_t n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') ++n;
    ::closedir(d);
    --n;  // the directory's own descriptor
  }
  return n;
}

}  // namespace ipcheck
