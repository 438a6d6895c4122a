#include "ipcheck/cli.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "ipcheck/reports/files.hpp"
#include "ipcheck/reports/render.hpp"
#include "ipcheck_version.h"

namespace ipcheck::cli {

namespace {
std::map<std::string, Command>& registry() {
  static std::map<std::string, Command> r;
  return r;
}

void print_top_help() {
  std::printf(
      "ipcheck %s: conformance, fuzzing and regression harness for GPU inter-process communication\n\n"
      "usage: ipcheck <command> [options]      ipcheck <command> --help\n\ncommands:\n",
      IPCHECK_VERSION);
  for (const auto& [name, c] : registry())
    if (!c.hidden) std::printf("  %-8s %s\n", name.c_str(), c.summary.c_str());
  std::printf("\nexit status: 0 every result as expected, 1 a result was not, 2 bad command line\n");
}
}  // namespace

void register_command(Command c) { registry()[c.name] = std::move(c); }
const std::map<std::string, Command>& commands() { return registry(); }

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // A write beyond the file size limit (ulimit -f) fails with EFBIG, named, instead of
  // killing ipcheck with its results unwritten. Not in a role (`role`, `fuzz-role`): there
  // SIGXFSZ keeps its default, so a driver's file that outgrows the limit stops the role
  // and the runner names the limit (error), instead of the driver failing with EFBIG (fail).
  const bool role = !args.empty() && (args[0] == "role" || args[0] == "fuzz-role");
  if (!role) ::signal(SIGXFSZ, SIG_IGN);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    if (args.size() >= 2) {
      auto it = registry().find(args[1]);
      if (it != registry().end()) return it->second.run({"--help"});
    }
    print_top_help();
    return args.empty() ? kUsage : kOk;
  }
  if (args[0] == "--version") {
    std::printf("ipcheck %s\n", IPCHECK_VERSION);
    return kOk;
  }
  auto it = registry().find(args[0]);
  if (it == registry().end()) {
    std::fprintf(stderr, "ipcheck: unknown command '%s'; run 'ipcheck --help' for the list\n", args[0].c_str());
    return kUsage;
  }
  // The environment is text from outside too: a variable that is not UTF-8 is said once (not
  // by the role processes, which inherit it), and whatever records text taken from it escapes it.
  if (!it->second.hidden)
    for (char** e = environ; e && *e; ++e)
      if (!reports::is_utf8(*e)) {
        const std::string entry = *e;
        std::fprintf(stderr,
                     "ipcheck: warning: environment variable %s is not UTF-8; text taken from it is recorded with its "
                     "bad bytes as \\xNN\n",
                     reports::escape_invalid_utf8(entry.substr(0, entry.find('='))).c_str());
      }
  const int status = it->second.run(std::vector<std::string>(args.begin() + 1, args.end()));
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  // A role has said everything on its channel and closed what it opened: it ends without
  // running the static destructors (the catalog's case definitions, the registries; the
  // harness bench's two-role overhead went from 1.24 to 1.20 ms). Sanitizer builds exit
  // normally: their leak checks run at exit.
  if (role) {
    std::fflush(nullptr);
    ::_exit(status);
  }
#endif
  return status;
}

int run_command(const std::string& name, const std::function<int()>& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    std::fprintf(stderr, "ipcheck %s: %s\nrun 'ipcheck %s --help' for usage\n", name.c_str(),
                 reports::terminal_text(e.what()).c_str(), name.c_str());
    return kUsage;
  } catch (const reports::FileError& e) {
    // An input that cannot be read or an output that cannot be written: named, exit 2.
    std::fprintf(stderr, "ipcheck %s: %s\n", name.c_str(), reports::terminal_text(e.what()).c_str());
    return kUsage;
  } catch (const std::exception& e) {
    // Never an abort: what no other handler expected is ipcheck's own failure, said as such.
    std::fprintf(stderr, "ipcheck %s: internal error: %s; please report it with the command line\n", name.c_str(),
                 reports::terminal_text(e.what()).c_str());
    return kInternal;
  }
}

Options::Options(std::string command, std::string synopsis, std::string description)
    : command_(std::move(command)), synopsis_(std::move(synopsis)), description_(std::move(description)) {}

Options& Options::flag(const std::string& name, const std::string& help) {
  specs_.push_back({name, "", help, "", false, false});
  return *this;
}
Options& Options::value(const std::string& name, const std::string& metavar, const std::string& help,
                        const std::string& fallback) {
  specs_.push_back({name, metavar, help, fallback, true, false});
  return *this;
}
Options& Options::multi(const std::string& name, const std::string& metavar, const std::string& help) {
  specs_.push_back({name, metavar, help, "", true, true});
  return *this;
}
Options& Options::positional(const std::string& metavar, const std::string& help, bool many, bool required) {
  positional_specs_.push_back({metavar, help, many, required});
  return *this;
}

const Options::Spec* Options::find(const std::string& name) const {
  for (const auto& s : specs_)
    if (s.name == name) return &s;
  return nullptr;
}

namespace {

// Text is checked at the boundary: an argument that is not UTF-8 is used as given (a path
// opens the file it names), and whatever records it (results, messages to the roles) writes
// its bad bytes as \xNN. Said once per argument; never an error.
void warn_if_not_utf8(const std::string& option, const std::string& value) {
  if (reports::is_utf8(value)) return;
  const std::string what = option.empty() ? "argument" : "option '" + option + "'";
  std::fprintf(stderr, "ipcheck: warning: %s '%s' is not UTF-8; it is used as given, and recorded with its bad bytes as \\xNN\n",
               what.c_str(), reports::escape_invalid_utf8(value).c_str());
}

}  // namespace

bool Options::parse(const std::vector<std::string>& args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::fputs(help().c_str(), stdout);
      return false;
    }
    if (a.rfind("-", 0) == 0 && a.size() > 1) {
      std::string name = a, val;
      bool inline_value = false;
      if (a.rfind("-j", 0) == 0 && a.size() > 2 && a[2] != '=') {  // -j4
        name = "-j";
        val = a.substr(2);
        inline_value = true;
      } else if (auto eq = a.find('='); eq != std::string::npos) {
        name = a.substr(0, eq);
        val = a.substr(eq + 1);
        inline_value = true;
      }
      if (name == "-j") name = "--jobs";
      const Spec* s = find(name);
      if (!s) throw UsageError("unknown option '" + name + "'");
      if (!s->takes_value) {
        if (inline_value) throw UsageError("option '" + name + "' takes no value");
        values_[name].push_back("1");
        continue;
      }
      if (!inline_value) {
        if (i + 1 >= args.size()) throw UsageError("option '" + name + "' needs a value (" + s->metavar + ")");
        val = args[++i];
      }
      if (!s->repeated && values_.count(name)) throw UsageError("option '" + name + "' is given twice");
      warn_if_not_utf8(name, val);
      values_[name].push_back(val);
      continue;
    }
    warn_if_not_utf8("", a);
    positional_values_.push_back(a);
  }
  std::size_t need = 0;
  bool many = false;
  for (const auto& p : positional_specs_) {
    need += p.required ? 1 : 0;
    many = many || p.many;
  }
  if (positional_values_.size() < need)
    throw UsageError("missing " + positional_specs_[positional_values_.size()].metavar);
  if (!many && positional_values_.size() > positional_specs_.size())
    throw UsageError("unexpected argument '" + positional_values_[positional_specs_.size()] + "'");
  return true;
}

bool Options::has(const std::string& name) const { return values_.count(name) > 0; }

std::string Options::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it != values_.end()) return it->second.back();
  const Spec* s = find(name);
  return s ? s->fallback : "";
}

std::vector<std::string> Options::all(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

std::optional<long long> parse_whole(const std::string& text) {
  const std::size_t digits = text.size() > 0 && text[0] == '-' ? 1 : 0;
  if (text.size() == digits || text.find_first_not_of("0123456789", digits) != std::string::npos) return std::nullopt;
  long long v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

std::optional<std::uint64_t> parse_unsigned(const std::string& text, bool hex_allowed) {
  const bool hex = hex_allowed && text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
  const std::string body = hex ? text.substr(2) : text;
  if (body.empty() || body.find_first_not_of(hex ? "0123456789abcdefABCDEF" : "0123456789") != std::string::npos)
    return std::nullopt;
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), v, hex ? 16 : 10);
  if (ec != std::errc() || end != body.data() + body.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_decimal(const std::string& text) {
  // Digits, one '.', an exponent: what from_chars reads, less inf, nan and hex floats.
  const std::size_t start = text.size() > 0 && text[0] == '-' ? 1 : 0;
  if (text.size() == start || !(std::isdigit(static_cast<unsigned char>(text[start])) || text[start] == '.'))
    return std::nullopt;
  if (text.find_first_not_of("0123456789.eE+-", start) != std::string::npos) return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

int Options::get_int(const std::string& name, int min, int max) const {
  const std::string v = get(name);
  if (const auto n = parse_whole(v); n && *n >= min && *n <= max) return static_cast<int>(*n);
  throw UsageError("option '" + name + "' is '" + v + "'; give a whole number from " + std::to_string(min) + " to " +
                   std::to_string(max) + " (decimal digits, no spaces)");
}

std::uint64_t Options::get_u64(const std::string& name, std::uint64_t min, std::uint64_t max, bool hex_allowed) const {
  const std::string v = get(name);
  if (const auto n = parse_unsigned(v, hex_allowed); n && *n >= min && *n <= max) return *n;
  throw UsageError("option '" + name + "' is '" + v + "'; give a whole number from " + std::to_string(min) + " to " +
                   std::to_string(max) + (hex_allowed ? " (decimal, or hex with 0x)" : " (decimal digits, no spaces)"));
}

double Options::get_double(const std::string& name, double min, double max) const {
  const std::string v = get(name);
  if (const auto n = parse_decimal(v); n && *n >= min && *n <= max) return *n;
  std::ostringstream s;
  s << "option '" << name << "' is '" << v << "'; give a number from " << min << " to " << max
    << " (decimal, no spaces)";
  throw UsageError(s.str());
}

std::map<std::string, std::string> Options::get_map(const std::string& name) const {
  std::map<std::string, std::string> out;
  for (const auto& kv : all(name)) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError("option '" + name + "' is '" + kv + "'; write key=value");
    if (!out.emplace(kv.substr(0, eq), kv.substr(eq + 1)).second)
      throw UsageError("option '" + name + "' gives '" + kv.substr(0, eq) + "' twice; give each key once");
  }
  return out;
}

std::string Options::help() const {
  std::ostringstream s;
  s << "usage: ipcheck " << command_ << " " << synopsis_ << "\n\n" << description_ << "\n";
  if (!positional_specs_.empty()) {
    s << "\narguments:\n";
    for (const auto& p : positional_specs_) s << "  " << p.metavar << std::string(std::max<int>(2, 26 - int(p.metavar.size())), ' ') << p.help << "\n";
  }
  s << "\noptions:\n";
  for (const auto& o : specs_) {
    std::string left = o.name + (o.takes_value ? " " + o.metavar : "");
    if (o.name == "--jobs") left = "-j, " + left;
    s << "  " << left << std::string(std::max<int>(2, 26 - int(left.size())), ' ') << o.help;
    if (!o.fallback.empty()) s << " (default: " << o.fallback << ")";
    if (o.repeated) s << " (repeatable)";
    s << "\n";
  }
  s << "  --help                    this text\n";
  return s.str();
}

}  // namespace ipcheck::cli
