// The role side: what `ipcheck role ...` runs in each child process.
#pragma once

#include <string>
#include <vector>

namespace ipcheck {

// Entry point of a role process; args are the words after "role".
int role_main(const std::vector<std::string>& args);

// Case id the runner uses to ask a role process for adapter information.
inline constexpr const char* kInfoCase = "__info";

}  // namespace ipcheck
