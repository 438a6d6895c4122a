// The bytes the `cuda` adapter sends for a physical-memory export. CUDA's shareable handle
// for cuMemCreate memory is a POSIX file descriptor, valid only in the exporter; the record
// says where to take it (exporter pid, its start time against pid reuse, the fd number)
// and what it holds (size, device), so the importer can fetch it with pidfd_getfd or
// match it with the copy that came by SCM_RIGHTS.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ipcref/unique_fd.hpp"

namespace ipcheck::cuda_adapter {

struct FdRecord {
  static constexpr char kMagic[8] = {'I', 'P', 'C', 'K', 'C', 'U', 'F', 'D'};
  static constexpr std::uint32_t kVersion = 1;
  static constexpr std::size_t kSize = 48;  // encoded bytes

  std::uint32_t pid = 0;
  std::int32_t fd = -1;
  std::uint64_t start_time = 0;  // /proc/<pid>/stat field 22, clock ticks since boot
  std::uint64_t size = 0;        // bytes given to cuMemCreate
  std::uint32_t device = 0;      // CUDA ordinal of the exporting device

  std::vector<std::byte> encode() const;
  // The record in `bytes`, or nullopt with `why` naming the first thing wrong.
  static std::optional<FdRecord> decode(std::span<const std::byte> bytes, std::string& why);
};

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

// Start time of `pid` (/proc/<pid>/stat field 22), or 0 when the process is not there.
std::uint64_t process_start_time(int pid);

}  // namespace ipcheck::cuda_adapter
