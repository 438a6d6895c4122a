#include "vk_record.hpp"

#include "ipcheck/adapter_toolkit.hpp"

#include <cstring>

namespace ipcheck::vk {

namespace {

// Layout (little-endian host order; both ends run on one machine):
//   0 magic[8]  8 version u32  12 kind u32  16 pid u32  20 fd i32  24 start_time u64
//  32 size u64  40 offset u64  48 memory_type u32  52 handle_type u32  56 flags u32
//  60 device u32  64 buffer_size u64  72 ino u64  80 dev u64  88 checksum u64 (FNV-1a of 0..87)
using toolkit::record::fnv1a;
using toolkit::record::get;
using toolkit::record::put;

}  // namespace

std::vector<std::byte> FdRecord::encode() const {
  std::vector<std::byte> out(kSize);
  std::memcpy(out.data(), kMagic, sizeof kMagic);
  put(out, 8, kVersion);
  put(out, 12, kind);
  put(out, 16, pid);
  put(out, 20, fd);
  put(out, 24, start_time);
  put(out, 32, size);
  put(out, 40, offset);
  put(out, 48, memory_type);
  put(out, 52, handle_type);
  put(out, 56, flags);
  put(out, 60, device);
  put(out, 64, buffer_size);
  put(out, 72, ino);
  put(out, 80, dev);
  put(out, kChecksumAt, fnv1a(std::span<const std::byte>(out).first(kChecksumAt)));
  return out;
}

std::optional<FdRecord> FdRecord::decode(std::span<const std::byte> bytes, std::string& why) {
  if (!toolkit::record::framed(bytes, kSize, kMagic, kVersion, kChecksumAt, "a vk record", why)) return std::nullopt;
  FdRecord r;
  r.kind = get<std::uint32_t>(bytes, 12);
  r.pid = get<std::uint32_t>(bytes, 16);
  r.fd = get<std::int32_t>(bytes, 20);
  r.start_time = get<std::uint64_t>(bytes, 24);
  r.size = get<std::uint64_t>(bytes, 32);
  r.offset = get<std::uint64_t>(bytes, 40);
  r.memory_type = get<std::uint32_t>(bytes, 48);
  r.handle_type = get<std::uint32_t>(bytes, 52);
  r.flags = get<std::uint32_t>(bytes, 56);
  r.device = get<std::uint32_t>(bytes, 60);
  r.buffer_size = get<std::uint64_t>(bytes, 64);
  r.ino = get<std::uint64_t>(bytes, 72);
  r.dev = get<std::uint64_t>(bytes, 80);
  if (r.kind != memory && r.kind != semaphore) {
    why = "record kind is " + std::to_string(r.kind) + ", expected 1 (memory) or 2 (semaphore)";
    return std::nullopt;
  }
  if (r.pid == 0 || r.fd < 0) {
    why = "record names pid " + std::to_string(r.pid) + ", fd " + std::to_string(r.fd) + ": each must be positive";
    return std::nullopt;
  }
  return r;
}

}  // namespace ipcheck::vk
