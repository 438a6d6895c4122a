#include "ipcheck/fuzz/canary.hpp"

#include <bit>
#include <cstring>

#include "ipcheck/fuzz/layout.hpp"

namespace ipcheck::fuzz {

namespace {
inline std::uint64_t word(std::uint64_t salt, std::uint64_t aligned_offset) noexcept { return salt + aligned_offset; }

// An 8-byte little-endian word, inline: canary_mismatch reads every word of every mapping a
// campaign judges (load_le, a call into another file, was 8% of a ref worker's time).
inline std::uint64_t le64(const std::byte* p) noexcept {
  std::uint64_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}
}  // namespace

void fill_canary(std::uint64_t salt, std::uint64_t offset, std::span<std::byte> out) noexcept {
  std::size_t i = 0;
  while (i < out.size()) {
    const std::uint64_t o = offset + i;
    const std::uint64_t aligned = o & ~7ull;
    const std::uint64_t w = word(salt, aligned);
    if ((o & 7) == 0 && out.size() - i >= 8) {
      store_le(out.data() + i, 8, w);
      i += 8;
    } else {
      out[i] = static_cast<std::byte>((w >> (8 * (o & 7))) & 0xff);
      ++i;
    }
  }
}

std::size_t canary_mismatch(std::uint64_t salt, std::uint64_t offset, std::span<const std::byte> got) noexcept {
  std::size_t i = 0;
  while (i < got.size()) {
    const std::uint64_t o = offset + i;
    const std::uint64_t aligned = o & ~7ull;
    const std::uint64_t w = word(salt, aligned);
    if ((o & 7) == 0 && got.size() - i >= 8) {
      if (le64(got.data() + i) != w) {
        for (std::size_t b = 0; b < 8; ++b)
          if (got[i + b] != static_cast<std::byte>((w >> (8 * b)) & 0xff)) return i + b;
      }
      i += 8;
    } else {
      if (got[i] != static_cast<std::byte>((w >> (8 * (o & 7))) & 0xff)) return i;
      ++i;
    }
  }
  return static_cast<std::size_t>(-1);
}

std::optional<Identified> identify(std::span<const CanaryAlloc> table, std::uint64_t address,
                                   std::span<const std::byte> got) noexcept {
  // Allocations start page-aligned in every process, so the address's alignment is the
  // offset's alignment: the first 8-aligned byte of `got` sits at an 8-aligned offset.
  const std::size_t skip = static_cast<std::size_t>((8 - (address & 7)) & 7);
  if (got.size() < skip + 16) return std::nullopt;
  const std::uint64_t w0 = load_le(got.data() + skip, 8);
  const std::uint64_t w1 = load_le(got.data() + skip + 8, 8);
  for (std::size_t a = 0; a < table.size(); ++a) {
    const std::uint64_t o = w0 - table[a].salt;
    if ((o & 7) != 0 || o >= table[a].size || o < skip) continue;
    if (w1 != word(table[a].salt, o + 8) && o + 8 < table[a].size) continue;
    return Identified{a, o - skip};
  }
  return std::nullopt;
}

}  // namespace ipcheck::fuzz
