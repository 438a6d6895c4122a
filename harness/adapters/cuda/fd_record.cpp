#include "fd_record.hpp"

#include <fcntl.h>
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace ipcheck::cuda_adapter {

namespace {

// Layout (little-endian host order; both ends run on one machine):
//   0 magic[8]  8 version u32  12 pid u32  16 fd i32  20 device u32
//  24 start_time u64  32 size u64  40 checksum u64 (FNV-1a of bytes 0..39)
constexpr std::size_t kChecksumAt = 40;

std::uint64_t fnv1a(std::span<const std::byte> bytes) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::byte b : bytes) {
    h ^= static_cast<std::uint8_t>(b);
    h *= 0x100000001b3ull;
  }
  return h;
}

template <class T>
void put(std::vector<std::byte>& out, std::size_t at, T v) {
  std::memcpy(out.data() + at, &v, sizeof v);
}

template <class T>
T get(std::span<const std::byte> in, std::size_t at) {
  T v;
  std::memcpy(&v, in.data() + at, sizeof v);
  return v;
}

}  // namespace

std::vector<std::byte> FdRecord::encode() const {
  std::vector<std::byte> out(kSize);
  std::memcpy(out.data(), kMagic, sizeof kMagic);
  put(out, 8, kVersion);
  put(out, 12, pid);
  put(out, 16, fd);
  put(out, 20, device);
  put(out, 24, start_time);
  put(out, 32, size);
  put(out, kChecksumAt, fnv1a(std::span<const std::byte>(out).first(kChecksumAt)));
  return out;
}

std::optional<FdRecord> FdRecord::decode(std::span<const std::byte> bytes, std::string& why) {
  if (bytes.size() != kSize) {
    why = "handle is " + std::to_string(bytes.size()) + " bytes, a cuda physical-memory record is " +
          std::to_string(kSize);
    return std::nullopt;
  }
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    why = "handle does not start with the record's magic 'IPCKCUFD'";
    return std::nullopt;
  }
  if (const auto v = get<std::uint32_t>(bytes, 8); v != kVersion) {
    why = "record version is " + std::to_string(v) + ", this adapter reads version " + std::to_string(kVersion);
    return std::nullopt;
  }
  if (get<std::uint64_t>(bytes, kChecksumAt) != fnv1a(bytes.first(kChecksumAt))) {
    why = "record checksum does not match its fields (corrupted or edited bytes)";
    return std::nullopt;
  }
  FdRecord r;
  r.pid = get<std::uint32_t>(bytes, 12);
  r.fd = get<std::int32_t>(bytes, 16);
  r.device = get<std::uint32_t>(bytes, 20);
  r.start_time = get<std::uint64_t>(bytes, 24);
  r.size = get<std::uint64_t>(bytes, 32);
  if (r.pid == 0 || r.fd < 0 || r.size == 0) {
    why = "record names pid " + std::to_string(r.pid) + ", fd " + std::to_string(r.fd) + ", size " +
          std::to_string(r.size) + ": each must be positive";
    return std::nullopt;
  }
  return r;
}

int ExportFdNumbers::place(ipcref::unique_fd& fd) {
  if (next_ == 0) {
    rlimit lim{};
    const rlim_t soft = ::getrlimit(RLIMIT_NOFILE, &lim) == 0 ? lim.rlim_cur : 1024;
    next_ = static_cast<int>(std::min<rlim_t>(soft / 2, 4096));
    end_ = static_cast<int>(std::min<rlim_t>(soft, 16384));
  }
  if (next_ < 64 || next_ >= end_) return 0;
  const int moved = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, next_);
  if (moved < 0) return errno == EINVAL || errno == EMFILE ? 0 : errno;
  next_ = moved + 1;
  fd.reset(moved);
  return 0;
}

std::uint64_t process_start_time(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return 0;
  // Field 2 (comm) may hold spaces and parentheses: count fields after the last ')'.
  const auto close = line.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i) {
    if (!(rest >> field)) return 0;
    if (i == 22) return std::strtoull(field.c_str(), nullptr, 10);
  }
  return 0;
}

}  // namespace ipcheck::cuda_adapter
