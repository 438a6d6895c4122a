// The audit document of one role, from what the kernel side recorded for it (ipcaudit.h's
// records, taken from the maps by the tracer, ipcaudit.cpp): a call profile per verb, and the
// descriptors and shared mappings the body created and never released, each with the verb
// call and syscall that made it. No BPF here: what the records mean, not how they are read.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "ipcaudit.h"
#include "ipcheck/auditor.hpp"

namespace ipcheck::trace {

// What the kernel side held for one role when it ended.
struct CollectedRole {
  ipcaudit_role role{};
  bool have_role = false;
  std::vector<std::pair<ipcaudit_count_key, unsigned long long>> counts;
  std::vector<std::pair<ipcaudit_fd_key, ipcaudit_fd>> fds;
  std::vector<std::pair<ipcaudit_map_key, ipcaudit_map>> maps;
};

// The role's audit document ("method": "bpf"): `reported` is what the role itself sent (its
// verb counts, when it could), `end` how it ended, `problem` what the tracer could not do for
// it (a note; empty when none).
nlohmann::json role_audit_document(pid_t pid, const nlohmann::json& reported, const RoleEnd& end,
                                   const CollectedRole& c, const std::string& problem);

}  // namespace ipcheck::trace
