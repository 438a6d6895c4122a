#include "ipcheck/bench/summary.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <tuple>

namespace ipcheck::bench {

using nlohmann::json;

namespace {

std::optional<double> number(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string shortest(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

// Rounds to 4 significant digits: enough for a figure whose noise is a percent or more.
double rounded(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  const double scale = std::pow(10.0, 3 - std::floor(std::log10(std::fabs(v))));
  return std::round(v * scale) / scale;
}

}  // namespace

LabelInfo parse_label(const std::string& label) {
  LabelInfo info;
  std::istringstream in(label);
  std::string part;
  while (std::getline(in, part, ';')) {
    const auto eq = part.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = part.substr(0, eq), value = part.substr(eq + 1);
    if (key == "floor") info.floor = value;
    else if (key == "target_ratio") info.target_ratio = number(value);
    else if (key == "target") info.target = number(value);
    else if (key == "note") info.note = value;
  }
  return info;
}

std::string make_label(const LabelInfo& info) {
  std::string s;
  auto add = [&](const std::string& k, const std::string& v) { s += (s.empty() ? "" : ";") + k + "=" + v; };
  if (!info.floor.empty()) add("floor", info.floor);
  if (info.target_ratio) add("target_ratio", shortest(*info.target_ratio));
  if (info.target) add("target", shortest(*info.target));
  if (!info.note.empty()) add("note", info.note);
  return s;
}

std::string clean_name(const std::string& run_name) {
  std::string n = run_name;
  for (const char* suffix : {"/manual_time", "/real_time"}) {
    const std::string s(suffix);
    if (n.size() > s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0) n.erase(n.size() - s.size());
  }
  return n;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

double mad(const std::vector<double>& v) {
  const double m = median(v);
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double x : v) dev.push_back(std::fabs(x - m));
  return median(dev);
}

Interval median_interval(std::vector<double> v, double confidence) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  // P(Binomial(n, 1/2) <= j), j = 0, 1, ...: the largest k with P(B <= k - 1) <= alpha / 2.
  const double alpha_half = (1 - confidence) / 2;
  double term = std::pow(0.5, static_cast<double>(n)), cdf = term;  // P(B = 0), P(B <= 0)
  std::size_t k = 1;
  for (std::size_t j = 1; j < n / 2 && cdf + term * static_cast<double>(n - j + 1) / static_cast<double>(j) <= alpha_half;
       ++j) {
    term *= static_cast<double>(n - j + 1) / static_cast<double>(j);
    cdf += term;
    k = j + 1;
  }
  if (cdf > alpha_half) k = 1;  // too few samples for the level asked: the whole range
  return {v[k - 1], v[n - k]};
}

Interval ratio_interval(const std::vector<double>& x, const std::vector<double>& floor, double confidence) {
  const Interval a = median_interval(x, confidence), b = median_interval(floor, confidence);
  if (b.low <= 0 || b.high <= 0) return {};
  return {a.low / b.high, a.high / b.low};
}

double seconds_per(const std::string& unit) {
  if (unit == "ns") return 1e-9;
  if (unit == "us") return 1e-6;
  if (unit == "ms") return 1e-3;
  if (unit == "s") return 1;
  return 0;
}

std::vector<Series> series_from_google_benchmark(const json& doc, const std::string& source,
                                                 std::vector<std::string>& errors) {
  std::vector<Series> out;
  std::map<std::string, std::size_t> index;
  std::map<std::string, std::string> step_of;  // a step series -> the benchmark it is a step of
  std::optional<double> load;
  if (auto c = doc.find("context"); c != doc.end() && c->is_object())
    if (auto l = c->find("load_avg"); l != c->end() && l->is_array() && !l->empty() && (*l)[0].is_number())
      load = (*l)[0].get<double>();
  auto list = doc.find("benchmarks");
  if (list == doc.end() || !list->is_array()) {
    errors.push_back(source + ": no \"benchmarks\" list in the Google Benchmark output");
    return out;
  }
  for (const auto& b : *list) {
    if (!b.is_object()) continue;
    const std::string name = clean_name(b.value("run_name", b.value("name", std::string())));
    if (name.empty()) continue;
    if (b.value("error_occurred", false)) {
      const std::string e = name + ": " + b.value("error_message", std::string("error"));
      if (std::find(errors.begin(), errors.end(), e) == errors.end()) errors.push_back(e);
      continue;
    }
    if (b.value("run_type", std::string("iteration")) != "iteration") continue;
    auto rt = b.find("real_time");
    if (rt == b.end() || !rt->is_number()) continue;
    auto [it, fresh] = index.emplace(name, out.size());
    if (fresh) {
      Series s;
      s.name = name;
      s.unit = b.value("time_unit", std::string("ns"));
      s.label = parse_label(b.value("label", std::string()));
      s.load_1m = load;
      s.source = source;
      out.push_back(std::move(s));
    }
    out[it->second].samples.push_back(rt->get<double>());
    // Its steps: counters "step_<name>", milliseconds per case, as series "<name of b>/<name>".
    for (auto c = b.begin(); c != b.end(); ++c) {
      if (c.key().rfind("step_", 0) != 0 || !c->is_number()) continue;
      const std::string step = name + "/" + c.key().substr(5);
      auto [at, new_step] = index.emplace(step, out.size());
      if (new_step) {
        step_of.emplace(step, name);
        Series x;
        x.name = step;
        x.unit = "ms";
        x.load_1m = load;
        x.source = source;
        x.label.note = "a step of " + name;
        out.push_back(std::move(x));
      }
      out[at->second].samples.push_back(c->get<double>());
    }
  }
  // A step's floor is the same step of its benchmark's floor, where that has it.
  for (const auto& [step, parent] : step_of) {
    const std::string& parent_floor = out[index.at(parent)].label.floor;
    if (parent_floor.empty()) continue;
    const std::string floor = parent_floor + step.substr(parent.size());
    if (index.count(floor)) out[index.at(step)].label.floor = floor;
  }
  return out;
}

namespace {

struct SortKey {
  std::size_t source;
  int verb;
  std::string verb_name;
  double size;
  bool floor;
  std::string name;
  auto tie() const { return std::tie(source, verb, verb_name, size, floor, name); }
};

// "4KiB" -> 4096; 0 when the part is not a size.
double size_of(const std::string& part) {
  char* end = nullptr;
  const double v = std::strtod(part.c_str(), &end);
  if (end == part.c_str()) return 0;
  const std::string unit(end);
  if (unit == "KiB") return v * 1024;
  if (unit == "MiB") return v * 1024 * 1024;
  if (unit == "GiB") return v * 1024 * 1024 * 1024;
  return 0;
}

SortKey key_of(const Series& s, const std::vector<std::string>& sources) {
  static const char* const verbs[] = {"mem_get", "mem_put", "mem_open", "mem_open_repeat", "mem_first_touch", "mem_close",
                                      "mem_open_close", "mem_open_close_proven", "phys_open_map",
                                      "event_signal_wake", "two_role_case", "two_role_case_overhead"};
  SortKey k{static_cast<std::size_t>(std::find(sources.begin(), sources.end(), s.source) - sources.begin()),
            100, "", 0, false, s.name};
  std::vector<std::string> parts;
  std::istringstream in(s.name);
  for (std::string p; std::getline(in, p, '/');) parts.push_back(p);
  std::size_t i = 1;
  if (i < parts.size() && parts[i] == "floor") {
    k.floor = true;
    ++i;
  }
  if (i < parts.size()) {
    k.verb_name = parts[i];
    for (std::size_t v = 0; v < std::size(verbs); ++v)
      if (parts[i] == verbs[v]) k.verb = static_cast<int>(v);
  }
  if (i + 1 < parts.size()) k.size = size_of(parts[i + 1]);
  return k;
}

}  // namespace

void canonical_order(std::vector<Series>& all) {
  std::vector<std::string> sources;
  for (const auto& s : all)
    if (std::find(sources.begin(), sources.end(), s.source) == sources.end()) sources.push_back(s.source);
  std::stable_sort(all.begin(), all.end(), [&](const Series& a, const Series& b) {
    return key_of(a, sources).tie() < key_of(b, sources).tie();
  });
}

json summarize(const std::vector<Series>& all, std::vector<std::string>& errors) {
  std::map<std::string, const Series*> by_name;
  for (const auto& s : all) by_name.emplace(s.name, &s);
  json list = json::array();
  for (const auto& s : all) {
    if (s.samples.empty()) continue;
    const double m = median(s.samples);
    const Interval ci = median_interval(s.samples);
    json e = {{"name", s.name},
              {"unit", s.unit},
              {"median", rounded(m)},
              {"spread", rounded(mad(s.samples))},
              {"spread_kind", "mad"},
              {"low", rounded(ci.low)},
              {"high", rounded(ci.high)},
              {"repetitions", s.samples.size()},
              {"better", s.higher_is_better ? "higher" : "lower"}};
    std::optional<double> ratio;
    if (!s.label.floor.empty()) {
      auto f = by_name.find(s.label.floor);
      const double to = seconds_per(s.unit);
      if (f == by_name.end() || f->second->samples.empty()) {
        errors.push_back(s.name + ": its floor '" + s.label.floor + "' was not measured in this run");
      } else if (s.higher_is_better && to == 0 && f->second->unit != s.unit && seconds_per(f->second->unit) > 0) {
        // A rate held against the time of one operation of its floor: the floor's rate is 1 / that time.
        const double per_op = median(f->second->samples) * seconds_per(f->second->unit);
        e["floor_name"] = s.label.floor;
        if (per_op > 0) {
          const double floor = 1 / per_op;
          e["floor"] = rounded(floor);
          ratio = m / floor;
          e["ratio"] = rounded(*ratio);
          // The floor's rate is 1 / its time: its interval turns over.
          const Interval fi = median_interval(f->second->samples);
          if (fi.low > 0 && ci.low > 0) {
            const double to_rate = seconds_per(f->second->unit);
            e["ratio_low"] = rounded(ci.low * fi.low * to_rate);
            e["ratio_high"] = rounded(ci.high * fi.high * to_rate);
          }
        }
      } else if (f->second->unit != s.unit && (to == 0 || seconds_per(f->second->unit) == 0)) {
        errors.push_back(s.name + ": its floor '" + s.label.floor + "' is in " + f->second->unit + ", not " + s.unit);
      } else {
        const double scale = f->second->unit == s.unit ? 1 : seconds_per(f->second->unit) / to;
        const double floor = median(f->second->samples) * scale;
        e["floor"] = rounded(floor);
        e["floor_name"] = s.label.floor;
        if (floor > 0) {
          ratio = m / floor;
          e["ratio"] = rounded(*ratio);
          const Interval r = ratio_interval(s.samples, f->second->samples);
          if (r.high > 0) {
            e["ratio_low"] = rounded(r.low / scale);
            e["ratio_high"] = rounded(r.high / scale);
          }
        }
      }
    }
    std::optional<bool> met;
    if (s.label.target_ratio) {
      e["target_ratio"] = *s.label.target_ratio;
      if (ratio) met = *ratio <= *s.label.target_ratio;
    }
    if (s.label.target) {
      e["target"] = *s.label.target;
      const bool ok = s.higher_is_better ? m >= *s.label.target : m <= *s.label.target;
      met = met.value_or(true) && ok;
    }
    if (met) e["met"] = *met;
    if (s.load_1m) e["load_1m"] = rounded(*s.load_1m);
    if (!s.label.note.empty()) e["note"] = s.label.note;
    if (!s.source.empty()) e["source"] = s.source;
    list.push_back(std::move(e));
  }
  return list;
}

}  // namespace ipcheck::bench
