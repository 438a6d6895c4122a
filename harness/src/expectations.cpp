#include "ipcheck/expectations.hpp"

#include <fnmatch.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ipcheck {

bool glob_match(const std::string& pattern, const std::string& text) {
  return ::fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
}

Expectations Expectations::parse(const std::string& text, const std::string& where) {
  Expectations e;
  e.path = where;
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const auto hash = line.find('#');
    const std::string body = line.substr(0, hash);
    std::istringstream words(body);
    Expectation x;
    std::string status;
    if (!(words >> x.pattern)) continue;  // blank or comment
    const std::string at = where + ":" + std::to_string(n);
    if (!(words >> status))
      throw std::runtime_error(at + ": '" + x.pattern + "' has no status; write: <case or clause> <status> <reason>");
    auto s = reports::parse_status(status);
    if (!s || *s == reports::Status::pass || *s == reports::Status::xfail || *s == reports::Status::skip ||
        *s == reports::Status::incomplete)
      throw std::runtime_error(at + ": status '" + status + "' cannot be expected; use fail, leak, timeout or crash");
    x.status = *s;
    std::getline(words, x.reason);
    x.reason.erase(0, x.reason.find_first_not_of(" \t"));
    // The reason may continue after a '#' (a link with an anchor): keep the whole tail.
    if (hash != std::string::npos && !x.reason.empty()) x.reason += line.substr(hash);
    if (x.reason.empty())
      throw std::runtime_error(at + ": '" + x.pattern + "' has no reason; say why the deviation is known, with a link");
    x.where = at;
    e.entries_.push_back(std::move(x));
  }
  return e;
}

Expectations Expectations::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read the expectations file");
  std::stringstream s;
  s << in.rdbuf();
  return parse(s.str(), path);
}

const Expectation* Expectations::match(const reports::CaseResult& c) const {
  for (const auto& e : entries_)
    if (e.status == c.status && glob_match(e.pattern, c.id)) return &e;
  for (const auto& e : entries_) {
    if (e.status != c.status) continue;
    for (const auto& k : c.checks)
      if (k.result == "fail" && glob_match(e.pattern, k.clause)) return &e;
  }
  return nullptr;
}

}  // namespace ipcheck
