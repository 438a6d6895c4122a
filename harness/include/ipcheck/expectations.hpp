// Expectations files: known deviations of one adapter, one a line:
//   <case or clause id, globs allowed>  <status>  <reason, with a link>
// A listed case (or a case failing a listed clause) whose status matches becomes xfail.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ipcheck/reports/results.hpp"

namespace ipcheck {

struct Expectation {
  std::string pattern;
  reports::Status status = reports::Status::fail;
  std::string reason;
  std::string where;  // file:line
  mutable bool used = false;
};

class Expectations {
 public:
  // Throws std::runtime_error naming the file, line and problem.
  static Expectations load(const std::string& path);
  static Expectations parse(const std::string& text, const std::string& where);

  // The entry that covers this case result (by case id, then by failing clause ids).
  const Expectation* match(const reports::CaseResult& c) const;
  const std::vector<Expectation>& entries() const noexcept { return entries_; }
  std::string path;

 private:
  std::vector<Expectation> entries_;
};

bool glob_match(const std::string& pattern, const std::string& text);

}  // namespace ipcheck
