#include "ipcheck/leftovers.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "procfs.hpp"

namespace ipcheck {

namespace procfs {

std::optional<std::string> stat_after_comm(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  // The command name may hold spaces and parentheses: the fields follow the last ')'.
  const auto close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  return line.substr(close + 2);
}

std::string stat_field_after_comm(pid_t pid, int index) {
  const std::optional<std::string> fields = stat_after_comm(pid);
  if (!fields) return {};
  std::istringstream rest(*fields);
  std::string v;
  for (int i = 0; i <= index && rest >> v; ++i) {
  }
  return v;
}

bool is_or_descends_from(pid_t pid, pid_t ancestor) {
  // Bounded: a chain read while processes come and go could, in theory, loop.
  for (int depth = 0; depth < 64 && pid > 1; ++depth) {
    if (pid == ancestor) return true;
    pid = static_cast<pid_t>(std::atoi(stat_field_after_comm(pid, 1).c_str()));
  }
  return false;
}

std::string comm_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string s;
  std::getline(in, s);
  return s;
}

}  // namespace procfs

namespace {

using procfs::comm_of;
using procfs::for_each_pid;
using procfs::stat_field_after_comm;

// Objects that carry IPC payloads between processes. Device nodes (/dev/nvidia0, render
// nodes) are shared by every process of a driver and are not objects of one case.
bool ipc_object_name(const std::string& name) {
  return name.rfind("/memfd:", 0) == 0 || name.rfind("/dev/shm/", 0) == 0 || name.find("dmabuf") != std::string::npos;
}

std::string read_link(const std::string& path) {
  char buf[512];
  const ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

std::string with_inode(const std::string& name, unsigned long long ino) {
  return name + " (inode " + std::to_string(ino) + ")";
}

// Calls fn(fd, object, name) for each IPC object the process holds by descriptor.
template <class Fn>
void for_each_fd_object(pid_t pid, Fn fn) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const std::string path = dir + "/" + e->d_name;
    const std::string name = read_link(path);
    if (!ipc_object_name(name)) continue;
    struct stat st{};
    if (::stat(path.c_str(), &st) != 0) continue;  // closed meanwhile
    fn(std::atoi(e->d_name), KernelObject{::major(st.st_dev), ::minor(st.st_dev), st.st_ino}, name);
  }
  ::closedir(d);
}

// Calls fn(range_and_perms, object, name) for each mapping of an IPC object.
template <class Fn>
void for_each_mapped_object(pid_t pid, Fn fn) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream in(line);
    std::string range, perms, offset, dev, inode, name;
    in >> range >> perms >> offset >> dev >> inode;
    std::getline(in, name);
    name.erase(0, name.find_first_not_of(' '));
    if (!ipc_object_name(name)) continue;
    unsigned major = 0, minor = 0;
    if (std::sscanf(dev.c_str(), "%x:%x", &major, &minor) != 2) continue;
    fn(range + " " + perms, KernelObject{major, minor, std::strtoull(inode.c_str(), nullptr, 10)}, name);
  }
}

}  // namespace

std::map<KernelObject, std::string> ipc_objects_of(pid_t pid) {
  std::map<KernelObject, std::string> out;
  for_each_fd_object(pid, [&](int, const KernelObject& k, const std::string& name) { out.emplace(k, name); });
  for_each_mapped_object(pid, [&](const std::string&, const KernelObject& k, const std::string& name) {
    out.emplace(k, name);
  });
  return out;
}

std::vector<ObjectHolder> find_holders(const std::map<KernelObject, std::string>& objects, std::size_t* scanned) {
  std::vector<ObjectHolder> out;
  std::size_t n = 0;
  if (objects.empty()) {
    if (scanned) *scanned = 0;
    return out;
  }
  for_each_pid([&](pid_t pid) {
    ++n;
    auto held = [&](const std::string& how, const KernelObject& k) {
      auto it = objects.find(k);
      if (it == objects.end()) return;
      ObjectHolder h;
      h.pid = pid;
      h.ppid = static_cast<pid_t>(std::atoi(stat_field_after_comm(pid, 1).c_str()));
      h.comm = comm_of(pid);
      h.how = how;
      h.object = with_inode(it->second, k.ino);
      out.push_back(std::move(h));
    };
    for_each_fd_object(pid, [&](int fd, const KernelObject& k, const std::string&) { held("fd " + std::to_string(fd), k); });
    for_each_mapped_object(pid, [&](const std::string& range, const KernelObject& k, const std::string&) {
      held("mapping " + range, k);
    });
  });
  if (scanned) *scanned = n;
  return out;
}

char process_state(pid_t pid) {
  const std::string s = stat_field_after_comm(pid, 0);
  return s.empty() ? 0 : s[0];
}

std::string wait_channel(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/wchan");
  std::string s;
  std::getline(in, s);
  return s == "0" ? std::string() : s;
}

}  // namespace ipcheck
