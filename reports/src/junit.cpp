// JUnit XML as Jenkins, GitLab and GitHub test reporters read it: one <testsuite> per area,
// one <testcase> per case (classname "<adapter>.<area>"). A flaky case passes, with each
// attempt that did not as Maven Surefire's <flakyFailure> or <flakyError> (Jenkins shows them).
#include <map>

#include "ipcheck/reports/render.hpp"
#include "text.hpp"

namespace ipcheck::reports {

using text::fmt;
using text::xml;
using text::xml_text;

namespace {

std::string seconds(double s) { return fmt("%.3f", s < 0 ? 0 : s); }

// The body of a failure or error element: reason, failed checks, leaks, how the roles ended.
std::string problem_text(const CaseResult& c) {
  std::string s = c.reason + "\n";
  for (const auto& k : c.checks)
    if (k.result == CheckResult::fail)
      s += std::string(text::failed_word(k)) + " " + k.clause + (k.expected ? " (expected)" : "") + " (" + k.role + ", decided by " +
           text::decided_by(k) + "): " + k.message + (k.where.empty() ? "" : " at " + k.where) + "\n";
  for (const auto& f : c.findings) s += "left behind by " + f.role + ": " + f.kind + " " + f.item + "\n";
  for (const auto& r : c.roles) s += r.name + ": " + r.exit + "\n";
  return s;
}

std::string role_output(const CaseResult& c) {
  std::string s;
  for (const auto& r : c.roles) {
    const std::string tail = text::trim_end(text::plain(r.output_tail));
    if (!tail.empty()) s += "--- " + r.name + " (" + r.exit + ")\n" + tail + "\n";
  }
  return s;
}

// JUnit's counts of a set of cases: failures (fail, leak), errors (crash, timeout,
// incomplete, error), skipped (skip, xfail), and their time.
struct JunitTally {
  int failures = 0, errors = 0, skipped = 0;
  double time = 0;

  void add(const CaseResult& c) {
    failures += c.status == Status::fail || c.status == Status::leak;
    errors += c.status == Status::crash || c.status == Status::timeout || c.status == Status::incomplete ||
              c.status == Status::error;
    skipped += c.status == Status::skip || c.status == Status::xfail;
    time += c.duration_s;
  }
};

// What the run was, as each suite's properties.
void junit_properties(std::string& s, const RunInfo& run) {
  s += "    <properties>\n";
  auto prop = [&](const char* name, const std::string& value) {
    s += "      <property name=\"" + std::string(name) + "\" value=\"" + xml(value) + "\"/>\n";
  };
  prop("adapter", run.adapter);
  prop("driver.name", run.driver_name);
  prop("driver.version", run.driver_version);
  prop("ipcheck.version", run.ipcheck_version);
  if (!run.kernel.empty()) prop("kernel", run.kernel);
  s += "    </properties>\n";
}

// The element that says how a case ended, when it did not simply pass; none for a pass.
void junit_outcome(std::string& s, const CaseResult& c) {
  const std::string reason = text::first_line(c.reason);
  switch (c.status) {
    case Status::pass: break;
    case Status::flaky:
      for (const auto& a : c.attempts) {
        if (!is_problem(a.status)) continue;
        const bool failure = a.status == Status::fail || a.status == Status::leak;
        const char* element = failure ? "flakyFailure" : "flakyError";
        s += std::string("      <") + element + " type=\"" + to_string(a.status) + "\" message=\"" +
             xml(text::first_line(a.reason)) + "\">" + xml_text(problem_text(a)) + "</" + element + ">\n";
      }
      break;
    case Status::xfail:
      s += "      <skipped type=\"xfail\" message=\"" + xml("xfail: " + reason) + "\">" +
           xml_text(c.expectation.empty() ? c.reason : "expectation: " + c.expectation) + "</skipped>\n";
      break;
    case Status::skip:
      s += "      <skipped type=\"skip\" message=\"" + xml("skip: " + reason) + "\"/>\n";
      break;
    case Status::fail:
    case Status::leak:
      s += std::string("      <failure type=\"") + to_string(c.status) + "\" message=\"" + xml(reason) + "\">" +
           xml_text(problem_text(c)) + "</failure>\n";
      break;
    case Status::crash:
    case Status::timeout:
    case Status::incomplete:
    case Status::error:
      s += std::string("      <error type=\"") + to_string(c.status) + "\" message=\"" + xml(reason) + "\">" +
           xml_text(problem_text(c)) + "</error>\n";
      break;
  }
}

// One <testcase>: empty for a quiet pass, else its outcome, the roles' output and the warnings.
void junit_testcase(std::string& s, const std::string& suite, const CaseResult& c) {
  s += "    <testcase classname=\"" + xml(suite) + "\" name=\"" + xml(c.id) + "\" time=\"" + seconds(c.duration_s) + "\"";
  const std::string out = role_output(c);
  if (c.status == Status::pass && out.empty() && c.warnings.empty()) {
    s += "/>\n";
    return;
  }
  s += ">\n";
  junit_outcome(s, c);
  if (!out.empty()) s += "      <system-out>" + xml_text(out) + "</system-out>\n";
  if (!c.warnings.empty()) {
    std::string w;
    for (const auto& x : c.warnings) w += "warning: " + x + "\n";
    s += "      <system-err>" + xml_text(w) + "</system-err>\n";
  }
  s += "    </testcase>\n";
}

// One <testsuite>: an area's cases. `stamp` is the run's start without its zone.
void junit_suite(std::string& s, const RunInfo& run, const std::string& area, const std::vector<const CaseResult*>& list,
                 const std::string& stamp) {
  JunitTally t;
  for (const CaseResult* c : list) t.add(*c);
  const std::string suite = run.adapter + "." + area;
  s += "  <testsuite name=\"" + xml(suite) + fmt("\" tests=\"%zu\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" time=\"%s\"",
                                                  list.size(), t.failures, t.errors, t.skipped, seconds(t.time).c_str());
  if (!stamp.empty()) s += " timestamp=\"" + xml(stamp) + "\"";
  if (!run.hostname.empty()) s += " hostname=\"" + xml(run.hostname) + "\"";
  s += ">\n";
  junit_properties(s, run);
  for (const CaseResult* c : list) junit_testcase(s, suite, *c);
  s += "  </testsuite>\n";
}

}  // namespace

std::string render_junit(const Results& r) {
  std::map<std::string, std::vector<const CaseResult*>> areas;
  for (const auto& c : r.cases) areas[c.area.empty() ? "none" : c.area].push_back(&c);
  JunitTally all;
  for (const auto& c : r.cases) all.add(c);
  // JUnit timestamps carry no zone; ipcheck's start is UTC.
  std::string stamp = r.run.start;
  if (!stamp.empty() && stamp.back() == 'Z') stamp.pop_back();

  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += fmt("<testsuites name=\"%s\" tests=\"%zu\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" time=\"%s\">\n",
           xml("ipcheck " + r.run.adapter).c_str(), r.cases.size(), all.failures, all.errors, all.skipped,
           seconds(all.time).c_str());
  for (const auto& [area, list] : areas) junit_suite(s, r.run, area, list, stamp);
  s += "</testsuites>\n";
  return s;
}

}  // namespace ipcheck::reports
