#include "ipcheck/runtime_library.hpp"

#include <dlfcn.h>
#include <link.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

namespace ipcheck::toolkit {

std::string loaded_path(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (!handle || ::dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_name || !*map->l_name) return fallback;
  char real[PATH_MAX];
  return ::realpath(map->l_name, real) ? std::string(real) : std::string(map->l_name);
}

bool library_loaded(const char* stem) {
  struct Find {
    const char* stem;
    bool found = false;
  } f{stem};
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* f = static_cast<Find*>(data);
        if (info->dlpi_name && std::strstr(info->dlpi_name, f->stem)) f->found = true;
        return 0;
      },
      &f);
  return f.found;
}

namespace {

std::vector<std::string> oneapi_roots() {
  std::vector<std::string> roots;
  if (const char* e = std::getenv("IPCHECK_ONEAPI"); e && *e) roots.emplace_back(e);
#ifdef IPCHECK_ONEAPI_DIR
  roots.emplace_back(IPCHECK_ONEAPI_DIR);
#endif
  return roots;
}

// "2026.2.0" from RELEASE.txt's "release 2026.2.0" line; "" when there is none.
std::string release_of(const std::string& dir) {
  std::ifstream in(dir + "/RELEASE.txt");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("release ", 0) == 0) return line.substr(8);
  return {};
}

}  // namespace

std::string oneapi_roots_text() {
  std::string s;
  for (const auto& r : oneapi_roots()) s += (s.empty() ? "" : ", ") + r;
  return s.empty() ? "none ($IPCHECK_ONEAPI unset, and the build was configured without build/oneapi)" : s;
}

std::string find_oneapi_release(const std::string& release, OneapiRelease& out) {
  if (release.empty()) return "release= is empty; give a version (2026.2.0) or a release folder";
  std::vector<std::string> tried;
  if (release.find('/') != std::string::npos) {
    tried.push_back(release);
  } else {
    for (const auto& root : oneapi_roots()) tried.push_back(root + "/" + release);
  }
  for (const auto& dir : tried) {
    const std::string v = release_of(dir);
    if (v.empty()) continue;
    char real[PATH_MAX];
    out.dir = ::realpath(dir.c_str(), real) ? std::string(real) : dir;
    out.version = v;
    return {};
  }
  std::string where;
  for (const auto& t : tried) where += (where.empty() ? "" : ", ") + t;
  return "no installed oneAPI release '" + release + "' (looked for RELEASE.txt in " +
         (where.empty() ? oneapi_roots_text() : where) +
         "); run ci/oneapi-stack (it installs the releases ci/oneapi-releases.lock names into build/oneapi), or "
         "set IPCHECK_ONEAPI to the folder holding them";
}

std::string load_oneapi_runtime(const OneapiRelease& release) {
  const std::string lib = release.dir + "/lib/";
  const char* const order[] = {"libumf.so.1", "libur_loader.so.0", "libur_adapter_level_zero.so.0",
                               "libur_adapter_level_zero_v2.so.0"};
  for (const char* name : order) {
    void* h = ::dlopen((lib + name).c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
      const char* e = ::dlerror();
      return "cannot load " + lib + name + " of oneAPI " + release.version + ": " + (e ? e : "dlopen failed");
    }
    // A soname loaded before from elsewhere wins over the path: say so rather than run on it.
    const std::string got = loaded_path(h, lib + name);
    char real[PATH_MAX];
    const std::string want = ::realpath((lib + name).c_str(), real) ? std::string(real) : lib + name;
    if (got != want)
      return std::string(name) + " is already loaded from " + got + ", not oneAPI " + release.version + "'s " + want +
             " (a process can hold one Unified Runtime)";
  }
  return {};
}

}  // namespace ipcheck::toolkit
