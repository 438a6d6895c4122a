// Writes a run's files into one folder: results.json and every rendering of it.
#pragma once

#include <string>
#include <vector>

#include "ipcheck/reports/results.hpp"

namespace ipcheck::reports {

// Creates `dir` if needed; returns the paths written, results.json first.
std::vector<std::string> write_report_set(const std::string& dir, const Results& r);

// Writes `content` to `path` through `path`.tmp and a rename, so that a reader never sees
// half a file. Throws std::runtime_error when the file cannot be written or renamed.
void write_file_atomic(const std::string& path, const std::string& content);

// The folder a results.json lives in ("." for a bare file name).
std::string results_folder(const std::string& results_path);

}  // namespace ipcheck::reports
