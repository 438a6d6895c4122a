// The frame shared by the HTML pages (a run, a history): document head with inline style,
// and the end of the page with an optional inline script.
#pragma once

#include <string>

namespace ipcheck::reports::html_page {

std::string begin(const std::string& title);
std::string end(const std::string& script = "");
// A status as a coloured badge.
std::string badge(const std::string& status);

}  // namespace ipcheck::reports::html_page
