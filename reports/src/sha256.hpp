// SHA-256 (FIPS 180-4), for the results store's content keys. Small and dependency-free.
#pragma once

#include <string>
#include <string_view>

namespace ipcheck::reports::sha256 {

// The digest of `data` as 64 lowercase hex digits.
std::string hex(std::string_view data);

}  // namespace ipcheck::reports::sha256
