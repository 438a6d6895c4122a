// The role side: what `ipcheck role ...` runs in each child process.
#pragma once

#include <string>
#include <vector>

namespace ipcheck {

// Entry point of a role process; args are the words after "role".
int role_main(const std::vector<std::string>& args);

// Case id the runner uses to ask a role process for adapter information.
inline constexpr const char* kInfoCase = "__info";

// The least a machine must allow ipcheck's processes: below these a run judges nothing
// (every case is `error`, naming the limit), since a role, or the driver under it, would
// fail for want of descriptors or threads and the failure would look like the driver's.
inline constexpr unsigned long kMinDescriptors = 128;
inline constexpr unsigned long kMinProcesses = 256;
// The memory limits that turn a driver's allocation into EFBIG or ENOMEM: the largest file
// (a memfd: ulimit -f), the address space (ulimit -v), a thread's stack (ulimit -s) and
// locked memory (ulimit -l). The catalog's largest object is 64 MiB; a role maps several.
inline constexpr unsigned long long kMinFileSize = 1ull << 30;       // 1 GiB
inline constexpr unsigned long long kMinAddressSpace = 16ull << 30;  // 16 GiB (GPU runtimes reserve more)
inline constexpr unsigned long long kMinStack = 1ull << 20;          // 1 MiB
inline constexpr unsigned long long kMinLockedMemory = 64ull << 10;  // 64 KiB
// Why this process's limits are below those ("" when they are not): names the limit, its
// value and the fix.
std::string limits_too_low();

}  // namespace ipcheck
