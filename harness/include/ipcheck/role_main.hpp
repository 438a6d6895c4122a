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
// Why this process's limits are below those ("" when they are not): names the limit, its
// value and the fix.
std::string limits_too_low();

}  // namespace ipcheck
