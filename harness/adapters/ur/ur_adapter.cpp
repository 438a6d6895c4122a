// The `ur` adapter: ipcheck's verbs over Intel's Unified Runtime (UR), the layer SYCL's
// ipc::memory and ipc::physical_memory sit on, through libur_loader.so.0 opened at run time
// (include/ipcheck/ur/ur_api.hpp declares what is used; no UR header or library at build
// time). Without the loader, init answers not_implemented and every case skips with the reason.
//
// Options (--adapter-opt, accepted only from the command line: a reproducer file cannot name
// a library to load):
//   loader=PATH          the libur_loader.so.0 to open (default: the search path, then the
//                        stack the build was configured with, IPCHECK_UR_STACK)
//   release=VERSION|DIR  the UR loader of a released oneAPI runtime that ci/oneapi-stack
//                        installed (2026.1.2, 2026.2.0: toolkit::find_oneapi_release), with
//                        its own Level Zero adapters and UMF; not with loader=
//   backend=level_zero|cuda|auto   the UR platform to drive (auto: the first with devices)
//   l0=v1|v2|auto        for Level Zero, UR's v1 or v2 adapter (UR_LOADER_USE_LEVEL_ZERO_V2=0
//                        or 1, set before urLoaderInit; auto leaves UR's own choice)
//
// Mapping (UR API 0.12, exp-inter-process-communication):
//   memory     urUSMDeviceAlloc / urUSMHostAlloc / urUSMSharedAlloc, urUSMFree; write and read
//              are blocking urEnqueueUSMMemcpy on a queue of the memory's device
//   mem IPC    urIPCGetMemHandleExp (UR allocates the handle data: UMF's 40-byte header and
//              the provider's bytes), urIPCPutMemHandleExp, urIPCOpenMemHandleExp (no flags
//              in UR), urIPCCloseMemHandleExp
//   physical   urPhysicalMemCreate (UR_PHYSICAL_MEM_FLAG_ENABLE_IPC when ipc),
//              urIPC{Get,Put,Open,Close}PhysMemHandleExp, urPhysicalMemRetain/Release,
//              urPhysicalMemGetInfo (size, properties), urVirtualMem{GranularityGetInfo,
//              Reserve,Free,Map,Unmap}
//   events     urEventCreateExp (UR_EXP_EVENT_FLAG_IPC_EXP, _ENABLE_PROFILING),
//              urIPC{Get,Put,Open}EventHandleExp, urEventRetain/Release (no close in UR);
//              signal = urEnqueueEventsWaitWithBarrierExt that signals the reusable event,
//              query = UR_EVENT_INFO_COMMAND_EXECUTION_STATUS; UR has no reset
// Descriptors never travel by ipcheck: UR's handles name their exporter, and UMF or UR's
// adapter takes the descriptor with pidfd_getfd (transport pidfd). Every outcome of a UR call
// is UR's (Outcome::runtime_*, with the ur_result_t name); what the adapter decides itself
// (an unknown object id, a flag UR has no parameter for) is the adapter's.
#include <dlfcn.h>
#include <link.h>
#include <sys/prctl.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "ipcheck/runtime_library.hpp"
#include "ur_adapter.hpp"

namespace ipcheck::ur_api {

const char* result_name(ur_result_t r) noexcept {
  switch (r) {
#define IPCHECK_UR_RESULT_NAME(name, value) \
  case name: return #name;
    IPCHECK_UR_RESULTS(IPCHECK_UR_RESULT_NAME)
#undef IPCHECK_UR_RESULT_NAME
  }
  return nullptr;
}

bool result_of(const char* name, ur_result_t& out) noexcept {
#define IPCHECK_UR_RESULT_OF(n, value)   \
  if (std::strcmp(name, #n) == 0) {      \
    out = n;                             \
    return true;                         \
  }
  IPCHECK_UR_RESULTS(IPCHECK_UR_RESULT_OF)
#undef IPCHECK_UR_RESULT_OF
  return false;
}

}  // namespace ipcheck::ur_api

namespace ipcheck::ur_adapter {
namespace {

std::string name_of(ur_result_t r) {
  if (const char* n = ur_api::result_name(r)) return n;
  return "ur_result_t " + std::to_string(static_cast<std::uint32_t>(r));
}

// "0.12.0" from ".../libur_loader.so.0.12.0"; "" when the file name carries no version.
std::string version_from_path(const std::string& path) {
  const std::string stem = "libur_loader.so.";
  const auto at = path.rfind(stem);
  return at == std::string::npos ? std::string() : path.substr(at + stem.size());
}

// The stack description ci/ur-stack writes beside lib/ (STACK.txt): "<component> <commit> (...)".
std::map<std::string, std::string> stack_commits(const std::string& loader_path) {
  std::map<std::string, std::string> out;
  const auto slash = loader_path.rfind('/');
  if (slash == std::string::npos) return out;
  std::ifstream in(loader_path.substr(0, slash) + "/../STACK.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto sp = line.find(' ');
    if (sp == std::string::npos) continue;
    const auto end = line.find(' ', sp + 1);
    out[line.substr(0, sp)] = line.substr(sp + 1, end == std::string::npos ? std::string::npos : end - sp - 1);
  }
  return out;
}

}  // namespace

}  // namespace ipcheck::ur_adapter

namespace ipcheck::ur_api {

Errc errc_of(ur_result_t r) noexcept {
  switch (r) {
    case UR_RESULT_SUCCESS: return Errc::success;
    case UR_RESULT_ERROR_INVALID_OPERATION:
    case UR_RESULT_ERROR_INVALID_QUEUE:
    case UR_RESULT_ERROR_INVALID_VALUE:
    case UR_RESULT_ERROR_INVALID_CONTEXT:
    case UR_RESULT_ERROR_INVALID_PLATFORM:
    case UR_RESULT_ERROR_INVALID_MEM_OBJECT:
    case UR_RESULT_ERROR_INVALID_EVENT:
    case UR_RESULT_ERROR_INVALID_EVENT_WAIT_LIST:
    case UR_RESULT_ERROR_INVALID_DEVICE:
    case UR_RESULT_ERROR_INVALID_ARGUMENT:
    case UR_RESULT_ERROR_INVALID_NULL_HANDLE:
    case UR_RESULT_ERROR_HANDLE_OBJECT_IN_USE:
    case UR_RESULT_ERROR_INVALID_NULL_POINTER:
    case UR_RESULT_ERROR_INVALID_SIZE:
    case UR_RESULT_ERROR_UNSUPPORTED_SIZE:
    case UR_RESULT_ERROR_UNSUPPORTED_ALIGNMENT:
    case UR_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT:
    case UR_RESULT_ERROR_INVALID_ENUMERATION:
    case UR_RESULT_ERROR_UNSUPPORTED_ENUMERATION:
    case UR_RESULT_ERROR_OVERLAPPING_REGIONS:
    case UR_RESULT_ERROR_INVALID_HOST_PTR:
    case UR_RESULT_ERROR_INVALID_USM_SIZE: return Errc::invalid;
    case UR_RESULT_ERROR_UNSUPPORTED_FEATURE:
    case UR_RESULT_ERROR_UNSUPPORTED_VERSION:
    case UR_RESULT_ERROR_DEVICE_NOT_FOUND: return Errc::feature_not_supported;
    case UR_RESULT_ERROR_OUT_OF_HOST_MEMORY:
    case UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY:
    case UR_RESULT_ERROR_OUT_OF_RESOURCES:
    case UR_RESULT_ERROR_MEM_OBJECT_ALLOCATION_FAILURE:
    case UR_RESULT_ERROR_OBJECT_ALLOCATION_FAILURE: return Errc::exhausted;
    case UR_RESULT_ERROR_DEVICE_LOST:
    case UR_RESULT_ERROR_DEVICE_REQUIRES_RESET:
    case UR_RESULT_ERROR_DEVICE_NOT_AVAILABLE: return Errc::device_lost;
    case UR_RESULT_ERROR_UNINITIALIZED: return Errc::not_implemented;
    default: return Errc::other;
  }
}

}  // namespace ipcheck::ur_api

namespace ipcheck::ur_adapter {

// ---------------------------------------------------------------- the loader

// Entry points a released loader may lack (2026.1.2's has memory IPC only): the verbs that use
// them answer not_implemented naming the symbol (Loader::lacking), and info lists them.
bool Loader::optional(const char* name) {
  static const char* const names[] = {"urIPCGetPhysMemHandleExp", "urIPCPutPhysMemHandleExp",
                                      "urIPCOpenPhysMemHandleExp", "urIPCClosePhysMemHandleExp",
                                      "urEventCreateExp",          "urIPCGetEventHandleExp",
                                      "urIPCPutEventHandleExp",    "urIPCOpenEventHandleExp"};
  for (const char* n : names)
    if (std::strcmp(n, name) == 0) return true;
  return false;
}

Outcome Loader::lacking(const char* verb, const char* symbol) const {
  // The loader's file name, not its path (info has it): the message is the same on every machine.
  const auto slash = path_.rfind('/');
  return Outcome::failure(Errc::not_implemented, std::string("ur: ") + verb + ": this " +
                                                     (slash == std::string::npos ? path_ : path_.substr(slash + 1)) +
                                                     " exports no " + symbol +
                                                     " (a Unified Runtime release without that IPC entry point)");
}

std::string Loader::open(const std::string& library) {
  std::vector<std::string> candidates;
  if (!library.empty()) {
    candidates.push_back(library);
  } else {
    candidates.push_back("libur_loader.so.0");
#ifdef IPCHECK_UR_STACK_LIB
    candidates.push_back(IPCHECK_UR_STACK_LIB "/libur_loader.so.0");
#endif
  }
  std::string tried, first_error;
  for (const auto& c : candidates) {
    lib_ = ::dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib_) break;
    const char* e = ::dlerror();
    if (first_error.empty()) first_error = e ? e : c + ": not found";
    tried += (tried.empty() ? "" : ", ") + c;
  }
  if (!lib_)
    return "dlopen found no Unified Runtime loader (tried " + tried + ": " + first_error +
           "); build the stack with ci/ur-stack and put its lib/ on LD_LIBRARY_PATH, or name the library with "
           "--adapter-opt loader=PATH";
  path_ = toolkit::loaded_path(lib_, candidates.front());
  std::string missing;
  lacks_.clear();
#define IPCHECK_UR_RESOLVE(name, params)                                   \
  name = reinterpret_cast<PFN_##name>(::dlsym(lib_, #name));               \
  if (!name && optional(#name)) lacks_.push_back(#name);                   \
  else if (!name) missing += (missing.empty() ? "" : ", ") + std::string(#name);
  IPCHECK_UR_FUNCTIONS(IPCHECK_UR_RESOLVE)
#undef IPCHECK_UR_RESOLVE
  if (!missing.empty()) {
    const std::string why = path_ + " lacks " + missing +
                            " (a Unified Runtime older than API 0.12 with IPC, or not UR's loader at all)";
    ::dlclose(lib_);  // nothing of it ran yet: safe to unload
    lib_ = nullptr;
    return why;
  }
  return {};
}

// ---------------------------------------------------------------- set-up

UrAdapter::~UrAdapter() {
  // What a case left behind goes back to UR before the loader is torn down.
  if (!initialised_) return;
  for (auto& [id, x] : mem_exports_) api_.urIPCPutMemHandleExp(ctx_, x.data);
  for (auto& [id, x] : phys_exports_) api_.urIPCPutPhysMemHandleExp(ctx_, x.data);  // none without the entry point
  for (auto& [id, x] : event_exports_) api_.urIPCPutEventHandleExp(ctx_, x.data);
  for (auto& [id, e] : events_)
    for (int i = 0; i < e.refs; ++i) api_.urEventRelease(e.handle);
  for (auto& [id, p] : phys_) {
    if (p.opened) api_.urIPCClosePhysMemHandleExp(ctx_, p.handle);
    for (int i = p.opened ? 1 : 0; i < p.refs; ++i) api_.urPhysicalMemRelease(p.handle);
  }
  for (auto q : queues_)
    if (q) api_.urQueueRelease(q);
  if (ctx_) api_.urContextRelease(ctx_);
  for (auto a : adapters_) api_.urAdapterRelease(a);
  api_.urLoaderTearDown();
}

Outcome UrAdapter::read_options(const AdapterConfig& config, std::string& library, std::string& backend,
                                std::string& l0) {
  for (const auto& [k, v] : config.options) {
    if (k == "loader") {
      if (v.empty()) return Outcome::failure(Errc::invalid, "ur: adapter option loader= is empty; name a libur_loader.so.0");
      if (!library.empty()) return Outcome::failure(Errc::invalid, "ur: adapter options loader= and release= both name a loader; give one");
      library = v;
    } else if (k == "release") {
      // A released oneAPI runtime (ci/oneapi-stack): its own UR loader and Level Zero adapters.
      toolkit::OneapiRelease rel;
      if (std::string why = toolkit::find_oneapi_release(v, rel); !why.empty())
        return Outcome::failure(Errc::not_implemented, "ur: " + why);
      if (!library.empty()) return Outcome::failure(Errc::invalid, "ur: adapter options loader= and release= both name a loader; give one");
      library = rel.dir + "/lib/libur_loader.so.0";
      release_ = rel;
    } else if (k == "backend") {
      if (v != "level_zero" && v != "cuda" && v != "auto")
        return Outcome::failure(Errc::invalid, "ur: adapter option backend=" + v + "; use level_zero, cuda or auto");
      backend = v;
    } else if (k == "l0") {
      if (v != "v1" && v != "v2" && v != "auto")
        return Outcome::failure(Errc::invalid, "ur: adapter option l0=" + v + "; use v1, v2 or auto");
      l0 = v;
    } else {
      return Outcome::failure(Errc::invalid, "ur: unknown adapter option '" + k + "'; ur knows: loader, release, backend, l0");
    }
  }
  if (l0 != "auto" && backend == "cuda")
    return Outcome::failure(Errc::invalid, "ur: adapter option l0=" + l0 + " chooses a Level Zero adapter, but backend=cuda");
  if (config.transport == "scm")
    return Outcome::failure(Errc::invalid,
                            "ur: --transport scm, but UR's IPC handles name their exporter and UMF or UR's adapter "
                            "takes the descriptor itself (pidfd_getfd); use --transport pidfd or auto");
  return Outcome::success();
}

Outcome UrAdapter::init(const AdapterConfig& config) {
  std::string library, backend = "auto";
  l0_request_ = "auto";
  if (Outcome o = read_options(config, library, backend, l0_request_); !o.ok()) return o;
  // UR's Level Zero adapters read this at urLoaderInit: "1" picks v2, "0" v1.
  if (l0_request_ != "auto") ::setenv("UR_LOADER_USE_LEVEL_ZERO_V2", l0_request_ == "v2" ? "1" : "0", 1);

  if (!release_.dir.empty())
    if (std::string why = toolkit::load_oneapi_runtime(release_); !why.empty())
      return Outcome::failure(Errc::not_implemented, "no Unified Runtime: " + why);
  if (std::string why = api_.open(library); !why.empty())
    return Outcome::failure(Errc::not_implemented, "no Unified Runtime: " + why);
  if (Outcome o = call("urLoaderInit", api_.urLoaderInit(0, nullptr)); !o.ok()) {
    o.message = "no Unified Runtime: " + o.message;
    o.code = Errc::not_implemented;
    return o;
  }
  initialised_ = true;
  if (Outcome o = choose_platform(backend); !o.ok()) return o;

  std::uint32_t n = 0;
  if (Outcome o = call("urDeviceGet", api_.urDeviceGet(platform_, UR_DEVICE_TYPE_ALL, 0, nullptr, &n)); !o.ok())
    return o;
  devices_.resize(n);
  if (Outcome o = call("urDeviceGet", api_.urDeviceGet(platform_, UR_DEVICE_TYPE_ALL, n, devices_.data(), &n));
      !o.ok())
    return o;
  devices_.resize(n);
  queues_.assign(devices_.size(), nullptr);
  if (Outcome o = call("urContextCreate", api_.urContextCreate(n, devices_.data(), nullptr, &ctx_)); !o.ok()) return o;
  // Under Yama ptrace_scope 1, let the run's processes take this process's descriptors (UMF
  // and UR's adapters take them with pidfd_getfd). Without Yama the call fails harmlessly.
  if (config.runner_pid > 0) ::prctl(PR_SET_PTRACER, static_cast<unsigned long>(config.runner_pid), 0, 0, 0);
  return Outcome::success();
}

Outcome UrAdapter::choose_platform(const std::string& backend) {
  std::uint32_t na = 0;
  if (Outcome o = call("urAdapterGet", api_.urAdapterGet(0, nullptr, &na)); !o.ok()) return o;
  adapters_.resize(na);
  if (Outcome o = call("urAdapterGet", api_.urAdapterGet(na, adapters_.data(), &na)); !o.ok()) return o;
  adapters_.resize(na);
  std::string seen;
  for (auto a : adapters_) {
    std::uint32_t np = 0;
    if (api_.urPlatformGet(a, 0, nullptr, &np) != UR_RESULT_SUCCESS || np == 0) continue;
    std::vector<ur_platform_handle_t> ps(np);
    if (api_.urPlatformGet(a, np, ps.data(), &np) != UR_RESULT_SUCCESS) continue;
    ur_backend_t b = UR_BACKEND_UNKNOWN;
    api_.urAdapterGetInfo(a, UR_ADAPTER_INFO_BACKEND, sizeof b, &b, nullptr);
    const std::string name = b == UR_BACKEND_LEVEL_ZERO ? "level_zero" : b == UR_BACKEND_CUDA ? "cuda" : "other";
    seen += (seen.empty() ? "" : ", ") + name;
    if (backend != "auto" && backend != name) continue;
    if (backend == "auto" && name == "other") continue;
    for (auto p : ps) {
      std::uint32_t nd = 0;
      if (api_.urDeviceGet(p, UR_DEVICE_TYPE_ALL, 0, nullptr, &nd) != UR_RESULT_SUCCESS || nd == 0) continue;
      adapter_ = a;
      platform_ = p;
      backend_ = b;
      api_.urAdapterGetInfo(a, UR_ADAPTER_INFO_VERSION, sizeof adapter_version_, &adapter_version_, nullptr);
      return Outcome::success();
    }
  }
  const std::string what = backend == "auto" ? "a Level Zero or CUDA platform" : "a " + backend + " platform";
  return Outcome::failure(
      Errc::not_implemented,
      "no Unified Runtime device: UR found no " + what + " with devices (platforms with devices: " +
          (seen.empty() ? "none" : seen) +
          "); for Level Zero put the 1.32 loader's lib/ on LD_LIBRARY_PATH and name a driver (ZE_ENABLE_ALT_DRIVERS=" +
          "<build>/lib/libze_ipcheck.so.1); UR_LOG_LOADER=level:debug;output:stderr says what UR tried");
}

Outcome UrAdapter::call(const char* function, ur_result_t r, const std::string& what) {
  if (r == UR_RESULT_SUCCESS) return Outcome::runtime_success(function);
  std::string msg = std::string(function) + " gave " + name_of(r);
  if (!what.empty()) msg = what + ": " + msg;
  if (r == UR_RESULT_ERROR_ADAPTER_SPECIFIC && adapter_ && api_.urAdapterGetLastError) {
    const char* text = nullptr;
    std::int32_t native = 0;
    api_.urAdapterGetLastError(adapter_, &text, &native);
    if (text && *text) msg += " (UR's adapter: " + std::string(text) + ", native " + std::to_string(native) + ")";
  }
  return Outcome::runtime_failure(function, errc_of(r), msg, static_cast<long long>(r), name_of(r));
}

// ---------------------------------------------------------------- information

std::string UrAdapter::platform_text(ur_platform_info_t what) const {
  std::size_t n = 0;
  if (api_.urPlatformGetInfo(platform_, what, 0, nullptr, &n) != UR_RESULT_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  if (api_.urPlatformGetInfo(platform_, what, n, s.data(), nullptr) != UR_RESULT_SUCCESS) return {};
  s.resize(std::strlen(s.c_str()));
  return s;
}

std::string UrAdapter::device_text(ur_device_handle_t d, ur_device_info_t what) const {
  std::size_t n = 0;
  if (api_.urDeviceGetInfo(d, what, 0, nullptr, &n) != UR_RESULT_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  if (api_.urDeviceGetInfo(d, what, n, s.data(), nullptr) != UR_RESULT_SUCCESS) return {};
  s.resize(std::strlen(s.c_str()));
  return s;
}

bool UrAdapter::device_flag(ur_device_handle_t d, ur_device_info_t what, std::string* error) const {
  ur_bool_t v = 0;
  const ur_result_t r = api_.urDeviceGetInfo(d, what, sizeof v, &v, nullptr);
  if (r != UR_RESULT_SUCCESS) {
    if (error) *error = name_of(r);
    return false;
  }
  return v != 0;
}

std::string UrAdapter::backend_name() const {
  switch (backend_) {
    case UR_BACKEND_LEVEL_ZERO: return "level_zero";
    case UR_BACKEND_CUDA: return "cuda";
    default: return "ur_backend_t " + std::to_string(static_cast<std::uint32_t>(backend_));
  }
}

std::string UrAdapter::l0_adapter_name() const {
  if (backend_ != UR_BACKEND_LEVEL_ZERO) return {};
  return adapter_version_ == 2 ? "v2" : adapter_version_ == 1 ? "v1" : "version " + std::to_string(adapter_version_);
}

std::string UrAdapter::memory_layout() const {
  // UMF's header and the memory provider's bytes (harness/src/handle_layout.cpp).
  if (backend_ == UR_BACKEND_CUDA) return "ur-umf-cuda/1";
  if (backend_ == UR_BACKEND_LEVEL_ZERO) return adapter_version_ == 2 ? "ur-umf-l0-v2/1" : "ur-umf-l0-v1/1";
  return "opaque";
}

AdapterInfo UrAdapter::info() {
  AdapterInfo i;
  const std::string version = version_from_path(api_.path());
  const auto commits = stack_commits(api_.path());
  const auto ur_commit = commits.count("unified-runtime") ? commits.at("unified-runtime") : std::string();
  i.driver_name = "Unified Runtime";
  // "<backend>[/v1|/v2] <UR version> (commit ...)": the leading word lets an expectations file
  // name one backend (`@driver level_zero/v2`), the version the UR release.
  // A released runtime (ci/oneapi-stack: RELEASE.txt beside lib/) names its release; its
  // loader's file names carry no more than the soname's 0.
  toolkit::OneapiRelease rel;
  const auto slash = api_.path().rfind('/');
  const bool released =
      slash != std::string::npos && toolkit::find_oneapi_release(api_.path().substr(0, slash) + "/..", rel).empty();
  i.driver_version = backend_name() + (l0_adapter_name().empty() ? "" : "/" + l0_adapter_name()) + " " +
                     (released ? "oneAPI " + rel.version
                               : (version.empty() ? "unknown-version" : version) +
                                     (ur_commit.empty() ? "" : " (commit " + ur_commit.substr(0, 12) + ")"));
  i.api_version = "UR exp-inter-process-communication (API 0.12 declarations)";
  i.extra["ur_loader"] = api_.path();
  if (released) i.extra["oneapi_release"] = rel.version;
  i.extra["ur_version"] = version.empty() ? "unknown (the loader's file name carries none)" : version;
  i.extra["ur_commit"] = ur_commit.empty() ? "unknown (no STACK.txt beside the loader's lib/)" : ur_commit;
  for (const auto& [component, commit] : commits)
    if (component != "unified-runtime") i.extra["stack." + component] = commit;
  i.extra["backend"] = backend_name();
  if (backend_ == UR_BACKEND_LEVEL_ZERO) {
    i.extra["l0_adapter"] = l0_adapter_name();
    i.extra["l0_adapter_requested"] = l0_request_;
  }
  i.extra["platform"] = platform_text(UR_PLATFORM_INFO_NAME);
  i.extra["platform_version"] = platform_text(UR_PLATFORM_INFO_VERSION);
  for (std::size_t k = 0; k < devices_.size(); ++k) {
    const auto d = devices_[k];
    DeviceInfo di;
    di.name = device_text(d, UR_DEVICE_INFO_NAME);
    std::uint8_t uuid[16] = {};
    if (api_.urDeviceGetInfo(d, UR_DEVICE_INFO_UUID, sizeof uuid, uuid, nullptr) == UR_RESULT_SUCCESS)
      for (auto b : uuid) {
        char h[3];
        std::snprintf(h, sizeof h, "%02x", b);
        di.uuid += h;
      }
    // The three support queries, as UR answers them; a query UR refuses reads as false, and
    // its error is kept (DeviceInfo::aspect_errors: case device.support_query judges it).
    const std::pair<const char*, ur_device_info_t> queries[] = {
        {"ipc_memory", UR_DEVICE_INFO_IPC_MEMORY_SUPPORT_EXP},
        {"ipc_physical_memory", UR_DEVICE_INFO_IPC_PHYSICAL_MEMORY_SUPPORT_EXP},
        {"ipc_event", UR_DEVICE_INFO_IPC_EVENT_SUPPORT_EXP}};
    for (const auto& [aspect, query] : queries) {
      std::string error;
      di.aspects[aspect] = device_flag(d, query, &error);
      if (!error.empty()) {
        i.extra["device" + std::to_string(k) + "." + aspect] = "query gave " + error;
        di.aspect_errors[aspect] = "urDeviceGetInfo gave " + error;
      }
    }
    i.devices.push_back(std::move(di));
  }
  i.handle_layout = memory_layout();
  if (backend_ == UR_BACKEND_LEVEL_ZERO && adapter_version_ == 2) i.kind_layouts["physical"] = "ur-l0-v2-physical/1";
  i.kind_layouts["event"] = "opaque";
  // libze_ipcheck maps opened memory with mmap; a GPU driver maps into device address space.
  i.opened_memory_is_host_mapping = toolkit::library_loaded("libze_ipcheck");
  i.transport = "pidfd";
  i.extra["mem_open_flags_default"] = "0 (urIPCOpenMemHandleExp has no flags)";
  if (!api_.lacks().empty()) {
    std::string names;
    for (const auto& n : api_.lacks()) names += (names.empty() ? "" : ", ") + n;
    i.extra["ur_loader_lacks"] = names;
    const std::pair<const char*, const char*> verbs[] = {
        {"phys_get", "urIPCGetPhysMemHandleExp"}, {"phys_put", "urIPCPutPhysMemHandleExp"},
        {"phys_open", "urIPCOpenPhysMemHandleExp"}, {"phys_close", "urIPCClosePhysMemHandleExp"},
        {"event_create", "urEventCreateExp"},      {"event_get", "urIPCGetEventHandleExp"},
        {"event_put", "urIPCPutEventHandleExp"},   {"event_open", "urIPCOpenEventHandleExp"}};
    for (const auto& [verb, symbol] : verbs)
      for (const auto& n : api_.lacks())
        if (n == symbol) i.unsupported_verbs[verb] = std::string("this Unified Runtime loader exports no ") + symbol;
  }
  return i;
}

namespace {

const AdapterRegistration registered_ur{{"ur",
                                         "Unified Runtime (libur_loader.so.0, loaded at run time) over its Level Zero "
                                         "v1/v2 or CUDA adapter, with UMF under it",
                                         {"sycl", "ur"},
                                         [] { return std::unique_ptr<Adapter>(new UrAdapter); },
                                         {"loader", "release", "backend", "l0"},
                                         {"loader", "release"},
                                         [](const std::string& key, const std::string& value) -> std::string {
                                           if (key == "backend") return option_one_of(value, {"level_zero", "cuda", "auto"});
                                           if (key == "l0") return option_one_of(value, {"v1", "v2", "auto"});
                                           if (key == "release") return value.empty() ? "give a release (2026.2.0) or its folder" : "";
                                           return value.empty() ? "give libur_loader.so.0's path" : "";
                                         },
                                         // Over CUDA a role's start creates a context, as cuda's does.
                                         {.starts_per_device = 2, .jobs_per_device = 4, .hold_runtime = true}}};

}  // namespace
}  // namespace ipcheck::ur_adapter
