// Files ipcheck writes and reads: every output through one atomic write, every input opened
// as a regular file of bounded size. Errors name the file, the cause and the fix.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ipcheck::reports {

// A file that cannot be written or read as asked. Commands report it with exit 2.
class FileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Writes `content` to `path` atomically: a temporary file created exclusively (O_EXCL,
// O_NOFOLLOW, a random name) in the target folder, written, fsync'ed and closed with every
// error checked, then renamed over `path`. On any failure the temporary file is removed,
// the previous `path` is left as it was, and FileError names the file and the cause.
void write_file_atomic(const std::string& path, std::string_view content);

// The whole of `path`, which must be a regular file of at most `max_bytes` bytes. It is
// opened without blocking (a FIFO never hangs the reader) and checked with fstat before a
// byte is read. `what` names the file's role in messages ("results file", "reproducer").
std::string read_regular_file(const std::string& path, const std::string& what, std::size_t max_bytes);

// Parses `text` (read from `path`) as JSON. Throws FileError naming the file and the
// problem: the position of a syntax error, or the field whose number is out of range.
nlohmann::json parse_json_text(const std::string& text, const std::string& path, const std::string& what);

// How deep a JSON document ipcheck reads may nest (objects and arrays). Every file ipcheck
// writes stays far below (a results file nests about 8 levels); a deeper one is refused by
// parse_json_text before it is parsed, naming the file and where the nesting passed the limit,
// so that no reader recurses without bound (a copy, a dump, a renderer's walk).
inline constexpr std::size_t kMaxJsonDepth = 128;

// The nesting check alone: "" when `text` nests at most `max_depth` levels, else where it
// went deeper ("byte 4100 (line 1)"). Brackets inside strings do not count.
std::string json_too_deep(std::string_view text, std::size_t max_depth = kMaxJsonDepth);

// read_regular_file + parse_json_text.
nlohmann::json read_json_file(const std::string& path, const std::string& what, std::size_t max_bytes);

// A results file's fuzz finding `reproducer` (`named`, read from the file `results`): a
// `*.repro` path relative to the results' folder that stays inside it: lexically (no
// absolute path, no `..` that leaves the folder: "findings/x.repro" yes, "../x.repro" no)
// and, where it exists, once its links are resolved. Returns the path to open (the folder
// joined with it); throws FileError naming the file, the finding, the value and the fix.
std::string reproducer_path(const std::string& results, const std::string& finding, const std::string& named);

// Bounds for inputs (bytes).
inline constexpr std::size_t kMaxResultsBytes = std::size_t{512} << 20;
inline constexpr std::size_t kMaxSmallInputBytes = std::size_t{16} << 20;  // reproducers, expectations

// ---- Text that must be UTF-8 (JSON, HTML, XML): checked where it crosses into a document.

// Whether `s` is well-formed UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF).
bool is_utf8(std::string_view s) noexcept;
// `s` with each byte that is not part of a well-formed UTF-8 sequence written as \xNN
// (a backslash, 'x', two hex digits); well-formed text is returned unchanged.
std::string escape_invalid_utf8(std::string_view s);
// Escapes every string (and object key) of `j` in place that is not UTF-8, as above;
// returns where each was found ("run.environment.LANG", "cases[2].reason"), in document order.
std::vector<std::string> escape_invalid_utf8(nlohmann::json& j);
// j.dump(indent) that never throws on text that is not UTF-8: such text is escaped (a copy
// of `j` is made only then) and, when `escaped` is given, where it was is appended there.
std::string dump_json(const nlohmann::json& j, int indent = -1, std::vector<std::string>* escaped = nullptr);

// Says on standard error, once per file written, that text in it was not UTF-8 and where
// ("ipcheck: warning: run/results.json: text that is not UTF-8 is written with its bytes as
// \xNN: run.out, cases[3].reason"); never fatal.
void warn_escaped(const std::string& file, const std::vector<std::string>& where);

// Makes `dir` ready to receive outputs: creates it (with its parents) when missing, and
// proves it is a folder this process can create files in. Throws FileError naming the
// folder, the cause and the fix.
void prepare_output_dir(const std::string& dir);

}  // namespace ipcheck::reports
