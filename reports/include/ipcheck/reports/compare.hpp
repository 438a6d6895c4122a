// Two adapters' runs of the catalog side by side (`ipcheck report compare`): for every case
// and clause, the verdict of each, where they differ, and which layer decided each side's
// verdict (the runtime's call with its native code, the adapter's own code, or ipcheck).
// Made for one machine and two ways to reach the same driver: `cuda` (the driver API
// itself) and `ur` (the Unified Runtime and UMF over it). A clause that passes on one and
// fails on the other is a finding about the layer in between, with the driver's own answer
// beside it as evidence. Unlike `diff`, a comparison judges nothing and gates nothing.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ipcheck/reports/results.hpp"

namespace ipcheck::reports {

inline constexpr std::string_view kCompareSchema = "ipcheck.compare/1";

struct CompareSide {
  std::string label;  // what the person gave (a path)
  std::string adapter, driver_name, driver_version, hostname;
  int total = 0;
};

// Who decided one side's verdict of a clause or case: "runtime urIPCOpenMemHandleExp ->
// UR_RESULT_ERROR_INVALID_ARGUMENT", "adapter", "ipcheck"; empty when nothing was checked.
struct Decision {
  std::string who;     // runtime | adapter | ipcheck | unknown | "" (nothing judged)
  std::string call;    // the native call, for the runtime
  std::string native;  // its answer's name, when it failed
  std::string text() const;
};

struct CaseComparison {
  std::string id;
  std::optional<Status> a, b;  // nullopt: not in that run
  std::string reason_a, reason_b;
  Decision decided_a, decided_b;  // the check that decided the status (the first failing, else the first deciding)
  bool differs() const { return a != b; }
};

struct ClauseComparison {
  std::string id;
  std::string profile;
  std::optional<ClauseVerdict> a, b;  // nullopt: not in that run's clause list
  Decision decided_a, decided_b;
  bool differs() const { return a != b; }
};

struct Comparison {
  CompareSide a, b;
  bool same_machine = true;  // false: the host names or device lists differ (said in the output)
  std::vector<CaseComparison> cases;      // every case of either run, in the first run's order, then the second's
  std::vector<ClauseComparison> clauses;  // every clause of either run, likewise
  std::size_t cases_differing() const;
  std::size_t clauses_differing() const;
};

Comparison compare_results(const Results& a, const Results& b, const std::string& label_a, const std::string& label_b);

// `all`: every case and clause, not only those that differ.
std::string render_compare_text(const Comparison& c, bool all);
std::string render_compare_markdown(const Comparison& c, bool all);
nlohmann::json compare_to_json(const Comparison& c);

}  // namespace ipcheck::reports
