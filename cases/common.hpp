// Vocabulary shared by case bodies: patterned buffers, handle transfer, size parameters.
#pragma once

#include <string>
#include <string_view>

#include "ipcheck/case.hpp"
#include "ipcheck/owned.hpp"

namespace ipcheck::catalog {

inline constexpr std::size_t kPage = 4096;
inline constexpr std::size_t kOddSize = 3 * 4096 + 123;  // not a page multiple: exposes rounding bugs
inline constexpr std::size_t k64MiB = 64ull << 20;

// Allocates `bytes` on `device`, fills it with pattern(seed); ends the role on failure.
Owned alloc_filled(Role& r, std::size_t bytes, std::uint64_t seed, std::string_view clause, int device = 0,
                   MemKind kind = MemKind::device);

// Writes pattern(seed) over [p, p + bytes).
bool fill(Role& r, DevPtr p, std::size_t bytes, std::uint64_t seed, std::string_view clause, const std::string& what);

// Checks [p, p + bytes) holds pattern(seed); names the first wrong offset on failure.
bool verify(Role& r, DevPtr p, std::size_t bytes, std::uint64_t seed, std::string_view clause, const std::string& what);

// Exports `p` with mem_get (ending the role on failure) and owns the export (put on drop).
Owned export_memory(Role& r, DevPtr p, Exported& out, std::string_view clause);

// Receives a handle sent with send_handle and opens it as memory; ends the role on failure.
Owned open_received(Role& r, const Received& h, std::string_view clause, const std::string& what, int device = 0);

// Skips the case unless the adapter has at least `n` devices.
void need_devices(Role& r, std::size_t n);

std::string hex(std::uint64_t v);
std::string size_name(std::size_t bytes);  // "4 KiB", "12411 B", "64 MiB"

}  // namespace ipcheck::catalog
