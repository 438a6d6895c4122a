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
      s += "failed " + k.clause + (k.expected ? " (expected)" : "") + " (" + k.role + ", decided by " +
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

}  // namespace

std::string render_junit(const Results& r) {
  std::map<std::string, std::vector<const CaseResult*>> areas;
  for (const auto& c : r.cases) areas[c.area.empty() ? "none" : c.area].push_back(&c);
  int failures = 0, errors = 0, skipped = 0;
  double total_time = 0;
  for (const auto& c : r.cases) {
    failures += c.status == Status::fail || c.status == Status::leak;
    errors += c.status == Status::crash || c.status == Status::timeout || c.status == Status::incomplete ||
              c.status == Status::error;
    skipped += c.status == Status::skip || c.status == Status::xfail;
    total_time += c.duration_s;
  }
  // JUnit timestamps carry no zone; ipcheck's start is UTC.
  std::string stamp = r.run.start;
  if (!stamp.empty() && stamp.back() == 'Z') stamp.pop_back();

  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += fmt("<testsuites name=\"%s\" tests=\"%zu\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" time=\"%s\">\n",
           xml("ipcheck " + r.run.adapter).c_str(), r.cases.size(), failures, errors, skipped, seconds(total_time).c_str());
  for (const auto& [area, list] : areas) {
    int f = 0, e = 0, k = 0;
    double t = 0;
    for (const CaseResult* c : list) {
      f += c->status == Status::fail || c->status == Status::leak;
      e += c->status == Status::crash || c->status == Status::timeout || c->status == Status::incomplete ||
           c->status == Status::error;
      k += c->status == Status::skip || c->status == Status::xfail;
      t += c->duration_s;
    }
    const std::string suite = r.run.adapter + "." + area;
    s += "  <testsuite name=\"" + xml(suite) + fmt("\" tests=\"%zu\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" time=\"%s\"",
                                                    list.size(), f, e, k, seconds(t).c_str());
    if (!stamp.empty()) s += " timestamp=\"" + xml(stamp) + "\"";
    if (!r.run.hostname.empty()) s += " hostname=\"" + xml(r.run.hostname) + "\"";
    s += ">\n    <properties>\n";
    auto prop = [&](const char* name, const std::string& value) {
      s += "      <property name=\"" + std::string(name) + "\" value=\"" + xml(value) + "\"/>\n";
    };
    prop("adapter", r.run.adapter);
    prop("driver.name", r.run.driver_name);
    prop("driver.version", r.run.driver_version);
    prop("ipcheck.version", r.run.ipcheck_version);
    if (!r.run.kernel.empty()) prop("kernel", r.run.kernel);
    s += "    </properties>\n";
    for (const CaseResult* c : list) {
      s += "    <testcase classname=\"" + xml(suite) + "\" name=\"" + xml(c->id) + "\" time=\"" + seconds(c->duration_s) + "\"";
      const std::string reason = text::first_line(c->reason);
      const std::string out = role_output(*c);
      if (c->status == Status::pass && out.empty() && c->warnings.empty()) {
        s += "/>\n";
        continue;
      }
      s += ">\n";
      switch (c->status) {
        case Status::pass: break;
        case Status::flaky:
          for (const auto& a : c->attempts) {
            if (!is_problem(a.status)) continue;
            const bool failure = a.status == Status::fail || a.status == Status::leak;
            const char* element = failure ? "flakyFailure" : "flakyError";
            s += std::string("      <") + element + " type=\"" + to_string(a.status) + "\" message=\"" +
                 xml(text::first_line(a.reason)) + "\">" + xml_text(problem_text(a)) + "</" + element + ">\n";
          }
          break;
        case Status::xfail:
          s += "      <skipped type=\"xfail\" message=\"" + xml("xfail: " + reason) + "\">" +
               xml_text(c->expectation.empty() ? c->reason : "expectation: " + c->expectation) + "</skipped>\n";
          break;
        case Status::skip:
          s += "      <skipped type=\"skip\" message=\"" + xml("skip: " + reason) + "\"/>\n";
          break;
        case Status::fail:
        case Status::leak:
          s += std::string("      <failure type=\"") + to_string(c->status) + "\" message=\"" + xml(reason) + "\">" +
               xml_text(problem_text(*c)) + "</failure>\n";
          break;
        case Status::crash:
        case Status::timeout:
        case Status::incomplete:
        case Status::error:
          s += std::string("      <error type=\"") + to_string(c->status) + "\" message=\"" + xml(reason) + "\">" +
               xml_text(problem_text(*c)) + "</error>\n";
          break;
      }
      if (!out.empty()) s += "      <system-out>" + xml_text(out) + "</system-out>\n";
      if (!c->warnings.empty()) {
        std::string w;
        for (const auto& x : c->warnings) w += "warning: " + x + "\n";
        s += "      <system-err>" + xml_text(w) + "</system-err>\n";
      }
      s += "    </testcase>\n";
    }
    s += "  </testsuite>\n";
  }
  s += "</testsuites>\n";
  return s;
}

}  // namespace ipcheck::reports
