// What a role keeps of the runner's privileges (spawn.hpp: SpawnSpec::role), shared by the
// supervisor (spawn.cpp) and spawn_privileges.cpp, where it is worked out and dropped. Private
// to harness/src.
#pragma once

#include <sys/types.h>

#include "ipcheck/spawn.hpp"

namespace ipcheck::spawn_detail {

// What a role keeps of the runner's privileges, worked out before fork: the capability
// sets to give (capset's structures) and the highest capability number to drop from the
// bounding set.
struct Privileges {
  bool reduce = false;
  int last_cap = 0;
  unsigned long long keep = 0;
  bool change_user = false;  // a root runner: the role runs as `uid`:`gid`, no supplementary groups
  uid_t uid = 0;
  gid_t gid = 0;
};

// The status a child writes to the runner when it cannot become the role's user (errno
// added): told apart from an exec's errno.
inline constexpr int kUserChangeFailed = 1 << 20;

// The privileges a child of `spec` keeps: none reduced for a child that is no role.
Privileges role_privileges(const SpawnSpec& spec);

// In the child: no_new_privs, every capability not kept out of the bounding set, the
// ambient and inheritable sets emptied, permitted and effective cut to the kept ones. An
// exec'd root process gets its bounding set as its permitted set, so this is what the role
// holds after exec. Raw system calls only (async-signal-safe); a step refused (an
// unprivileged runner has no CAP_SETPCAP, and nothing to drop) is no error.
// A root runner's role becomes its user after the bounding set is cut (that needs
// CAP_SETPCAP, which the change of user takes away) and before the other sets are: kept
// capabilities (CAP_SYS_PTRACE under Yama 2) survive the change (SECBIT_KEEP_CAPS) and the
// exec of a non-root process only as ambient ones. Raw system calls: glibc's setresuid would
// signal the runner's threads, whose memory this child shares until its exec. False when the
// user cannot be changed (the child then exits: a role never runs as root by mistake).
bool drop_privileges(const Privileges& p) noexcept;

}  // namespace ipcheck::spawn_detail
