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

// Once a role is reaped its group's id may go to another program's group: only this
// process's descendants count as the role's survivors. A test process is no subreaper, so
// the shell's orphaned sleep went to another process, as a stranger's group member would.
TEST(Leftovers, AReapedRolesGroupCountsOnlyThisProcesssDescendants) {
  SpawnSpec spec;
  spec.executable = "/bin/sh";
  spec.args = {"-c", "sleep 30 & exit 0"};
  RoleProcess role = RoleProcess::spawn(spec);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!role.poll_exit() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(role.status());
  ASSERT_EQ(::kill(-role.pid(), 0), 0) << "the sleep is still in the shell's group";
  const auto survivors = role.group_survivors();
  EXPECT_TRUE(survivors.empty()) << "a group member that is not this process's descendant is no survivor of the "
                                    "role: "
                                 << (survivors.empty() ? "" : survivors[0]);
  role.signal_group(SIGKILL);  // the sleep is in the group, so the id is still the shell's: ours to end
}

}  // namespace
}  // namespace ipcheck
