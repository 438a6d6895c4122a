// Readers of /proc shared by the harness's own sources (leftovers.cpp, spawn.cpp); an
// internal header, not one of harness/include.
#pragma once

#include <dirent.h>
#include <sys/types.h>

#include <cctype>
#include <cstdlib>
#include <optional>
#include <string>

namespace ipcheck::procfs {

// Calls fn(pid) for every process directory of /proc.
template <class Fn>
void for_each_pid(Fn fn) {
  DIR* d = ::opendir("/proc");
  if (!d) return;
  while (dirent* e = ::readdir(d))
    if (std::isdigit(static_cast<unsigned char>(e->d_name[0]))) fn(static_cast<pid_t>(std::atoi(e->d_name)));
  ::closedir(d);
}

// The fields of /proc/<pid>/stat after the command name ("S 1 1234 ..."); empty when
// the file cannot be read.
std::optional<std::string> stat_after_comm(pid_t pid);
// Field `index` of those (0: state, 1: ppid, 2: pgrp, ...); "" when the process is gone.
std::string stat_field_after_comm(pid_t pid, int index);
// True when `pid` is `ancestor`, or `ancestor` is its parent, its parent's parent, and so on.
bool is_or_descends_from(pid_t pid, pid_t ancestor);
// The process's command name (/proc/<pid>/comm); "" when it is gone.
std::string comm_of(pid_t pid);

}  // namespace ipcheck::procfs
