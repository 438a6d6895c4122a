// A getenv stand-in over a map, for the functions that take their environment as a
// parameter (CTest resources, shards).
#pragma once

#include <functional>
#include <map>
#include <string>

namespace ipcheck::testing_support {

inline std::function<const char*(const char*)> env_of(const std::map<std::string, std::string>& vars) {
  return [vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

}  // namespace ipcheck::testing_support
