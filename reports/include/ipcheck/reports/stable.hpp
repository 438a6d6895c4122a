// A run without what changes every time it runs (timestamps, durations, pids, addresses,
// the host): the form committed as a baseline, so that refreshing one shows only what
// the driver or the catalog changed.
#pragma once

#include <string>
#include <string_view>

#include "ipcheck/reports/results.hpp"

namespace ipcheck::reports {

// Addresses ("7f3a...-7f3b...", "0x55d0...") become "<addr>", process ids ("pid 4242",
// "process 4242") become "<pid>"; everything else is kept.
std::string scrub_volatile(std::string_view text);

// The results with volatile fields cleared (reports/SCHEMA.md lists them) and the text
// fields scrubbed. Applying it twice gives the same result.
Results stable_copy(const Results& r);

}  // namespace ipcheck::reports
