// What this process holds, as the kernel sees it: for leak checks (clause rb.close.no_leak).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ipcref_test {

struct process_audit {
  std::size_t descriptors = 0;     // entries of /proc/self/fd (less the one used to list it)
  std::size_t mappings = 0;        // lines of /proc/self/maps (less a sanitizer allocator's, see audit.cpp)
  std::size_t ipcref_mappings = 0; // of them, mappings of ipcref memfds ("/memfd:ipcref-...")
  std::vector<std::string> mapping_lines;  // the counted lines, for describe_change
};

process_audit audit_self();
// "N descriptors, N mappings (N of ipcref objects)".
std::string describe(const process_audit& a);
// describe() of both, then the mapping lines that came and went.
std::string describe_change(const process_audit& before, const process_audit& after);

}  // namespace ipcref_test
