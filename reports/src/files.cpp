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

nlohmann::json parse_json_text(const std::string& text, const std::string& path, const std::string& what) {
  using nlohmann::json;
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

}  // namespace ipcheck::reports
