// libze_ipcheck's failpoints: the hook `entry` calls first (failpoints.cpp).
#pragma once

#include <level_zero/ze_api.h>

#include <string>

namespace zedriver {

// What this call of `function` answers instead of running: ZE_RESULT_SUCCESS to run it.
ze_result_t failpoint(const char* function);
// True when IPCHECK_FAILPOINTS withholds the extension function `name` (withhold=ext:<name>).
bool extension_withheld(const std::string& name);

}  // namespace zedriver
