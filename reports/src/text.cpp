#include "text.hpp"

#include "ipcheck/reports/render.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdarg>
#include <cstdio>

namespace ipcheck::reports::text {

std::string fmt(const char* format, ...) {
  va_list a;
  va_start(a, format);
  va_list b;
  va_copy(b, a);
  const int n = std::vsnprintf(nullptr, 0, format, a);
  va_end(a);
  std::string out(n > 0 ? static_cast<std::size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(out.data(), out.size() + 1, format, b);
  va_end(b);
  return out;
}

std::string duration(double s) {
  if (s < 0) s = 0;
  if (s < 1) return fmt("%.0f ms", s * 1000);
  if (s < 60) return fmt("%.1f s", s);
  const long long whole = static_cast<long long>(std::llround(s));
  return fmt("%lld min %lld s", whole / 60, whole % 60);
}

std::string number(double v) {
  std::string s = fmt("%.6g", v);
  if (s.find('e') != std::string::npos) return std::fabs(v) < 1e15 && std::fabs(v) >= 1 ? fmt("%.0f", v) : s;
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

namespace {
// The length of the UTF-8 sequence at s[i] and its code point; 0 when the bytes there are
// not UTF-8 (a stray continuation byte, a truncated or overlong sequence, a surrogate, a
// code point above U+10FFFF).
std::size_t utf8_at(std::string_view s, std::size_t i, char32_t& cp) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  std::size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  cp = n == 1 ? c : n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(k) & 0x3F);
  }
  static constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}
}  // namespace

std::string plain(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto u = static_cast<unsigned char>(s[i]);
    if (u == 0x1b && i + 1 < s.size() && s[i + 1] == '[') {
      // CSI (colours): ESC [ parameters, then one final byte from @ to ~, removed whole.
      std::size_t j = i + 2;
      while (j < s.size() && !(s[j] >= '@' && s[j] <= '~')) ++j;
      i = j + 1;
      continue;
    }
    char32_t cp = 0;
    const std::size_t n = utf8_at(s, i, cp);
    if (n == 0) {
      out += fmt("\\x%02x", u);  // not UTF-8: the byte, shown
      ++i;
      continue;
    }
    if ((cp < 0x20 && cp != '\n' && cp != '\t') || cp == 0x7f)
      out += fmt("\\x%02x", static_cast<unsigned>(cp));  // C0 controls: ESC, BEL, CR, backspace, NUL
    else if ((cp >= 0x80 && cp <= 0x9f) || cp == 0xFFFE || cp == 0xFFFF)
      out += fmt("\\u%04x", static_cast<unsigned>(cp));  // C1 controls (CSI as one character), XML's non-characters
    else
      out.append(s.substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace ipcheck::reports::text

namespace ipcheck::reports {
std::string terminal_text(std::string_view s) { return text::plain(s); }
}  // namespace ipcheck::reports

namespace ipcheck::reports::text {

std::string plural(long long n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

std::string first_line(std::string_view s) {
  const auto begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return {};
  s.remove_prefix(begin);
  s = s.substr(0, s.find('\n'));
  return trim_end(s);
}

std::string trim_end(std::string_view s) {
  const auto end = s.find_last_not_of(" \t\r\n");
  return end == std::string_view::npos ? std::string() : std::string(s.substr(0, end + 1));
}

std::string html(std::string_view raw) {
  const std::string s = plain(raw);
  std::string out;
  out.reserve(s.size());
  for (char c : s) switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  return out;
}

namespace {
std::string xml_escape(std::string_view raw, bool attribute) {
  const std::string s = plain(raw);
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += attribute ? "&quot;" : "\""; break;
      case '\'': out += attribute ? "&apos;" : "'"; break;
      case '\n': out += attribute ? "&#10;" : "\n"; break;
      case '\t': out += attribute ? "&#9;" : "\t"; break;
      default: out += c;
    }
  }
  return out;
}
}  // namespace

std::string xml(std::string_view s) { return xml_escape(s, true); }
std::string xml_text(std::string_view s) { return xml_escape(s, false); }

std::string md(std::string_view raw) {
  const std::string clean = plain(raw);
  const std::string_view s = clean;
  auto word = [&](std::size_t i) { return i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) != 0); };
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\n' || c == '\r') {
      out += ' ';
      continue;
    }
    // Underscores inside a word (event_wait) are plain text in CommonMark; at its edges they emphasise.
    const bool edge_underscore = c == '_' && !(i > 0 && word(i - 1) && word(i + 1));
    // Backslash before what Markdown acts on inline: code, emphasis, tables, raw HTML and
    // autolinks (<), links and images ([, ], !), entities (&), strikethrough (~); and, first
    // in the text, what would start a block where the text starts a line (a quote >, a heading #).
    const bool first = out.find_first_not_of(' ') == std::string::npos;
    if (std::string_view("\\`*|<[]!&~").find(c) != std::string_view::npos || edge_underscore ||
        (first && (c == '>' || c == '#')))
      out += '\\';
    out += c;
  }
  return out;
}

namespace {
// The length of the longest run of `c` in s.
std::size_t longest_run(std::string_view s, char c) {
  std::size_t run = 0, longest = 0;
  for (char x : s) {
    run = x == c ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return longest;
}
}  // namespace

std::string md_code(std::string_view raw) {
  const std::string clean = plain(raw);
  const std::string_view s = clean;
  const std::string ticks(longest_run(s, '`') + 1, '`');
  std::string body;
  for (char c : s) {
    if (c == '\n' || c == '\r') body += ' ';
    else if (c == '|') body += "\\|";
    else body += c;
  }
  const bool space = !body.empty() && (body.front() == '`' || body.back() == '`');
  return ticks + (space ? " " : "") + body + (space ? " " : "") + ticks;
}

std::string md_fence(std::string_view raw, std::string_view info) {
  const std::string clean = plain(raw);
  const std::string_view s = clean;
  const std::string fence(std::max<std::size_t>(3, longest_run(s, '`') + 1), '`');
  return fence + std::string(info) + "\n" + trim_end(s) + "\n" + fence + "\n";
}

std::size_t width(std::string_view s) {
  std::size_t n = 0;
  for (char c : s)
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  return n;
}

std::string pad(std::string_view s, std::size_t w) {
  const std::size_t n = width(s);
  if (n >= w) return std::string(s);
  return std::string(s) + std::string(w - n, ' ');
}

std::string counts_line(const Summary& s) {
  std::string out = std::to_string(s.total) + (s.total == 1 ? " case" : " cases");
  std::string parts;
  for (Status st : kProblemsFirst) {
    if (const int n = s.of(st); n > 0) parts += (parts.empty() ? "" : ", ") + std::to_string(n) + " " + to_string(st);
  }
  return parts.empty() ? out : out + ": " + parts;
}

std::string driver_of(std::string_view name, std::string_view version) {
  std::string s(name);
  if (!version.empty()) s += (s.empty() ? "" : " ") + std::string(version);
  return s.empty() ? "(driver unknown)" : s;
}

std::string driver_of(const RunInfo& r) { return driver_of(r.driver_name, r.driver_version); }

std::string verdicts_line(const std::vector<ClauseInfo>& clauses) {
  std::string line;
  for (ClauseVerdict v : kVerdictsFirst) {
    for (const bool hardening : {false, true}) {
      if (hardening && v != ClauseVerdict::fail) continue;
      const auto n = std::count_if(clauses.begin(), clauses.end(), [&](const ClauseInfo& k) {
        return k.verdict == v && (v != ClauseVerdict::fail || k.hardening() == hardening);
      });
      if (n) line += (line.empty() ? "" : ", ") + std::to_string(n) + " " + (hardening ? "hardening" : to_string(v));
    }
  }
  return line;
}

std::string verdict_word(const ClauseInfo& k) {
  if (k.hardening() && k.verdict == ClauseVerdict::fail) return "hardening";
  if (k.hardening() && k.verdict == ClauseVerdict::xfail) return "xfail (hardening)";
  return to_string(k.verdict);
}

bool hardening_clause(std::string_view clause_id) noexcept { return clause_id.substr(0, 3) == "rb."; }

const char* failed_word(const Check& k) noexcept { return hardening_clause(k.clause) ? "hardening request" : "failed"; }

std::string decided_line(const ClauseInfo& k) {
  std::string s;
  auto add = [&](int n, const char* who) {
    if (n) s += (s.empty() ? "" : ", ") + std::string(who) + " " + std::to_string(n);
  };
  add(k.by_runtime, "runtime");
  add(k.by_adapter, "adapter");
  add(k.by_harness, "ipcheck");
  add(k.by_unknown, "unknown");
  return s.empty() ? "-" : s;
}

std::string decided_by(const Check& k) {
  switch (k.decided_by) {
    case Decider::runtime: return k.call.empty() ? "the runtime" : "the runtime (" + k.call + ")";
    case Decider::adapter: return "the adapter";
    case Decider::harness: return "ipcheck";
    case Decider::unknown: return "unknown";
  }
  return "unknown";
}

std::string devices_of(const RunInfo& r) {
  std::string s;
  if (r.devices.is_array())
    for (const auto& d : r.devices) {
      std::string name = d.is_object() && d.contains("name") && d["name"].is_string() ? d["name"].get<std::string>() : "?";
      s += (s.empty() ? "" : ", ") + name;
    }
  return s;
}

const char* status_color(Status s) noexcept {
  switch (s) {
    case Status::pass: return "#2e7d32";
    case Status::xfail: return "#00838f";
    case Status::fail: return "#d84315";
    case Status::leak: return "#ef6c00";
    case Status::timeout: return "#6a1b9a";
    case Status::crash: return "#b71c1c";
    case Status::skip: return "#78909c";
    case Status::incomplete: return "#455a64";
    case Status::error: return "#5d4037";
    case Status::flaky: return "#f9a825";
  }
  return "#000";
}

}  // namespace ipcheck::reports::text
