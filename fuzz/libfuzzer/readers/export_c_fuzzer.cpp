// libFuzzer target: the generator behind `ipcheck fuzz --export-c`. Any finding in (a
// reproducer, a finding file, a reproducer with its description beside it, or a campaign's
// results.json naming findings by id), and the program written must hold none of the
// finding's text as code or comment.
//
// The input is one JSON document, written to a scratch folder as the finding file; when it is
// an object {"repro": ..., "description": ...} the two are written as x.repro and x.json beside
// it (the description's id, detail and outcome are read from there); when it has a "fuzz"
// section, each of its first findings is exported by id (--results).
//
// Oracles, on every program written (check_program): the file is printable ASCII and newlines;
// it has no trigraph anywhere and no backslash-newline (a line splice) but on the lines the
// generator's own programs end so (the body's multi-line macros); no comment holds "/*";
// every word of every comment is a word of the comments the generator writes for its own
// reference findings (digits aside: the export a program derives from is named by its index),
// and every identifier and punctuator outside string literals is one those programs hold. A usage error (std::invalid_argument)
// or a file that cannot be written (std::runtime_error) is a clean refusal; anything else
// escapes.
//
// IPCHECK_EXPORT_C_KEEP=<folder> (the sample step of CTest's parser-fuzz:export_c,
// compile_export_c_sample.sh): every program that passes the oracles is also written there as
// <hash>.c, distinct programs only, at most IPCHECK_EXPORT_C_KEEP_MAX (default 20), so that a
// sample of them can be built with the command each program prints.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "export_c.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Lexed {
  std::set<std::string> tokens;  // identifiers and punctuators outside literals; a number is "0"
  std::set<std::string> words;   // the words of the comments (split at white space), digit runs as 0
  std::set<std::string> spliced;  // whole lines that end in a backslash (the body's macros have some)
  std::string problem;           // the first rule the text breaks ("" none)
};

// Digit runs as one 0: "producer.export[12]" and "producer.export[2]" are one word.
std::string digits_as_zero(const std::string& s) {
  std::string out;
  for (const char c : s)
    if (c < '0' || c > '9')
      out += c;
    else if (out.empty() || out.back() != '0')
      out += '0';
  return out;
}

void add_words(std::set<std::string>& words, const std::string& comment) {
  std::istringstream in(comment);
  for (std::string w; in >> w;) words.insert(digits_as_zero(w));
}

bool ident_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }

Lexed lex_tokens(const std::string& t, Lexed& l);

// A C lexer good enough for what the generator writes: comments, string and character
// literals, identifiers, numbers, and punctuators one character at a time.
Lexed lex(const std::string& t) {
  Lexed l;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const auto c = static_cast<unsigned char>(t[i]);
    if ((c < 0x20 && c != '\n') || c >= 0x7f) return l.problem = "a byte that is not printable ASCII at " + std::to_string(i), l;
    if (c == '\\' && i + 1 < t.size() && t[i + 1] == '\n') {
      const std::size_t from = t.rfind('\n', i);
      l.spliced.insert(t.substr(from == std::string::npos ? 0 : from + 1, i + 1 - (from == std::string::npos ? 0 : from + 1)));
    }
    if (c == '?' && i + 2 < t.size() && t[i + 1] == '?' && std::string("=(/)'<!>-").find(t[i + 2]) != std::string::npos)
      return l.problem = "a trigraph at " + std::to_string(i), l;
  }
  // Translation phase 2: splices removed before comments and literals are found.
  std::string spliced_out;
  for (std::size_t k = 0; k < t.size(); ++k)
    if (t[k] == '\\' && k + 1 < t.size() && t[k + 1] == '\n')
      ++k;
    else
      spliced_out += t[k];
  return lex_tokens(spliced_out, l);
}

Lexed lex_tokens(const std::string& t, Lexed& l) {
  std::size_t i = 0;
  while (i < t.size()) {
    const char c = t[i];
    if (c == '/' && i + 1 < t.size() && t[i + 1] == '*') {
      const std::size_t end = t.find("*/", i + 2);
      if (end == std::string::npos) return l.problem = "a comment that never ends", l;
      const std::string body = t.substr(i + 2, end - i - 2);
      if (body.find("/*") != std::string::npos) return l.problem = "'/*' inside a comment", l;
      add_words(l.words, body);
      i = end + 2;
    } else if (c == '/' && i + 1 < t.size() && t[i + 1] == '/') {
      const std::size_t end = t.find('\n', i);
      add_words(l.words, t.substr(i, end - i));
      i = end == std::string::npos ? t.size() : end;
    } else if (c == '"' || c == '\'') {
      std::size_t j = i + 1;
      while (j < t.size() && t[j] != c) {
        if (t[j] == '\n') return l.problem = "a literal broken by a newline", l;
        j += t[j] == '\\' ? 2 : 1;
      }
      if (j >= t.size()) return l.problem = "a literal that never ends", l;
      i = j + 1;
    } else if (ident_char(c)) {
      std::size_t j = i;
      while (j < t.size() && ident_char(t[j])) ++j;
      l.tokens.insert(c >= '0' && c <= '9' ? std::string("0") : digits_as_zero(t.substr(i, j - i)));
      i = j;
    } else {
      if (c != ' ' && c != '\n') l.tokens.insert(std::string(1, c));
      ++i;
    }
  }
  return l;
}

struct Scratch {
  fs::path dir;
  Scratch() {
    char tmpl[] = "/tmp/export_c_fuzzer.XXXXXX";
    if (!mkdtemp(tmpl)) std::abort();
    dir = tmpl;
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

Scratch& scratch() {
  static Scratch s;
  return s;
}

void write(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Exports; "" when the generator refused the finding (a usage error or an unwritable file).
std::string exported(const ipcheck::fuzz::ExportCOptions& o) {
  std::error_code ec;
  fs::remove(o.output, ec);
  try {
    (void)ipcheck::fuzz::export_c(o);
  } catch (const std::invalid_argument&) {
    return "";
  } catch (const std::runtime_error&) {
    return "";
  }
  return read(o.output);
}

std::string export_file(const fs::path& finding) {
  ipcheck::fuzz::ExportCOptions o;
  o.finding = finding.string();
  o.campaign_dir = scratch().dir.string();
  o.output = (scratch().dir / "program.c").string();
  return exported(o);
}

// The generator's own findings, one per program kind; their programs give the comments and
// tokens a program may hold.
const char* const kReferences[] = {
    R"({"schema": "ipcheck.fuzz-repro/1", "adapter": "cuda", "handle_layout": "cuda-ipc-mem/learned",
        "setup": "ipcheck.fuzz-setup/1", "adapter_options": {}, "driver": "580", "expect": "confused_deputy",
        "input": {"base": "producer.export[2]", "changes": [{"field": "offset", "value": "0x17a00"},
        {"field": "pid", "value": "0x360", "from": "producer.pid"}, {"field": "pid", "value": "0x360", "from": "dead.pid"},
        {"field": "size", "value": "0x1000", "from": "producer.export[0].size"}],
        "checksum": "as_changed", "length": 64, "tail": "", "descriptor": ""}, "bytes": ""})",
    R"({"schema": "ipcheck.fuzz-repro/1", "adapter": "cuda", "handle_layout": "opaque/64", "target": "event",
        "setup": "ipcheck.fuzz-setup/1", "adapter_options": {}, "driver": "580", "expect": "crash",
        "input": {"base": "worker.export[1]", "changes": [{"field": "bytes@8", "value": "0x1", "from": "worker.pid"}],
        "checksum": "as_changed", "length": 64, "tail": "", "descriptor": ""}, "bytes": ""})",
    R"({"schema": "ipcheck.fuzz-repro/1", "adapter": "ur", "handle_layout": "ur-umf-l0-v1/1",
        "setup": "ipcheck.fuzz-setup/1", "adapter_options": {"l0": "v1"}, "driver": "x", "expect": "hang",
        "input": {"base": "producer.revoked[0]", "changes": [{"field": "umf.offset", "value": "0x1",
        "from": "worker.export[0].umf.offset"}], "checksum": "as_changed", "length": 108, "tail": "", "descriptor": ""}, "bytes": ""})",
    R"({"schema": "ipcheck.fuzz-repro/1", "adapter": "ur", "handle_layout": "ur-umf-l0-v2/1",
        "setup": "ipcheck.fuzz-setup/1", "adapter_options": {"l0": "v2"}, "driver": "x", "expect": "unreadable_mapping",
        "input": {"base": "producer.export[0]", "changes": [{"field": "umf.offset", "value": "0x40000000"}],
        "checksum": "as_changed", "length": 120, "tail": "", "descriptor": ""}, "bytes": ""})",
    R"({"schema": "ipcheck.fuzz-repro/1", "adapter": "ur", "handle_layout": "ur-umf-cuda/1",
        "setup": "ipcheck.fuzz-setup/1", "adapter_options": {}, "driver": "x", "expect": "wrong_size",
        "input": {"base": "worker.export[0]", "changes": [{"field": "umf.offset", "value": "0x40"}],
        "checksum": "as_changed", "length": 104, "tail": "", "descriptor": ""}, "bytes": ""})",
};

struct Reference {
  std::set<std::string> tokens, words, spliced;
};

const Reference& reference() {
  static const Reference r = [] {
    Reference out;
    int programs = 0;
    for (const char* doc : kReferences) {
      const fs::path f = scratch().dir / "reference.repro";
      write(f, doc);
      const std::string program = export_file(f);
      if (program.empty()) continue;
      const Lexed l = lex(program);
      if (!l.problem.empty()) {
        std::fprintf(stderr, "export_c_fuzzer: a reference program breaks a rule: %s\n", l.problem.c_str());  // NOLINT
        std::abort();
      }
      out.tokens.insert(l.tokens.begin(), l.tokens.end());
      out.words.insert(l.words.begin(), l.words.end());
      out.spliced.insert(l.spliced.begin(), l.spliced.end());
      ++programs;
    }
    if (programs != static_cast<int>(std::size(kReferences))) {
      std::fprintf(stderr, "export_c_fuzzer: %d of %zu reference findings exported\n", programs, std::size(kReferences));
      std::abort();
    }
    return out;
  }();
  return r;
}

// The sample kept for building (IPCHECK_EXPORT_C_KEEP); nothing when the variable is unset.
void keep(const std::string& program) {
  static const char* const folder = std::getenv("IPCHECK_EXPORT_C_KEEP");
  if (!folder || !*folder) return;
  static const std::size_t most = [] {
    const char* v = std::getenv("IPCHECK_EXPORT_C_KEEP_MAX");
    return v && *v ? static_cast<std::size_t>(std::strtoul(v, nullptr, 10)) : std::size_t{20};
  }();
  static std::set<std::size_t> kept;
  const std::size_t h = std::hash<std::string>{}(program);
  if (kept.size() >= most || kept.count(h)) return;
  kept.insert(h);
  char name[32];
  std::snprintf(name, sizeof name, "%016zx.c", h);
  write(fs::path(folder) / name, program);
}

void check_program(const std::string& program) {
  if (program.empty()) return;
  const Lexed l = lex(program);
  const Reference& r = reference();
  std::string broken = l.problem;
  for (const auto& line : l.spliced)
    if (broken.empty() && !r.spliced.count(line)) broken = "a line splice the generator never writes: '" + line.substr(0, 200) + "'";
  for (const auto& w : l.words)
    if (broken.empty() && !r.words.count(w)) broken = "a comment word the generator never writes: '" + w.substr(0, 200) + "'";
  for (const auto& tok : l.tokens)
    if (broken.empty() && !r.tokens.count(tok)) broken = "a token the generator's programs never hold: '" + tok.substr(0, 200) + "'";
  if (!broken.empty()) {
    std::fprintf(stderr, "export_c_fuzzer: the exported program holds the finding's text as code: %s\n", broken.c_str());
    std::abort();
  }
  keep(program);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)reference();
  const std::string text(reinterpret_cast<const char*>(data), size);
  const fs::path dir = scratch().dir;
  const fs::path finding = dir / "finding.json";
  write(finding, text);
  check_program(export_file(finding));

  const json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return 0;
  // A reproducer with its description beside it.
  if (doc.contains("repro") && doc.contains("description")) {
    const fs::path repro = dir / "x.repro";
    write(repro, doc["repro"].dump());
    write(dir / "x.json", doc["description"].dump());
    check_program(export_file(repro));
  }
  // A campaign's results: its first findings, by id.
  if (doc.contains("fuzz") && doc["fuzz"].is_object() && doc["fuzz"].contains("findings") && doc["fuzz"]["findings"].is_array()) {
    int n = 0;
    for (const auto& x : doc["fuzz"]["findings"]) {
      if (++n > 3 || !x.is_object() || !x.contains("id") || !x["id"].is_string()) break;
      ipcheck::fuzz::ExportCOptions o;
      o.finding = x["id"].get<std::string>();
      o.results = finding.string();
      o.output = (dir / "program.c").string();
      check_program(exported(o));
    }
  }
  return 0;
}
