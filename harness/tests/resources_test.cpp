// CTest's GPU allocation turned into the role environment, and the resource spec for a machine.
#include <map>

#include <gtest/gtest.h>

#include "ipcheck/resources.hpp"
#include "env_map.hpp"

namespace ipcheck {
namespace {

using testing_support::env_of;

// ---------------------------------------------------------------- CTest resources

// The runner gives a one-device case one device: its index within what the run sees.
TEST(Resources, PinnedMaskIndexesWhatTheRunSees) {
  EXPECT_EQ(pinned_device_mask("cuda", 1, {}, env_of({})), "CUDA_VISIBLE_DEVICES=1");
  EXPECT_EQ(pinned_device_mask("ze", 0, {}, env_of({})), "ZE_AFFINITY_MASK=0");
  EXPECT_EQ(pinned_device_mask("cuda", 1, {}, env_of({{"CUDA_VISIBLE_DEVICES", "4,GPU-abc"}})), "CUDA_VISIBLE_DEVICES=GPU-abc");
  // The run's own environment (--ctest-resources) wins over ipcheck's.
  EXPECT_EQ(pinned_device_mask("cuda", 0, {"CUDA_VISIBLE_DEVICES=6,7"}, env_of({{"CUDA_VISIBLE_DEVICES", "4"}})),
            "CUDA_VISIBLE_DEVICES=6");
  EXPECT_EQ(pinned_device_mask("cuda", 2, {"CUDA_VISIBLE_DEVICES=6,7"}, env_of({})), "") << "outside the mask";
  EXPECT_EQ(pinned_device_mask("ref", 0, {}, env_of({})), "") << "ref has no mask";
}

TEST(Resources, CtestGpusBecomeTheRuntimesMask) {
  EXPECT_FALSE(ctest_gpu_environment("cuda", env_of({}))) << "no resource spec: nothing";
  auto cuda = ctest_gpu_environment(
      "cuda", env_of({{"CTEST_RESOURCE_GROUP_COUNT", "1"}, {"CTEST_RESOURCE_GROUP_0", "gpus"},
                      {"CTEST_RESOURCE_GROUP_0_GPUS", "id:1,slots:1"}}));
  ASSERT_TRUE(cuda);
  EXPECT_EQ((*cuda)["env"]["CUDA_VISIBLE_DEVICES"], "1");
  EXPECT_EQ((*cuda)["gpus"][0]["slots"], 1);
  auto ze = ctest_gpu_environment("ze", env_of({{"CTEST_RESOURCE_GROUP_COUNT", "1"},
                                                {"CTEST_RESOURCE_GROUP_0_GPUS", "id:0,slots:2;id:3,slots:1"}}));
  ASSERT_TRUE(ze);
  EXPECT_EQ((*ze)["env"]["ZE_AFFINITY_MASK"], "0,3");
  // Ids index the mask ipcheck itself was given.
  auto within = ctest_gpu_environment("cuda", env_of({{"CTEST_RESOURCE_GROUP_COUNT", "1"},
                                                      {"CTEST_RESOURCE_GROUP_0_GPUS", "id:1,slots:1"},
                                                      {"CUDA_VISIBLE_DEVICES", "4,GPU-abc"}}));
  ASSERT_TRUE(within);
  EXPECT_EQ((*within)["env"]["CUDA_VISIBLE_DEVICES"], "GPU-abc");
  EXPECT_THROW(ctest_gpu_environment("cuda", env_of({{"CTEST_RESOURCE_GROUP_COUNT", "1"},
                                                     {"CTEST_RESOURCE_GROUP_0_GPUS", "id:2,slots:1"},
                                                     {"CUDA_VISIBLE_DEVICES", "4"}})),
               std::invalid_argument);
  EXPECT_THROW(ctest_gpu_environment("cuda", env_of({{"CTEST_RESOURCE_GROUP_COUNT", "1"},
                                                     {"CTEST_RESOURCE_GROUP_0_GPUS", "gpu0"}})),
               std::invalid_argument);
  EXPECT_THROW(ctest_gpu_environment("cuda", env_of({{"CTEST_RESOURCE_GROUP_COUNT", "1"}})), std::invalid_argument)
      << "allocation active, no GPU given";
  EXPECT_THROW(ctest_gpu_environment("ref", env_of({{"CTEST_RESOURCE_GROUP_COUNT", "1"}})), std::invalid_argument);
}

TEST(Resources, SpecListsEveryDevice) {
  const auto spec = resource_spec(nlohmann::json::array({{{"name", "a"}}, {{"name", "b"}}}), 2);
  EXPECT_EQ(spec["version"], (nlohmann::json{{"major", 1}, {"minor", 0}}));
  ASSERT_EQ(spec["local"].size(), 1u);
  EXPECT_EQ(spec["local"][0]["gpus"],
            (nlohmann::json::array({{{"id", "0"}, {"slots", 2}}, {{"id", "1"}, {"slots", 2}}})));
  EXPECT_EQ(resource_spec(nlohmann::json::array(), 1)["local"][0]["gpus"], nlohmann::json::array());
}

}  // namespace
}  // namespace ipcheck
