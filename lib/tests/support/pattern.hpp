// Position-dependent fill patterns: every 8-byte word differs with its offset and the
// seed, so a mapping at a wrong offset, of a wrong object, or stale data never matches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ipcref_test {

inline std::uint64_t mix64(std::uint64_t x) noexcept {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The pattern word covering bytes [8 * index, 8 * index + 8).
inline std::uint64_t pattern_word(std::uint64_t seed, std::uint64_t index) noexcept {
  return mix64(seed * 0x100000001b3ull ^ index);
}

inline void fill_pattern(void* dst, std::size_t bytes, std::uint64_t seed) noexcept {
  auto* p = static_cast<unsigned char*>(dst);
  std::size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    const std::uint64_t w = pattern_word(seed, i / 8);
    std::memcpy(p + i, &w, 8);
  }
  if (i < bytes) {
    const std::uint64_t w = pattern_word(seed, i / 8);
    std::memcpy(p + i, &w, bytes - i);
  }
}

// Offset of the first byte that differs from the pattern, or SIZE_MAX when all match.
inline std::size_t find_mismatch(const void* src, std::size_t bytes, std::uint64_t seed) noexcept {
  const auto* p = static_cast<const unsigned char*>(src);
  for (std::size_t i = 0; i < bytes; i += 8) {
    const std::uint64_t w = pattern_word(seed, i / 8);
    const std::size_t n = bytes - i < 8 ? bytes - i : 8;
    if (std::memcmp(p + i, &w, n) != 0) {
      const auto* e = reinterpret_cast<const unsigned char*>(&w);
      for (std::size_t j = 0; j < n; ++j)
        if (p[i + j] != e[j]) return i + j;
    }
  }
  return SIZE_MAX;
}

}  // namespace ipcref_test
