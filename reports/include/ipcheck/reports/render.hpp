// The renderings of one run, each computed from the results model alone: Markdown for
// people and merge requests, a self-contained HTML page, and JUnit XML for CI systems.
#pragma once

#include <string>
#include <string_view>

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

// Text for a terminal (and the text formats of diff and history): the one escaping every
// string from a results file, a role or a driver passes before it is printed. Colour
// sequences (CSI) are removed; every other control character (C0, DEL, C1 such as U+009B)
// and every byte that is not UTF-8 is shown as \xNN or \uNNNN, never sent; newline and
// tab are kept. The HTML, Markdown and XML escapings start from it.
std::string terminal_text(std::string_view s);

}  // namespace ipcheck::reports
