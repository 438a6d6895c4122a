// Seeded, reproducible randomness for mutators: every execution draws from a generator
// seeded by (campaign seed, worker, execution index), so an input can be regenerated
// from those three numbers alone and a replaced worker resumes the same stream.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ipcheck::fuzz {

// SplitMix64 step: a good 64-bit mix; also used to derive seeds.
constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

constexpr std::uint64_t derive_seed(std::uint64_t a, std::uint64_t b) noexcept { return mix64(a ^ mix64(b)); }

// xoshiro256** (Blackman and Vigna).
class Rng {
 public:
  explicit constexpr Rng(std::uint64_t seed) noexcept {
    for (auto& s : s_) s = seed = mix64(seed);
  }
  constexpr std::uint64_t next() noexcept {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, n); n > 0.
  constexpr std::uint64_t below(std::uint64_t n) noexcept { return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64); }
  // True with probability num/den.
  constexpr bool chance(std::uint64_t num, std::uint64_t den) noexcept { return below(den) < num; }

 private:
  static constexpr std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4]{};
};

}  // namespace ipcheck::fuzz
