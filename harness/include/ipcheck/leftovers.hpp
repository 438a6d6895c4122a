// What a case leaves behind once its processes are gone: the IPC objects its roles held
// (memfds, POSIX shared memory, dma-bufs), looked for by inode in every process of the
// machine, by descriptor (/proc/*/fd) and by mapping (/proc/*/maps).
#pragma once

#include <sys/types.h>

#include <compare>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace ipcheck {

// A file object of the kernel, by device and inode (the same in every process holding it).
struct KernelObject {
  unsigned major = 0, minor = 0;
  unsigned long long ino = 0;
  auto operator<=>(const KernelObject&) const = default;
};

// The IPC objects `pid` holds by descriptor or mapping, with their names
// ("/memfd:ipcref-memory (deleted)"). Empty when the process is gone or unreadable.
std::map<KernelObject, std::string> ipc_objects_of(pid_t pid);

struct ObjectHolder {
  pid_t pid = 0;
  pid_t ppid = 0;
  std::string comm;
  std::string how;     // "fd 7", "mapping 7f2c1000-7f2c2000 rw-s"
  std::string object;  // the object's name and inode
};

// Every process of the machine that holds one of `objects`; `scanned` counts the processes
// looked at.
std::vector<ObjectHolder> find_holders(const std::map<KernelObject, std::string>& objects,
                                       std::size_t* scanned = nullptr);

// A process's scheduler state ('R', 'S', 'D', ...; 0 when it is gone) and its wait channel
// (the kernel function it sleeps in, "futex_wait_queue"; empty when the kernel hides it).
char process_state(pid_t pid);
std::string wait_channel(pid_t pid);

}  // namespace ipcheck
