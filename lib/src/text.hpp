// Message building without <format> (g++ 12 lacks it): cat(...) and hex(...).
#pragma once

#include <cstdint>
#include <sstream>
#include <string>

namespace ipcref::text {

struct hex {
  std::uint64_t value;
  int width = 0;  // digits, zero padded
};

inline std::ostream& operator<<(std::ostream& os, const hex& h) {
  std::ostringstream s;
  s << "0x" << std::hex;
  if (h.width) {
    s.width(h.width);
    s.fill('0');
  }
  s << h.value;
  return os << s.str();
}

template <class... Args>
std::string cat(const Args&... args) {
  std::ostringstream s;
  (s << ... << args);
  return s.str();
}

}  // namespace ipcref::text
