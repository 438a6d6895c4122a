#include "audit.hpp"

#include <dirent.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <stdexcept>

namespace ipcref_test {
namespace {

// AddressSanitizer's primary allocator maps its size classes inside a fixed range as they
// fill (its quarantine keeps freed chunks out of reuse), so mappings there come and go with
// any allocation. They are the sanitizer's, never ipcref's: left out of the count.
bool sanitizer_owned(const std::string& line) {
#if defined(__SANITIZE_ADDRESS__) && defined(__x86_64__)
  constexpr std::uintptr_t kSpaceBegin = 0x600000000000ull, kSpaceEnd = 0x640000000000ull;
  const std::uintptr_t lo = std::strtoull(line.c_str(), nullptr, 16);
  const std::uintptr_t hi = std::strtoull(line.c_str() + line.find('-') + 1, nullptr, 16);
  return lo >= kSpaceBegin && hi <= kSpaceEnd;
#else
  (void)line;
  return false;
#endif
}

}  // namespace

process_audit audit_self() {
  process_audit a;
  {
    std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir("/proc/self/fd"), ::closedir);
    if (!dir) throw std::runtime_error("audit: cannot list /proc/self/fd");
    while (const dirent* e = ::readdir(dir.get()))
      if (e->d_name[0] != '.') ++a.descriptors;
    --a.descriptors;  // the directory's own descriptor
  }
  std::ifstream maps("/proc/self/maps");
  if (!maps) throw std::runtime_error("audit: cannot read /proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    if (!sanitizer_owned(line)) ++a.mappings;
    if (line.find("/memfd:ipcref-") != std::string::npos) ++a.ipcref_mappings;
  }
  return a;
}

std::string describe(const process_audit& a) {
  return std::to_string(a.descriptors) + " descriptors, " + std::to_string(a.mappings) + " mappings (" +
         std::to_string(a.ipcref_mappings) + " of ipcref objects)";
}

}  // namespace ipcref_test
