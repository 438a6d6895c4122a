// The role's own audit (method "proc"): descriptors from /proc/self/fd and shared or
// device mappings from /proc/self/maps, at the start and the end of the role body. What
// is there at the end and was not at the start is a leak candidate.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace ipcheck {

struct ProcSnapshot {
  std::map<int, std::string> fds;     // fd -> readlink target
  std::vector<std::string> mappings;  // "start-end perms path" of shared or device mappings
  std::string error;                  // why /proc could not be read (then the snapshot is empty)
};

ProcSnapshot take_proc_snapshot();

struct LeakItem {
  std::string kind;  // fd | mapping
  std::string item;
};

// Items in `after` that `before` lacks.
std::vector<LeakItem> diff_snapshots(const ProcSnapshot& before, const ProcSnapshot& after);

std::size_t count_open_fds();

}  // namespace ipcheck
