// What the commands that write results.json (run, fuzz, bench) share, in one place: the
// part of RunInfo every run states the same way, and `--results FILE`, which puts the
// section of fuzz or bench into a catalog run's results.json.
#pragma once

#include <string>
#include <vector>

#include "ipcheck/reports/results.hpp"

namespace ipcheck {

// The current UTC time as ISO 8601 ("2024-05-01T12:00:00Z").
std::string iso_now();

// Sets what every run states the same way: the adapter, the start (iso_now's form),
// ipcheck's version, the kernel and the host. The rest (driver, options) is the command's.
void stamp_run(reports::RunInfo& run, const std::string& adapter, const std::string& start);

// `--results FILE`: the results.json a section goes into, read before the command does its
// work, so a bad file costs nothing. Throws std::invalid_argument naming the file and what
// to give instead.
reports::Results read_results_to_merge(const std::string& path);
// Writes `merged` back as `path` with its renderings beside it; the paths written.
std::vector<std::string> write_merged_results(const std::string& path, const reports::Results& merged);

}  // namespace ipcheck
