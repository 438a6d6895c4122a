// The cells of a Markdown table row, as bench/goals.md and bench/counts.md are read
// (goals.cpp, counts.cpp): one reader for both tables.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ipcheck::bench::table {

inline std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return std::string(s);
}

// "| a | b |" -> {"a", "b"}: the text between bars, trimmed; what follows the last bar is not a cell.
inline std::vector<std::string> cells(std::string_view line) {
  std::vector<std::string> out;
  line.remove_prefix(1);  // the leading '|'
  while (!line.empty()) {
    const auto bar = line.find('|');
    if (bar == std::string_view::npos) break;
    out.push_back(trim(line.substr(0, bar)));
    line.remove_prefix(bar + 1);
  }
  return out;
}

// The table rows of a Markdown text (the lines that start with '|'), each with its newline.
inline std::string rows_of(std::string_view text) {
  std::string out;
  while (!text.empty()) {
    const auto eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    if (!line.empty() && line.front() == '|') out += std::string(line) + "\n";
  }
  return out;
}

}  // namespace ipcheck::bench::table
