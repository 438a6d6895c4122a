// What the machine itself recorded about a process it killed: the kernel's OOM report
// (/dev/kmsg) and the memory cgroup's OOM-kill count (memory.events). A role that died by
// SIGKILL is the runtime's crash unless the harness sent the signal or one of these says the
// machine did (verdict::RoleFacts::machine_kill).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace ipcheck::machine_record {

// The OOM kills the memory cgroup of this process (and of the roles it starts) had counted
// so far; nullopt where cgroup v2's memory.events cannot be read.
std::optional<std::uint64_t> oom_kills();

// Why the machine killed `pid`, from its own record, or "" when nothing says it did:
// a kernel log line naming `pid` ("Out of memory: Killed process <pid> ...", an oom-kill
// line with pid=<pid>), else, only where the kernel log cannot be read, the cgroup's OOM
// kills counted since `kills_before` (taken before the role started).
std::string why_killed(pid_t pid, std::optional<std::uint64_t> kills_before);

// The same from given texts (tests): the kernel log (nullopt: unreadable) and the counts.
std::string why_killed_from(pid_t pid, const std::optional<std::string>& kernel_log,
                            std::optional<std::uint64_t> kills_before, std::optional<std::uint64_t> kills_now);

}  // namespace ipcheck::machine_record
