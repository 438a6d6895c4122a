#include "ipcref/record.hpp"

#include <bit>
#include <cstring>

#include "text.hpp"

namespace ipcref::record {
namespace {

using text::cat;
using text::hex;

constexpr field_desc kLayout[] = {
    {"magic", 0, 4},   {"version", 4, 2}, {"kind", 6, 1},    {"guard_kind", 7, 1},
    {"pid", 8, 4},     {"fd", 12, 4},     {"guard", 16, 8},  {"token", 24, 8},
    {"size", 32, 8},   {"offset", 40, 8}, {"device", 48, 4}, {"slot", 52, 4},
    {"checksum", 56, 8},
};

template <class T>
void put_le(std::byte* at, T v) noexcept {
  for (std::size_t i = 0; i < sizeof(T); ++i) at[i] = static_cast<std::byte>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xff);
}

// One load on a little-endian host (GCC does not merge the byte loop into one: a decode
// was 350 instructions, on every open); the byte loop elsewhere.
template <class T>
T get_le(const std::byte* at) noexcept {
  if constexpr (std::endian::native == std::endian::little) {
    T v;
    std::memcpy(&v, at, sizeof v);
    return v;
  } else {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) v |= static_cast<std::uint64_t>(at[i]) << (8 * i);
    return static_cast<T>(v);
  }
}

// Largest exportable size; far above any real allocation, far below overflow.
constexpr std::uint64_t kMaxBytes = 1ull << 46;
// Linux PID_MAX_LIMIT.
constexpr std::uint32_t kMaxPid = 4194304;

}  // namespace

std::span<const field_desc> layout() noexcept { return kLayout; }

std::uint64_t checksum(std::span<const std::byte> first_56) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64
  // One bound, computed once (the loop with both tests was 450 instructions per open).
  const std::size_t n = first_56.size() < 56 ? first_56.size() : 56;
  const std::byte* p = first_56.data();
  for (std::size_t i = 0; i < n; ++i) {
    h ^= static_cast<std::uint64_t>(p[i]);
    h *= 0x100000001b3ull;
  }
  return h;
}

bytes encode(const fields& f) noexcept {
  bytes b{};
  put_le(&b[0], f.magic);
  put_le(&b[4], f.version);
  put_le(&b[6], static_cast<std::uint8_t>(f.object_kind));
  put_le(&b[7], static_cast<std::uint8_t>(f.guard_type));
  put_le(&b[8], f.pid);
  put_le(&b[12], static_cast<std::uint32_t>(f.fd));
  put_le(&b[16], f.guard);
  put_le(&b[24], f.token);
  put_le(&b[32], f.size);
  put_le(&b[40], f.offset);
  put_le(&b[48], f.device);
  put_le(&b[52], f.slot);
  put_le(&b[56], checksum(std::span(b).first(56)));
  return b;
}

fields decode(std::span<const std::byte> d) noexcept {
  fields f;
  if (d.size() < size) return f;
  f.magic = get_le<std::uint32_t>(&d[0]);
  f.version = get_le<std::uint16_t>(&d[4]);
  f.object_kind = static_cast<kind>(get_le<std::uint8_t>(&d[6]));
  f.guard_type = static_cast<guard_kind>(get_le<std::uint8_t>(&d[7]));
  f.pid = get_le<std::uint32_t>(&d[8]);
  f.fd = static_cast<std::int32_t>(get_le<std::uint32_t>(&d[12]));
  f.guard = get_le<std::uint64_t>(&d[16]);
  f.token = get_le<std::uint64_t>(&d[24]);
  f.size = get_le<std::uint64_t>(&d[32]);
  f.offset = get_le<std::uint64_t>(&d[40]);
  f.device = get_le<std::uint32_t>(&d[48]);
  f.slot = get_le<std::uint32_t>(&d[52]);
  f.checksum = get_le<std::uint64_t>(&d[56]);
  return f;
}

void reseal(std::span<std::byte, size> data) noexcept {
  put_le(&data[56], checksum(std::span<const std::byte>(data).first(56)));
}

const char* kind_name(kind k) noexcept {
  switch (k) {
    case kind::memory: return "memory";
    case kind::physical_memory: return "physical_memory";
    case kind::event: return "event";
  }
  return "unknown";
}

std::optional<std::string> check(std::span<const std::byte> data, kind expected, const char* size_clause) {
  if (data.size() != size)
    return cat("handle is ", data.size(), " bytes, expected ", size, " (clause ", size_clause, ")");
  const fields f = decode(data);
  if (f.magic != magic)
    return cat("handle magic is ", hex{f.magic, 8}, ", expected ", hex{magic, 8},
               " (\"IPCK\"): these bytes are not an ipcref handle");
  if (f.version == 0 || f.version > version)
    return cat("handle version ", f.version, " is not supported (this library reads version ", version,
               "): build producer and consumer from the same ipcref");
  const std::uint64_t sum = checksum(data.first(56));
  if (f.checksum != sum)
    return cat("handle checksum is ", hex{f.checksum, 16}, ", expected ", hex{sum, 16},
               ": the bytes were altered after get");
  if (f.object_kind != kind::memory && f.object_kind != kind::physical_memory && f.object_kind != kind::event)
    return cat("handle kind ", static_cast<unsigned>(f.object_kind), " is unknown (1 memory, 2 physical_memory, 3 event)");
  if (f.object_kind != expected)
    return cat("handle is a ", kind_name(f.object_kind), " handle, expected ", kind_name(expected),
               ": open it with ipc::", kind_name(f.object_kind), "::open");
  if (f.guard_type != guard_kind::pidfs_inode && f.guard_type != guard_kind::start_time)
    return cat("handle guard kind ", static_cast<unsigned>(f.guard_type), " is unknown (1 pidfs_inode, 2 start_time)");
  if (f.pid == 0 || f.pid > kMaxPid)
    return cat("handle names exporter pid ", f.pid, ", outside 1..", kMaxPid);
  if (f.fd < 0) return cat("handle names exporter descriptor ", f.fd, ", which is negative");
  if (f.size == 0) return std::string("handle exports 0 bytes");
  if (f.size > kMaxBytes || f.offset > kMaxBytes)
    return cat("handle size ", f.size, " / offset ", f.offset, " exceed the largest export (", kMaxBytes, " bytes)");
  if (f.token == 0) return std::string("handle export token is 0, which no export uses");
  return std::nullopt;
}

}  // namespace ipcref::record
