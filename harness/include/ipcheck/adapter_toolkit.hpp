// The plumbing adapters share (harness/adapters/README.md), written once: taking an
// exporter's descriptor with pidfd_open + pidfd_getfd, with the one map from the OS's errno
// to an Errc (so the same failure is the same Errc on every adapter); the proof that a pid
// is still the exporter (its start time); export descriptor numbers that are not reused;
// and the byte helpers of the adapters' own handle records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ipcheck/adapter.hpp"
#include "ipcref/unique_fd.hpp"

namespace ipcheck::toolkit {

// ESRCH: exporter_gone. EPERM, EACCES: permission_denied. EMFILE, ENFILE, ENOMEM: exhausted.
// ENOSYS: not_implemented. Anything else (EBADF, EINVAL: a record naming nothing): invalid.
Errc errc_from_errno(int err) noexcept;
// "EBADF"; "errno" when the C library has no name for it.
const char* errno_name(int err) noexcept;
// A value as the adapters' messages write it: "0x1f", and "0" for zero.
std::string hex(std::uint64_t v);

// Start time of `pid` (/proc/<pid>/stat field 22, clock ticks since boot), or 0 when the
// process is not there.
std::uint64_t process_start_time(int pid);
// This process's start time (what an exporter writes into its records), read from /proc
// once: again only in a forked child (another pid) or while the read gives nothing.
std::uint64_t own_start_time();

// Where an exported descriptor lives: the exporter's pid and its descriptor number there,
// and, when the handle carries it, the exporter's start time (proof against pid reuse).
struct ExporterFd {
  int pid = 0;
  int fd = -1;
  std::optional<std::uint64_t> start_time;
};

// Takes the exporter's descriptor into `out` (pidfd_open, the start-time proof, then
// pidfd_getfd). A failure names the call, the errno and the fix, prefixed by `context`
// ("cuda: ", "phys_open: "); its Errc is errc_from_errno's, or exporter_gone for a reused
// pid. The Outcome is the adapter's (Outcome::failure): the OS answered, not the runtime.
Outcome take_exporter_fd(const ExporterFd& from, const std::string& context, ipcref::unique_fd& out);

// Moves exported descriptors to numbers this process never used for one before, so that a
// record whose export was put names a closed number (pidfd_getfd: EBADF) rather than a
// later export that took the lowest free number. Numbers climb from half the soft
// RLIMIT_NOFILE (at most 4096, keeping the kernel's table small); when the window is used
// up, or the limit is too small for one, a descriptor keeps its number (which may repeat).
class ExportFdNumbers {
 public:
  // Moves `fd` (closing the old number); 0, or the errno of a failure other than no room.
  int place(ipcref::unique_fd& fd);
  int next() const { return next_; }

 private:
  int next_ = 0, end_ = 0;
};

// Byte helpers of the adapters' records (host byte order: both ends run on one machine).
namespace record {

inline std::uint64_t fnv1a(std::span<const std::byte> bytes) {
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

// A record's frame: `size` bytes, the 8-byte `magic` first, a u32 version at 8, and at
// `checksum_at` the FNV-1a of the bytes before it. True when `bytes` has it; else `why` says
// what is wrong, naming the record (`what`: "a vk record").
inline bool framed(std::span<const std::byte> bytes, std::size_t size, const char (&magic)[8], std::uint32_t version,
                   std::size_t checksum_at, const std::string& what, std::string& why) {
  if (bytes.size() != size) {
    why = "handle is " + std::to_string(bytes.size()) + " bytes, " + what + " is " + std::to_string(size);
    return false;
  }
  if (std::memcmp(bytes.data(), magic, 8) != 0) {
    why = "handle does not start with the record's magic '" + std::string(magic, 8) + "'";
    return false;
  }
  if (const auto v = get<std::uint32_t>(bytes, 8); v != version) {
    why = "record version is " + std::to_string(v) + ", this adapter reads version " + std::to_string(version);
    return false;
  }
  if (get<std::uint64_t>(bytes, checksum_at) != fnv1a(bytes.first(checksum_at))) {
    why = "record checksum does not match its fields (corrupted or edited bytes)";
    return false;
  }
  return true;
}

}  // namespace record
}  // namespace ipcheck::toolkit
