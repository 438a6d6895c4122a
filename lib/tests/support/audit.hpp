// What this process holds, as the kernel sees it: for leak checks (clause rb.close.no_leak).
#pragma once

#include <cstddef>
#include <string>

namespace ipcref_test {

struct process_audit {
  std::size_t descriptors = 0;     // entries of /proc/self/fd (less the one used to list it)
  std::size_t mappings = 0;        // lines of /proc/self/maps (less a sanitizer allocator's, see audit.cpp)
  std::size_t ipcref_mappings = 0; // of them, mappings of ipcref memfds ("/memfd:ipcref-...")
  friend bool operator==(const process_audit&, const process_audit&) = default;
};

process_audit audit_self();
std::string describe(const process_audit& a);

}  // namespace ipcref_test
