// Baselines leave out what changes on every run, so that a refresh shows only real changes
// and never hides one: statuses and observations stay as they were.
#include <gtest/gtest.h>

#include "golden.hpp"
#include "ipcheck/reports/diff.hpp"
#include "ipcheck/reports/stable.hpp"

namespace ipcheck::reports {
namespace {

using testing::fixture;

TEST(Scrub, AddressesAndPidsOnly) {
  EXPECT_EQ(scrub_volatile("mapping 7faafe226000-7faafe227000 rw-s /dev/zero (deleted)"),
            "mapping <addr>-<addr> rw-s /dev/zero (deleted)");
  EXPECT_EQ(scrub_volatile("reading 4 KiB at 0x7f3a1c000000"), "reading 4 KiB at <addr>");
  EXPECT_EQ(scrub_volatile("first: process 17615 (ipcheck-selftes)"), "first: process <pid> (ipcheck-selftes)");
  EXPECT_EQ(scrub_volatile("exporter pid 4242 is gone; pid=77"), "exporter pid <pid> is gone; pid=<pid>");
  EXPECT_EQ(scrub_volatile("67108864 bytes as written, fd 4, 20 s"), "67108864 bytes as written, fd 4, 20 s");
  EXPECT_EQ(scrub_volatile("ipcref 0.1.0+9b84456"), "ipcref 0.1.0+9b84456") << "short hashes are not addresses";
}

TEST(Stable, ClearsVolatileFieldsAndKeepsTheVerdicts) {
  const Results r = fixture("ze-1.6.31294.json");
  const Results s = stable_copy(r);
  EXPECT_EQ(s.run.start, "");
  EXPECT_EQ(s.run.duration_s, 0);
  EXPECT_EQ(s.run.hostname, "");
  EXPECT_TRUE(s.run.runner.empty());
  EXPECT_FALSE(s.run.options.contains("jobs"));
  EXPECT_EQ(s.run.options["expectations"], "ze.txt");
  EXPECT_EQ(s.run.driver_version, r.run.driver_version) << "the driver is the point of a baseline";
  EXPECT_EQ(s.run.kernel, r.run.kernel);
  ASSERT_EQ(s.cases.size(), r.cases.size());
  for (std::size_t i = 0; i < s.cases.size(); ++i) {
    EXPECT_EQ(s.cases[i].status, r.cases[i].status);
    EXPECT_EQ(s.cases[i].observations, r.cases[i].observations);
    EXPECT_EQ(s.cases[i].duration_s, 0);
    for (const auto& role : s.cases[i].roles) {
      EXPECT_EQ(role.pid, 0);
      EXPECT_EQ(role.duration_s, 0);
      EXPECT_EQ(role.output_tail.find("0x7f"), std::string::npos) << role.output_tail;
    }
  }
  EXPECT_EQ(s.cases[4].findings[0].item, "<addr>-<addr> rw-s /dev/dri/renderD128");
  EXPECT_EQ(to_json(stable_copy(s)).dump(), to_json(s).dump()) << "applying it twice changes nothing";
  EXPECT_TRUE(diff_results(r, s, "run", "baseline").empty()) << "nothing a diff compares is touched";
}

TEST(Stable, ExpectationsKeepTheirFileAndLineNotTheMachinesPath) {
  Results r = fixture("ze-1.6.31294.json");
  r.cases[0].expectation = "CUDA keeps the pool (/dev/shm/cuda.shm.*) mapped (/home/ci/pack/share/ipcheck/expectations/cuda.txt:12)";
  r.cases[0].warnings = {"expectation no longer needed: /opt/x/expectations/cuda.txt:40 expects leak"};
  const Results s = stable_copy(r);
  EXPECT_EQ(s.cases[0].expectation, "CUDA keeps the pool (/dev/shm/cuda.shm.*) mapped (cuda.txt:12)");
  EXPECT_EQ(s.cases[0].warnings[0], "expectation no longer needed: cuda.txt:40 expects leak");
}

TEST(Stable, TheRunsExpectationsReportNamesFilesNotTheMachinesFolders) {
  Results r = fixture("ze-1.6.31294.json");
  r.run.expectations = {{"file", "/home/ci/pack/share/ipcheck/expectations/cuda.txt"},
                        {"lines", {{{"where", "/home/ci/pack/share/ipcheck/expectations/cuda.txt:12"}, {"matched", 1}}}},
                        {"stale", {"/home/ci/pack/share/ipcheck/expectations/cuda.txt:29"}}};
  const Results s = stable_copy(r);
  EXPECT_EQ(s.run.expectations["file"], "cuda.txt");
  EXPECT_EQ(s.run.expectations["lines"][0]["where"], "cuda.txt:12");
  EXPECT_EQ(s.run.expectations["lines"][0]["matched"], 1);
  EXPECT_EQ(s.run.expectations["stale"][0], "cuda.txt:29");
  EXPECT_EQ(to_json(stable_copy(s)).dump(), to_json(s).dump()) << "applying it twice changes nothing";
}

TEST(Stable, BenchFuzzRunsNameTheirFileInsideTheBenchFolder) {
  Results r = fixture("ze-1.6.31294.json");
  r.bench = {{"context", {{"fuzz_runs", {{{"run", 1}, {"results", "/tmp/tmp.kq/bench/fuzz-0/results.json"}}}}}}};
  const Results s = stable_copy(r);
  EXPECT_EQ(s.bench["context"]["fuzz_runs"][0]["results"], "fuzz-0/results.json");
  EXPECT_EQ(s.bench["context"]["fuzz_runs"][0]["run"], 1);
  EXPECT_EQ(to_json(stable_copy(s)).dump(), to_json(s).dump()) << "applying it twice changes nothing";
}

TEST(Stable, AuditedRolePidsAreVolatile) {
  Results r = fixture("ze-1.6.31294.json");
  r.cases[0].audit["roles"] = {{"producer", {{"pid", 13144}, {"method", "bpf"}}}};
  const Results s = stable_copy(r);
  EXPECT_EQ(s.cases[0].audit["roles"]["producer"]["pid"], 0);
  EXPECT_EQ(s.cases[0].audit["roles"]["producer"]["method"], "bpf");
}

TEST(Stable, TwoRunsThatDifferOnlyInVolatileFieldsGiveTheSameBaseline) {
  Results a = fixture("ze-1.3.29735.json");
  Results b = a;
  b.run.start = "2027-01-01T00:00:00Z";
  b.run.duration_s = 99;
  b.run.hostname = "elsewhere";
  b.run.options["jobs"] = 64;
  b.run.runner["fds_at_start"] = 9;
  for (auto& c : b.cases) {
    c.duration_s *= 3;
    for (auto& r : c.roles) r.pid += 1000;
  }
  EXPECT_EQ(to_json(stable_copy(a)).dump(2), to_json(stable_copy(b)).dump(2));
}

}  // namespace
}  // namespace ipcheck::reports
