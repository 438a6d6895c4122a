// ze.mem.null: null context, pointer and output arguments are refused (Level Zero with
// parameter validation: INVALID_NULL_HANDLE / INVALID_NULL_POINTER, mapped to invalid).
// Only APIs with such arguments can say anything: the call goes through native().
#include "../common.hpp"

namespace ipcheck::catalog {
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

void caller(Role& r) {
  for (const auto& c : kCalls) {
    const Outcome o = r.adapter().native("null_argument", {{"verb", c.verb}, {"argument", c.argument}});
    if (o.code == Errc::not_implemented) r.skip("native null_argument: " + o.describe());
    r.check_error(o, Errc::invalid, "ze.mem.null", std::string(c.verb) + " with a null " + c.argument);
  }
}

IPCHECK_CASE(Case("memory.null_arguments", "Null context, pointer and output arguments of get, open and close are refused")
                 .clause("ze.mem.null")
                 .role("caller", caller));

}  // namespace
}  // namespace ipcheck::catalog
