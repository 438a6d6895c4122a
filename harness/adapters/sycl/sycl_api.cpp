// The declarations' tables (include/ipcheck/sycl/sycl_api.hpp), compiled into the adapter and
// into sycl_api_decls, which prints them for the symbol test (tests/check_sycl_symbols.cmake).
#include "ipcheck/sycl/sycl_api.hpp"

#include <iterator>

namespace ipcheck::sycl_api {

const char* errc_name(int value) noexcept {
  switch (value) {
#define IPCHECK_SYCL_ERRC_NAME(name, v) \
  case v: return #name;
    IPCHECK_SYCL_ERRC(IPCHECK_SYCL_ERRC_NAME)
#undef IPCHECK_SYCL_ERRC_NAME
  }
  return nullptr;
}

const ExportDecl kExports[] = {
#define IPCHECK_SYCL_DECL(member, required, mangled, demangled, type) {#member, required != 0, mangled, demangled},
    IPCHECK_SYCL_EXPORTS(IPCHECK_SYCL_DECL)
#undef IPCHECK_SYCL_DECL
};
const std::size_t kExportCount = std::size(kExports);

}  // namespace ipcheck::sycl_api
