// Merging shards: the whole run's cases in its order, counts recomputed, the run spanning its
// shards, expectations summed, associativity byte for byte, and the refusals that keep
// different runs apart.
#include <gtest/gtest.h>

#include "golden.hpp"
#include "ipcheck/reports/merge.hpp"

namespace ipcheck::reports {
namespace {

using nlohmann::json;
using testing::fixture;

// Every clause a verdict by how many cases ran: enough to see that the judge ran over the
// merged cases (the real judge, verdict::fill_clause_coverage, is tested in harness_test).
void count_coverage(Results& r) {
  for (auto& k : r.clauses) {
    k.ran.clear();
    for (const auto& c : r.cases)
      if (std::find(c.clauses.begin(), c.clauses.end(), k.id) != c.clauses.end()) k.ran.push_back(c.id);
    k.verdict = k.ran.empty() ? ClauseVerdict::not_run : ClauseVerdict::pass;
  }
}

MergeOptions options(bool allow_mixed = false) {
  MergeOptions o;
  o.allow_mixed = allow_mixed;
  o.coverage = count_coverage;
  return o;
}

// Shard k of n of a whole run, as `ipcheck run --shard k/n` would have written it (round
// robin here: the merge does not care how cases were dealt).
MergeInput shard(const Results& whole, int k, int n, const std::string& start, double seconds) {
  Results r = whole;
  r.cases.clear();
  json positions = json::array();
  for (std::size_t i = 0; i < whole.cases.size(); ++i)
    if (static_cast<int>(i % n) == k - 1) {
      r.cases.push_back(whole.cases[i]);
      positions.push_back(i);
    }
  r.summary = summarize(r.cases);
  if (k != 1) {  // a campaign or benchmarks belong to one shard's run
    r.fuzz = nullptr;
    r.bench = nullptr;
  }
  r.run.start = start;
  r.run.duration_s = seconds;
  r.run.hostname = "host" + std::to_string(k);
  r.run.options["shard"] = {{"index", k},        {"total", n},          {"source", "--shard"},
                            {"rule", "fnv1a64-balanced/1"}, {"selected", whole.cases.size()}, {"positions", positions}};
  return {"shard" + std::to_string(k) + ".json", r};
}

std::vector<MergeInput> three(const Results& whole) {
  return {shard(whole, 2, 3, "2026-11-15T10:00:05Z", 10.25), shard(whole, 1, 3, "2026-11-15T10:00:00Z", 3.5),
          shard(whole, 3, 3, "2026-11-15T10:00:01Z", 2)};
}

TEST(Merge, ShardsGiveTheWholeRunInItsOrder) {
  const Results whole = fixture("ze-1.6.31294.json");
  const Merged m = merge_results(three(whole), options());
  ASSERT_EQ(m.results.cases.size(), whole.cases.size());
  for (std::size_t i = 0; i < whole.cases.size(); ++i) EXPECT_EQ(m.results.cases[i].id, whole.cases[i].id);
  EXPECT_EQ(to_json(m.results)["summary"], to_json(whole)["summary"]);
  EXPECT_TRUE(m.notes.empty()) << m.notes.front();
  const json& merged = m.results.run.options["merged"];
  EXPECT_TRUE(merged["complete"].get<bool>());
  EXPECT_EQ(merged["total"], 3);
  ASSERT_EQ(merged["shards"].size(), 3u);
  EXPECT_EQ(merged["shards"][0]["index"], 1) << "listed by index";
  EXPECT_EQ(merged["shards"][0]["hostname"], "host1");
  EXPECT_FALSE(m.results.run.options.contains("shard"));
  // The judge ran over every case: a clause of any shard's case has them all.
  int judged = 0;
  for (const auto& k : m.results.clauses) {
    if (k.verdict != ClauseVerdict::pass) continue;
    ++judged;
    for (const auto& c : whole.cases) {
      if (std::find(c.clauses.begin(), c.clauses.end(), k.id) == c.clauses.end()) continue;
      EXPECT_NE(std::find(k.ran.begin(), k.ran.end(), c.id), k.ran.end()) << k.id << " " << c.id;
    }
  }
  EXPECT_GT(judged, 0);
}

TEST(Merge, TheRunSpansItsShards) {
  const Merged m = merge_results(three(fixture("ze-1.6.31294.json")), options());
  EXPECT_EQ(m.results.run.start, "2026-11-15T10:00:00Z");
  EXPECT_DOUBLE_EQ(m.results.run.duration_s, 15.25) << "from the first start to the last end";
  EXPECT_EQ(m.results.run.hostname, "host1 | host2 | host3");
}

TEST(Merge, IsAssociativeByteForByte) {
  const auto s = three(fixture("ze-1.6.31294.json"));
  const auto ab = merge_results({s[0], s[1]}, options()).results;
  const auto bc = merge_results({s[1], s[2]}, options()).results;
  const auto left = merge_results({{"ab", ab}, s[2]}, options()).results;
  const auto right = merge_results({s[0], {"bc", bc}}, options()).results;
  const auto flat = merge_results(s, options()).results;
  EXPECT_EQ(to_json(left).dump(2), to_json(right).dump(2));
  EXPECT_EQ(to_json(left).dump(2), to_json(flat).dump(2));
}

TEST(Merge, ACaseInTwoInputsIsRefusedByName) {
  const auto s = three(fixture("ze-1.6.31294.json"));
  try {
    merge_results({s[0], s[1], s[0]}, options(true));
    ADD_FAILURE() << "a shard merged twice was accepted";
  } catch (const MergeError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("is in both shard2.json and shard2.json"), std::string::npos) << m;
    EXPECT_NE(m.find("case "), std::string::npos) << m;
  }
}

TEST(Merge, DifferentRunsAreRefusedUnlessAllowed) {
  const Results old_run = fixture("ze-1.3.29735.json");
  const Results new_run = fixture("ze-1.6.31294.json");
  Results other = new_run;
  other.fuzz = nullptr;
  other.bench = nullptr;
  other.cases.clear();
  other.cases.push_back(old_run.cases.front());
  other.cases.front().id = "memory.only.here";
  try {
    merge_results({{"a.json", new_run}, {"b.json", [&] { Results r = other; r.run.driver_version = "9.9"; return r; }()}},
                  options());
    ADD_FAILURE() << "different drivers were merged";
  } catch (const MergeError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("a.json and b.json differ in driver.version: '1.6.31294' and '9.9'"), std::string::npos) << m;
    EXPECT_NE(m.find("--allow-mixed"), std::string::npos) << m;
  }
  Results other_adapter = other;
  other_adapter.run.adapter = "cuda";
  EXPECT_THROW(merge_results({{"a.json", new_run}, {"b.json", other_adapter}}, options()), MergeError);
  Results other_filter = other;
  other_filter.run.options["filters"] = json::array({"memory.*"});
  EXPECT_THROW(merge_results({{"a.json", new_run}, {"b.json", other_filter}}, options()), MergeError);
  // Allowed: merged, said, and the differing field holds both values.
  Results v = other;
  v.run.driver_version = "9.9";
  const Merged m = merge_results({{"a.json", new_run}, {"b.json", v}}, options(true));
  EXPECT_EQ(m.results.run.driver_version, "1.6.31294 | 9.9");
  ASSERT_FALSE(m.notes.empty());
  EXPECT_NE(m.notes.front().find("merged anyway"), std::string::npos);
}

TEST(Merge, AMissingShardIsSaid) {
  const auto s = three(fixture("ze-1.6.31294.json"));
  const Merged m = merge_results({s[0], s[2]}, options());
  EXPECT_FALSE(m.results.run.options["merged"]["complete"].get<bool>());
  EXPECT_EQ(m.results.run.options["merged"]["missing"], json::array({1}));
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_NE(m.notes[0].find("shard(s) [1] of 3 are missing"), std::string::npos) << m.notes[0];
}

TEST(Merge, ExpectationMatchesAreSummedAndStaleLinesJudgedAgain) {
  Results whole = fixture("ze-1.6.31294.json");
  whole.run.expectations = {{"file", "ze.txt"},
                            {"lines", json::array({{{"where", "ze.txt:3"}, {"pattern", "event.open.size"},
                                                    {"status", "fail"}, {"matched", 0}, {"applies", true}},
                                                   {{"where", "ze.txt:4"}, {"pattern", "memory.x"}, {"status", "fail"},
                                                    {"matched", 0}, {"applies", true}}})},
                            {"stale", json::array()}};
  auto s = three(whole);
  // Line 3 matched in one shard and was stale in another; line 4 was stale in one, matched nowhere.
  s[0].results.run.expectations["lines"][0]["matched"] = 1;
  s[1].results.run.expectations["stale"] = json::array({"ze.txt:3", "ze.txt:4"});
  s[1].results.cases.front().warnings.push_back("stale expectation ze.txt:3: event.open.size fail: matched nothing");
  s[1].results.cases.front().warnings.push_back("stale expectation ze.txt:4: memory.x fail: matched nothing");
  const Merged m = merge_results(s, options());
  const json& e = m.results.run.expectations;
  EXPECT_EQ(e["lines"][0]["matched"], 1);
  EXPECT_EQ(e["stale"], json::array({"ze.txt:4"}));
  const std::string id = s[1].results.cases.front().id;
  for (const auto& c : m.results.cases) {
    if (c.id != id) continue;
    ASSERT_EQ(c.warnings.size(), 1u);
    EXPECT_NE(c.warnings[0].find("ze.txt:4"), std::string::npos);
  }
}

TEST(Merge, OneInputMayCarryEachSection) {
  const Results whole = fixture("ze-1.3.29735.json");  // has fuzz and bench
  auto s = three(whole);                                // shard 1 keeps them
  const Merged m = merge_results(s, options());
  EXPECT_EQ(m.results.fuzz, whole.fuzz);
  EXPECT_EQ(m.results.bench, whole.bench);
  s[0].results.fuzz = whole.fuzz;
  try {
    merge_results(s, options(true));
    ADD_FAILURE() << "two campaigns were merged";
  } catch (const MergeError& e) {
    EXPECT_NE(std::string(e.what()).find("both have a fuzz section"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ipcheck::reports

namespace ipcheck::reports {
namespace {

// Shards of a larger selection than the cases merged (one case of the selection lost: a
// renamed case, a shard file cut short) are not a whole run, though every shard is given.
TEST(Merge, ShardsOfALargerSelectionAreNotAWholeRun) {
  const Results whole = fixture("ze-1.6.31294.json");
  auto s = three(whole);
  for (auto& in : s) in.results.run.options["shard"]["selected"] = whole.cases.size() + 1;
  const Merged m = merge_results(s, options());
  EXPECT_FALSE(m.results.run.options["merged"]["complete"].get<bool>());
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_NE(m.notes[0].find("the selection had " + std::to_string(whole.cases.size() + 1)), std::string::npos)
      << m.notes[0];
}

// As many cases as the selection, but not its places: a shard whose cases came from another
// selection (positions past its end, or held twice) is not part of this whole run.
TEST(Merge, CasesThatAreNotTheSelectionsPlacesAreNotAWholeRun) {
  const Results whole = fixture("ze-1.6.31294.json");
  auto s = three(whole);
  auto& p = s[0].results.run.options["shard"]["positions"];
  ASSERT_FALSE(p.empty());
  p[0] = whole.cases.size() + 7;
  Merged m = merge_results(s, options());
  EXPECT_FALSE(m.results.run.options["merged"]["complete"].get<bool>());
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_NE(m.notes[0].find("not the shards' selection"), std::string::npos) << m.notes[0];
  s = three(whole);
  s[0].results.run.options["shard"]["positions"][0] = s[1].results.run.options["shard"]["positions"][0];
  m = merge_results(s, options());
  EXPECT_FALSE(m.results.run.options["merged"]["complete"].get<bool>());
  ASSERT_EQ(m.notes.size(), 1u);
  EXPECT_NE(m.notes[0].find("two cases hold place"), std::string::npos) << m.notes[0];
}

}  // namespace
}  // namespace ipcheck::reports
