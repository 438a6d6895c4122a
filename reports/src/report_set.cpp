#include "ipcheck/reports/report_set.hpp"

#include <filesystem>

namespace ipcheck::reports {

std::vector<std::string> write_report_set(const std::string& dir, const Results& r) {
  std::filesystem::create_directories(dir);
  const std::string json_path = (std::filesystem::path(dir) / "results.json").string();
  write_results(json_path, r);
  return {json_path};
}

}  // namespace ipcheck::reports
