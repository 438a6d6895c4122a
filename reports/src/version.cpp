#include "ipcheck/reports/version.hpp"

#include <string>

namespace ipcheck::reports {

int compare_versions(std::string_view a, std::string_view b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    const auto ea = a.find_first_of(".-+ ", i), eb = b.find_first_of(".-+ ", j);
    const std::string_view pa = i < a.size() ? a.substr(i, ea == std::string_view::npos ? std::string_view::npos : ea - i) : "0";
    const std::string_view pb = j < b.size() ? b.substr(j, eb == std::string_view::npos ? std::string_view::npos : eb - j) : "0";
    const bool na = !pa.empty() && pa.find_first_not_of("0123456789") == std::string_view::npos;
    const bool nb = !pb.empty() && pb.find_first_not_of("0123456789") == std::string_view::npos;
    if (na && nb) {
      const auto x = std::stoull(std::string(pa.substr(0, 18)));
      const auto y = std::stoull(std::string(pb.substr(0, 18)));
      if (x != y) return x < y ? -1 : 1;
    } else if (pa != pb) {
      return pa < pb ? -1 : 1;
    }
    i = ea == std::string_view::npos ? a.size() : ea + 1;
    j = eb == std::string_view::npos ? b.size() : eb + 1;
  }
  return 0;
}

}  // namespace ipcheck::reports
