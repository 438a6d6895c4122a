#include "ipcheck/reports/stable.hpp"

#include <regex>

namespace ipcheck::reports {

std::string scrub_volatile(std::string_view text) {
  static const std::regex hex_prefixed("0x[0-9a-fA-F]{4,}");
  // Bare hex of pointer size: mapping ranges in /proc/<pid>/maps and in leak findings.
  // (at least one letter, so that decimal sizes such as 67108864 stay).
  static const std::regex hex_bare("\\b(?=[0-9a-f]*[a-f])[0-9a-f]{8,16}\\b");
  static const std::regex pid("\\b(pid[= ]|pid: |process )[0-9]+\\b");
  std::string s(text);
  s = std::regex_replace(s, hex_prefixed, "<addr>");
  s = std::regex_replace(s, hex_bare, "<addr>");
  s = std::regex_replace(s, pid, "$1<pid>");
  return s;
}

namespace {

void scrub_json(nlohmann::json& j) {
  if (j.is_string()) {
    j = scrub_volatile(j.get<std::string>());
  } else if (j.is_structured()) {
    for (auto& x : j) scrub_json(x);
  }
}

// "(/some/where/cuda.txt:12)" -> "(cuda.txt:12)": where an expectations file sat is the
// machine's business; which line of it matched is the run's.
const std::regex& file_line() {
  static const std::regex r("(?:/[^\\s():]+)*/([^/\\s():]+:[0-9]+)");
  return r;
}

void stable_case(CaseResult& c) {
  c.duration_s = 0;
  c.expectation = std::regex_replace(c.expectation, file_line(), "$1");
  c.reason = scrub_volatile(c.reason);
  for (auto& k : c.checks) k.message = scrub_volatile(k.message);
  for (auto& [k, v] : c.observations) v = scrub_volatile(v);
  for (auto& e : c.native_errors) e.message = scrub_volatile(e.message);
  for (auto& x : c.roles) {
    x.pid = 0;
    x.duration_s = 0;
    x.output_tail = scrub_volatile(x.output_tail);
  }
  for (auto& w : c.warnings) w = std::regex_replace(scrub_volatile(w), file_line(), "$1");
  scrub_json(c.audit);
  if (auto roles = c.audit.find("roles"); roles != c.audit.end() && roles->is_object())
    for (auto& [name, role] : roles->items())
      if (role.is_object() && role.contains("pid")) role["pid"] = 0;
  for (auto& f : c.findings) {
    f.item = scrub_volatile(f.item);
    f.detail = scrub_volatile(f.detail);
  }
  for (auto& a : c.attempts) stable_case(a);
}

// "/some/where/cuda.txt" -> "cuda.txt".
std::string file_name(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The expectations file's report ({file, lines: [{where, ...}], stale: ["file:line"]}) by
// file name, as the cases' expectation fields are.
void stable_expectations(nlohmann::json& e) {
  if (!e.is_object()) return;
  if (auto f = e.find("file"); f != e.end() && f->is_string()) *f = file_name(f->get<std::string>());
  if (auto lines = e.find("lines"); lines != e.end() && lines->is_array())
    for (auto& line : *lines)
      if (auto w = line.find("where"); line.is_object() && w != line.end() && w->is_string())
        *w = std::regex_replace(w->get<std::string>(), file_line(), "$1");
  if (auto stale = e.find("stale"); stale != e.end() && stale->is_array())
    for (auto& w : *stale)
      if (w.is_string()) w = std::regex_replace(w.get<std::string>(), file_line(), "$1");
}

// Each bench fuzz campaign's results file by its place in the bench's output folder
// ("fuzz-0/results.json"): where that folder sat is the machine's business.
void stable_bench(nlohmann::json& bench) {
  if (!bench.is_object() || !bench.contains("context") || !bench["context"].is_object()) return;
  auto runs = bench["context"].find("fuzz_runs");
  if (runs == bench["context"].end() || !runs->is_array()) return;
  for (auto& run : *runs) {
    if (!run.is_object()) continue;
    auto f = run.find("results");
    if (f == run.end() || !f->is_string()) continue;
    const std::string path = f->get<std::string>();
    const std::size_t last = path.find_last_of('/');
    const std::size_t before = last == std::string::npos || last == 0 ? std::string::npos : path.find_last_of('/', last - 1);
    *f = before == std::string::npos ? path : path.substr(before + 1);
  }
}

}  // namespace

Results stable_copy(const Results& in) {
  Results r = in;
  r.run.start.clear();
  r.run.duration_s = 0;
  r.run.hostname.clear();
  // How many descriptors the runner inherited depends on who started it (a shell, CTest).
  r.run.runner = nlohmann::json::object();
  if (r.run.options.is_object()) {
    r.run.options.erase("jobs");
    // A merged run's shards: where and when each ran is the machines' business.
    if (auto m = r.run.options.find("merged"); m != r.run.options.end() && m->is_object() && m->contains("shards"))
      for (auto& shard : (*m)["shards"])
        if (shard.is_object())
          for (const char* k : {"hostname", "start", "duration_s", "jobs", "runner"}) shard.erase(k);
    if (auto e = r.run.options.find("expectations"); e != r.run.options.end() && e->is_string())
      *e = file_name(e->get<std::string>());
  }
  stable_expectations(r.run.expectations);
  stable_bench(r.bench);
  for (auto& c : r.cases) stable_case(c);
  r.summary = summarize(r.cases);
  return r;
}

}  // namespace ipcheck::reports
