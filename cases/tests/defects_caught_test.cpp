// The catalog catches every defect seeded in ipcref: the cases that check a defect's
// clause, run on ipcheck-defects with IPCREF_DEFECT=<name>, must not all pass. Proof that
// those cases can fail, and fail for the reason they exist.
#include <algorithm>
#include <map>
#include <ostream>

#include <gtest/gtest.h>

#include "ipcheck/case.hpp"
#include "ipcheck/runner.hpp"
#include "ipcref/defects.hpp"

namespace ipcref::defects {
// Test names and logs show the defect by name, not as bytes.
void PrintTo(const info& d, std::ostream* os) { *os << d.name << " (breaks " << d.clause << ")"; }
}  // namespace ipcref::defects

namespace ipcheck {
namespace {

using reports::Status;

RunOptions options_for(const std::string& defect) {
  RunOptions o;
  o.adapter = "ref";
  o.role_executable = IPCHECK_DEFECTS_EXE;
  o.env = {"IPCREF_DEFECT=" + defect};
  o.jobs = 2;
  o.timeout_s = 10;  // a seeded hang is caught as a timeout, not waited out
  o.inactivity_s = 10;
  o.grace_s = 0.5;
  o.exact = true;
  return o;
}

std::string describe(const reports::CaseResult& c) {
  return c.id + ": " + reports::to_string(c.status) + (c.reason.empty() ? "" : " (" + c.reason + ")");
}

TEST(DefectsCaught, WithoutADefectTheCatalogPassesOnTheDefectsBuild) {
  RunOptions o = options_for("none");
  o.exact = false;
  o.timeout_s = 60;  // the whole catalog, 64 MiB cases included, at the run's usual limits
  o.inactivity_s = 20;
  const auto results = run_suite(o);
  for (const auto& c : results.cases) EXPECT_TRUE(c.status == Status::pass || c.status == Status::skip) << describe(c);
}

class DefectCaught : public ::testing::TestWithParam<ipcref::defects::info> {};

TEST_P(DefectCaught, ByTheCasesOfItsClause) {
  const auto& d = GetParam();
  if (std::string_view(d.clause).starts_with("bench:"))
    GTEST_SKIP() << d.name << " slows " << d.clause + 6 << ": no case's clause; the bench gate catches it "
                 << "(CTest bench:gate.catches_slow_open)";
  RunOptions o = options_for(d.name);
  for (const auto& c : cases())
    if (!c.hidden && std::find(c.clauses.begin(), c.clauses.end(), d.clause) != c.clauses.end()) o.filters.push_back(c.id);
  ASSERT_FALSE(o.filters.empty()) << "no case checks clause " << d.clause << ", which defect " << d.name << " breaks";
  // A defect that kills every garbage consumer is caught by the first few; 256 processes in
  // turn, each a sanitizer's start, would cost minutes.
  for (const auto& c : cases())
    if (std::find(o.filters.begin(), o.filters.end(), c.id) != o.filters.end() &&
        std::find(c.params.begin(), c.params.end(), "consumers") != c.params.end())
      o.params["consumers"] = "8";
  const auto results = run_suite(o);
  std::string caught, passed;
  // A should clause's violation is a warning: the case passes with a check of the clause at warn.
  auto warned = [&](const reports::CaseResult& c) {
    return std::any_of(c.checks.begin(), c.checks.end(), [&](const auto& k) {
      return k.result == reports::CheckResult::warn && k.clause == d.clause;
    });
  };
  for (const auto& c : results.cases)
    ((c.status == Status::pass || c.status == Status::skip) && !warned(c) ? passed : caught) += "\n  " + describe(c);
  EXPECT_FALSE(caught.empty()) << "defect " << d.name << " (" << d.description << ") breaks clause " << d.clause
                               << ", yet every case checking it passed:" << passed;
  if (!caught.empty()) std::printf("%s caught by:%s\n", d.name, caught.c_str());
}

// The multi-device cases on our Level Zero driver (two devices with every aspect by default):
// they pass on the driver's defect build without a defect, and its other_device_open_snapshot
// (a snapshot instead of a mapping on another device) fails the memory case; ipcref's own
// other-device defects under the driver too, where they reach ipcref.
TEST(DefectsCaughtOnZe, MultiDeviceCasesCatchTheDriversAndIpcrefsDefects) {
#ifndef ZE_DEFECTS_DRIVER
  GTEST_SKIP() << "libze_ipcheck_defects is not built here (no Level Zero headers)";
#else
  auto run = [](const std::string& variable, const std::string& defect) {
    RunOptions o;
    o.adapter = "ze";
    o.role_executable = IPCHECK_EXE;
    o.env = {std::string("ZE_ENABLE_ALT_DRIVERS=") + ZE_DEFECTS_DRIVER, variable + "=" + defect};
    o.jobs = 2;
    o.timeout_s = o.inactivity_s = 20;
    o.grace_s = 0.5;
    o.exact = true;
    o.filters = {"multi_device.memory.other_device", "multi_device.physical.other_device", "multi_device.event.other_device"};
    std::map<std::string, Status> out;
    for (const auto& c : run_suite(o).cases) out[c.id] = c.status;
    return out;
  };
  for (const auto& [id, st] : run("IPCHECK_ZE_DEFECT", "none")) EXPECT_EQ(st, Status::pass) << id << " without a defect";
  EXPECT_EQ(run("IPCHECK_ZE_DEFECT", "other_device_open_snapshot")["multi_device.memory.other_device"], Status::fail);
  EXPECT_EQ(run("IPCREF_DEFECT", "other_device_mem_copy")["multi_device.memory.other_device"], Status::fail);
#endif
}

INSTANTIATE_TEST_SUITE_P(Catalog, DefectCaught, ::testing::ValuesIn(ipcref::defects::catalog().begin(),
                                                                    ipcref::defects::catalog().end()),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ipcheck
