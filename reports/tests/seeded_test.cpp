// The seeded defects of ipcheck's deciding code (ipcheck/reports/seeded.hpp) and their CTest
// tests agree: each defect of the catalog has its defects:seeded.<name> test, run against the
// test the catalog names, and no test names a defect the catalog lacks. CTest passes the
// registered "<name>=<filter>" pairs in IPCHECK_SEEDED_CTESTS (separated by '|').
#include <cstdlib>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "ipcheck/reports/seeded.hpp"

namespace ipcheck::seeded {
namespace {

TEST(SeededDefects, EachHasItsCTestRunningTheTestItNames) {
  const char* v = std::getenv("IPCHECK_SEEDED_CTESTS");
  if (!v) GTEST_SKIP() << "IPCHECK_SEEDED_CTESTS is not set (CTest's defects:seeded.catalog sets it)";
  std::map<std::string, std::string> registered;
  std::string all(v);
  for (std::size_t at = 0; at <= all.size();) {
    const std::size_t bar = std::min(all.find('|', at), all.size());
    const std::string pair = all.substr(at, bar - at);
    if (const auto eq = pair.find('='); eq != std::string::npos) registered[pair.substr(0, eq)] = pair.substr(eq + 1);
    at = bar + 1;
  }
  for (const auto& d : catalog()) {
    auto it = registered.find(d.name);
    ASSERT_NE(it, registered.end()) << "seeded defect " << d.name << " (" << d.where << ") has no CTest defects:seeded."
                                    << d.name;
    EXPECT_EQ(it->second, d.caught_by) << d.name << ": its CTest runs another test than the catalog names";
    registered.erase(it);
  }
  for (const auto& [name, filter] : registered) ADD_FAILURE() << "defects:seeded." << name << " names no seeded defect";
}

}  // namespace
}  // namespace ipcheck::seeded
