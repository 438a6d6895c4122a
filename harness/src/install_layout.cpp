#include "ipcheck/install_layout.hpp"

#include <unistd.h>

#include "ipcheck/spawn.hpp"

// From bin/ to lib/ipcheck/ and share/ipcheck/: set by cmake/IpcheckLayout.cmake.
#ifndef IPCHECK_REL_PKGLIBDIR
#error "IPCHECK_REL_PKGLIBDIR is set by the build (cmake/IpcheckLayout.cmake)"
#endif
#ifndef IPCHECK_REL_DATADIR
#error "IPCHECK_REL_DATADIR is set by the build (cmake/IpcheckLayout.cmake)"
#endif

namespace ipcheck {

namespace fs = std::filesystem;

namespace {
// /proc/self/exe is the real path (links resolved), so ".." is the prefix.
fs::path executable_dir() { return fs::path(self_executable()).parent_path(); }
}  // namespace

fs::path data_dir() { return (executable_dir() / IPCHECK_REL_DATADIR).lexically_normal(); }

std::vector<fs::path> helper_program_places(const std::string& name) {
  const fs::path dir = executable_dir();
  return {dir / name, (dir / IPCHECK_REL_PKGLIBDIR / name).lexically_normal()};
}

std::string find_helper_program(const std::string& name) {
  for (const auto& p : helper_program_places(name)) {
    std::error_code ec;
    if (fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return {};
}

}  // namespace ipcheck
