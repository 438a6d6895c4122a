// libFuzzer target: the expectations parser (`ipcheck run --expectations FILE`, `ipcheck list
// --expectations`): Expectations::parse over the file's bytes, then what a run does with each
// line (its glob against a case id, its driver range against a version, its explanation).
// A malformed file is std::runtime_error naming file:line (exit 2); anything else escapes and
// is a finding. Text that is not UTF-8 is never an error: it is escaped and warned about, so
// every string taken must be UTF-8.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "ipcheck/expectations.hpp"
#include "ipcheck/reports/files.hpp"

using namespace ipcheck;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Expectations e;
  try {
    e = Expectations::parse(text, "fuzz.txt");
  } catch (const std::runtime_error&) {
    return 0;
  }
  for (const auto& x : e.entries()) {
    if (!reports::is_utf8(x.pattern) || !reports::is_utf8(x.reason) || !reports::is_utf8(x.explain())) std::abort();
    (void)glob_match(x.pattern, "memory.open.repeat");
    (void)x.match.describe();
    (void)version_in_range("580.159.04", x.driver);
    (void)version_in_range("Mesa 22.3.6 (LLVM 15.0.6)", x.driver);
  }
  return 0;
}
