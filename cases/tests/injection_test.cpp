// `ipcheck run --adapter ref --inject all`: every fault-injection point of the catalog (a
// role killed by SIGKILL at a named protocol step) passes, the report names the point, and
// nothing of the case is left behind: no process, no IPC object (memfd, shared page) held
// by any process of the machine, the runner included, and no descriptor the runner gained.
#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "ipcheck/case.hpp"
#include "ipcheck/reports/results.hpp"

namespace ipcheck {
namespace {

using reports::Status;

// Every point the catalog declares, as `--inject all` expands it.
std::set<std::string> declared_points() {
  std::set<std::string> ids;
  for (const auto& c : cases())
    if (!c.hidden)
      for (const auto& s : c.steps) ids.insert(c.id + "@" + s);
  return ids;
}

TEST(InjectionMatrix, EveryPointPassesAndLeavesNothingBehind) {
  const std::string out = std::filesystem::temp_directory_path() / ("ipcheck-inject-" + std::to_string(::getpid()));
  const std::string cmd = std::string("'") + IPCHECK_EXE + "' run --adapter ref --inject all -j 2 --quiet --out '" + out + "'";
  const int rc = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(rc)) << cmd;
  EXPECT_EQ(WEXITSTATUS(rc), 0) << cmd << " reported unexpected results";
  const reports::Results r = reports::read_results(out + "/results.json");
  std::filesystem::remove_all(out);

  // The run's own hygiene: the runner ends with the descriptors it started with and had
  // no orphan to reap.
  EXPECT_EQ(r.run.runner.value("fds_at_start", -1), r.run.runner.value("fds_at_end", -2)) << r.run.runner.dump();
  EXPECT_TRUE(r.run.runner.value("orphans_reaped", nlohmann::json::array()).empty()) << r.run.runner.dump();

  std::set<std::string> ran;
  std::printf("%-50s %-8s %-10s %s\n", "point", "verdict", "objects", "killed");
  for (const auto& c : r.cases) {
    ran.insert(c.id);
    const std::string point = c.id.substr(c.id.find('@') + 1);
    EXPECT_EQ(c.status, Status::pass) << c.id << ": " << c.reason;
    // The report names the point: in the id and in the injection field (the role instance).
    EXPECT_NE(c.id.find('@'), std::string::npos) << c.id;
    EXPECT_EQ(c.injection, point) << c.id;
    ASSERT_TRUE(c.audit.contains("injection") && c.audit.contains("leftovers")) << c.id << ": " << c.audit.dump();
    const auto& left = c.audit["leftovers"];
    EXPECT_TRUE(left["held"].empty()) << c.id << " left IPC objects behind: " << left["held"].dump();
    // ref's objects are memfds: a case that found none did not look.
    EXPECT_FALSE(left["objects"].empty()) << c.id << ": no IPC object of the case was noted";
    const std::string killed = c.audit["injection"].value("killed", "");
    if (point.find("during_wait") != std::string::npos) {
      EXPECT_EQ(killed.rfind("blocked", 0), 0u) << c.id << " was not killed inside its wait: " << killed;
    }
    EXPECT_TRUE(c.findings.empty()) << c.id;
    // No process of the case remains: neither a role nor a member of a role's group.
    for (const auto& role : c.roles) {
      if (role.pid <= 0) continue;
      EXPECT_NE(::kill(-role.pid, 0), 0) << c.id << ": the process group of " << role.name << " still has members";
    }
    std::printf("%-50s %-8s %-10zu %s\n", c.id.c_str(), reports::to_string(c.status), left["objects"].size(),
                killed.c_str());
  }
  EXPECT_EQ(ran, declared_points()) << "--inject all must run every declared point once";
  std::printf("%zu points, %d pass\n", r.cases.size(), r.summary.counts.count("pass") ? r.summary.counts.at("pass") : 0);
}

}  // namespace
}  // namespace ipcheck
