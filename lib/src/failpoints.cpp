#include "ipcref/failpoints.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <map>
#include <mutex>
#include <stdexcept>

#include "ipcref/errc.hpp"

namespace ipcref::failpoints {
namespace {

struct counters {
  std::mutex m;
  std::map<std::string, unsigned long, std::less<>> calls;
};

counters& state() {
  static counters c;
  return c;
}

thread_local int layers_above = 0;

// The arming descriptor (kArmEnv), read once; -1: always armed. The word is read with
// pread at each counted call (only where failpoints are set): no mapping is made, so a
// role's audit sees nothing new.
int arm_fd() {
  static const int fd = [] {
    const char* v = std::getenv(kArmEnv);
    if (!v || !*v) return -1;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (!end || *end != '\0' || n < 0 || n > 1 << 20) {
      std::fprintf(stderr, "%s=%s is not a descriptor number: the failpoints stay unarmed\n", kArmEnv, v);
      return -2;
    }
    return static_cast<int>(n);
  }();
  return fd;
}

bool armed() {
  const int fd = arm_fd();
  if (fd == -1) return true;
  std::uint32_t w = 0;
  return fd >= 0 && ::pread(fd, &w, sizeof w, 0) == static_cast<ssize_t>(sizeof w) && w != 0;
}

}  // namespace

const spec& active() {
  static const spec s = [] {
    const char* v = std::getenv(kEnv);
    if (!v || !*v) return spec{};
    try {
      return parse(v);
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "%s\n", e.what());
      std::abort();
    }
  }();
  return s;
}

layer_above::layer_above() noexcept { ++layers_above; }
layer_above::~layer_above() { --layers_above; }

const rule* hit(std::string_view function, unsigned long* call) {
  const spec& s = active();
  if (s.empty()) return nullptr;
  if (layers_above > 0 && function.substr(0, 8) == "ipcref::") return nullptr;
  if (!armed()) return nullptr;
  const rule* match = nullptr;
  for (const auto& r : s.rules)
    if (r.function == function) match = &r;
  unsigned long n;
  {
    counters& c = state();
    std::lock_guard lock(c.m);
    auto it = c.calls.find(function);
    if (it == c.calls.end()) it = c.calls.emplace(std::string(function), 0).first;
    n = ++it->second;
  }
  if (call) *call = n;
  if (!match || n < match->first || (match->once && n != match->first)) return nullptr;
  return match;
}

void report_fired(std::string_view function, unsigned long call, std::string_view answered) {
  // To the role through the arming descriptor: the count of failed calls and the last one.
  if (const int fd = arm_fd(); fd >= 0) {
    counters& c = state();
    std::lock_guard lock(c.m);
    std::uint32_t n = 0;
    if (::pread(fd, &n, sizeof n, kArmCountAt) != static_cast<ssize_t>(sizeof n)) n = 0;
    ++n;
    char line[256];
    const int len = std::snprintf(line, sizeof line, "%.*s call %lu answered %.*s", static_cast<int>(function.size()),
                                  function.data(), call, static_cast<int>(answered.size()), answered.data());
    if (len > 0) (void)!::pwrite(fd, line, static_cast<std::size_t>(std::min(len, 255)) + 1, kArmLastAt);
    (void)!::pwrite(fd, &n, sizeof n, kArmCountAt);
  }
  // Every fired call up to 16, then every 1000th: enough to read back, never a flood.
  if (call > 16 && call % 1000 != 0) return;
  std::fprintf(stderr, "%.*s%.*s call %lu answered %.*s\n", static_cast<int>(kFiredPrefix.size()), kFiredPrefix.data(),
               static_cast<int>(function.size()), function.data(), call, static_cast<int>(answered.size()),
               answered.data());
  std::fflush(stderr);
}

unsigned long calls(std::string_view function) {
  counters& c = state();
  std::lock_guard lock(c.m);
  const auto it = c.calls.find(function);
  return it == c.calls.end() ? 0 : it->second;
}

bool withheld(std::string_view capability) {
  for (const auto& w : active().withheld)
    if (w == capability) return true;
  return false;
}

namespace {

// The errc a rule names, or abort with the names ipcref answers.
errc errc_of(const rule& r) {
  for (int e = 1; e <= static_cast<int>(errc::device_lost); ++e)
    if (r.result == errc_name(static_cast<errc>(e))) return static_cast<errc>(e);
  std::fprintf(stderr, "%s: %s=%s: ipcref answers an errc name (invalid, feature_not_supported, exporter_gone, "
               "permission_denied, exhausted, timeout, device_lost)\n", kEnv, r.function.c_str(), r.result.c_str());
  std::abort();
}

}  // namespace

void check(std::string_view function) {
  unsigned long n = 0;
  const rule* r = hit(function, &n);
  if (!r) return;
  const errc e = errc_of(*r);
  report_fired(function, n, r->result);
  throw exception(e, std::string(function) + ": failed by failpoint (" + kEnv + ")");
}

bool refuse(std::string_view function, refusal& why) {
  unsigned long n = 0;
  const rule* r = hit(function, &n);
  if (!r) return false;
  why.code = errc_of(*r);
  report_fired(function, n, r->result);
  why.message = std::string(function) + ": failed by failpoint (" + kEnv + ")";
  return true;
}

}  // namespace ipcref::failpoints
