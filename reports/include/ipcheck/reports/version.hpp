// Driver versions in the order people mean: dotted numbers part by part as numbers
// (580.65.06 < 580.159.04 < 1000.1), any other part as text.
#pragma once

#include <string_view>

namespace ipcheck::reports {

// -1, 0 or 1. Parts are separated by '.', '-', '+' or ' '; a missing part counts as "0".
int compare_versions(std::string_view a, std::string_view b);

}  // namespace ipcheck::reports
