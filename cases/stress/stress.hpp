// Stress cases: hidden (run by exact id), sized by --param, registered in CTest with the
// label `stress`. Each runs one protocol many times with correct data throughout and
// watches its own descriptors and mappings for growth while it runs.
#pragma once

#include "../common.hpp"

namespace ipcheck::catalog {

// Samples this process's descriptors and tracked mappings while a loop runs: every sample
// must equal the count at construction (each cycle closes what it opened).
class GrowthWatch {
 public:
  GrowthWatch() : start_(count_resources()) {}
  void sample(const std::string& when);
  // Checks that no sample, nor a final one taken now, differed from the start.
  void check(Role& r, std::string_view clause, const std::string& what, Where w = Where::current());

 private:
  ResourceCount start_;
  int samples_ = 0;
  std::string first_growth_;  // when and what, for the first sample that differed
};

// A line in the role's output every `every` cycles (progress also keeps the case active
// for the runner's inactivity limit).
void progress(Role& r, long done, long total, long every, const std::string& what);

}  // namespace ipcheck::catalog
