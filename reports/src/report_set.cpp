#include "ipcheck/reports/report_set.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "ipcheck/reports/render.hpp"

namespace ipcheck::reports {

void write_file_atomic(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << content;
    if (!out) throw std::runtime_error("cannot write " + tmp + ": check that the folder is writable and has space");
  }
  // Atomic replace: a reader never sees half a file.
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot rename " + tmp + " to " + path);
  }
}

std::string results_folder(const std::string& results_path) {
  std::string folder = std::filesystem::path(results_path).parent_path().string();
  return folder.empty() ? "." : folder;
}

std::vector<std::string> write_report_set(const std::string& dir, const Results& r) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
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
