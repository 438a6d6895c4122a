#include "ipcheck/reports/sections.hpp"

#include <type_traits>

namespace ipcheck::reports {

using nlohmann::json;

namespace {

template <class T>
T value_or(const json& j, const char* key, T fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if constexpr (std::is_arithmetic_v<T>) {
    if (!it->is_number()) return fallback;
  } else {
    if (!it->is_string()) return fallback;
  }
  return it->get<T>();
}

}  // namespace

std::vector<Benchmark> benchmarks(const Results& r) {
  std::vector<Benchmark> out;
  if (!r.bench.is_object()) return out;
  auto list = r.bench.find("benchmarks");
  if (list == r.bench.end() || !list->is_array()) return out;
  for (const auto& b : *list) {
    Benchmark x;
    x.name = value_or<std::string>(b, "name", "");
    if (x.name.empty()) continue;
    x.unit = value_or<std::string>(b, "unit", "");
    x.median = value_or<double>(b, "median", 0);
    x.spread = value_or<double>(b, "spread", 0);
    x.spread_kind = value_or<std::string>(b, "spread_kind", "mad");
    x.repetitions = value_or<int>(b, "repetitions", 0);
    x.floor = value_or<double>(b, "floor", 0);
    x.ratio = value_or<double>(b, "ratio", x.floor > 0 ? x.median / x.floor : 0);
    x.ratio_low = value_or<double>(b, "ratio_low", 0);
    x.ratio_high = value_or<double>(b, "ratio_high", 0);
    x.higher_is_better = value_or<std::string>(b, "better", "lower") == "higher";
    out.push_back(std::move(x));
  }
  return out;
}

namespace {
std::vector<std::pair<std::string, long long>> histogram(const nlohmann::json& j, const char* key) {
  std::vector<std::pair<std::string, long long>> out;
  if (auto o = j.find(key); o != j.end() && o->is_object())
    for (const auto& [k, v] : o->items())
      if (v.is_number_integer()) out.emplace_back(k, v.get<long long>());
  return out;
}

// The strings of the array j[key], other elements skipped (none when it is not an array).
std::vector<std::string> strings(const nlohmann::json& j, const char* key) {
  std::vector<std::string> out;
  if (auto a = j.find(key); a != j.end() && a->is_array())
    for (const auto& x : *a)
      if (x.is_string()) out.push_back(x.get<std::string>());
  return out;
}
}  // namespace

FuzzSummary fuzz_summary(const Results& r) {
  FuzzSummary f;
  if (!r.fuzz.is_object()) return f;
  f.present = true;
  f.status = value_or<std::string>(r.fuzz, "status", "");
  f.reason = value_or<std::string>(r.fuzz, "reason", "");
  f.target = value_or<std::string>(r.fuzz, "target", "");
  f.executions = value_or<long long>(r.fuzz, "executions", 0);
  f.duration_s = value_or<double>(r.fuzz, "duration_s", 0);
  f.exec_per_s = value_or<double>(r.fuzz, "exec_per_s", 0);
  f.seed = value_or<long long>(r.fuzz, "seed", 0);
  f.verdicts = histogram(r.fuzz, "verdicts");
  f.error_codes = histogram(r.fuzz, "outcomes");
  f.unexported = strings(r.fuzz, "unexported");
  f.calibration = strings(r.fuzz, "calibration");
  if (auto l = r.fuzz.find("findings"); l != r.fuzz.end() && l->is_array())
    for (const auto& x : *l) {
      FuzzFinding g;
      g.outcome = value_or<std::string>(x, "outcome", "");
      g.clause = value_or<std::string>(x, "clause", "");
      g.mutation = value_or<std::string>(x, "mutation", "");
      if (auto fs = x.find("fields"); fs != x.end() && fs->is_array())
        for (const auto& n : *fs)
          if (n.is_string()) g.fields += (g.fields.empty() ? "" : ", ") + n.get<std::string>();
      g.reproducer = value_or<std::string>(x, "reproducer", "");
      g.detail = value_or<std::string>(x, "detail", "");
      f.findings.push_back(std::move(g));
    }
  return f;
}

}  // namespace ipcheck::reports
