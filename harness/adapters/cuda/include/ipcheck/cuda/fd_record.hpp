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

}  // namespace ipcheck::cuda_adapter
