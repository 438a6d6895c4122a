#include "ipcheck/reports/files.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <algorithm>
#include <functional>
#include <system_error>
#include <vector>

namespace ipcheck::reports {

namespace fs = std::filesystem;

namespace {

// Closes a descriptor on every path; release() hands it over for a checked close.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

std::string folder_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

// What to do about a failed write, by its cause.
std::string fix_for(int err) {
  switch (err) {
    case ENOSPC:
    case EDQUOT:
      return "free some space there or choose another folder";
    case EFBIG:
      return "the file size limit is too low (ulimit -f); raise it";
    case EACCES:
    case EPERM:
    case EROFS:
      return "choose a folder you can write to";
    case ENOENT:
    case ENOTDIR:
      return "create the folder first, or choose an existing one";
    case EISDIR:
      return "it is a folder; give a file name";
    default:
      return "check the folder and the file system";
  }
}

std::string random_suffix() {
  unsigned char bytes[8];
  ssize_t got = ::getrandom(bytes, sizeof bytes, GRND_NONBLOCK);
  if (got != static_cast<ssize_t>(sizeof bytes)) {
    // No entropy yet (very early boot): fall back to the pid and the clock; O_EXCL still holds.
    const unsigned long long v = static_cast<unsigned long long>(::getpid()) * 0x9e3779b97f4a7c15ull ^
                                 static_cast<unsigned long long>(std::time(nullptr));
    std::memcpy(bytes, &v, sizeof bytes);
  }
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (unsigned char b : bytes) {
    s += hex[b >> 4];
    s += hex[b & 15];
  }
  return s;
}

// A temporary file beside `path`, created exclusively, never through a link.
int create_temp(const std::string& path, std::string& tmp) {
  const std::string dir = folder_of(path);
  const std::string base = fs::path(path).filename().string();
  for (int attempt = 0; attempt < 16; ++attempt) {
    tmp = (fs::path(dir) / ("." + base + "." + random_suffix() + ".tmp")).string();
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

[[noreturn]] void write_failed(const std::string& path, const std::string& step, int err) {
  throw FileError("cannot write '" + path + "': " + step + ": " + std::strerror(err) + "; " + fix_for(err) +
                  " (the previous file, if any, is unchanged)");
}

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

void write_file_atomic(const std::string& path, std::string_view content) {
  std::string tmp;
  Fd fd(create_temp(path, tmp));
  if (fd.get() < 0) write_failed(path, "creating a temporary file in '" + folder_of(path) + "'", errno);
  // From here on the temporary file goes away on every failure.
  auto fail = [&](const std::string& step, int err) {
    ::unlink(tmp.c_str());
    write_failed(path, step, err);
  };
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd.get(), content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("writing", errno);
    }
    if (n == 0) fail("writing", EIO);
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd.get()) != 0) fail("syncing to disk", errno);
  if (::close(fd.release()) != 0) fail("closing", errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("renaming '" + tmp + "' over it", errno);
  // The new name reaches the disk with the folder; a folder that cannot be synced (some
  // file systems refuse) still holds the complete file under its name.
  Fd dir(::open(folder_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() >= 0) (void)::fsync(dir.get());
}

std::string read_regular_file(const std::string& path, const std::string& what, std::size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for one.
  Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (fd.get() < 0) {
    const int err = errno;
    throw FileError("cannot read " + what + " '" + path + "': " + std::strerror(err) +
                    (err == ENOENT ? "; check the path" : "; check its permissions"));
  }
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0)
    throw FileError("cannot read " + what + " '" + path + "': " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    throw FileError(what + " '" + path + "' is " + kind_of(st.st_mode) + "; give a regular file");
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes)
    throw FileError(what + " '" + path + "' is " + std::to_string(st.st_size) + " bytes, more than the " +
                    std::to_string(max_bytes) + " this ipcheck reads; give the right file");
  std::string out;
  out.resize(static_cast<std::size_t>(st.st_size));
  std::size_t done = 0;
  for (;;) {
    if (done == out.size()) {
      if (out.size() > max_bytes)
        throw FileError(what + " '" + path + "' grew past " + std::to_string(max_bytes) + " bytes while being read");
      out.resize(out.size() + 4096);  // the file grew since fstat: read on, bounded
    }
    const ssize_t n = ::read(fd.get(), out.data() + done, out.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw FileError("cannot read " + what + " '" + path + "': " + std::strerror(errno));
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  out.resize(done);
  return out;
}

namespace {

// Where a parse stopped: "run.duration_s", "cases[3].checks[0].native".
struct JsonPathTracker {
  struct Frame {
    bool object = false;
    std::string key;
    std::size_t count = 0;
  };
  std::vector<Frame> frames;

  bool operator()(int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    switch (event) {
      case E::object_start:
        frames.push_back({true, "", 0});
        break;
      case E::array_start:
        frames.push_back({false, "", 0});
        break;
      case E::key:
        if (!frames.empty() && parsed.is_string()) frames.back().key = parsed.get<std::string>();
        break;
      case E::object_end:
      case E::array_end:
        if (!frames.empty()) frames.pop_back();
        [[fallthrough]];
      case E::value:
        if (!frames.empty() && !frames.back().object) ++frames.back().count;
        break;
    }
    return true;
  }

  std::string path() const {
    std::string s;
    for (const auto& f : frames) {
      if (f.object) s += (s.empty() ? "" : ".") + f.key;
      else s += "[" + std::to_string(f.count) + "]";
    }
    return s.empty() ? "the top level" : s;
  }
};

}  // namespace

namespace {

// The length of the well-formed UTF-8 sequence at s[i], or 0 when the byte there starts none.
std::size_t utf8_sequence(std::string_view s, std::size_t i) noexcept {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t n;
  unsigned char lo = 0x80, hi = 0xbf;  // the range of the second byte
  if (c >= 0xc2 && c <= 0xdf) n = 2;
  else if (c == 0xe0) n = 3, lo = 0xa0;
  else if (c >= 0xe1 && c <= 0xec) n = 3;
  else if (c == 0xed) n = 3, hi = 0x9f;  // no surrogates
  else if (c >= 0xee && c <= 0xef) n = 3;
  else if (c == 0xf0) n = 4, lo = 0x90;
  else if (c >= 0xf1 && c <= 0xf3) n = 4;
  else if (c == 0xf4) n = 4, hi = 0x8f;  // nothing past U+10FFFF
  else return 0;
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xbf) return 0;
  return n;
}

}  // namespace

std::string json_too_deep(std::string_view text, std::size_t max_depth) {
  std::size_t depth = 0, line = 1;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') ++line;
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return "byte " + std::to_string(i + 1) + " (line " + std::to_string(line) + ")";
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return {};
}

nlohmann::json parse_json_text(const std::string& text, const std::string& path, const std::string& what) {
  using nlohmann::json;
  // Depth first: nothing below may recurse over a document deeper than ipcheck ever writes.
  if (const std::string at = json_too_deep(text); !at.empty())
    throw FileError(what + " '" + path + "' nests objects and arrays deeper than " + std::to_string(kMaxJsonDepth) +
                    " levels (at " + at + "); ipcheck writes no such file: give the file ipcheck wrote");
  // Text that is not UTF-8 (another tool wrote the file): each bad byte is read as the text
  // \xNN (written \\xNN in the JSON), said once, never an error.
  if (!is_utf8(text)) {
    std::string fixed;
    for (std::size_t i = 0; i < text.size();) {
      const std::size_t n = utf8_sequence(text, i);
      if (n == 0) {
        fixed += "\\" + escape_invalid_utf8(text.substr(i, 1));
        ++i;
      } else {
        fixed.append(text, i, n);
        i += n;
      }
    }
    std::fprintf(stderr, "ipcheck: warning: %s '%s': text that is not UTF-8 is read with its bad bytes as \\xNN\n",
                 what.c_str(), escape_invalid_utf8(path).c_str());
    return parse_json_text(fixed, path, what);
  }
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw FileError(what + " '" + path + "' is not valid JSON: " + e.what() + "; give the file ipcheck wrote");
  } catch (const json::exception& e) {
    // A number beyond a double's range (1e999): find the field it was the value of.
    JsonPathTracker where;
    try {
      const json partial = json::parse(text, std::ref(where));  // stops where the first parse did
    } catch (const json::exception&) {
    }
    std::string detail = e.what();
    if (auto q = detail.find("number overflow"); q != std::string::npos) detail = detail.substr(q);
    throw FileError(what + " '" + path + "': field " + where.path() + ": " + detail +
                    " (a number must fit a double, at most 1.8e308); correct the value");
  }
}

nlohmann::json read_json_file(const std::string& path, const std::string& what, std::size_t max_bytes) {
  return parse_json_text(read_regular_file(path, what, max_bytes), path, what);
}


bool is_utf8(std::string_view s) noexcept {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string escape_invalid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  static const char* hex = "0123456789abcdef";
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence(s, i);
    if (n == 0) {
      const auto c = static_cast<unsigned char>(s[i]);
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::vector<std::string> escape_invalid_utf8(nlohmann::json& root) {
  using nlohmann::json;
  std::vector<std::string> where;
  // An explicit stack: a document may nest as deep as its producer made it.
  std::vector<std::pair<json*, std::string>> todo{{&root, ""}};
  while (!todo.empty()) {
    auto [j, path] = std::move(todo.back());
    todo.pop_back();
    if (j->is_string()) {
      const std::string& s = j->get_ref<const std::string&>();
      if (!is_utf8(s)) {
        *j = escape_invalid_utf8(s);
        where.push_back(path.empty() ? "the top level" : path);
      }
    } else if (j->is_object()) {
      std::vector<std::string> bad;
      for (const auto& [k, v] : j->items())
        if (!is_utf8(k)) bad.push_back(k);
      for (const auto& k : bad) {
        json v = std::move((*j)[k]);
        j->erase(k);
        std::string fixed = escape_invalid_utf8(k);
        while (j->contains(fixed)) fixed += "_";
        (*j)[fixed] = std::move(v);
        where.push_back((path.empty() ? "" : path + ".") + fixed + " (its name)");
      }
      std::vector<std::pair<json*, std::string>> children;
      for (auto it = j->begin(); it != j->end(); ++it)
        children.push_back({&it.value(), (path.empty() ? "" : path + ".") + it.key()});
      todo.insert(todo.end(), children.rbegin(), children.rend());
    } else if (j->is_array()) {
      for (std::size_t i = j->size(); i-- > 0;) todo.push_back({&(*j)[i], path + "[" + std::to_string(i) + "]"});
    }
  }
  return where;
}

std::string dump_json(const nlohmann::json& j, int indent, std::vector<std::string>* escaped) {
  try {
    return j.dump(indent);
  } catch (const nlohmann::json::type_error& e) {
    if (e.id != 316) throw;  // 316: a string that is not UTF-8
  }
  nlohmann::json copy = j;
  std::vector<std::string> where = escape_invalid_utf8(copy);
  if (escaped) escaped->insert(escaped->end(), where.begin(), where.end());
  return copy.dump(indent);
}

void warn_escaped(const std::string& file, const std::vector<std::string>& where) {
  if (where.empty()) return;
  std::string list;
  const std::size_t shown = std::min<std::size_t>(where.size(), 8);
  for (std::size_t i = 0; i < shown; ++i) list += (i ? ", " : "") + where[i];
  if (where.size() > shown) list += " and " + std::to_string(where.size() - shown) + " more";
  std::fprintf(stderr, "ipcheck: warning: %s: text that is not UTF-8 is written with its bad bytes as \\xNN: %s\n",
               escape_invalid_utf8(file).c_str(), escape_invalid_utf8(list).c_str());
}

void prepare_output_dir(const std::string& dir) {
  if (dir.empty()) throw FileError("the output folder is empty; give a folder name");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    const int err = ec.value();
    std::string cause = ec.message();
    if (err == EEXIST || err == ENOTDIR) cause = "a part of the path is a file, not a folder";
    throw FileError("cannot use '" + dir + "' for outputs: " + cause + "; " +
                    (err == EEXIST || err == ENOTDIR ? "give a folder path" : fix_for(err)));
  }
  if (!fs::is_directory(dir, ec))
    throw FileError("cannot use '" + dir + "' for outputs: it is not a folder; give a folder path");
  // A file created there proves the folder takes outputs (permissions, a read-only mount).
  std::string probe;
  Fd fd(create_temp((fs::path(dir) / "probe").string(), probe));
  if (fd.get() < 0) {
    const int err = errno;
    throw FileError("cannot use '" + dir + "' for outputs: cannot create a file there: " + std::strerror(err) + "; " +
                    fix_for(err));
  }
  ::unlink(probe.c_str());
}

std::string reproducer_path(const std::string& results, const std::string& finding, const std::string& named) {
  const fs::path folder = fs::path(results).parent_path();
  const fs::path p(named);
  bool inside = !named.empty() && p.is_relative() && !p.has_root_name() && p.extension() == ".repro";
  int depth = 0;
  for (const auto& part : p.lexically_normal()) {
    if (!inside) break;
    if (part == "..") inside = --depth >= 0;
    else if (part != "." && !part.empty()) ++depth;
  }
  const fs::path base = folder.empty() ? fs::path(".") : folder;
  const fs::path full = base / p;
  std::error_code ec;
  if (inside && fs::exists(full, ec)) {  // the folder's own links may lead out of it, too
    const auto rel = fs::weakly_canonical(full, ec).lexically_relative(fs::weakly_canonical(base, ec));
    inside = !ec && !rel.empty() && *rel.begin() != "..";
  }
  if (!inside)
    throw FileError("'" + escape_invalid_utf8(results) + "': fuzz finding " + escape_invalid_utf8(finding) +
                    " names reproducer '" + escape_invalid_utf8(named) +
                    "', not a *.repro inside the results' folder; ipcheck writes findings/<id>.repro there");
  return full.string();
}

}  // namespace ipcheck::reports
