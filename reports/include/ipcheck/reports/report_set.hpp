// Writes a run's files into one folder: results.json and every rendering of it.
#pragma once

#include <string>
#include <vector>

#include "ipcheck/reports/files.hpp"  // write_file_atomic, FileError
#include "ipcheck/reports/results.hpp"

namespace ipcheck::reports {

// Creates `dir` if needed; returns the paths written, results.json first. Throws FileError
// (naming the file and the cause) when one cannot be written; the files before it are written.
std::vector<std::string> write_report_set(const std::string& dir, const Results& r);


// The folder a results.json lives in ("." for a bare file name).
std::string results_folder(const std::string& results_path);

}  // namespace ipcheck::reports
