#include "ze_ipcheck/defects.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ze_ipcheck::defects {
namespace {

[[maybe_unused]] id parse_env() noexcept {
  const char* v = std::getenv("IPCHECK_ZE_DEFECT");
  if (!v || !*v || std::strcmp(v, "none") == 0) return id::none;
  for (const auto& d : kCatalog)
    if (std::strcmp(d.name, v) == 0) return d.defect;
  std::fprintf(stderr, "libze_ipcheck: IPCHECK_ZE_DEFECT=%s names no defect; see ze_ipcheck/defects.hpp\n", v);
  std::abort();
}

}  // namespace

#ifdef ZE_IPCHECK_WITH_DEFECTS
bool compiled_in() noexcept { return true; }
id active() noexcept {
  static const id selected = parse_env();
  return selected;
}
#else
bool compiled_in() noexcept { return false; }
id active() noexcept { return id::none; }
#endif

}  // namespace ze_ipcheck::defects
