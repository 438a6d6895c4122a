// Shared by the vk cases: they run on the `vk` adapter only (other adapters skip them), and
// reach Vulkan-specific knobs through the adapter's native calls (mem_import, export_fd_info,
// cuda_import), never by building record bytes themselves.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "../common.hpp"

namespace ipcheck::catalog::vkcase {

inline constexpr const char* kOnlyVk = "a vk case: it checks Vulkan's external-memory rules on the vk adapter only";

// Each vk case also says so with needs(needs_adapter("vk", kOnlyVk)), so other adapters
// skip it before any role starts.
inline void only_vk(Role& r) {
  if (r.adapter_name() != "vk") r.skip(kOnlyVk);
}

inline std::string hex_bytes(std::span<const std::byte> b) {
  std::string s;
  char x[4];
  for (std::byte v : b) {
    std::snprintf(x, sizeof x, "%02x", static_cast<unsigned>(v));
    s += x;
  }
  return s;
}

// A duplicate of `fd` for a native call that may take ownership of it (-1 when fd is -1).
inline int dup_of(int fd) { return fd < 0 ? -1 : ::fcntl(fd, F_DUPFD_CLOEXEC, 0); }
inline bool is_open(int fd) { return fd >= 0 && ::fcntl(fd, F_GETFD) >= 0; }

}  // namespace ipcheck::catalog::vkcase
