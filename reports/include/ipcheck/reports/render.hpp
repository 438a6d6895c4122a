// The renderings of one run, each computed from the results model alone: Markdown for
// people and merge requests, a self-contained HTML page, and JUnit XML for CI systems.
#pragma once

#include <string>

#include "ipcheck/reports/diff.hpp"
#include "ipcheck/reports/results.hpp"

namespace ipcheck::reports {

struct RenderOptions {
  // When set, the report opens with the regressions against this baseline.
  const Diff* baseline = nullptr;
};

std::string render_markdown(const Results& r, const RenderOptions& o = {});
// One page, no external assets: inline CSS, JavaScript and SVG pictures.
std::string render_html(const Results& r, const RenderOptions& o = {});
// Failures for fail and leak, errors for crash, timeout and incomplete, skipped for skip and
// xfail (an xfail says so in its type and message).
std::string render_junit(const Results& r);

}  // namespace ipcheck::reports
