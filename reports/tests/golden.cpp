#include "golden.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ipcheck::reports::testing {

namespace fs = std::filesystem;

std::string fixture_path(const std::string& name) { return std::string(IPCHECK_REPORTS_DATA) + "/" + name; }

Results fixture(const std::string& name) { return read_results(fixture_path(name)); }

namespace {

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_all(const fs::path& p, const std::string& content) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << content;
}

std::string line_of(const std::string& text, std::size_t n) {
  std::istringstream in(text);
  std::string line;
  for (std::size_t i = 0; i <= n && std::getline(in, line); ++i) {
  }
  return line;
}

}  // namespace

::testing::AssertionResult matches_golden(const std::string& name, const std::string& actual) {
  const fs::path golden = fs::path(IPCHECK_REPORTS_GOLDEN) / name;
  const char* update = std::getenv("IPCHECK_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    write_all(golden, actual);
    return ::testing::AssertionSuccess() << "updated " << golden.string();
  }
  // The output of this run, kept beside the build for `diff -u` against the golden file.
  const fs::path mine = fs::path(IPCHECK_REPORTS_ACTUAL) / name;
  write_all(mine, actual);
  if (!fs::exists(golden))
    return ::testing::AssertionFailure() << "golden file " << golden.string() << " does not exist; create it with "
                                         << "IPCHECK_UPDATE_GOLDEN=1 ctest --test-dir build -L reports, then review it";
  const std::string expected = read_all(golden);
  if (expected == actual) return ::testing::AssertionSuccess();
  std::size_t line = 0, i = 0;
  for (; i < expected.size() && i < actual.size() && expected[i] == actual[i]; ++i)
    if (expected[i] == '\n') ++line;
  return ::testing::AssertionFailure()
         << name << " differs from its golden file at line " << line + 1 << ":\n  golden: " << line_of(expected, line)
         << "\n  actual: " << line_of(actual, line) << "\nsee: diff -u " << golden.string() << " " << mine.string()
         << "\nif the change is intended: IPCHECK_UPDATE_GOLDEN=1 ctest --test-dir build -L reports, then review "
            "git diff reports/tests/golden";
}

}  // namespace ipcheck::reports::testing
