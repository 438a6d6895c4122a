#include "ipcheck/run_record.hpp"

#include <sys/utsname.h>

#include <ctime>
#include <stdexcept>

#include "ipcheck/reports/report_set.hpp"

#include "ipcheck_version.h"

namespace ipcheck {

std::string iso_now() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void stamp_run(reports::RunInfo& run, const std::string& adapter, const std::string& start) {
  run.adapter = adapter;
  run.start = start;
  run.ipcheck_version = IPCHECK_VERSION;
  utsname u{};
  if (::uname(&u) == 0) {
    run.kernel = std::string(u.sysname) + " " + u.release;
    run.hostname = u.nodename;
  }
}

reports::Results read_results_to_merge(const std::string& path) {
  try {
    return reports::read_results(path);
  } catch (const std::exception& e) {
    throw std::invalid_argument("--results " + path + ": " + e.what() + "; give a results.json written by 'ipcheck run'");
  }
}

std::vector<std::string> write_merged_results(const std::string& path, const reports::Results& merged) {
  return reports::write_report_set(reports::results_folder(path), merged);
}

}  // namespace ipcheck
