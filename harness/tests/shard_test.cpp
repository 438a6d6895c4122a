// Shards: the rule (stable, balanced, a partition), the shard named by CI systems' variables,
// and the runner's shards of a run of (self-test) cases, merged back into the whole run.
#include <algorithm>
#include <map>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "ipcheck/reports/merge.hpp"
#include "ipcheck/runner.hpp"
#include "ipcheck/shard.hpp"
#include "ipcheck/spawn.hpp"
#include "ipcheck/verdict.hpp"
#include "env_map.hpp"

namespace ipcheck {
namespace {

using testing_support::env_of;

std::vector<std::string> ids(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back("area" + std::to_string(i % 4) + ".case" + std::to_string(i));
  return out;
}

// ---------------------------------------------------------------- shards

TEST(Shard, Fnv1a64IsTheStandardOne) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
}

TEST(Shard, ShardsPartitionTheSelectionWithCountsWithinOne) {
  for (int m : {0, 1, 2, 7, 58, 100})
    for (int n : {1, 2, 3, 5, 8}) {
      const auto all = ids(m);
      std::multiset<std::string> seen;
      std::size_t least = all.size(), most = 0;
      for (int k = 1; k <= n; ++k) {
        const auto part = shard_members(all, {k, n, "test"});
        for (const auto i : part) seen.insert(all[i]);
        least = std::min(least, part.size());
        most = std::max(most, part.size());
        EXPECT_TRUE(std::is_sorted(part.begin(), part.end())) << "a shard keeps the run's order";
      }
      EXPECT_EQ(seen, std::multiset<std::string>(all.begin(), all.end())) << m << " cases in " << n << " shards";
      EXPECT_LE(most - std::min(least, most), 1u) << m << " cases in " << n << " shards";
    }
}

TEST(Shard, ACaseShardDependsOnItsIdNotOnRegistrationOrder) {
  auto all = ids(58);
  const auto before = assign_shards(all, 3);
  std::map<std::string, int> where;
  for (std::size_t i = 0; i < all.size(); ++i) where[all[i]] = before[i];
  std::mt19937 rng(7);
  std::shuffle(all.begin(), all.end(), rng);
  const auto after = assign_shards(all, 3);
  for (std::size_t i = 0; i < all.size(); ++i) EXPECT_EQ(after[i], where[all[i]]) << all[i];
}

TEST(Shard, MostCasesSitOnTheirHash) {
  const auto all = ids(100);
  const auto s = assign_shards(all, 3);
  int home = 0;
  for (std::size_t i = 0; i < all.size(); ++i) home += s[i] == static_cast<int>(fnv1a64(all[i]) % 3);
  EXPECT_GE(home, 70) << "balancing moves few cases away from h mod N";
}

TEST(Shard, ParseNamesTheValueAndTheFix) {
  const Shard s = parse_shard("2/3");
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.total, 3);
  EXPECT_EQ(s.source, "--shard");
  for (const char* bad : {"0/3", "4/3", "3", "a/b", "1/0", "-1/2", "1/2/3"}) {
    try {
      parse_shard(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + bad + "'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("K/N"), std::string::npos) << e.what();
    }
  }
}

TEST(Shard, CiSystemsNameTheShard) {
  struct Case {
    std::map<std::string, std::string> env;
    int k, n;
    std::string source;
  };
  const Case cases[] = {
      {{{"IPCHECK_SHARD", "2/4"}}, 2, 4, "environment variable IPCHECK_SHARD"},
      {{{"CI_NODE_INDEX", "3"}, {"CI_NODE_TOTAL", "3"}}, 3, 3, "CI_NODE_INDEX/CI_NODE_TOTAL"},
      {{{"BUILDKITE_PARALLEL_JOB", "0"}, {"BUILDKITE_PARALLEL_JOB_COUNT", "2"}}, 1, 2,
       "BUILDKITE_PARALLEL_JOB/BUILDKITE_PARALLEL_JOB_COUNT"},
      {{{"CIRCLE_NODE_INDEX", "1"}, {"CIRCLE_NODE_TOTAL", "2"}}, 2, 2, "CIRCLE_NODE_INDEX/CIRCLE_NODE_TOTAL"},
      {{{"SYSTEM_JOBPOSITIONINPHASE", "1"}, {"SYSTEM_TOTALJOBSINPHASE", "4"}}, 1, 4,
       "SYSTEM_JOBPOSITIONINPHASE/SYSTEM_TOTALJOBSINPHASE"},
      {{{"JOB_COMPLETION_INDEX", "4"}, {"IPCHECK_SHARD_TOTAL", "5"}}, 5, 5, "JOB_COMPLETION_INDEX/IPCHECK_SHARD_TOTAL"},
      // ipcheck's own variable wins over a CI system's.
      {{{"IPCHECK_SHARD", "1/2"}, {"CI_NODE_INDEX", "2"}, {"CI_NODE_TOTAL", "2"}}, 1, 2,
       "environment variable IPCHECK_SHARD"},
  };
  for (const auto& c : cases) {
    const auto s = shard_from_environment(true, std::nullopt, env_of(c.env));
    ASSERT_TRUE(s) << c.source;
    EXPECT_EQ(s->index, c.k) << c.source;
    EXPECT_EQ(s->total, c.n) << c.source;
    EXPECT_EQ(s->source, c.source);
  }
  const auto k8s = shard_from_environment(true, 6, env_of({{"JOB_COMPLETION_INDEX", "0"}}));
  ASSERT_TRUE(k8s);
  EXPECT_EQ(k8s->index, 1);
  EXPECT_EQ(k8s->total, 6);
  EXPECT_EQ(k8s->source, "JOB_COMPLETION_INDEX/--shard-total");
  EXPECT_THROW(shard_from_environment(true, std::nullopt, env_of({{"CI_NODE_TOTAL", "1"}})), std::invalid_argument)
      << "--shard auto, and GitLab without parallel: no shard there";
}

TEST(Shard, CiSystemsAreReadOnlyWhenAsked) {
  const auto gitlab = env_of({{"CI_NODE_INDEX", "2"}, {"CI_NODE_TOTAL", "3"}, {"JOB_COMPLETION_INDEX", "1"}});
  EXPECT_FALSE(shard_from_environment(false, std::nullopt, gitlab)) << "a parallel:matrix job is no shard unasked";
  const auto own = shard_from_environment(false, std::nullopt, env_of({{"IPCHECK_SHARD", "3/3"}}));
  ASSERT_TRUE(own);
  EXPECT_EQ(own->index, 3);
  const auto asked = shard_from_environment(
      false, std::nullopt, env_of({{"IPCHECK_SHARD", "auto"}, {"CI_NODE_INDEX", "2"}, {"CI_NODE_TOTAL", "3"}}));
  ASSERT_TRUE(asked) << "IPCHECK_SHARD=auto is --shard auto";
  EXPECT_EQ(asked->source, "CI_NODE_INDEX/CI_NODE_TOTAL");
}

TEST(Shard, BadEnvironmentNamesTheVariableAndTheFix) {
  auto message = [](const std::map<std::string, std::string>& env) {
    try {
      shard_from_environment(true, std::nullopt, env_of(env));
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(message({{"JOB_COMPLETION_INDEX", "2"}}).find("IPCHECK_SHARD_TOTAL"), std::string::npos);
  EXPECT_NE(message({{"JOB_COMPLETION_INDEX", "2"}}).find("--shard-total"), std::string::npos);
  EXPECT_NE(message({{"CI_NODE_INDEX", "0"}, {"CI_NODE_TOTAL", "3"}}).find("1-based"), std::string::npos);
  EXPECT_NE(message({{"CIRCLE_NODE_INDEX", "2"}, {"CIRCLE_NODE_TOTAL", "2"}}).find("0-based"), std::string::npos);
  EXPECT_NE(message({{"BUILDKITE_PARALLEL_JOB", "1"}}).find("BUILDKITE_PARALLEL_JOB_COUNT is not set"), std::string::npos);
  EXPECT_NE(message({{"CI_NODE_INDEX", "x"}, {"CI_NODE_TOTAL", "3"}}).find("'x', not a whole number"), std::string::npos);
  EXPECT_NE(message({}).find("--shard auto found no shard in the environment"), std::string::npos);
}

// ---------------------------------------------------------------- the runner

class ShardRunnerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { become_subreaper(); }
  const std::vector<std::string> selection = {"selftest.pass", "selftest.fail", "selftest.should", "selftest.skip",
                                              "selftest.leak.fd"};
  RunOptions options() {
    RunOptions o;
    o.adapter = "ref";
    o.role_executable = IPCHECK_SELFTEST_EXE;
    o.filters = selection;
    o.exact = true;
    o.include_hidden = true;
    o.audit = "proc";
    o.timeout_s = 10;
    o.inactivity_s = 10;
    o.grace_s = 0.5;
    o.jobs = 2;
    o.env = {"ASAN_OPTIONS=handle_segv=0:detect_leaks=0"};
    return o;
  }
};

TEST_F(ShardRunnerTest, TheShardsOfARunPartitionIt) {
  const reports::Results whole = run_suite(options());
  ASSERT_EQ(whole.cases.size(), selection.size());
  std::multiset<std::string> seen;
  for (int k = 1; k <= 3; ++k) {
    RunOptions o = options();
    o.shard = Shard{k, 3, "test"};
    const reports::Results part = run_suite(o);
    const auto& shard = part.run.options["shard"];
    EXPECT_EQ(shard["index"], k);
    EXPECT_EQ(shard["total"], 3);
    EXPECT_EQ(shard["rule"], std::string(kShardRule));
    EXPECT_EQ(shard["selected"], selection.size());
    ASSERT_EQ(shard["positions"].size(), part.cases.size());
    for (std::size_t i = 0; i < part.cases.size(); ++i) {
      seen.insert(part.cases[i].id);
      EXPECT_EQ(whole.cases[shard["positions"][i].get<std::size_t>()].id, part.cases[i].id) << "its place in the run";
    }
  }
  std::multiset<std::string> all;
  for (const auto& c : whole.cases) all.insert(c.id);
  EXPECT_EQ(seen, all);
}

TEST_F(ShardRunnerTest, ShardsMergeIntoTheWholeRun) {
  const reports::Results whole = run_suite(options());
  std::vector<reports::MergeInput> shards;
  for (int k = 1; k <= 3; ++k) {
    RunOptions o = options();
    o.shard = Shard{k, 3, "test"};
    shards.push_back({"shard" + std::to_string(k), run_suite(o)});
  }
  reports::MergeOptions mo;
  mo.coverage = [](reports::Results& r) { verdict::fill_clause_coverage(r, r.clauses); };
  const reports::Merged m = reports::merge_results(shards, mo);
  ASSERT_EQ(m.results.cases.size(), whole.cases.size());
  for (std::size_t i = 0; i < whole.cases.size(); ++i) {
    EXPECT_EQ(m.results.cases[i].id, whole.cases[i].id) << "catalog order";
    EXPECT_EQ(m.results.cases[i].status, whole.cases[i].status) << whole.cases[i].id;
  }
  EXPECT_EQ(reports::to_json(m.results)["clauses"], reports::to_json(whole)["clauses"]) << "the same coverage";
  EXPECT_EQ(reports::to_json(m.results)["summary"], reports::to_json(whole)["summary"]);
  EXPECT_TRUE(m.results.run.options["merged"]["complete"].get<bool>());
  EXPECT_FALSE(m.results.run.options.contains("shard"));
}

}  // namespace
}  // namespace ipcheck
