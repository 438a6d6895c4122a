// Where ipcheck finds what travels with it: relative to its own executable (/proc/self/exe),
// so the same lookups serve the build folder and an installed prefix (cmake/IpcheckLayout.cmake):
//   <prefix>/bin/ipcheck
//   <prefix>/lib/ipcheck/    programs ipcheck execs (ipcheck-role, the bench programs), libze_ipcheck.so.1
//   <prefix>/share/ipcheck/  expectations/, baselines/
// In the build folder every program is beside ipcheck in <build>/bin, and the expectations
// are in <build>/share/ipcheck/expectations.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace ipcheck {

// <dir of this executable>/../share/ipcheck (it may not exist).
std::filesystem::path data_dir();

// Where a program that travels with ipcheck may be, in the order looked: beside this
// executable (the build folder), then <dir of this executable>/../lib/ipcheck (installed).
std::vector<std::filesystem::path> helper_program_places(const std::string& name);
// The first of those places that holds an executable file, or "" if none does.
std::string find_helper_program(const std::string& name);

}  // namespace ipcheck
