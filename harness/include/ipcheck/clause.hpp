// Clauses: the normative statements cases check. The catalog of them lives in cases/
// and registers here; the verdict module (verdict.hpp) judges a case's checks by their
// clause's level and profile: rb and harness clauses on every adapter, the API profiles
// (sycl, ur, ze, cuda, ...) where the adapter claims them.
#pragma once

#include <source_location>
#include <string>
#include <vector>

#include "ipcheck/reports/results.hpp"

namespace ipcheck {

using reports::Level;
inline const char* level_name(Level l) noexcept { return reports::to_string(l); }

struct Clause {
  std::string id;         // "sycl.mem.open.size"; the profile is the part before the first dot
  Level level = Level::must;
  std::string source;     // "SYCL ext IPC, ipc::memory::open"
  std::string statement;  // one sentence
  std::string uncovered_reason;  // set when no case can check it here, with the reason
  std::string profile() const { return id.substr(0, id.find('.')); }
};

// Listed in source order, as cases are (case.hpp).
void register_clause(Clause c);
const std::vector<Clause>& clauses();
const Clause* find_clause(const std::string& id);

struct ClauseRegistration {
  explicit ClauseRegistration(std::vector<Clause> list, std::source_location where = std::source_location::current());
};

}  // namespace ipcheck
