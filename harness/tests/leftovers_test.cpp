// The leftovers scan finds an IPC object by inode in any process, by descriptor and by
// mapping, and loses it once the last reference is gone.
#include "ipcheck/leftovers.hpp"
#include "ipcheck/spawn.hpp"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>

#include <gtest/gtest.h>

namespace ipcheck {
namespace {

bool held_by_me(const std::vector<ObjectHolder>& holders, const std::string& how_prefix) {
  for (const auto& h : holders)
    if (h.pid == ::getpid() && h.how.rfind(how_prefix, 0) == 0) return true;
  return false;
}

TEST(Leftovers, FindsAnObjectByDescriptorThenByMappingUntilItIsGone) {
  const int fd = ::memfd_create("leftovers-test", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 4096), 0);
  const auto objects = ipc_objects_of(::getpid());
  std::map<KernelObject, std::string> mine;
  for (const auto& [k, name] : objects)
    if (name.find("leftovers-test") != std::string::npos) mine.emplace(k, name);
  ASSERT_EQ(mine.size(), 1u) << "the memfd is one object of this process";

  std::size_t scanned = 0;
  auto holders = find_holders(mine, &scanned);
  EXPECT_GT(scanned, 1u);
  EXPECT_TRUE(held_by_me(holders, "fd ")) << "held by descriptor";

  void* p = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(p, MAP_FAILED);
  ::close(fd);
  holders = find_holders(mine);
  EXPECT_FALSE(held_by_me(holders, "fd ")) << "the descriptor is closed";
  EXPECT_TRUE(held_by_me(holders, "mapping ")) << "still held by its mapping";

  ::munmap(p, 4096);
  EXPECT_TRUE(find_holders(mine).empty()) << "nothing holds the object any more";
}

TEST(Leftovers, StateOfASleepingChild) {
  const pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  char state = 0;
  for (int i = 0; i < 500 && state != 'S'; ++i) {
    ::usleep(2000);
    state = process_state(child);
  }
  EXPECT_EQ(state, 'S');
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_EQ(process_state(child), 0) << "a reaped process has no state";
}

// A role's group is read while the role is exited but unreaped: its pid, and so its group's
// id, cannot be reused then. Once it is reaped the id may name another program's group,
// so only this process's own descendants count (a test process is no subreaper: the
// orphan went to another process, as a stranger's group member would be).
TEST(Leftovers, AGroupIsTheRolesOwnOnlyUntilTheRoleIsReaped) {
  SpawnSpec spec;
  spec.executable = "/bin/sh";
  spec.args = {"-c", "sleep 30 & exit 0"};
  RoleProcess role = RoleProcess::spawn(spec);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!role.has_exited() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(role.has_exited());
  EXPECT_FALSE(role.status()) << "has_exited does not reap";
  EXPECT_EQ(::kill(role.pid(), 0), 0) << "the exited role is still a zombie";
  const auto unreaped = role.group_survivors();
  ASSERT_EQ(unreaped.size(), 1u) << "the shell's sleep is left in its group";
  EXPECT_NE(unreaped[0].find("(sleep)"), std::string::npos) << unreaped[0];

  ASSERT_TRUE(role.poll_exit());
  const auto reaped = role.group_survivors();
  EXPECT_TRUE(reaped.empty()) << "after the reap, a group member that is not this process's descendant is no "
                                 "survivor of the role: "
                              << (reaped.empty() ? "" : reaped[0]);
  role.signal_group(SIGKILL);  // the sleep, found above, is ours to end
}

}  // namespace
}  // namespace ipcheck
