// The results model's own rules: the names of its enums, the order of statuses (severity,
// what is a problem, what is judged), observations that keep every value, and the summary.
// Reading and writing results.json: results_json.cpp.
#include "ipcheck/reports/results.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "results_names.hpp"

namespace ipcheck::reports {

using namespace enum_names;

const char* to_string(Status s) noexcept { return kStatusNames[static_cast<int>(s)]; }
std::optional<Status> parse_status(std::string_view s) noexcept { return parse_name<Status>(kStatusNames, s); }
const char* to_string(Level l) noexcept { return kLevelNames[static_cast<int>(l)]; }
const char* to_string(BasisKind b) noexcept { return kBasisNames[static_cast<int>(b)]; }
std::optional<BasisKind> parse_basis_kind(std::string_view s) noexcept { return parse_name<BasisKind>(kBasisNames, s); }
std::optional<Level> parse_level(std::string_view s) noexcept { return parse_name<Level>(kLevelNames, s); }
const char* to_string(CheckResult r) noexcept { return kCheckResultNames[static_cast<int>(r)]; }
std::optional<CheckResult> parse_check_result(std::string_view s) noexcept {
  return parse_name<CheckResult>(kCheckResultNames, s);
}
const char* to_string(Decider d) noexcept { return kDeciderNames[static_cast<int>(d)]; }
std::optional<Decider> parse_decider(std::string_view s) noexcept { return parse_name<Decider>(kDeciderNames, s); }
const char* to_string(ClauseVerdict v) noexcept { return kVerdictNames[static_cast<int>(v)]; }
std::optional<ClauseVerdict> parse_clause_verdict(std::string_view s) noexcept {
  return parse_name<ClauseVerdict>(kVerdictNames, s);
}

int severity(Status s) noexcept {
  switch (s) {
    case Status::pass: return 0;
    case Status::xfail: return 1;
    case Status::fail: return 2;
    case Status::leak: return 3;
    case Status::timeout: return 4;
    case Status::crash: return 5;
    case Status::skip:
    case Status::incomplete:
    case Status::error:
    case Status::flaky: return -1;
  }
  return -1;
}

bool is_problem(Status s) noexcept {
  return s == Status::fail || s == Status::leak || s == Status::timeout || s == Status::crash ||
         s == Status::incomplete || s == Status::error;
}

bool is_judged(Status s) noexcept { return severity(s) >= 0; }

void add_observation(CaseResult& c, const std::string& name, const std::string& value) {
  auto [it, fresh] = c.observations.try_emplace(name, value);
  if (fresh || it->second == value) return;
  // Keep every value: split what is there, add, sort, join.
  std::vector<std::string> values;
  for (std::size_t at = 0;;) {
    const auto bar = it->second.find(" | ", at);
    values.push_back(it->second.substr(at, bar == std::string::npos ? std::string::npos : bar - at));
    if (bar == std::string::npos) break;
    at = bar + 3;
  }
  if (std::find(values.begin(), values.end(), value) != values.end()) return;
  values.push_back(value);
  std::sort(values.begin(), values.end());
  std::string joined;
  for (const auto& v : values) joined += (joined.empty() ? "" : " | ") + v;
  it->second = joined;
}

int Summary::of(Status s) const {
  auto it = counts.find(to_string(s));
  return it == counts.end() ? 0 : it->second;
}

Summary summarize(const std::vector<CaseResult>& cases) {
  Summary s;
  for (const char* name : kStatusNames) s.counts[name] = 0;
  for (const auto& c : cases) {
    ++s.counts[to_string(c.status)];
    ++s.total;
    if (is_problem(c.status)) ++s.unexpected;
    if (c.status == Status::error) ++s.errors;
  }
  return s;
}

}  // namespace ipcheck::reports
