// Assertions on ipcref failures: the code (ipcref::errc) and what the message names.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <ostream>
#include <optional>
#include <string>
#include <string_view>

#include "ipcref/errc.hpp"

// gtest prints codes by name ("exporter_gone"), not as "ipcref:3".
namespace ipcref {
inline void PrintTo(errc e, std::ostream* os) { *os << errc_name(e); }
}  // namespace ipcref

namespace ipcref_test {

struct failure {
  ipcref::errc code;
  std::string message;
};

// Runs `f`; the ipcref::exception it threw, or nothing. Other exceptions propagate.
template <class F>
std::optional<failure> failure_of(F&& f) {
  try {
    f();
  } catch (const ipcref::exception& e) {
    return failure{e.code_value(), e.what()};
  }
  return std::nullopt;
}

// Success when `f` throws ipcref::exception with `code` and a message containing every
// string of `mentions`.
template <class F>
testing::AssertionResult fails_with(F&& f, ipcref::errc code, std::initializer_list<std::string_view> mentions = {}) {
  const std::optional<failure> got = failure_of(std::forward<F>(f));
  if (!got) return testing::AssertionFailure() << "succeeded; expected " << ipcref::errc_name(code);
  if (got->code != code)
    return testing::AssertionFailure() << "failed with " << ipcref::errc_name(got->code) << ", expected "
                                       << ipcref::errc_name(code) << ": " << got->message;
  for (std::string_view m : mentions)
    if (got->message.find(m) == std::string::npos)
      return testing::AssertionFailure() << "message does not mention '" << m << "': " << got->message;
  return testing::AssertionSuccess() << got->message;
}

}  // namespace ipcref_test
