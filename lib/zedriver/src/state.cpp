// The driver's global state: error plumbing (the last error, debug output), configuration
// (IPCHECK_ZE_*), initialisation and the driver object, the registry of live objects, and the
// small shared helpers state.hpp declares. The entry points are in driver.cpp and beside
// their objects.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "state.hpp"

namespace zedriver {

// ---------------------------------------------------------------- errors

ze_result_t from_ipcref(ipcref::errc e) noexcept {
  switch (e) {
    case ipcref::errc::invalid: return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    case ipcref::errc::feature_not_supported: return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
    case ipcref::errc::exporter_gone: return ZE_RESULT_ERROR_NOT_AVAILABLE;
    case ipcref::errc::permission_denied: return ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS;
    case ipcref::errc::exhausted: return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    case ipcref::errc::timeout: return ZE_RESULT_NOT_READY;
    case ipcref::errc::device_lost: return ZE_RESULT_ERROR_DEVICE_LOST;
  }
  return ZE_RESULT_ERROR_UNKNOWN;
}

namespace {
// The last error's text, in a buffer without a destructor: a call made after this thread's
// thread_local destructors ran (from an atexit handler or a static destructor, as UMF's and
// UR's teardowns are: thread_local objects are destroyed before either) must find it usable.
// A std::string here was freed by then, and the next call wrote into the freed block (found by
// umf_open_fuzzer: UMF's pool teardown closed its cached handles from an atexit handler).
struct LastError {
  char text[1024];
};
LastError& last_error_slot() {
  // Initial-exec TLS (in the static TLS block glibc keeps spare for dlopen'ed libraries, as
  // Mesa's drivers do) rather than a dynamic TLS block: GCC 12's LeakSanitizer misreads
  // dynamic TLS blocks of a dlopen'ed library (it reported "DTLS 6 at 0x6fd-0x28000017ff"
  // and its tracer died by SIGSEGV at exit), and it is one lookup less per call.
  __attribute__((tls_model("initial-exec"))) thread_local LastError slot{};
  return slot;
}
}  // namespace

const char* last_error() { return last_error_slot().text; }
void clear_last_error() { last_error_slot().text[0] = '\0'; }
void set_last_error(const std::string& message) {
  std::snprintf(last_error_slot().text, sizeof last_error_slot().text, "%s", message.c_str());
}

bool debug_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("IPCHECK_ZE_DEBUG");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return on;
}

void report_failure(const char* function, ze_result_t code, const std::string& message) {
  // Messages name their call already, except ipcref's ("memory::open: ...").
  set_last_error(message.rfind(function, 0) == 0 ? message : std::string(function) + ": " + message);
  if (debug_enabled())
    std::fprintf(stderr, "[libze_ipcheck] %s -> %s: %s\n", function, result_name(code), message.c_str());
}

// ---------------------------------------------------------------- configuration

const std::vector<std::string>& offerable_extensions() {
  static const std::vector<std::string> names{"zeMemPutIpcHandle",
                                              "zeEventPoolPutIpcHandle",
                                              "zePhysicalMemGetProperties",
                                              "zeMemGetFileDescriptorFromIpcHandleExp",
                                              "zeMemGetIpcHandleFromFileDescriptorExp",
                                              "zeDriverGetLastErrorDescription",
                                              "zeCommandListHostSynchronize",
                                              "zeEventCounterBasedCreate",
                                              "zeEventCounterBasedGetIpcHandle",
                                              "zeEventCounterBasedOpenIpcHandle",
                                              "zeEventCounterBasedCloseIpcHandle",
                                              "zexCounterBasedEventCreate2",
                                              "zexCounterBasedEventGetIpcHandle",
                                              "zexCounterBasedEventOpenIpcHandle",
                                              "zexCounterBasedEventCloseIpcHandle"};
  return names;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

namespace {

Config read_config() {
  Config c;
  if (const char* v = std::getenv(ze_ipcheck::kEnvIpcHandle); v && *v) {
    const std::string s = v;
    if (s == "fd") {
      c.convention = Convention::fd;
    } else if (s == "opaque") {
      c.convention = Convention::opaque;
    } else {
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
           cat(ze_ipcheck::kEnvIpcHandle, "=", s, " is not a handle convention; use fd (a descriptor in the first ",
               "bytes, moved by SCM_RIGHTS) or opaque (the handle names its exporter; pidfd_getfd)"));
    }
  }
  if (const char* v = std::getenv(ze_ipcheck::kEnvIdentity); v && *v) {
    const std::string s = v;
    if (s == "intel") {
      c.identity = Identity::intel;
    } else if (s == "ipcheck") {
      c.identity = Identity::ipcheck;
    } else {
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
           cat(ze_ipcheck::kEnvIdentity, "=", s, " is not an identity; use intel (vendor 0x8086, an Xe2 IP version ",
               "and compute-runtime build ", ze_ipcheck::kIntelDriverBuild,
               ": what runtimes check before they use counter-based event IPC) or ipcheck (vendor 0, no IP version)"));
    }
  }
  const char* ext = std::getenv(ze_ipcheck::kEnvExtensions);
  const std::string list = ext && *ext ? ext : "all";
  if (list == "all") {
    c.extensions.insert(offerable_extensions().begin(), offerable_extensions().end());
  } else if (list != "none") {
    std::istringstream in(list);
    std::string name;
    while (std::getline(in, name, ',')) {
      if (name.empty()) continue;
      bool known = false;
      for (const auto& o : offerable_extensions()) known = known || o == name;
      if (!known)
        fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
             cat(ze_ipcheck::kEnvExtensions, " names '", name, "', which libze_ipcheck cannot offer; use all, none, ",
                 "or a comma-separated list of: ", join(offerable_extensions())));
      c.extensions.insert(name);
    }
  }
  return c;
}

constexpr const char* kDefaultDevices = "ref0=all;ref1=all;ref2=none";

Driver* g_driver = nullptr;
std::once_flag g_once;
ze_result_t g_init_result = ZE_RESULT_ERROR_UNINITIALIZED;
std::string g_init_error;

}  // namespace

bool initialized() noexcept { return g_driver != nullptr; }

Driver& driver() {
  if (!g_driver)
    fail(ZE_RESULT_ERROR_UNINITIALIZED,
         g_init_error.empty() ? std::string("zeInit has not succeeded") : "zeInit failed: " + g_init_error);
  return *g_driver;
}

ze_result_t initialize(ze_init_flags_t flags) noexcept {
  if (flags & ~static_cast<ze_init_flags_t>(ZE_INIT_FLAG_GPU_ONLY | ZE_INIT_FLAG_VPU_ONLY)) {
    report_failure("zeInit", ZE_RESULT_ERROR_INVALID_ENUMERATION, cat("flags 0x", std::hex, flags, " has unknown bits"));
    return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  }
  // A VPU-only initialisation finds no VPU here.
  if (flags == ZE_INIT_FLAG_VPU_ONLY) {
    report_failure("zeInit", ZE_RESULT_ERROR_UNINITIALIZED, "libze_ipcheck drives no VPU (flags VPU_ONLY)");
    return ZE_RESULT_ERROR_UNINITIALIZED;
  }
  std::call_once(g_once, [] {
    g_init_result = entry("zeInit", [] {
      auto d = std::make_unique<Driver>();
      d->config = read_config();
      // Devices are ipcref's (IPCHECK_REF_DEVICES, else IPCHECK_REF_CONFIG). Unless one is set:
      // two full devices and one without any IPC aspect, so that feature_not_supported paths
      // run in every run (the ref adapter's default too).
      const char* devs = std::getenv("IPCHECK_REF_DEVICES");
      const char* conf = std::getenv("IPCHECK_REF_CONFIG");
      if (!(devs && *devs) && !(conf && *conf)) ::setenv("IPCHECK_REF_DEVICES", kDefaultDevices, 1);
      for (const auto& dev : ipcref::get_devices()) d->devices.push_back(std::make_unique<Device>(dev));
      add_live(d.get(), Kind::driver);
      for (const auto& dev : d->devices) add_live(dev.get(), Kind::device);
      g_driver = d.release();  // lives until the process ends: handles may be used from static destructors
      return ZE_RESULT_SUCCESS;
    });
    if (g_init_result != ZE_RESULT_SUCCESS) {
      g_init_error = last_error();
      // A driver that cannot start says why: the loader only passes the code on.
      std::fprintf(stderr, "libze_ipcheck: %s\n", g_init_error.c_str());
    }
  });
  return g_init_result;
}

// ---------------------------------------------------------------- registry

namespace {
// Never destroyed (like the driver): objects an application leaves alive at exit stay
// reachable, and handles stay checkable from other libraries' static destructors.
struct Registry {
  std::mutex lock;
  std::unordered_map<const void*, Kind> live;
};
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}
}  // namespace

void add_live(const void* p, Kind k) {
  std::lock_guard lock(registry().lock);
  registry().live[p] = k;
}

void remove_live(const void* p) {
  std::lock_guard lock(registry().lock);
  registry().live.erase(p);
}

void* lookup(const void* handle, Kind k, const char* function, const char* what) {
  if (!handle) fail(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, cat(function, ": ", what, " is null"));
  Registry& r = registry();
  std::lock_guard lock(r.lock);
  auto it = r.live.find(handle);
  if (it == r.live.end())
    fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat(function, ": ", what, " ", handle, " is not a live ", kind_name(k),
                                               " of libze_ipcheck (destroyed already, or never created)"));
  if (it->second != k)
    fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
         cat(function, ": ", what, " ", handle, " is a ", kind_name(it->second), ", not a ", kind_name(k)));
  return const_cast<void*>(handle);
}

const char* kind_name(Kind k) noexcept {
  switch (k) {
    case Kind::driver: return "driver";
    case Kind::device: return "device";
    case Kind::context: return "context";
    case Kind::command_list: return "command list";
    case Kind::event_pool: return "event pool";
    case Kind::event: return "event";
    case Kind::physical_mem: return "physical memory object";
    case Kind::command_queue: return "command queue";
    case Kind::fence: return "fence";
  }
  return "object";
}

std::size_t page_size() noexcept {
  static const std::size_t size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

const void* find_in_chain(const void* pNext, ze_structure_type_t type) {
  // Every extension structure starts with stype and pNext (ze_base_desc_t); bounded walk.
  const auto* p = static_cast<const ze_base_desc_t*>(pNext);
  for (int i = 0; p && i < 64; ++i, p = static_cast<const ze_base_desc_t*>(p->pNext))
    if (p->stype == type) return p;
  return nullptr;
}

}  // namespace zedriver
