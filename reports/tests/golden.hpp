// Golden files: a renderer's output compared byte for byte with a committed file.
// IPCHECK_UPDATE_GOLDEN=1 rewrites the files instead (then review `git diff`).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "ipcheck/reports/results.hpp"

namespace ipcheck::reports::testing {

// The fixture results file data/<name>.
Results fixture(const std::string& name);
std::string fixture_path(const std::string& name);

// Compares `actual` with golden/<name>; on a mismatch says where and how to update.
::testing::AssertionResult matches_golden(const std::string& name, const std::string& actual);

}  // namespace ipcheck::reports::testing
