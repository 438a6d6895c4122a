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
  // Text that is not UTF-8 (a path, a --param value, a line of an expectations file, the
  // environment) never loses the run: it is written with its bytes as \xNN, and every
  // report is rendered from that same escaped text.
  std::vector<std::string> escaped;
  const std::string text = dump_json(to_json(r), 2, &escaped) + '\n';
  if (escaped.empty()) {
    write_file_atomic(paths[0], text);
    write_file_atomic(paths[1], render_markdown(r));
    write_file_atomic(paths[2], render_html(r));
    write_file_atomic(paths[3], render_junit(r));
    return paths;
  }
  warn_escaped(paths[0], escaped);
  const Results clean = from_json(nlohmann::json::parse(text));
  write_file_atomic(paths[0], text);
  write_file_atomic(paths[1], render_markdown(clean));
  write_file_atomic(paths[2], render_html(clean));
  write_file_atomic(paths[3], render_junit(clean));
  return paths;
}

}  // namespace ipcheck::reports
