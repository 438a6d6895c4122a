#include "ipcheck/audit.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace ipcheck {

namespace {

// Mappings worth tracking: shared ones and those of devices, memfds, dma-bufs and other
// special files. Private anonymous and library mappings change with the allocator and
// the dynamic loader and say nothing about IPC objects.
bool tracked_mapping(const std::string& perms, const std::string& path) {
  if (perms.size() >= 4 && perms[3] == 's') return true;
  return path.rfind("/memfd:", 0) == 0 || path.rfind("/dev/", 0) == 0 || path.rfind("anon_inode:", 0) == 0 ||
         path.find("dmabuf") != std::string::npos || path.rfind("/drm", 0) == 0;
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
  }
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    ++s.all_mappings;
    std::istringstream in(line);
    std::string range, perms, offset, dev, inode, path;
    in >> range >> perms >> offset >> dev >> inode;
    std::getline(in, path);
    path.erase(0, path.find_first_not_of(' '));
    if (tracked_mapping(perms, path)) s.mappings.push_back(range + " " + perms + " " + path);
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
