// Several runs side by side: one column per run in the order given, golden files for each
// format, and --changed keeping only the cases whose status moved.
#include <gtest/gtest.h>

#include "golden.hpp"
#include "ipcheck/reports/history.hpp"

namespace ipcheck::reports {
namespace {

using testing::fixture;
using testing::matches_golden;

std::vector<HistoryRun> three() {
  std::vector<HistoryRun> runs;
  for (const char* f : {"ze-1.3.29735.json", "ze-1.3.29803.json", "ze-1.6.31294.json"})
    runs.push_back({std::string("data/") + f, fixture(f)});
  return runs;
}

TEST(History, TextGolden) { EXPECT_TRUE(matches_golden("history.txt", render_history_text(three()))); }
TEST(History, MarkdownGolden) { EXPECT_TRUE(matches_golden("history.md", render_history_markdown(three()))); }
TEST(History, HtmlGolden) {
  const std::string h = render_history_html(three());
  EXPECT_NE(h.find("aria-label=\"status counts per run"), std::string::npos) << "the trend picture";
  EXPECT_TRUE(matches_golden("history.html", h));
}

TEST(History, ColumnsFollowTheOrderGiven) {
  auto runs = three();
  std::swap(runs[0], runs[2]);
  const std::string t = render_history_text(runs);
  EXPECT_LT(t.find("[1] 1.6.31294"), t.find("[3] 1.3.29735"));
}

TEST(History, ChangedOnlyKeepsCasesThatMoved) {
  HistoryOptions o;
  o.changed_only = true;
  const std::string t = render_history_text(three(), o);
  EXPECT_NE(t.find("memory.roundtrip.page"), std::string::npos);
  EXPECT_NE(t.find("rb.open.garbage"), std::string::npos) << "gone from a run is a change";
  EXPECT_EQ(t.find("memory.roundtrip.odd "), std::string::npos);
  EXPECT_EQ(t.find("memory.open.flags "), std::string::npos);
}

}  // namespace
}  // namespace ipcheck::reports
