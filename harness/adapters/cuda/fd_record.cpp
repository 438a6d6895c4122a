#include "ipcheck/cuda/fd_record.hpp"

#include "ipcheck/adapter_toolkit.hpp"

#include <cstring>

namespace ipcheck::cuda_adapter {

namespace {

// Layout (little-endian host order; both ends run on one machine):
//   0 magic[8]  8 version u32  12 pid u32  16 fd i32  20 device u32
//  24 start_time u64  32 size u64  40 checksum u64 (FNV-1a of bytes 0..39)
constexpr std::size_t kChecksumAt = 40;

using toolkit::record::fnv1a;
using toolkit::record::get;
using toolkit::record::put;

}  // namespace

std::vector<std::byte> FdRecord::encode() const {
  std::vector<std::byte> out(kSize);
  std::memcpy(out.data(), kMagic, sizeof kMagic);
  put(out, 8, kVersion);
  put(out, 12, pid);
  put(out, 16, fd);
  put(out, 20, device);
  put(out, 24, start_time);
  put(out, 32, size);
  put(out, kChecksumAt, fnv1a(std::span<const std::byte>(out).first(kChecksumAt)));
  return out;
}

std::optional<FdRecord> FdRecord::decode(std::span<const std::byte> bytes, std::string& why) {
  if (!toolkit::record::framed(bytes, kSize, kMagic, kVersion, kChecksumAt, "a cuda physical-memory record", why))
    return std::nullopt;
  FdRecord r;
  r.pid = get<std::uint32_t>(bytes, 12);
  r.fd = get<std::int32_t>(bytes, 16);
  r.device = get<std::uint32_t>(bytes, 20);
  r.start_time = get<std::uint64_t>(bytes, 24);
  r.size = get<std::uint64_t>(bytes, 32);
  if (r.pid == 0 || r.fd < 0 || r.size == 0) {
    why = "record names pid " + std::to_string(r.pid) + ", fd " + std::to_string(r.fd) + ", size " +
          std::to_string(r.size) + ": each must be positive";
    return std::nullopt;
  }
  return r;
}

}  // namespace ipcheck::cuda_adapter
