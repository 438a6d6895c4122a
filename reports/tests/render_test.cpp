// Every renderer against its golden file, and what each format promises: Markdown puts
// problems first, the HTML page needs nothing from outside, JUnit XML is well-formed and
// counts skips and xfails as skipped.
#include <gtest/gtest.h>

#include "golden.hpp"
#include "ipcheck/reports/render.hpp"
#include "xml_check.hpp"

namespace ipcheck::reports {
namespace {

using testing::fixture;
using testing::matches_golden;

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(Markdown, CleanRunGolden) {
  EXPECT_TRUE(matches_golden("ze-1.3.29735.md", render_markdown(fixture("ze-1.3.29735.json"))));
}

TEST(Markdown, ProblemRunAgainstBaselineGolden) {
  const Results old = fixture("ze-1.3.29735.json"), now = fixture("ze-1.6.31294.json");
  const Diff d = diff_results(old, now, "ze-1.3.29735.json", "ze-1.6.31294.json");
  RenderOptions o;
  o.baseline = &d;
  EXPECT_TRUE(matches_golden("ze-1.6.31294.md", render_markdown(now, o)));
}

TEST(Markdown, ProblemsComeFirstWorstFirst) {
  const Results now = fixture("ze-1.6.31294.json");
  const Diff d = diff_results(fixture("ze-1.3.29735.json"), now, "old", "new");
  RenderOptions o;
  o.baseline = &d;
  const std::string md = render_markdown(now, o);
  const auto summary = md.find("## Summary"), regressions = md.find("### Regressions"), crashes = md.find("### Crashes"),
             timeouts = md.find("### Timeouts"), leaks = md.find("### Leaks"), failures = md.find("### Failures"),
             areas = md.find("## Cases by area"), clauses = md.find("## Clause coverage"),
             observations = md.find("## Observations");
  for (auto p : {summary, regressions, crashes, timeouts, leaks, failures, areas, clauses, observations})
    ASSERT_NE(p, std::string::npos);
  EXPECT_LT(summary, regressions);
  EXPECT_LT(regressions, crashes);
  EXPECT_LT(crashes, timeouts);
  EXPECT_LT(timeouts, leaks);
  EXPECT_LT(leaks, failures);
  EXPECT_LT(failures, areas);
  EXPECT_LT(areas, clauses);
  EXPECT_LT(clauses, observations);
  EXPECT_EQ(md.find('\x1b'), std::string::npos) << "terminal colours in role output are stripped";
}

TEST(Html, Golden) {
  const Results old = fixture("ze-1.3.29735.json"), now = fixture("ze-1.6.31294.json");
  const Diff d = diff_results(old, now, "ze-1.3.29735.json", "ze-1.6.31294.json");
  RenderOptions o;
  o.baseline = &d;
  EXPECT_TRUE(matches_golden("ze-1.6.31294.html", render_html(now, o)));
}

TEST(Html, NeedsNothingFromOutside) {
  const std::string h = render_html(fixture("ze-1.6.31294.json"));
  EXPECT_EQ(h.find(" src="), std::string::npos);
  EXPECT_EQ(h.find("<link"), std::string::npos);
  EXPECT_EQ(h.find("url("), std::string::npos);
  EXPECT_EQ(h.find("@import"), std::string::npos);
  EXPECT_EQ(count(h, "<svg"), 3u) << "status counts, fuzz histogram, benchmarks against floors";
  EXPECT_EQ(count(h, "<tbody class=\"case\""), 11u) << "one table body per case";
  EXPECT_NE(h.find("<pre>[consumer] opened handle"), std::string::npos) << "role output is in the details";
}

TEST(Html, EscapesWhatTheRunSays) {
  Results r = fixture("ze-1.3.29735.json");
  r.cases[0].reason = "<script>alert(1)</script> & \"quoted\"";
  r.cases[0].roles[0].output_tail = "</pre><img src=x>\n";
  const std::string h = render_html(r);
  EXPECT_EQ(h.find("<script>alert"), std::string::npos);
  EXPECT_NE(h.find("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quoted&quot;"), std::string::npos);
  EXPECT_EQ(h.find("<img"), std::string::npos);
}

TEST(Markdown, FuzzSetUpThatWasNotExportedIsShown) {
  Results r = fixture("ze-1.6.31294.json");
  ASSERT_TRUE(r.fuzz.is_object());
  r.fuzz["unexported"] = {"producer.alloc[6] (shared): invalid: cuIpcGetMemHandle answered <1>"};
  r.fuzz["calibration"] = {"producer.export[3] (unchanged) maps producer.alloc[4] from offset 0"};
  const std::string md = render_markdown(r), h = render_html(r);
  // Markdown escapes the brackets (no link can form); the rendered text is the same.
  EXPECT_NE(md.find("Calibrated: producer.export\\[3\\] (unchanged) maps producer.alloc\\[4\\] from offset 0"),
            std::string::npos);
  EXPECT_NE(h.find("<p>Calibrated: producer.export[3] (unchanged)"), std::string::npos);
  EXPECT_NE(md.find("Not exported (kept as a decoy): producer.alloc\\[6\\] (shared): invalid"), std::string::npos) << md;
  EXPECT_NE(h.find("Not exported (kept as a decoy): producer.alloc[6] (shared): invalid: cuIpcGetMemHandle answered &lt;1&gt;"),
            std::string::npos);
  r.fuzz.erase("unexported");
  EXPECT_EQ(render_markdown(r).find("Not exported"), std::string::npos);
}

TEST(Junit, Golden) { EXPECT_TRUE(matches_golden("ze-1.6.31294.junit.xml", render_junit(fixture("ze-1.6.31294.json")))); }

TEST(Junit, WellFormedAndCountedAsCiSystemsExpect) {
  const std::string x = render_junit(fixture("ze-1.6.31294.json"));
  EXPECT_EQ(testing::xml_problem(x), "");
  // fail + leak are failures; crash + timeout are errors; xfail is skipped, and says so.
  EXPECT_NE(x.find("<testsuites name=\"ipcheck ze\" tests=\"11\" failures=\"3\" errors=\"2\" skipped=\"1\""),
            std::string::npos);
  EXPECT_EQ(count(x, "<failure type=\"fail\""), 2u);
  EXPECT_EQ(count(x, "<failure type=\"leak\""), 1u);
  EXPECT_EQ(count(x, "<error type=\"crash\""), 1u);
  EXPECT_EQ(count(x, "<error type=\"timeout\""), 1u);
  EXPECT_EQ(count(x, "<skipped type=\"xfail\" message=\"xfail: "), 1u);
  EXPECT_EQ(x.find('\x1b'), std::string::npos);
}

TEST(Junit, SkipsAreMarkedAndEveryCharacterIsLegal) {
  Results r = fixture("ze-1.3.29735.json");
  r.cases[0].roles[0].output_tail = std::string("bell \x07 and nul \0 here\n", 21);
  r.cases[0].reason = "a \"quote\" & <tag>\nsecond line";
  const std::string x = render_junit(r);
  EXPECT_EQ(testing::xml_problem(x), "");
  EXPECT_NE(x.find("<skipped type=\"skip\" message=\"skip: device 0 lacks the ipc_physical_memory aspect\"/>"),
            std::string::npos);
  EXPECT_NE(x.find("bell \\x07 and nul \\x00 here"), std::string::npos);
}

// A run where memory.roundtrip.page crashed, then passed on a rerun.
Results with_a_flake() {
  Results r = fixture("ze-1.3.29735.json");
  CaseResult& c = r.cases[0];
  CaseResult crashed = c, passed = c;
  crashed.status = Status::crash;
  crashed.reason = "consumer died by SIGSEGV";
  c.attempts = {crashed, passed};
  c.status = Status::flaky;
  c.reason = "passed on attempt 2 of 2 after attempt 1 was crash: consumer died by SIGSEGV";
  r.summary = summarize(r.cases);
  return r;
}

TEST(Flaky, EveryFormatShowsTheFlakeAndItsAttempts) {
  const Results r = with_a_flake();
  const std::string md = render_markdown(r);
  EXPECT_NE(md.find("## Flaky: passed on a rerun (1)"), std::string::npos);
  EXPECT_NE(md.find("  - attempt 1: crash: consumer died by SIGSEGV"), std::string::npos) << md;
  EXPECT_NE(md.find("| flaky | 1 |"), std::string::npos);
  const std::string html = render_html(r);
  EXPECT_NE(html.find("<h3>Flaky: passed on a rerun (1)</h3>"), std::string::npos);
  EXPECT_NE(html.find("attempts, each in fresh processes"), std::string::npos);
  const std::string x = render_junit(r);
  EXPECT_EQ(testing::xml_problem(x), "");
  EXPECT_EQ(count(x, "<flakyError type=\"crash\" message=\"consumer died by SIGSEGV\">"), 1u) << x;
  EXPECT_NE(x.find("failures=\"1\" errors=\"0\""), std::string::npos) << "a flake is neither failure nor error";
}

TEST(XmlCheck, CatchesWhatItShould) {
  EXPECT_EQ(testing::xml_problem("<a><b x=\"1\"/>t &amp; u</a>"), "");
  EXPECT_NE(testing::xml_problem("<a><b></a>"), "");
  EXPECT_NE(testing::xml_problem("<a>x & y</a>"), "");
  EXPECT_NE(testing::xml_problem("<a x=1/>"), "");
  EXPECT_NE(testing::xml_problem(std::string("<a>\x1b</a>")), "");
  EXPECT_NE(testing::xml_problem("<a/><b/>"), "");
}

// A failed clause whose only basis is ipcheck's robustness profile is a hardening request in
// every format, never a plain "fail"; a failed clause of a specification stays "fail". The
// clause table carries the basis, and results.json keeps it.
TEST(Basis, AProfileClauseFailureIsRenderedAsHardening) {
  Results r = fixture("ze-1.6.31294.json");
  ClauseInfo rb, spec;
  rb.id = "rb.put.revokes";
  rb.profile = "rb";
  rb.basis_kind = BasisKind::profile;
  rb.statement = "after put the same bytes no longer open";
  rb.verdict = ClauseVerdict::fail;
  spec.id = "ur.phys.open.stale";
  spec.profile = "ur";
  spec.basis = "UR conformance test InvalidValueStaleHandle: \"Opening the stale copy must fail\"";
  spec.statement = "a byte copy of a put handle gives INVALID_VALUE";
  spec.verdict = ClauseVerdict::fail;
  r.clauses = {rb, spec};
  CaseResult c;
  c.id = "robustness.put.revokes.memory";
  c.status = Status::fail;
  Check k;
  k.clause = "rb.put.revokes";
  k.result = CheckResult::fail;
  k.message = "memory open of the bytes of a put handle gave success";
  Check v = k;
  v.clause = "ur.phys.open.stale";
  c.checks = {k, v};
  r.cases = {c};
  const std::string md = render_markdown(r);
  EXPECT_NE(md.find("| `rb.put.revokes` | must | **hardening** |"), std::string::npos) << md;
  EXPECT_NE(md.find("| `ur.phys.open.stale` | must | **fail** |"), std::string::npos) << md;
  EXPECT_NE(md.find("1 fail, 1 hardening"), std::string::npos) << md;
  EXPECT_NE(md.find("hardening request `rb.put.revokes`"), std::string::npos) << md;
  EXPECT_NE(md.find("failed `ur.phys.open.stale`"), std::string::npos) << md;
  const std::string page = render_html(r);
  EXPECT_NE(page.find("<strong>hardening</strong>"), std::string::npos);
  EXPECT_NE(page.find("basis: UR conformance test InvalidValueStaleHandle"), std::string::npos);
  EXPECT_NE(render_junit(r).find("hardening request rb.put.revokes"), std::string::npos);
  const Results back = read_results_text(to_json(r).dump(), "basis-test.json");
  ASSERT_EQ(back.clauses.size(), 2u);
  EXPECT_TRUE(back.clauses[0].hardening());
  EXPECT_FALSE(back.clauses[1].hardening());
  EXPECT_EQ(back.clauses[1].basis, spec.basis);
}

}  // namespace
}  // namespace ipcheck::reports
