// ze.mem.null: null context, pointer and output arguments are refused (Level Zero with
// parameter validation: INVALID_NULL_HANDLE / INVALID_NULL_POINTER, mapped to invalid).
// cuda.mem.null: the same calls on CUDA, the nulls passed to the driver as asked.
// Only APIs with such arguments can say anything: the call goes through native().
#include "../common.hpp"

namespace ipcheck::catalog::memory_null_arguments {
namespace {

struct NullCall {
  const char* verb;
  const char* argument;
};

// Every nullable argument of zeMemGetIpcHandle, zeMemOpenIpcHandle, zeMemCloseIpcHandle.
constexpr NullCall kCalls[] = {
    {"mem_get", "context"}, {"mem_get", "pointer"}, {"mem_get", "out"},
    {"mem_open", "context"}, {"mem_open", "out"},
    {"mem_close", "context"}, {"mem_close", "pointer"},
};

// Each call the API has is judged; calls it cannot express (not_implemented) are noted.
void caller(Role& r) {
  int judged = 0;
  std::string absent;
  for (const auto& c : kCalls) {
    const std::string what = std::string(c.verb) + " with a null " + c.argument;
    const Outcome o = r.adapter().native("null_argument", {{"verb", c.verb}, {"argument", c.argument}});
    if (o.code == Errc::not_implemented) {
      absent += (absent.empty() ? "" : "; ") + what + ": " + o.message;
      continue;
    }
    ++judged;
    // Each API's profile judges its own clause; the other is observed (not claimed there).
    r.check_error(o, Errc::invalid, "ze.mem.null", what);
    r.check_error(o, Errc::invalid, "cuda.mem.null", what);
  }
  if (judged == 0) r.skip("no null-argument call applies: " + absent);
  if (!absent.empty()) r.note("not applicable here: " + absent);
}

IPCHECK_CASE(Case("memory.null_arguments", "Null context, pointer and output arguments of get, open and close are refused")
                 .clauses({"ze.mem.null", "cuda.mem.null"})
                 .role("caller", caller));

}  // namespace
}  // namespace ipcheck::catalog::memory_null_arguments
