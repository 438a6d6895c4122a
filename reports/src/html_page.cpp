#include "html_page.hpp"

#include "text.hpp"

namespace ipcheck::reports::html_page {

namespace {

constexpr const char* kStyle = R"(
:root { color-scheme: light; --line: #d0d7de; --muted: #57606a; }
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; padding: 0 24px 48px; max-width: 1280px; color: #1f2328; }
h1 { font-size: 22px; margin: 20px 0 4px; }
h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 15px; margin: 16px 0 6px; }
.headline { font-size: 16px; margin: 4px 0 12px; }
dl.run { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0; }
dl.run dt { color: var(--muted); }
dl.run dd { margin: 0; }
table { border-collapse: collapse; width: 100%; margin: 6px 0; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; position: sticky; top: 0; }
th[data-key] { cursor: pointer; user-select: none; white-space: nowrap; }
th[data-key]::after { content: " \2195"; color: #8c959f; }
th[aria-sort=ascending]::after { content: " \2191"; color: #1f2328; }
th[aria-sort=descending]::after { content: " \2193"; color: #1f2328; }
td.num { text-align: right; white-space: nowrap; }
code, pre, .id { font-family: ui-monospace, monospace; font-size: 12.5px; }
pre { background: #f6f8fa; padding: 8px; overflow-x: auto; margin: 4px 0; white-space: pre-wrap; }
.badge { display: inline-block; min-width: 56px; text-align: center; color: #fff; border-radius: 10px; padding: 0 8px; font-size: 12px; }
.controls { display: flex; gap: 12px; align-items: center; margin: 8px 0; }
.controls input { flex: 0 1 360px; padding: 4px 8px; }
.muted { color: var(--muted); }
tbody.case tr.details { display: none; }
tbody.case.open tr.details, tbody.case:target tr.details { display: table-row; }
tbody.case tr.row { cursor: pointer; }
tbody.case tr.row:hover { background: #f6f8fa; }
tbody.case.open tr.row { background: #eef4ff; }
tr.details > td { background: #fbfcfd; padding: 8px 16px 16px; }
tr.details table { width: auto; min-width: 50%; }
ul.problems li { margin: 2px 0; }
td.changed { outline: 2px solid #1f2328; outline-offset: -2px; }
svg { display: block; margin: 8px 0; max-width: 100%; height: auto; }
)";

}  // namespace

std::string begin(const std::string& title) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" +
         text::html(title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";
}

std::string end(const std::string& script) {
  std::string s;
  if (!script.empty()) s += "<script>" + script + "</script>\n";
  return s + "</body>\n</html>\n";
}

std::string badge(const std::string& status) {
  const auto st = parse_status(status);
  const char* color = st ? text::status_color(*st) : "#57606a";
  return "<span class=\"badge\" style=\"background:" + std::string(color) + "\">" + text::html(status) + "</span>";
}

}  // namespace ipcheck::reports::html_page
