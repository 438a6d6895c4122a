// Canaries: every allocation of a campaign (exported or decoy) is filled with its own
// pattern, so whatever an open maps can be named from its bytes alone: which allocation,
// from which offset. The 8-byte word at allocation offset o (a multiple of 8) is
// salt + o, little-endian; salts are random per allocation, so the pattern is invertible
// and no two allocations share a word in practice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ipcheck::fuzz {

struct Range {
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  friend bool operator==(const Range&, const Range&) = default;
};

struct CanaryAlloc {
  std::string name;             // "producer.alloc[3]"
  std::uint64_t salt = 0;
  std::uint64_t size = 0;
  bool decoy = false;           // never exported: mapping it is a confused deputy
  std::vector<Range> live;      // exports that are live during the campaign
  std::vector<Range> revoked;   // exports put before the campaign (stale handles)
};

// Writes the pattern of `salt` for allocation bytes [offset, offset + out.size()).
void fill_canary(std::uint64_t salt, std::uint64_t offset, std::span<std::byte> out) noexcept;
// Offset into `got` of the first byte that differs from the pattern, or npos.
std::size_t canary_mismatch(std::uint64_t salt, std::uint64_t offset, std::span<const std::byte> got) noexcept;

struct Identified {
  std::size_t alloc = 0;       // index in the table
  std::uint64_t offset = 0;    // allocation offset of got[0]
};

// Names the allocation and offset that `got` (at least 24 bytes read from `address`)
// comes from: the first 8-aligned words must be two consecutive words of one pattern.
std::optional<Identified> identify(std::span<const CanaryAlloc> table, std::uint64_t address,
                                   std::span<const std::byte> got) noexcept;

}  // namespace ipcheck::fuzz
