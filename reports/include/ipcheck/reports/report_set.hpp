// Writes a run's files into one folder: results.json and every rendering of it.
#pragma once

#include <string>
#include <vector>

#include "ipcheck/reports/results.hpp"

namespace ipcheck::reports {

// Creates `dir` if needed; returns the paths written, results.json first.
std::vector<std::string> write_report_set(const std::string& dir, const Results& r);

}  // namespace ipcheck::reports
