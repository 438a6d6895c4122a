// The runner's start slots (harness/src/runner_admission.hpp): at most N starts at once per
// device, served in order, a role that needs every device not starved, and on-demand roles of
// running cases served before the roles of cases that have not begun.
#include <gtest/gtest.h>

#include "../src/runner_admission.hpp"

namespace ipcheck::runner_detail {
namespace {

TEST(Admission, SlotsPerDeviceAreALimit) {
  Admission a(2, 1);
  const auto t0 = a.queue_start(0), t1 = a.queue_start(0), t2 = a.queue_start(1);
  EXPECT_TRUE(a.try_start(t0));
  EXPECT_FALSE(a.try_start(t1)) << "a second start on device 0 while one is under way";
  EXPECT_TRUE(a.try_start(t2)) << "device 1 has its own slot";
  a.end_start(0);
  EXPECT_TRUE(a.try_start(t1));
}

TEST(Admission, NoLimitMeansEveryStartGoesAtOnce) {
  Admission a(1, 0);
  const auto t0 = a.queue_start(0), t1 = a.queue_start(0);
  EXPECT_TRUE(a.try_start(t1));
  EXPECT_TRUE(a.try_start(t0));
}

TEST(Admission, AnEarlierWaiterForTheDeviceGoesFirst) {
  Admission a(2, 1);
  const auto busy = a.queue_start(0);
  ASSERT_TRUE(a.try_start(busy));
  const auto all = a.queue_start(-1);  // needs a slot on both devices
  const auto one = a.queue_start(1);
  EXPECT_FALSE(a.try_start(all));
  EXPECT_FALSE(a.try_start(one)) << "a stream of one-device starts would starve the all-device one";
  a.end_start(0);
  EXPECT_TRUE(a.try_start(all));
  a.end_start(-1);
  EXPECT_TRUE(a.try_start(one));
}

TEST(Admission, OnDemandRolesOfRunningCasesGoFirst) {
  Admission a(1, 1);
  const auto busy = a.queue_start(0);
  ASSERT_TRUE(a.try_start(busy));
  const auto fresh1 = a.queue_start(0), fresh2 = a.queue_start(0);
  const auto urgent1 = a.queue_start(0, true), urgent2 = a.queue_start(0, true);
  a.end_start(0);
  EXPECT_FALSE(a.try_start(fresh1)) << "a new case's role went before a running case's next process";
  EXPECT_FALSE(a.try_start(urgent2)) << "urgent ones keep their own order";
  EXPECT_TRUE(a.try_start(urgent1));
  a.end_start(0);
  EXPECT_TRUE(a.try_start(urgent2));
  a.end_start(0);
  EXPECT_FALSE(a.try_start(fresh2));
  EXPECT_TRUE(a.try_start(fresh1));
  a.end_start(0);
  EXPECT_TRUE(a.try_start(fresh2));
}

TEST(Admission, ACancelledTicketLeavesTheQueue) {
  Admission a(1, 1);
  const auto busy = a.queue_start(0);
  ASSERT_TRUE(a.try_start(busy));
  const auto gone = a.queue_start(0), next = a.queue_start(0);
  a.cancel(gone);
  a.end_start(0);
  EXPECT_TRUE(a.try_start(next));
}

}  // namespace
}  // namespace ipcheck::runner_detail
