#include "ipcheck/handle_layout.hpp"

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <stdexcept>

#include "ipcref/record.hpp"

namespace ipcheck {
namespace {

FieldRole ipcref_role(const std::string& name) {
  static const std::map<std::string, FieldRole> roles = {
      {"magic", FieldRole::magic},   {"version", FieldRole::version}, {"kind", FieldRole::kind},
      {"guard_kind", FieldRole::guard_kind}, {"pid", FieldRole::pid}, {"fd", FieldRole::fd},
      {"guard", FieldRole::guard},   {"token", FieldRole::token},     {"size", FieldRole::size},
      {"offset", FieldRole::offset}, {"device", FieldRole::device},   {"slot", FieldRole::slot},
      {"checksum", FieldRole::checksum}};
  auto it = roles.find(name);
  return it == roles.end() ? FieldRole::opaque : it->second;
}

void reseal_ipcref(std::span<std::byte> data) {
  ipcref::record::reseal(std::span<std::byte, ipcref::record::size>(data.data(), ipcref::record::size));
}

// The fd-first convention keeps the record's checksum, computed with the magic in 0..3.
void reseal_ze_fd(std::span<std::byte> data) {
  ipcref::record::bytes copy;
  std::memcpy(copy.data(), data.data(), copy.size());
  store_le(copy.data(), 4, ipcref::record::magic);
  ipcref::record::reseal(copy);
  std::memcpy(data.data() + 56, copy.data() + 56, 8);
}

HandleLayout make_ipcref(const char* name) {
  HandleLayout l;
  l.name = name;
  l.knowledge = "exact";
  l.size = ipcref::record::size;
  for (const auto& f : ipcref::record::layout()) l.fields.push_back({f.name, f.offset, f.width, ipcref_role(f.name)});
  l.reseal_fn = reseal_ipcref;
  return l;
}

HandleLayout make_ze_fd() {
  HandleLayout l = make_ipcref("ze-ipcheck-fd/1");
  l.fields.front() = {"descriptor", 0, 4, FieldRole::descriptor};
  l.reseal_fn = reseal_ze_fd;
  return l;
}

// What is public of Intel's compute-runtime handles (level_zero/core/source/context/context_imp.h).
HandleLayout make_intel_fd() {
  HandleLayout l;
  l.name = "ze-intel-fd/1";
  l.knowledge = "partial";
  l.size = 64;
  l.fields = {{"handle", 0, 8, FieldRole::descriptor}, {"pool_offset", 8, 8, FieldRole::offset},
              {"type", 16, 1, FieldRole::type}};
  for (std::size_t at = 17; at < 64; at += 8) l.fields.push_back({"unused@" + std::to_string(at), at, std::min<std::size_t>(8, 64 - at), FieldRole::opaque});
  return l;
}

HandleLayout make_intel_opaque() {
  HandleLayout l;
  l.name = "ze-intel-opaque/1";
  l.knowledge = "partial";
  l.size = 64;
  l.fields = {{"handle", 0, 8, FieldRole::fd},        {"pool_offset", 8, 8, FieldRole::offset},
              {"process_id", 16, 4, FieldRole::pid},  {"type", 20, 1, FieldRole::type},
              {"memory_type", 21, 1, FieldRole::kind}};
  for (std::size_t at = 22; at < 64; at += 8) l.fields.push_back({"reserved@" + std::to_string(at), at, std::min<std::size_t>(8, 64 - at), FieldRole::opaque});
  return l;
}

// The vk adapter's record (harness/adapters/vk/vk_record.hpp): the descriptor comes by
// SCM_RIGHTS or from the exporter by pid + fd; what the import needs travels beside it.
void reseal_vk_fd(std::span<std::byte> data) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::size_t i = 0; i < 88; ++i) {
    h ^= static_cast<std::uint8_t>(data[i]);
    h *= 0x100000001b3ull;
  }
  store_le(data.data() + 88, 8, h);
}

HandleLayout make_vk_fd() {
  HandleLayout l;
  l.name = "vk-fd/1";
  l.knowledge = "exact";
  l.size = 96;
  l.fields = {{"magic", 0, 8, FieldRole::magic},         {"version", 8, 4, FieldRole::version},
              {"kind", 12, 4, FieldRole::kind},           {"pid", 16, 4, FieldRole::pid},
              {"fd", 20, 4, FieldRole::fd},               {"start_time", 24, 8, FieldRole::guard},
              {"size", 32, 8, FieldRole::size},           {"offset", 40, 8, FieldRole::offset},
              {"memory_type", 48, 4, FieldRole::slot},    {"handle_type", 52, 4, FieldRole::type},
              {"flags", 56, 4, FieldRole::opaque},    {"device", 60, 4, FieldRole::device},
              {"buffer_size", 64, 8, FieldRole::size},    {"ino", 72, 8, FieldRole::token},
              {"st_dev", 80, 8, FieldRole::opaque},       {"checksum", 88, 8, FieldRole::checksum}};
  l.reseal_fn = reseal_vk_fd;
  return l;
}

// FNV-1a 64 of data[0..at), stored little-endian at `at`.
void reseal_fnv_at(std::span<std::byte> data, std::size_t at) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::size_t i = 0; i < at; ++i) {
    h ^= static_cast<std::uint8_t>(data[i]);
    h *= 0x100000001b3ull;
  }
  store_le(data.data() + at, 8, h);
}
void reseal_cuda_fd_record(std::span<std::byte> data) { reseal_fnv_at(data, 40); }

// The cuda adapter's physical-memory record (harness/adapters/cuda/include/ipcheck/cuda/fd_record.hpp).
HandleLayout make_cuda_fd_record() {
  HandleLayout l;
  l.name = "cuda-fd-record/1";
  l.knowledge = "exact";
  l.size = 48;
  l.fields = {{"magic", 0, 8, FieldRole::magic},  {"version", 8, 4, FieldRole::version},
              {"pid", 12, 4, FieldRole::pid},     {"fd", 16, 4, FieldRole::fd},
              {"device", 20, 4, FieldRole::device}, {"start_time", 24, 8, FieldRole::guard},
              {"size", 32, 8, FieldRole::size},   {"checksum", 40, 8, FieldRole::checksum}};
  l.reseal_fn = reseal_cuda_fd_record;
  return l;
}

// The ze adapter's physical-memory record (PhysHandle in harness/adapters/ze/ze_adapter.cpp):
// no checksum; the inode and device bind it to the exported file.
HandleLayout make_ze_adapter_physical() {
  HandleLayout l;
  l.name = "ze-adapter-physical/1";
  l.knowledge = "exact";
  l.size = 64;
  l.fields = {{"magic", 0, 8, FieldRole::magic},   {"version", 8, 4, FieldRole::version},
              {"fd", 12, 4, FieldRole::fd},        {"pid", 16, 4, FieldRole::pid},
              {"zero", 20, 4, FieldRole::opaque},  {"size", 24, 8, FieldRole::size},
              {"ino", 32, 8, FieldRole::token},    {"dev", 40, 8, FieldRole::guard},
              {"reserved@48", 48, 8, FieldRole::opaque}, {"reserved@56", 56, 8, FieldRole::opaque}};
  return l;
}

// CUDA's 64-byte CUipcMemHandle as far as ipcheck learned it on driver 580.159.04 (H100):
// from the fuzzer's findings (reports/baselines/cuda-580.159.04-h100.json) and from handles
// of known allocations compared side by side. Small cuMemAlloc allocations are carved from a
// 2 MiB chunk, and the handle names the chunk: bytes 40..55 identify it, 28..31 hold the
// allocation's offset in it, 16..23 its size; 8..11 hold the exporter's pid; 0..7 and 24..27
// are the same in every handle of a process. An interior pointer exports its allocation
// (the base's offset and size). NVIDIA documents none of it.
HandleLayout make_cuda_ipc_mem() {
  HandleLayout l;
  l.name = "cuda-ipc-mem/learned";
  l.knowledge = "partial";
  l.size = 64;
  l.fields = {{"bytes@0", 0, 8, FieldRole::opaque},   {"pid", 8, 4, FieldRole::pid},
              {"bytes@12", 12, 4, FieldRole::opaque}, {"size", 16, 8, FieldRole::size},
              {"bytes@24", 24, 4, FieldRole::opaque}, {"offset", 28, 4, FieldRole::offset},
              {"bytes@32", 32, 8, FieldRole::opaque}, {"chunk", 40, 8, FieldRole::slot},
              {"chunk_handle", 48, 8, FieldRole::token}, {"bytes@56", 56, 8, FieldRole::opaque}};
  return l;
}

// Unified Runtime's memory handles (urIPCGetMemHandleExp): UMF's header (umf_ipc_data_t in
// UMF's src/ipc_internal.h: u64 handle_id, the base address, the exporter's pid, padding, the
// base allocation's size, the offset in it), then the memory provider's bytes.
void add_umf_header(HandleLayout& l) {
  l.fields.push_back({"umf.handle_id", 0, 8, FieldRole::token});
  l.fields.push_back({"umf.base", 8, 8, FieldRole::slot});
  l.fields.push_back({"umf.pid", 16, 4, FieldRole::pid});
  l.fields.push_back({"umf.pad@20", 20, 4, FieldRole::opaque});
  l.fields.push_back({"umf.base_size", 24, 8, FieldRole::size});
  l.fields.push_back({"umf.offset", 32, 8, FieldRole::offset});
}

// A Level Zero ze_ipc_mem_handle_t at `at`: the exporter's descriptor in its first bytes (the
// convention UMF's and UR's providers take with pidfd_getfd), the rest the driver's.
void add_ze_handle(HandleLayout& l, std::size_t at) {
  l.fields.push_back({"ze.fd", at, 4, FieldRole::fd});
  for (std::size_t k = 4; k < 64; k += 8)
    l.fields.push_back({"ze.bytes@" + std::to_string(k), at + k, std::min<std::size_t>(8, 64 - k), FieldRole::opaque});
}

// UR's Level Zero v1 adapter: its own L0 memory provider's data (int pid, then the 64-byte
// ze_ipc_mem_handle_t): 40 + 68 = 108 bytes.
HandleLayout make_ur_umf_l0_v1() {
  HandleLayout l;
  l.name = "ur-umf-l0-v1/1";
  l.knowledge = "partial";
  l.size = 108;
  add_umf_header(l);
  l.fields.push_back({"provider.pid", 40, 4, FieldRole::pid});
  add_ze_handle(l, 44);
  return l;
}

// UR's Level Zero v2 adapter: UMF's Level Zero provider's data (int pid, padding, size_t size,
// the 64-byte ze_ipc_mem_handle_t): 40 + 80 = 120 bytes.
HandleLayout make_ur_umf_l0_v2() {
  HandleLayout l;
  l.name = "ur-umf-l0-v2/1";
  l.knowledge = "partial";
  l.size = 120;
  add_umf_header(l);
  l.fields.push_back({"provider.pid", 40, 4, FieldRole::pid});
  l.fields.push_back({"provider.pad@44", 44, 4, FieldRole::opaque});
  l.fields.push_back({"provider.size", 48, 8, FieldRole::size});
  add_ze_handle(l, 56);
  return l;
}

// UR's CUDA adapter: UMF's CUDA provider's data is the CUipcMemHandle itself (40 + 64 = 104
// bytes), whose fields are those ipcheck learned (cuda-ipc-mem/learned), 40 bytes on.
HandleLayout make_ur_umf_cuda() {
  HandleLayout l;
  l.name = "ur-umf-cuda/1";
  l.knowledge = "partial";
  l.size = 104;
  add_umf_header(l);
  for (const auto& f : make_cuda_ipc_mem().fields) l.fields.push_back({"cuda." + f.name, 40 + f.offset, f.width, f.role});
  return l;
}

// UR's Level Zero v2 physical-memory handle (ZeIPCPhysMemHandleData in UR's
// source/adapters/level_zero/v2/physical_mem.hpp): the exporter's pid, its exported
// descriptor (taken with pidfd_getfd), the size. Nothing binds the descriptor to the export.
HandleLayout make_ur_l0_v2_physical() {
  HandleLayout l;
  l.name = "ur-l0-v2-physical/1";
  l.knowledge = "exact";
  l.size = 16;
  l.fields = {{"pid", 0, 4, FieldRole::pid}, {"fd", 4, 4, FieldRole::fd}, {"size", 8, 8, FieldRole::size}};
  return l;
}

HandleLayout make_opaque(std::size_t bytes) {
  HandleLayout l;
  l.name = "opaque/" + std::to_string(bytes);
  l.knowledge = "opaque";
  l.size = bytes;
  for (std::size_t at = 0; at < bytes; at += 8)
    l.fields.push_back({"bytes@" + std::to_string(at), at, std::min<std::size_t>(8, bytes - at), FieldRole::opaque});
  return l;
}

struct Registry {
  std::mutex lock;
  std::deque<HandleLayout> layouts;  // stable addresses
  Registry() {
    layouts.push_back(make_ipcref("ipcref/1"));
    layouts.push_back(make_ipcref("ze-ipcheck-opaque/1"));
    layouts.push_back(make_ze_fd());
    layouts.push_back(make_intel_fd());
    layouts.push_back(make_intel_opaque());
    layouts.push_back(make_vk_fd());
    layouts.push_back(make_cuda_fd_record());
    layouts.push_back(make_ze_adapter_physical());
    layouts.push_back(make_cuda_ipc_mem());
    layouts.push_back(make_ur_umf_l0_v1());
    layouts.push_back(make_ur_umf_l0_v2());
    layouts.push_back(make_ur_umf_cuda());
    layouts.push_back(make_ur_l0_v2_physical());
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

const char* role_name(FieldRole r) noexcept {
  switch (r) {
    case FieldRole::magic: return "magic";
    case FieldRole::version: return "version";
    case FieldRole::kind: return "kind";
    case FieldRole::guard_kind: return "guard_kind";
    case FieldRole::pid: return "pid";
    case FieldRole::fd: return "fd";
    case FieldRole::descriptor: return "descriptor";
    case FieldRole::guard: return "guard";
    case FieldRole::token: return "token";
    case FieldRole::size: return "size";
    case FieldRole::offset: return "offset";
    case FieldRole::device: return "device";
    case FieldRole::slot: return "slot";
    case FieldRole::type: return "type";
    case FieldRole::checksum: return "checksum";
    case FieldRole::opaque: return "opaque";
  }
  return "opaque";
}

std::uint64_t load_le(const std::byte* p, std::size_t width) noexcept {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < width; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return v;
}

void store_le(std::byte* p, std::size_t width, std::uint64_t v) noexcept {
  for (std::size_t i = 0; i < width; ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

void HandleLayout::reseal(std::span<std::byte> data) const {
  if (reseal_fn && data.size() >= size) reseal_fn(data);
}

bool HandleLayout::checksum_valid(std::span<const std::byte> data) const {
  if (!reseal_fn || data.size() < size) return false;
  std::byte copy[256];
  if (size > sizeof copy) return false;
  std::memcpy(copy, data.data(), size);
  reseal_fn(std::span<std::byte>(copy, size));
  return std::memcmp(copy, data.data(), size) == 0;
}

int HandleLayout::find(FieldRole role) const noexcept {
  for (std::size_t i = 0; i < fields.size(); ++i)
    if (fields[i].role == role) return static_cast<int>(i);
  return -1;
}

int HandleLayout::find(const std::string& field_name) const noexcept {
  for (std::size_t i = 0; i < fields.size(); ++i)
    if (fields[i].name == field_name) return static_cast<int>(i);
  return -1;
}

std::uint64_t HandleLayout::get(std::span<const std::byte> data, int i) const noexcept {
  const auto& f = fields[static_cast<std::size_t>(i)];
  return load_le(data.data() + f.offset, f.width);
}

void HandleLayout::set(std::span<std::byte> data, int i, std::uint64_t v) const noexcept {
  const auto& f = fields[static_cast<std::size_t>(i)];
  store_le(data.data() + f.offset, f.width, v);
}

std::uint64_t HandleLayout::fields_overlapping(std::size_t begin, std::size_t end) const noexcept {
  std::uint64_t mask = 0;
  for (std::size_t i = 0; i < fields.size() && i < 64; ++i)
    if (fields[i].offset < end && begin < fields[i].offset + fields[i].width) mask |= 1ull << i;
  return mask;
}

const HandleLayout& layout_for(const std::string& name, std::size_t handle_bytes) {
  auto& r = registry();
  std::lock_guard g(r.lock);
  for (const auto& l : r.layouts)
    if (l.name == name) return l;
  const std::string opaque = "opaque/" + std::to_string(handle_bytes);
  for (const auto& l : r.layouts)
    if (l.name == opaque) return l;
  if (handle_bytes == 0 || handle_bytes > 256)
    throw std::invalid_argument("handle layout '" + name + "' is unknown and its handles are " +
                                std::to_string(handle_bytes) + " bytes; fuzz/ mutates handles of 1..256 bytes");
  return r.layouts.emplace_back(make_opaque(handle_bytes));
}

std::vector<std::string> known_layouts() {
  auto& r = registry();
  std::lock_guard g(r.lock);
  std::vector<std::string> out;
  for (const auto& l : r.layouts)
    if (l.knowledge != "opaque") out.push_back(l.name);
  return out;
}

}  // namespace ipcheck
