// Files ipcheck writes and reads: every output through one atomic write, every input opened
// as a regular file of bounded size. Errors name the file, the cause and the fix.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

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

// read_regular_file + parse_json_text.
nlohmann::json read_json_file(const std::string& path, const std::string& what, std::size_t max_bytes);

// Bounds for inputs (bytes).
inline constexpr std::size_t kMaxResultsBytes = std::size_t{512} << 20;
inline constexpr std::size_t kMaxSmallInputBytes = std::size_t{16} << 20;  // reproducers, expectations

// Makes `dir` ready to receive outputs: creates it (with its parents) when missing, and
// proves it is a folder this process can create files in. Throws FileError naming the
// folder, the cause and the fix.
void prepare_output_dir(const std::string& dir);

}  // namespace ipcheck::reports
