// Kept role processes (harness/src/runner_pool.hpp): the pool hands out only what was kept
// under the same key, first in first out, drops what can no longer serve and keeps no more
// than its cap; which cases may be served by a kept role; what makes two roles interchangeable.
#include <gtest/gtest.h>

#include "../src/runner_pool.hpp"

namespace ipcheck::runner_detail {
namespace {

TEST(KeyedPool, HandsOutOnlyWhatWasKeptUnderTheSameKey) {
  KeyedPool<int> p(4);
  EXPECT_FALSE(p.take("a"));
  EXPECT_FALSE(p.give("a", 1));
  EXPECT_FALSE(p.give("a", 2));
  EXPECT_FALSE(p.give("b", 3));
  EXPECT_FALSE(p.take("c")) << "no item of another key";
  EXPECT_EQ(p.take("a"), 1) << "first in, first out";
  EXPECT_EQ(p.take("b"), 3);
  EXPECT_EQ(p.take("a"), 2);
  EXPECT_FALSE(p.take("a")) << "each item is handed out once";
  EXPECT_EQ(p.reused(), 3u);
}

TEST(KeyedPool, KeepsNoMoreThanItsCapPerKey) {
  KeyedPool<int> p(1);
  EXPECT_FALSE(p.give("a", 1));
  EXPECT_EQ(p.give("a", 2), 2) << "the pool is full: the item comes back to be ended";
  EXPECT_FALSE(p.give("b", 3)) << "the cap is per key";
  EXPECT_EQ(p.idle("a"), 1u);
}

TEST(KeyedPool, DropsWhatCanNoLongerServe) {
  KeyedPool<int> p(4, [](int& x) { return x % 2 == 0; });
  p.give("a", 1);  // died while idle
  p.give("a", 2);
  EXPECT_EQ(p.take("a"), 2);
  EXPECT_EQ(p.dropped(), 1u);
  p.give("a", 4);
  p.give("b", 6);
  EXPECT_EQ(p.drain().size(), 2u);
  EXPECT_FALSE(p.take("a")) << "drained";
}

CaseDef plain(std::string id = "memory.roundtrip.page") {
  CaseDef d;
  d.id = std::move(id);
  d.roles.push_back({"producer", 1, [](Role&) {}});
  d.roles.push_back({"consumer", 1, [](Role&) {}});
  return d;
}

TEST(FreshProcess, APlainCaseMayBeServedByKeptRoles) {
  EXPECT_EQ(fresh_process_reason(plain(), nullptr), "");
  CaseDef d = plain();
  d.roles.push_back({"survivor", 1, [](Role&) {}, /*injection_only=*/true});
  EXPECT_EQ(fresh_process_reason(d, nullptr), "") << "an injection-only role starts only where a fault is injected";
}

TEST(FreshProcess, TheConservativeRuleAndTheCasesOwnWord) {
  const InjectPoint inject{"consumer", "after_open"};
  EXPECT_NE(fresh_process_reason(plain(), &inject), "");
  CaseDef failpoint = plain();
  failpoint.failpoints["producer"] = "zeMemFree=fail";
  EXPECT_NE(fresh_process_reason(failpoint, nullptr), "");
  CaseDef env = plain();
  env.role_env["producer"] = {"UR_L0_USE_POOL=0"};
  EXPECT_NE(fresh_process_reason(env, nullptr), "");
  CaseDef expendable = plain();
  expendable.expendable = {"consumer"};
  EXPECT_NE(fresh_process_reason(expendable, nullptr), "");
  CaseDef on_demand = plain();
  on_demand.roles[1].on_demand = true;
  EXPECT_NE(fresh_process_reason(on_demand, nullptr), "");
  EXPECT_NE(fresh_process_reason(plain("robustness.open.garbage.memory"), nullptr), "");
  CaseDef declared = plain();
  declared.fresh_process = "it observes a peer's exit";
  EXPECT_EQ(fresh_process_reason(declared, nullptr), "it observes a peer's exit");
}

TEST(FreshProcess, ASeededDefectKeepsTheWholeRunFresh) {
  RunOptions o;
  o.audit = "proc";
  EXPECT_EQ(run_reuse_blocked(o), "");
  o.env = {"IPCREF_DEFECT=close_ignores_refcount"};
  EXPECT_NE(run_reuse_blocked(o), "");
}

TEST(RolePoolKey, OnlyRolesStartedAlikeAreInterchangeable) {
  RunOptions o;
  const std::string base = role_pool_key(o, "/bin/role", {"A=1"}, 0, false);
  EXPECT_EQ(base, role_pool_key(o, "/bin/role", {"A=1"}, 0, false));
  EXPECT_NE(base, role_pool_key(o, "/bin/other", {"A=1"}, 0, false));
  EXPECT_NE(base, role_pool_key(o, "/bin/role", {"A=2"}, 0, false)) << "another environment (a device mask)";
  EXPECT_NE(base, role_pool_key(o, "/bin/role", {"A=1"}, 1, false)) << "another device";
  EXPECT_NE(base, role_pool_key(o, "/bin/role", {"A=1"}, 0, true)) << "an adapter started with the event verbs";
  RunOptions opts = o;
  opts.adapter_options["handle"] = "opaque";
  EXPECT_NE(base, role_pool_key(opts, "/bin/role", {"A=1"}, 0, false));
  RunOptions other = o;
  other.adapter = "ze";
  EXPECT_NE(base, role_pool_key(other, "/bin/role", {"A=1"}, 0, false));
  RunOptions transport = o;
  transport.transport = "socket";
  EXPECT_NE(base, role_pool_key(transport, "/bin/role", {"A=1"}, 0, false));
}

}  // namespace
}  // namespace ipcheck::runner_detail
