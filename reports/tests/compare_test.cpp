// `report compare`: two adapters' runs side by side, what differs, and who decided each side.
#include <gtest/gtest.h>

#include "ipcheck/reports/compare.hpp"

namespace ipcheck::reports {
namespace {

Check runtime_check(const char* clause, CheckResult r, const char* call, const char* native = "") {
  Check k;
  k.clause = clause;
  k.result = r;
  k.decided_by = Decider::runtime;
  k.call = call;
  k.native_name = native;
  return k;
}

CaseResult case_of(const char* id, Status s, std::vector<Check> checks, const char* reason = "") {
  CaseResult c;
  c.id = id;
  c.status = s;
  c.reason = reason;
  c.checks = std::move(checks);
  return c;
}

ClauseInfo clause_of(const char* id, ClauseVerdict v) {
  ClauseInfo k;
  k.id = id;
  k.profile = "sycl";
  k.verdict = v;
  return k;
}

// The driver's own API refuses a one-byte-short handle; the runtime over it opens it.
struct TwoRuns : ::testing::Test {
  Results cuda, ur;
  void SetUp() override {
    cuda.run.adapter = "cuda";
    ur.run.adapter = "ur";
    cuda.cases.push_back(case_of("memory.open.size", Status::pass,
                                 {runtime_check("sycl.mem.open.size", CheckResult::pass, "cuIpcOpenMemHandle")}));
    ur.cases.push_back(case_of("memory.open.size", Status::fail,
                               {runtime_check("sycl.mem.open.size", CheckResult::fail, "urIPCOpenMemHandleExp",
                                              "UR_RESULT_SUCCESS")},
                               "open with one byte short succeeded"));
    cuda.cases.push_back(case_of("memory.roundtrip.page", Status::pass, {}));
    ur.cases.push_back(case_of("memory.roundtrip.page", Status::pass, {}));
    ur.cases.push_back(case_of("physical.roundtrip", Status::skip, {}, "no physical-memory IPC"));
    cuda.clauses = {clause_of("sycl.mem.open.size", ClauseVerdict::pass), clause_of("sycl.mem.roundtrip", ClauseVerdict::pass)};
    ur.clauses = {clause_of("sycl.mem.open.size", ClauseVerdict::fail), clause_of("sycl.mem.roundtrip", ClauseVerdict::pass)};
  }
};

TEST_F(TwoRuns, ListsWhatDiffersWithWhoDecidedEachSide) {
  const Comparison c = compare_results(cuda, ur, "cuda.json", "ur.json");
  ASSERT_EQ(c.cases.size(), 3u);
  EXPECT_EQ(c.cases_differing(), 2u) << "open.size (pass | fail) and physical.roundtrip (absent | skip)";
  EXPECT_EQ(c.cases[0].id, "memory.open.size");
  EXPECT_EQ(c.cases[0].decided_a.text(), "runtime cuIpcOpenMemHandle");
  EXPECT_EQ(c.cases[0].decided_b.text(), "runtime urIPCOpenMemHandleExp -> UR_RESULT_SUCCESS");
  EXPECT_FALSE(c.cases[2].a.has_value());
  ASSERT_EQ(c.clauses_differing(), 1u);
  EXPECT_EQ(c.clauses[0].id, "sycl.mem.open.size");
  EXPECT_EQ(c.clauses[0].b, ClauseVerdict::fail);

  const std::string t = render_compare_text(c, false);
  EXPECT_NE(t.find("result: 2 of 3 cases and 1 of 2 clauses differ"), std::string::npos) << t;
  EXPECT_NE(t.find("urIPCOpenMemHandleExp -> UR_RESULT_SUCCESS"), std::string::npos) << t;
  EXPECT_EQ(t.find("memory.roundtrip.page"), std::string::npos) << "only what differs, without --all";
  EXPECT_NE(render_compare_text(c, true).find("memory.roundtrip.page"), std::string::npos);
  EXPECT_NE(render_compare_markdown(c, false).find("| `memory.open.size` | pass | fail |"), std::string::npos);
  const auto j = compare_to_json(c);
  EXPECT_EQ(j.at("cases_differing"), 2);
  EXPECT_EQ(j.at("cases").at(0).at("decided_b").at("native"), "UR_RESULT_SUCCESS");
}

TEST_F(TwoRuns, ARunAgainstItselfDiffersNowhere) {
  const Comparison c = compare_results(cuda, cuda, "a", "a");
  EXPECT_EQ(c.cases_differing(), 0u);
  EXPECT_EQ(c.clauses_differing(), 0u);
}

TEST_F(TwoRuns, TwoMachinesAreSaid) {
  cuda.run.hostname = "h100-a";
  ur.run.hostname = "h100-b";
  const Comparison c = compare_results(cuda, ur, "a", "b");
  EXPECT_FALSE(c.same_machine);
  EXPECT_NE(render_compare_text(c, false).find("different machines"), std::string::npos);
}

TEST_F(TwoRuns, HostileTextIsInertInEveryRendering) {
  ur.cases[0].reason = "\x1b]0;pwned\x07 <script>alert(1)</script> | `x` ![i](http://e/x.png)";
  const Comparison c = compare_results(cuda, ur, "a", "b");
  const std::string t = render_compare_text(c, false);
  EXPECT_EQ(t.find('\x1b'), std::string::npos) << "no terminal escape reaches the terminal";
  const std::string m = render_compare_markdown(c, false);
  EXPECT_EQ(m.find("![i]("), std::string::npos) << "no live image in Markdown";
}

}  // namespace
}  // namespace ipcheck::reports
