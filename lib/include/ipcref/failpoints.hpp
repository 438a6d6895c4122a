// Failpoints: make a chosen entry point of a layer under test (ipcref, libze_ipcheck) fail
// with a chosen result on its Nth call, from its Nth call on, or on every call, or withhold
// an optional capability, so that what a runtime above does on its error paths (leak,
// abort, success with nothing done) can be judged. In the manner of the Linux kernel's
// fault injection and FreeBSD's fail(9): off unless the process's environment asks.
//
//   IPCHECK_FAILPOINTS="zeMemFree=ZE_RESULT_ERROR_DEVICE_LOST@1;ipcref::mem_close=device_lost@2+;withhold=regular_queues"
//
// Items are separated by ';'. An item is either
//   <function>=<result>[@<when>]   <function>: the entry point's name as the layer calls
//                                  it (Level Zero's zeMemFree, ipcref's ipcref::free);
//                                  <result>: what that call answers instead of running,
//                                  in the layer's own terms (a ze_result_t name or number,
//                                  an ipcref errc name); <when>: N (the Nth call only),
//                                  N+ (the Nth call and every later one) or * (every call,
//                                  the default); calls are counted per function, per process
//   withhold=<capability>          an optional capability the layer then lacks (the
//                                  layer's README lists them: regular_queues, ext:<name>)
// A call that fails runs nothing of the entry point (no side effect), and the layer writes
// one line to stderr, "ipcheck-failpoint: <function> call <n> answered <result>", which the
// harness reads back into results.json (the role's `failpoints`).
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ipcref/errc.hpp"

namespace ipcref::failpoints {

inline constexpr const char* kEnv = "IPCHECK_FAILPOINTS";
// Arming: when IPCHECK_FAILPOINTS_ARM_FD names a descriptor (a memfd of at least 4 bytes),
// calls are counted, and fail, only while its first 32-bit word is non-zero. The harness's
// role sets it before its adapter starts and arms it when the case's body begins, so that
// "the first call" is the body's, not one the runtime made while it started. Without it,
// the failpoints are armed from the start. Each failed call is also written there: the
// number of failed calls so far at byte 4 (32 bits), the last one's line from byte
// kArmLastAt (NUL-terminated), so the role can tell whether a verb it called failed inside.
inline constexpr const char* kArmEnv = "IPCHECK_FAILPOINTS_ARM_FD";
inline constexpr std::size_t kArmCountAt = 4, kArmLastAt = 64, kArmBytes = 4096;
inline constexpr std::string_view kFiredPrefix = "ipcheck-failpoint: ";

struct rule {
  std::string function;
  std::string result;       // as written: the layer resolves it
  unsigned long first = 1;  // the first call (1-based) that fails
  bool once = false;        // only that call (N), not every later one too (N+, *)
};

struct spec {
  std::vector<rule> rules;
  std::vector<std::string> withheld;
  bool empty() const noexcept { return rules.empty() && withheld.empty(); }
};

namespace detail {
inline std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

[[noreturn]] inline void bad(std::string_view item, const std::string& why) {
  throw std::invalid_argument(std::string(kEnv) + ": '" + std::string(item) + "': " + why +
                              "; write <function>=<result>[@N|@N+|@*] or withhold=<capability>, items separated by ';'");
}

inline unsigned long count_of(std::string_view item, std::string_view digits) {
  if (digits.empty() || digits.size() > 9) bad(item, "the call number '" + std::string(digits) + "' is not 1 to 999999999");
  unsigned long n = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') bad(item, "the call number '" + std::string(digits) + "' is not a number");
    n = n * 10 + static_cast<unsigned long>(c - '0');
  }
  if (n == 0) bad(item, "calls are counted from 1, not 0");
  return n;
}

}  // namespace detail

// Parses a spec; throws std::invalid_argument naming the item, what is wrong and the form
// that is expected. Inline: the harness checks a case's spec without linking ipcref.
inline spec parse(std::string_view text) {
  spec s;
  while (!text.empty()) {
    const auto semi = text.find(';');
    const std::string_view item = detail::trim(text.substr(0, semi));
    text = semi == std::string_view::npos ? std::string_view{} : text.substr(semi + 1);
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == item.size()) detail::bad(item, "no '=' between a name and a value");
    const std::string_view name = detail::trim(item.substr(0, eq));
    std::string_view value = detail::trim(item.substr(eq + 1));
    if (name == "withhold") {
      s.withheld.emplace_back(value);
      continue;
    }
    rule r;
    r.function = std::string(name);
    if (const auto at = value.find('@'); at != std::string_view::npos) {
      std::string_view when = value.substr(at + 1);
      value = detail::trim(value.substr(0, at));
      if (when == "*") {
        r.first = 1;
      } else if (!when.empty() && when.back() == '+') {
        r.first = detail::count_of(item, when.substr(0, when.size() - 1));
      } else {
        r.first = detail::count_of(item, when);
        r.once = true;
      }
    }
    if (value.empty()) detail::bad(item, "no result to answer");
    r.result = std::string(value);
    for (const auto& other : s.rules)
      if (other.function == r.function) detail::bad(item, "a second rule for " + r.function + " (one per function)");
    s.rules.push_back(std::move(r));
  }
  return s;
}


// This process's spec (IPCHECK_FAILPOINTS), read once; a malformed one is reported on
// stderr and aborts the process (a test configuration that is wrong must not run quietly).
const spec& active();

// Counts one call of `function` and returns the rule that makes this call fail, if any.
// Cheap when no spec is set.
const rule* hit(std::string_view function, unsigned long* call = nullptr);

// Writes the fired line for a call hit() answered (`answered`: the result's name).
void report_fired(std::string_view function, unsigned long call, std::string_view answered);

// The number of calls hit() has counted for `function` in this process.
unsigned long calls(std::string_view function);

// True when the spec withholds `capability` ("regular_queues", "ext:ZE_extension_name").
bool withheld(std::string_view capability);

// While one lives on a thread, ipcref's own failpoints (names starting "ipcref::") do not
// fire there: a layer built on ipcref (libze_ipcheck) has failpoints of its own, and its
// calls into ipcref are its implementation, not a runtime's calls.
class layer_above {
 public:
  layer_above() noexcept;
  ~layer_above();
  layer_above(const layer_above&) = delete;
  layer_above& operator=(const layer_above&) = delete;
};

// ipcref's own failpoints: throws ipcref::exception with the rule's errc (an errc name:
// invalid, device_lost, exhausted, ...) when this call of `function` is to fail.
void check(std::string_view function);
// The same as a refusal (for the try_ verbs): true when this call is to fail, with `why` set.
bool refuse(std::string_view function, refusal& why);

}  // namespace ipcref::failpoints
