// Inline SVG pictures for the HTML pages: small, hand-drawn, no script, no external font.
#pragma once

#include <string>
#include <vector>

#include "ipcheck/reports/results.hpp"
#include "ipcheck/reports/sections.hpp"

namespace ipcheck::reports::svg {

// One horizontal bar per status that has cases, the worst first.
std::string status_bars(const Summary& s);
// Fuzz outcomes on a log scale (counts span orders of magnitude); findings in red.
std::string fuzz_histogram(const FuzzSummary& f);
// Each benchmark's median as a multiple of its floor, with its spread as a whisker.
std::string bench_floors(const std::vector<Benchmark>& b);

// One stacked column of status counts per run, left to right.
struct TrendColumn {
  std::string label;  // the driver version
  Summary summary;
};
std::string status_trend(const std::vector<TrendColumn>& columns);

}  // namespace ipcheck::reports::svg
