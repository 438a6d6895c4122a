// GPUs handed out by CTest's resource allocation: the case tests of GPU adapters ask for one
// GPU each (RESOURCE_GROUPS "gpus:1", cmake/IpcheckCaseTests.cmake), and `ipcheck run
// --ctest-resources` turns what CTest allocated into the variable that makes the runtime see
// only that GPU, for every role (and the adapter probe) of the run. `ipcheck info
// --resource-spec` writes the spec file CTest reads.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ipcheck {

// The variable that limits what an adapter's runtime sees: CUDA_VISIBLE_DEVICES for cuda,
// ZE_AFFINITY_MASK for ze; empty for adapters without one.
std::string device_mask_variable(const std::string& adapter);

// What CTest allocated to this test (CTEST_RESOURCE_GROUP_COUNT, CTEST_RESOURCE_GROUP_<n>,
// CTEST_RESOURCE_GROUP_<n>_GPUS = "id:0,slots:1;..."), as the role environment for `adapter`:
//   {"groups": n, "gpus": [{"id": "0", "slots": 1}], "env": {"CUDA_VISIBLE_DEVICES": "0"}}
// The ids are the runtime's device indices (as `ipcheck info --resource-spec` wrote them);
// when the variable is already set for ipcheck ("2,3"), an id indexes that list. nullopt when
// CTest's resource allocation is not active (CTEST_RESOURCE_GROUP_COUNT unset). Throws
// std::invalid_argument naming the variable, its value and the fix when it is malformed, when
// no GPU was allocated, or when the adapter has no such variable.
std::optional<nlohmann::json> ctest_gpu_environment(const std::string& adapter,
                                                    const std::function<const char*(const char*)>& getenv = nullptr);

// The role environment entry ("CUDA_VISIBLE_DEVICES=3") that shows a role only device `index`
// of those the run sees: an index into the mask already set in `env` ("KEY=VALUE" entries, as
// RunOptions::env) or, failing that, in ipcheck's own environment. Empty when the adapter has
// no mask variable, or the index is outside a mask already set.
std::string pinned_device_mask(const std::string& adapter, int index, const std::vector<std::string>& env,
                               const std::function<const char*(const char*)>& getenv = nullptr);

// A CTest resource specification (version 1.0) with one `gpus` entry per device, ids "0",
// "1", ... in the adapter's order, `slots` each.
nlohmann::json resource_spec(const nlohmann::json& devices, int slots);

}  // namespace ipcheck
