#include "ipcheck/expectations.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "ipcheck/reports/files.hpp"
#include "ipcheck/reports/version.hpp"

namespace ipcheck {

bool glob_match(const std::string& pattern, const std::string& text) {
  return ::fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
}

std::string ExpectationMatch::describe() const {
  std::string s;
  auto add = [&](const char* key, const std::string& v) {
    if (!v.empty()) s += (s.empty() ? "" : " ") + std::string(key) + "=" + v;
  };
  add("check", check);
  add("clause", clause);
  add("native", native);
  add("role", role);
  add("leak", leak);
  add("signal", signal);
  add("reason", reason);
  return s;
}

bool Expectation::hardening() const { return basis.rfind("ipcheck robustness profile", 0) == 0; }

std::string Expectation::explain() const {
  std::string s = reason;
  if (!basis.empty())
    s += (s.empty() ? "" : " ") + std::string(hardening() ? "[a hardening request, not a violation; basis: " : "[basis: ") +
         basis + "]";
  if (!link.empty()) s += (s.empty() ? "" : " ") + std::string("(") + link + ")";
  return s;
}

namespace {

struct Bound {
  std::string op;  // >=, >, <=, <, =; empty: `version` is a product word the version starts with
  std::string version;
};

std::vector<Bound> parse_range(const std::string& range) {
  std::vector<Bound> out;
  std::istringstream words(range);
  for (std::string w; words >> w;) {
    Bound b;
    // A leading word (lavapipe's "Mesa 22.3.6 (LLVM 15.0.6)"): the version must start with it.
    if (out.empty() && std::isalpha(static_cast<unsigned char>(w[0]))) {
      b.version = w;
      out.push_back(b);
      continue;
    }
    for (const char* op : {">=", "<=", ">", "<", "="})
      if (w.rfind(op, 0) == 0) {
        b.op = op;
        break;
      }
    b.version = w.substr(b.op.size());
    if (b.op.empty()) b.op = "=";
    if (b.version.empty() || !std::isdigit(static_cast<unsigned char>(b.version[0])))
      throw std::invalid_argument("driver range bound '" + w + "' is not an operator (>=, >, <=, <, =) and a version "
                                  "starting with a digit, nor a leading word the version starts with; write for "
                                  "example \">=580 <590\" or \"Mesa >=22\"");
    out.push_back(b);
  }
  return out;
}

}  // namespace

void check_version_range(const std::string& range) { (void)parse_range(range); }

bool version_in_range(const std::string& version, const std::string& range) {
  std::string_view v = version;
  for (const auto& b : parse_range(range)) {
    if (b.op.empty()) {
      if (v.substr(0, b.version.size()) != b.version ||
          (v.size() > b.version.size() && v[b.version.size()] != ' '))
        return false;
      v.remove_prefix(std::min(v.size(), b.version.size() + 1));
      continue;
    }
    const int c = reports::compare_versions(v, b.version);
    const bool ok = b.op == ">=" ? c >= 0 : b.op == ">" ? c > 0 : b.op == "<=" ? c <= 0 : b.op == "<" ? c < 0 : c == 0;
    if (!ok) return false;
  }
  return true;
}

namespace {

constexpr const char* kKeys = "check, clause, native, role, leak, signal, reason, driver";

// Splits off the next word; a word may be "double quoted" to hold spaces (after key=).
bool next_token(const std::string& line, std::size_t& at, std::string& out) {
  while (at < line.size() && std::isspace(static_cast<unsigned char>(line[at]))) ++at;
  if (at >= line.size()) return false;
  out.clear();
  bool quoted = false;
  for (; at < line.size(); ++at) {
    const char ch = line[at];
    if (ch == '"') {
      quoted = !quoted;
      continue;
    }
    if (!quoted && std::isspace(static_cast<unsigned char>(ch))) break;
    out += ch;
  }
  return true;
}

// "key=value" with an identifier key; nullopt for anything else.
std::optional<std::pair<std::string, std::string>> key_value(const std::string& token) {
  const auto eq = token.find('=');
  if (eq == std::string::npos || eq == 0) return std::nullopt;
  const std::string key = token.substr(0, eq);
  for (char ch : key)
    if (!std::islower(static_cast<unsigned char>(ch)) && ch != '_') return std::nullopt;
  return std::make_pair(key, token.substr(eq + 1));
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

// The @block the lines are in: what its lines share.
struct ExpectationBlock {
  bool open = false;
  std::string name, reason, link, driver, basis, at;
};

// A directive line: @block NAME, @reason TEXT, @basis TEXT, @link URL, @driver RANGE, @end.
void parse_expectation_directive(const std::string& body, const std::string& at, ExpectationBlock& block) {
  const auto sp = body.find_first_of(" \t");
  const std::string directive = body.substr(0, sp);
  const std::string value = sp == std::string::npos ? "" : trim(body.substr(sp));
  if (directive == "@block") {
    if (block.open) throw std::runtime_error(at + ": @block inside the block opened at " + block.at + "; close it with @end first");
    block = ExpectationBlock{true, value, "", "", "", "", at};
  } else if (directive == "@end") {
    if (!block.open) throw std::runtime_error(at + ": @end without an @block");
    block = ExpectationBlock{};
  } else if (directive == "@reason" || directive == "@link" || directive == "@driver" || directive == "@basis") {
    if (!block.open) throw std::runtime_error(at + ": " + directive + " outside a block; start one with @block");
    if (value.empty()) throw std::runtime_error(at + ": " + directive + " has no value");
    if (directive == "@reason") block.reason += (block.reason.empty() ? "" : " ") + value;
    if (directive == "@link") block.link = value;
    if (directive == "@basis") block.basis += (block.basis.empty() ? "" : " ") + value;
    if (directive == "@driver") {
      try {
        check_version_range(value);
      } catch (const std::invalid_argument& x) {
        throw std::runtime_error(at + ": " + x.what());
      }
      block.driver = value;
    }
  } else {
    throw std::runtime_error(at + ": unknown directive '" + directive + "'; known: @block, @reason, @basis, @link, @driver, @end");
  }
}

// The key=value matchers after the status, into `x`; returns where the reason starts (the
// first word that is not one).
std::size_t parse_expectation_matchers(const std::string& body, std::size_t pos, const std::string& at, Expectation& x) {
  std::string token;
  while (true) {
    std::size_t probe = pos;
    if (!next_token(body, probe, token)) return body.size();
    const auto kv = key_value(token);
    if (!kv) return pos;
    const auto& [key, value] = *kv;
    if (value.empty()) throw std::runtime_error(at + ": '" + key + "=' has no value");
    if (key == "check") x.match.check = value;
    else if (key == "clause") x.match.clause = value;
    else if (key == "native") x.match.native = value;
    else if (key == "role") x.match.role = value;
    else if (key == "leak") x.match.leak = value;
    else if (key == "signal") x.match.signal = value;
    else if (key == "reason") x.match.reason = value;
    else if (key == "driver") {
      try {
        check_version_range(value);
      } catch (const std::invalid_argument& err) {
        throw std::runtime_error(at + ": " + err.what());
      }
      x.driver = value;
    } else {
      throw std::runtime_error(at + ": unknown key '" + key + "'; known: " + kKeys +
                               " (the reason comes after them)");
    }
    pos = probe;
  }
}

// leak= goes with leak lines, signal= with crash lines; a flaky line takes only reason= and
// driver=.
void check_expectation_matchers(const Expectation& x, const std::string& at) {
  if ((!x.match.leak.empty() && x.status != reports::Status::leak) ||
      (!x.match.signal.empty() && x.status != reports::Status::crash))
    throw std::runtime_error(at + ": leak= goes with status leak and signal= with status crash");
  const ExpectationMatch& m = x.match;
  if (x.status == reports::Status::skip && (!m.check.empty() || !m.clause.empty() || !m.native.empty() ||
                                            !m.role.empty() || !m.leak.empty() || !m.signal.empty()))
    throw std::runtime_error(at + ": a skip line takes only reason= (the skip's reason) and driver=");
  if (x.status == reports::Status::flaky && (!m.check.empty() || !m.clause.empty() || !m.native.empty() ||
                                             !m.role.empty() || !m.leak.empty() || !m.signal.empty()))
    throw std::runtime_error(at + ": a flaky line takes only reason= (the failing attempt's reason) and driver=; "
                             "check=, clause=, native=, role=, leak= and signal= go with fail, leak, timeout or crash");
}

// An expectation line: <case or clause> <status> [key=value ...] <reason>, its block giving
// the reason's start, the link and the driver range it leaves out.
Expectation parse_expectation_line(const std::string& body, const std::string& at, const ExpectationBlock& block) {
  Expectation x;
  std::size_t pos = 0;
  std::string status;
  next_token(body, pos, x.pattern);
  if (!next_token(body, pos, status))
    throw std::runtime_error(at + ": '" + x.pattern + "' has no status; write: <case or clause> <status> [key=value ...] <reason>");
  auto s = reports::parse_status(status);
  if (!s || *s == reports::Status::pass || *s == reports::Status::xfail || *s == reports::Status::incomplete ||
      *s == reports::Status::error)
    throw std::runtime_error(at + ": status '" + status + "' cannot be expected; use fail, leak, timeout, crash, flaky "
                                  "or skip (a skip of the runtime's: lost coverage that is known)");
  x.status = *s;
  // Matchers, then the reason (the rest of the line).
  const std::size_t reason_at = parse_expectation_matchers(body, pos, at, x);
  check_expectation_matchers(x, at);
  x.reason = trim(body.substr(std::min(reason_at, body.size())));
  if (block.open) {
    x.block = block.name;
    x.reason = block.reason + (x.reason.empty() ? "" : (block.reason.empty() ? "" : "; ") + x.reason);
    x.link = block.link;
    x.basis = block.basis;
    if (x.driver.empty()) x.driver = block.driver;
  }
  if (x.reason.empty())
    throw std::runtime_error(at + ": '" + x.pattern + "' has no reason; say why the deviation is known, with a link " +
                             "(or put the line in an @block with @reason and @link)");
  x.where = at;
  return x;
}

}  // namespace

Expectations Expectations::parse(const std::string& text, const std::string& where) {
  Expectations e;
  e.path = where;
  std::istringstream in(text);
  std::string line;
  ExpectationBlock block;
  for (int n = 1; std::getline(in, line); ++n) {
    const std::string at = reports::escape_invalid_utf8(where) + ":" + std::to_string(n);
    if (!reports::is_utf8(line)) {
      line = reports::escape_invalid_utf8(line);
      e.warnings.push_back(at + ": the line is not UTF-8 (a Latin-1 file?); read with its bad bytes as \\xNN: " +
                           trim(line));
    }
    const std::string body = trim(line);
    if (body.empty() || body[0] == '#') continue;
    if (body[0] == '@') {
      parse_expectation_directive(body, at, block);
      continue;
    }
    e.entries_.push_back(parse_expectation_line(body, at, block));
  }
  if (block.open) throw std::runtime_error(block.at + ": @block is never closed; end it with @end");
  return e;
}

Expectations Expectations::load(const std::string& path) {
  std::string text;
  try {
    text = reports::read_regular_file(path, "expectations file", reports::kMaxSmallInputBytes);
  } catch (const reports::FileError& e) {
    throw std::runtime_error(e.what());
  }
  return parse(text, path);
}

}  // namespace ipcheck
