// What adapters that open a runtime at run time share (adapter toolkit, harness/adapters/README.md):
// the real path a dlopen handle resolved to, whether a library is loaded in this process, and
// the installed releases of Intel's oneAPI runtime (ci/oneapi-stack) that the `ur` and `sycl`
// adapters load with --adapter-opt release=.
#pragma once

#include <string>

namespace ipcheck::toolkit {

// The real path of the library `handle` (from dlopen) resolved to; `fallback` when unknown.
std::string loaded_path(void* handle, const std::string& fallback);
// Whether a library whose path contains `stem` ("libze_ipcheck") is loaded in this process.
bool library_loaded(const char* stem);

// One installed oneAPI release: its folder (lib/, include/, RELEASE.txt) and its version as
// RELEASE.txt names it.
struct OneapiRelease {
  std::string dir;
  std::string version;
};

// Finds the release `release` names: a version ("2026.2.0"), looked up as <root>/<version> in
// $IPCHECK_ONEAPI, then in the install the build was configured with (IPCHECK_ONEAPI, default
// build/oneapi); or a folder path (containing '/') holding RELEASE.txt. "" on success, else
// what was looked for and the fix.
std::string find_oneapi_release(const std::string& release, OneapiRelease& out);
// Loads the release's own Unified Runtime (UMF, the UR loader, UR's Level Zero v1 and v2
// adapters) by path, before anything asks for them by soname: the dynamic linker then reuses
// these for every later request (libsycl's NEEDED libur_loader.so.0, the UR loader's dlopen of
// its adapters), whatever LD_LIBRARY_PATH puts first (the UR stack's 578c2a84 libraries, which
// the Level Zero 1.32 loader sits beside). Then checks that each soname is the release's. ""
// on success, else which library and why.
std::string load_oneapi_runtime(const OneapiRelease& release);

// The folders searched for versions, in order ("" entries left out), as find_oneapi_release does.
std::string oneapi_roots_text();

}  // namespace ipcheck::toolkit
