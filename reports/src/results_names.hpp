// The names of the results model's enums as results.json spells them, in the enums' order
// (results.hpp), shared by the model (results.cpp) and the codec (results_json.cpp).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace ipcheck::reports::enum_names {

inline constexpr const char* kStatusNames[] = {"pass", "xfail", "fail",       "leak",  "timeout",
                                               "crash", "skip", "incomplete", "error", "flaky"};
inline constexpr const char* kLevelNames[] = {"must", "should", "observe"};
inline constexpr const char* kCheckResultNames[] = {"pass", "fail", "warn", "observed"};
inline constexpr const char* kDeciderNames[] = {"runtime", "adapter", "harness", "unknown"};
inline constexpr const char* kVerdictNames[] = {"pass", "emulated", "observed", "warn", "xfail", "fail", "not_run"};
inline constexpr const char* kBasisNames[] = {"specification", "profile", "harness"};

template <class E, std::size_t N>
std::optional<E> parse_name(const char* const (&names)[N], std::string_view s) noexcept {
  for (std::size_t i = 0; i < N; ++i)
    if (s == names[i]) return static_cast<E>(i);
  return std::nullopt;
}

template <class E, std::size_t N>
std::string one_of(const char* const (&names)[N]) {
  std::string s;
  for (std::size_t i = 0; i < N; ++i) s += std::string(i ? ", " : "") + names[i];
  return s;
}

}  // namespace ipcheck::reports::enum_names
