#include "audit.hpp"

#include <dirent.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>

namespace ipcref_test {
namespace {

// AddressSanitizer maps memory for itself at will: its primary allocator maps size classes
// inside a fixed range as they fill (its quarantine keeps freed chunks out of reuse), and
// its internal allocators (stack depot, metadata) add anonymous read-write mappings as new
// call stacks appear. Those are the sanitizer's, never ipcref's: left out of the count.
// Sanitized builds therefore still count ipcref's memfd mappings and reservations (PROT_NONE)
// exactly, but not anonymous read-write ones (which the default build counts too).
bool sanitizer_owned(const std::string& line) {
#if defined(__SANITIZE_ADDRESS__) && defined(__x86_64__)
  constexpr std::uintptr_t kSpaceBegin = 0x600000000000ull, kSpaceEnd = 0x640000000000ull;
  const std::uintptr_t lo = std::strtoull(line.c_str(), nullptr, 16);
  const std::uintptr_t hi = std::strtoull(line.c_str() + line.find('-') + 1, nullptr, 16);
  if (lo >= kSpaceBegin && hi <= kSpaceEnd) return true;
  // "start-end perms offset dev inode [path]": anonymous when there is no path.
  std::istringstream fields(line);
  std::string range, perms, offset, dev, inode, path;
  fields >> range >> perms >> offset >> dev >> inode >> path;
  return perms == "rw-p" && path.empty();
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
    if (sanitizer_owned(line)) continue;
    ++a.mappings;
    a.mapping_lines.push_back(line);
    if (line.find("/memfd:ipcref-") != std::string::npos) ++a.ipcref_mappings;
  }
  return a;
}

std::string describe(const process_audit& a) {
  return std::to_string(a.descriptors) + " descriptors, " + std::to_string(a.mappings) + " mappings (" +
         std::to_string(a.ipcref_mappings) + " of ipcref objects)";
}

std::string describe_change(const process_audit& before, const process_audit& after) {
  std::string out = describe(before) + " -> " + describe(after);
  const std::set<std::string> was(before.mapping_lines.begin(), before.mapping_lines.end());
  const std::set<std::string> is(after.mapping_lines.begin(), after.mapping_lines.end());
  for (const std::string& l : is)
    if (!was.count(l)) out += "\n  + " + l;
  for (const std::string& l : was)
    if (!is.count(l)) out += "\n  - " + l;
  return out;
}

}  // namespace ipcref_test
