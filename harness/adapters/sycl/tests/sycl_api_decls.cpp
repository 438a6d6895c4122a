// Prints the libsycl exports the sycl adapter declares, one a line: member|required|mangled|demangled.
#include <cstdio>

#include "ipcheck/sycl/sycl_api.hpp"

int main() {
  using namespace ipcheck::sycl_api;
  for (std::size_t i = 0; i < kExportCount; ++i)
    std::printf("%s|%d|%s|%s\n", kExports[i].member, kExports[i].required ? 1 : 0, kExports[i].mangled,
                kExports[i].demangled);
  return 0;
}
