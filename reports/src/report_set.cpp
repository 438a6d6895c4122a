#include "ipcheck/reports/report_set.hpp"

#include <filesystem>

#include "ipcheck/reports/render.hpp"

namespace ipcheck::reports {

std::string results_folder(const std::string& results_path) {
  std::string folder = std::filesystem::path(results_path).parent_path().string();
  return folder.empty() ? "." : folder;
}

std::vector<std::string> write_report_set(const std::string& dir, const Results& r) {
  namespace fs = std::filesystem;
  prepare_output_dir(dir);
  const fs::path d(dir);
  std::vector<std::string> paths{(d / "results.json").string(), (d / "report.md").string(), (d / "report.html").string(),
                                 (d / "junit.xml").string()};
  write_results(paths[0], r);
  write_file_atomic(paths[1], render_markdown(r));
  write_file_atomic(paths[2], render_html(r));
  write_file_atomic(paths[3], render_junit(r));
  return paths;
}

}  // namespace ipcheck::reports
