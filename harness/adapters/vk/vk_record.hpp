// The bytes the `vk` adapter sends for an export. Vulkan's export is a POSIX descriptor
// (vkGetMemoryFdKHR, vkGetSemaphoreFdKHR), valid only in the exporter, and an import needs
// what the descriptor does not say: the allocation size and memory type index of the
// exported memory (they must match, VUID-VkMemoryAllocateInfo-allocationSize-01742), the
// handle type, and whether the allocation was dedicated to a buffer (and that buffer's
// size). The record carries them, with where to take the descriptor (exporter pid, its
// start time against pid reuse, the descriptor number) for pidfd_getfd, or to match the
// copy that came by SCM_RIGHTS, and the identity of the exported file (inode and device of
// the descriptor), which the importer checks before the driver sees the descriptor: a
// record names one export, never another allocation's descriptor. Layout name for fuzz/: "vk-fd/1".
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ipcheck::vk {

struct FdRecord {
  static constexpr char kMagic[8] = {'I', 'P', 'C', 'K', 'V', 'K', 'F', 'D'};
  static constexpr std::uint32_t kVersion = 1;
  static constexpr std::size_t kSize = 96;  // encoded bytes
  static constexpr std::size_t kChecksumAt = 88;
  static constexpr const char* kLayout = "vk-fd/1";

  enum Kind : std::uint32_t { memory = 1, semaphore = 2 };
  enum Flags : std::uint32_t { dedicated = 1u << 0, timeline = 1u << 1 };

  std::uint32_t kind = memory;
  std::uint32_t pid = 0;
  std::int32_t fd = -1;
  std::uint64_t start_time = 0;   // /proc/<pid>/stat field 22
  std::uint64_t size = 0;         // VkMemoryAllocateInfo::allocationSize of the export (0: semaphore)
  std::uint64_t offset = 0;       // where the exported pointer lies in the allocation
  std::uint32_t memory_type = 0;  // VkMemoryAllocateInfo::memoryTypeIndex (semaphore: VkSemaphoreType)
  std::uint32_t handle_type = 0;  // VkExternalMemoryHandleTypeFlagBits / VkExternalSemaphoreHandleTypeFlagBits
  std::uint32_t flags = 0;        // Flags
  std::uint32_t device = 0;       // physical device index in the exporter
  std::uint64_t buffer_size = 0;  // size of the buffer a dedicated allocation was made for
  std::uint64_t ino = 0;          // st_ino of the exported descriptor
  std::uint64_t dev = 0;          // st_dev of the exported descriptor

  std::vector<std::byte> encode() const;
  // The record in `bytes`, or nullopt with `why` naming the first thing wrong.
  static std::optional<FdRecord> decode(std::span<const std::byte> bytes, std::string& why);
};

}  // namespace ipcheck::vk
