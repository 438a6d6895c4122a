// Clauses: the normative statements cases check. The catalog of them lives in cases/
// and registers here; the verdict module (verdict.hpp) judges a case's checks by their
// clause's level and profile: rb and harness clauses on every adapter, the API profiles
// (sycl, ur, ze, cuda, ...) where the adapter claims them.
#pragma once

#include <source_location>
#include <string>
#include <utility>
#include <vector>

#include "ipcheck/reports/results.hpp"

namespace ipcheck {

using reports::Level;
inline const char* level_name(Level l) noexcept { return reports::to_string(l); }

struct Clause {
  Clause() = default;
  // {id, level, source, statement, uncovered_reason[, basis]}: a catalog line; one written
  // before clauses carried their basis still compiles (and docs:spec-clauses asks for it).
  Clause(std::string id_, Level level_, std::string source_, std::string statement_, std::string uncovered_reason_ = "",
         std::string basis_ = "")
      : id(std::move(id_)), level(level_), source(std::move(source_)), statement(std::move(statement_)),
        uncovered_reason(std::move(uncovered_reason_)), basis(std::move(basis_)) {}
  std::string id;         // "sycl.mem.open.size"; the profile is the part before the first dot
  Level level = Level::must;
  std::string source;     // "SYCL ext IPC, ipc::memory::open"
  std::string statement;  // one sentence
  std::string uncovered_reason;  // set when no case can check it here, with the reason
  // The normative text the clause stands on, quoted with its section ("UR
  // urIPCGetEventHandleExp: \"Events created without that flag ... cannot be exported.\"").
  // Empty for a clause of ipcheck's robustness profile or of the harness, whose basis is
  // that profile alone (docs/SPEC-CLAUSES.md): see basis_kind().
  std::string basis;
  std::string profile() const { return id.substr(0, id.find('.')); }
  // Where the clause's obligation comes from: a published specification or documentation
  // (quoted in `basis`), ipcheck's robustness profile alone (a failure is a hardening
  // request, never a violation of an API), or the harness's own checks.
  reports::BasisKind basis_kind() const {
    if (source.rfind("ipcheck robustness profile", 0) == 0) return reports::BasisKind::profile;
    if (source.rfind("ipcheck harness", 0) == 0) return reports::BasisKind::harness;
    return reports::BasisKind::specification;
  }
};

// Listed in source order, as cases are (case.hpp).
void register_clause(Clause c);
const std::vector<Clause>& clauses();
const Clause* find_clause(const std::string& id);

struct ClauseRegistration {
  explicit ClauseRegistration(std::vector<Clause> list, std::source_location where = std::source_location::current());
};

}  // namespace ipcheck
