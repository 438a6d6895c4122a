// The `sycl` adapter: ipcheck's verbs through Intel's released SYCL runtime, the layer SYCL and
// dpctl users run (libsycl.so.9 of a oneAPI release installed by ci/oneapi-stack), on its Level
// Zero backend: libsycl over the release's UR loader and UR's Level Zero v1 or v2 adapter, over
// whichever Level Zero driver the loader finds (libze_ipcheck here). No SYCL header or library
// at build time (include/ipcheck/sycl/sycl_api.hpp declares what is called; tests check the
// declarations against each release). Without the release, init answers not_implemented and
// every case skips with the reason.
//
// Options (--adapter-opt, accepted only from the command line: a reproducer file cannot name
// a library to load):
//   release=VERSION|DIR  the oneAPI release to load (2026.1.2, 2026.2.0, or a release folder
//                        holding lib/libsycl.so.9 and RELEASE.txt); default: the newest release
//                        the build was configured with
//   l0=v1|v2|auto        UR's Level Zero v1 or v2 adapter under SYCL (UR_LOADER_USE_LEVEL_ZERO_V2,
//                        set before libsycl starts UR), as the ur adapter chooses
//
// Mapping (SYCL 2020 with sycl_ext_oneapi_ipc_memory, _ipc_physical_memory, _ipc_event):
//   devices    dpctl's DPCTLDeviceMgr_GetDevices(level_zero | gpu), one context over all
//              (DPCTLContext_CreateFromDevices), one queue per device (DPCTLQueue_Create)
//   memory     sycl::malloc_device / malloc_host / malloc_shared and sycl::free (dpctl's
//              DPCTLmalloc_*, DPCTLfree_with_queue); write and read are queue::memcpy, waited
//   mem IPC    ipc::memory::get / put / close (2026.2.0; ipc_memory:: on 2026.1.2), open is
//              the header's inline open over sycl::detail::openIPCMemHandle(data, size, ctx, dev)
//   physical   physical_mem (create with enable_ipc), ipc::physical_memory::get / put, open =
//              detail::openIPCPhysicalMemHandle; reserve_virtual_mem, physical_mem::map, unmap,
//              free_virtual_mem, get_mem_granularity (recommended)
//   events     make_event(ctx, enable_ipc [| enable_profiling]), ipc::event::get / put, open =
//              detail::openIPCEventHandle; signal = enqueue_signal_event + queue wait; query =
//              info::event::command_execution_status; no reset in SYCL
// Every outcome of a SYCL call is SYCL's (Outcome::runtime_*): its errc name, and the UR result
// its message names (UR underneath decided) or none (SYCL's own check decided). What the
// adapter decides itself (an unknown object id, open flags SYCL has no parameter for) is the
// adapter's. Descriptors never travel by ipcheck: UR's handles name their exporter (transport
// pidfd), as on the ur adapter.
#include "sycl_adapter.hpp"

#include <dlfcn.h>
#include <sys/prctl.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>
#include <typeinfo>

#include "ipcheck/runtime_library.hpp"
#include "ipcheck/ur/ur_api.hpp"


namespace ipcheck::sycl_adapter {
namespace {

constexpr const char* kSyclExceptionType = "N4sycl3_V19exceptionE";  // typeid(sycl::exception).name()

Errc errc_of_sycl(int errc) {
  switch (errc) {
    case 8: return Errc::invalid;                 // invalid
    case 12: return Errc::feature_not_supported;  // feature_not_supported
    case 9: return Errc::exhausted;               // memory_allocation
    case 14: return Errc::invalid;                // backend_mismatch
    default: return Errc::other;
  }
}

}  // namespace

// ---------------------------------------------------------------- the libraries

std::string Runtime::open(const std::string& dir) {
  const std::string lib = dir + "/lib/";
  // libDPCTLSyclInterface needs libsycl.so.9 and libintlc.so.5 by soname, and its RPATH names
  // the folder it was built in: both are loaded first, by path, so that its needs are met by
  // the release's own copies.
  for (const char* pre : {"libintlc.so.5"}) {
    if (!::dlopen((lib + pre).c_str(), RTLD_NOW | RTLD_GLOBAL)) {
      const char* e = ::dlerror();
      return "cannot load " + lib + pre + ": " + (e ? e : "dlopen failed");
    }
  }
  void* sycl = ::dlopen((lib + "libsycl.so.9").c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!sycl) {
    const char* e = ::dlerror();
    return "cannot load " + lib + "libsycl.so.9: " + (e ? e : "dlopen failed");
  }
  sycl_path_ = toolkit::loaded_path(sycl, lib + "libsycl.so.9");
  void* dpctl = ::dlopen((lib + "libDPCTLSyclInterface.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!dpctl) {
    const char* e = ::dlerror();
    return "cannot load dpctl's " + lib + "libDPCTLSyclInterface.so: " + (e ? e : "dlopen failed") +
           " (ci/oneapi-stack installs dpctl 0.22.1 beside each release)";
  }
  std::string missing;
  lacks_.clear();
#define IPCHECK_SYCL_RESOLVE(member, required, mangled, demangled, type) \
  member = reinterpret_cast<type>(::dlsym(sycl, mangled));               \
  if (!member && required) missing += (missing.empty() ? "" : ", ") + std::string(demangled); \
  if (!member && !required) lacks_.push_back(mangled);
  IPCHECK_SYCL_EXPORTS(IPCHECK_SYCL_RESOLVE)
#undef IPCHECK_SYCL_RESOLVE
#define IPCHECK_DPCTL_RESOLVE(name, type)                        \
  name = reinterpret_cast<type>(::dlsym(dpctl, #name));          \
  if (!name) missing += (missing.empty() ? "" : ", ") + std::string(#name);
  IPCHECK_DPCTL_FUNCTIONS(IPCHECK_DPCTL_RESOLVE)
#undef IPCHECK_DPCTL_RESOLVE
  if (!missing.empty())
    return sycl_path_ + " (with dpctl's libsyclinterface) lacks " + missing +
           " (not a SYCL runtime of oneAPI 2026.1 or later?)";
  return {};
}

// ---------------------------------------------------------------- set-up

SyclAdapter::~SyclAdapter() {
  if (!initialised_) return;
  // What a case left behind goes back to SYCL, each call guarded (SYCL throws).
  for (auto& [id, h] : mem_exports_)
    guarded("put", [&] { (ipc_namespace_ ? api_.ipc_mem_put : api_.ipc_memory_put)(&h, ctx_); });
  for (auto& [id, h] : phys_exports_) guarded("put", [&] { api_.ipc_phys_put(&h, ctx_); });
  for (auto& [id, h] : event_exports_) guarded("put", [&] { api_.ipc_event_put(&h, ctx_); });
  for (auto& [p, a] : allocs_) {
    if (a.opened)
      guarded("close", [&] { (ipc_namespace_ ? api_.ipc_mem_close : api_.ipc_memory_close)(ptr(p), ctx_); });
    else
      api_.DPCTLfree_with_queue(ptr(p), queues_[static_cast<std::size_t>(a.device)]);
  }
  events_.clear();
  phys_.clear();
  for (auto* q : queues_) api_.DPCTLQueue_Delete(q);
  if (ctx_) api_.DPCTLContext_Delete(ctx_);
  for (auto* d : devices_) api_.DPCTLDevice_Delete(d);
  if (device_vector_) api_.DPCTLDeviceVector_Delete(device_vector_);
}

Outcome SyclAdapter::read_options(const AdapterConfig& config, std::string& release, std::string& l0) {
  for (const auto& [k, v] : config.options) {
    if (k == "release") {
      if (v.empty()) return Outcome::failure(Errc::invalid, "sycl: adapter option release= is empty; give 2026.2.0 or a release folder");
      release = v;
    } else if (k == "l0") {
      if (v != "v1" && v != "v2" && v != "auto")
        return Outcome::failure(Errc::invalid, "sycl: adapter option l0=" + v + "; use v1, v2 or auto");
      l0 = v;
    } else {
      return Outcome::failure(Errc::invalid, "sycl: unknown adapter option '" + k + "'; sycl knows: release, l0");
    }
  }
  if (config.transport == "scm")
    return Outcome::failure(Errc::invalid,
                            "sycl: --transport scm, but SYCL's IPC handles (UR's) name their exporter and UMF or UR's "
                            "adapter takes the descriptor itself (pidfd_getfd); use --transport pidfd or auto");
  return Outcome::success();
}

Outcome SyclAdapter::init(const AdapterConfig& config) {
  std::string release;
  l0_request_ = "auto";
  if (Outcome o = read_options(config, release, l0_request_); !o.ok()) return o;
#ifdef IPCHECK_SYCL_DEFAULT_RELEASE
  if (release.empty()) release = IPCHECK_SYCL_DEFAULT_RELEASE;
#endif
  if (release.empty())
    return Outcome::failure(Errc::not_implemented,
                            "no SYCL runtime: no release named (--adapter-opt release=2026.2.0) and the build was "
                            "configured without the releases ci/oneapi-stack installs");
  toolkit::OneapiRelease rel;
  if (std::string why = toolkit::find_oneapi_release(release, rel); !why.empty())
    return Outcome::failure(Errc::not_implemented, "no SYCL runtime: " + why);
  release_ = rel.version;
  release_dir_ = rel.dir;
  // UR's Level Zero adapters read this when libsycl starts UR (at the first device query).
  if (l0_request_ != "auto") ::setenv("UR_LOADER_USE_LEVEL_ZERO_V2", l0_request_ == "v2" ? "1" : "0", 1);
  if (std::string why = toolkit::load_oneapi_runtime(rel); !why.empty())
    return Outcome::failure(Errc::not_implemented, "no SYCL runtime: " + why);
  if (std::string why = api_.open(rel.dir); !why.empty())
    return Outcome::failure(Errc::not_implemented, "no SYCL runtime: " + why);
  ipc_namespace_ = api_.ipc_mem_get && api_.ipc_mem_put && api_.ipc_mem_close;

  Outcome o = guarded("DPCTLDeviceMgr_GetDevices", [&] {
    device_vector_ = api_.DPCTLDeviceMgr_GetDevices(kDpctlLevelZero | kDpctlGpu);
  });
  if (!o.ok()) return o;
  const std::size_t n = device_vector_ ? api_.DPCTLDeviceVector_Size(device_vector_) : 0;
  if (n == 0)
    return Outcome::failure(
        Errc::not_implemented,
        "no SYCL device: SYCL " + release_ +
            " lists no Level Zero GPU; put the Level Zero 1.32 loader's lib/ (ci/ur-stack) on LD_LIBRARY_PATH and name a "
            "driver (ZE_ENABLE_ALT_DRIVERS=<build>/lib/libze_ipcheck.so.1); SYCL_UR_TRACE=1 says what SYCL tried");
  initialised_ = true;
  for (std::size_t i = 0; i < n; ++i) devices_.push_back(api_.DPCTLDeviceVector_GetAt(device_vector_, i));
  ctx_ = api_.DPCTLContext_CreateFromDevices(device_vector_, nullptr, 0);
  if (!ctx_)
    return Outcome::runtime_failure("DPCTLContext_CreateFromDevices", Errc::other,
                                    "sycl::context over the " + std::to_string(n) +
                                        " devices failed (dpctl returned none; DPCTL_VERBOSITY=error prints SYCL's message)",
                                    0, "no context");
  for (auto* d : devices_) {
    SyclObject* q = api_.DPCTLQueue_Create(ctx_, d, nullptr, 0);
    if (!q)
      return Outcome::runtime_failure("DPCTLQueue_Create", Errc::other,
                                      "sycl::queue failed (dpctl returned none; DPCTL_VERBOSITY=error prints SYCL's message)",
                                      0, "no queue");
    queues_.push_back(q);
  }
  // Under Yama ptrace_scope 1, let the run's processes take this process's descriptors (UMF
  // and UR's adapters under SYCL take them with pidfd_getfd).
  if (config.runner_pid > 0) ::prctl(PR_SET_PTRACER, static_cast<unsigned long>(config.runner_pid), 0, 0, 0);
  return Outcome::success();
}

// ---------------------------------------------------------------- outcomes

Outcome SyclAdapter::thrown(const char* call, std::exception_ptr e) const {
  const std::string fn = std::string("sycl: ") + call;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    const std::string what = x.what() ? x.what() : "";
    // UR's result, when SYCL's message names the one it got underneath.
    static const std::regex ur_name("UR_RESULT_[A-Z0-9_]+");
    std::smatch m;
    std::string ur;
    ur_api::ur_result_t urv{};
    if (std::regex_search(what, m, ur_name) && ur_api::result_of(m.str().c_str(), urv)) ur = m.str();
    if (std::strcmp(typeid(x).name(), kSyclExceptionType) == 0) {
      // sycl::exception derives virtually from std::exception: the object starts where the
      // most derived type does.
      const std::error_code& code = api_.exception_code(dynamic_cast<const void*>(&x));
      const char* name = sycl_api::errc_name(code.value());
      std::string native = std::string("errc::") + (name ? name : std::to_string(code.value()));
      Errc c = errc_of_sycl(code.value());
      if (!ur.empty()) {
        native += " (" + ur + ")";
        if (c == Errc::other) c = ur_api::errc_of(urv);
      }
      return Outcome::runtime_failure(call, c,
                                      fn + " threw sycl::exception " + native + ": " + what +
                                          (ur.empty() ? " [decided by SYCL]" : " [UR underneath: " + ur + "]"),
                                      code.value(), native);
    }
    return Outcome::runtime_failure(call, ur.empty() ? Errc::other : ur_api::errc_of(urv),
                                    fn + " threw " + typeid(x).name() + ": " + what, 0, typeid(x).name());
  } catch (...) {
    return Outcome::runtime_failure(call, Errc::other, fn + " threw something that is not a std::exception", 0,
                                    "unknown exception");
  }
}

Outcome SyclAdapter::lacking(const char* verb, const char* member) const {
  const char* demangled = member;
  for (std::size_t i = 0; i < kExportCount; ++i)
    if (std::strcmp(kExports[i].member, member) == 0) demangled = kExports[i].demangled;
  // The release, not the library's path (info has it): the message is the same on every machine.
  return Outcome::failure(Errc::not_implemented,
                          std::string("sycl: ") + verb + ": SYCL " + release_ + "'s libsycl.so.9 exports no " + demangled);
}

// ---------------------------------------------------------------- information

// "Intel(R) oneAPI DPC++/C++ Compiler 2026.2.0 (2026.2.0.20261001)": the compiler that built
// libsycl, from the library's own .comment bytes; "" when absent.
std::string SyclAdapter::library_release() const {
  std::ifstream in(api_.sycl_path(), std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string stem = "Intel(R) oneAPI DPC++/C++ Compiler ";
  const auto at = bytes.find(stem);
  if (at == std::string::npos) return {};
  const auto end = bytes.find('\0', at);
  return bytes.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

AdapterInfo SyclAdapter::info() {
  AdapterInfo i;
  const std::string built_by = library_release();
  std::string platform, platform_version;
  if (!devices_.empty()) {
    SyclObject* p = api_.DPCTLDevice_GetPlatform(devices_[0]);
    if (p) {
      if (const char* s = api_.DPCTLPlatform_GetName(p)) {
        platform = s;
        api_.DPCTLCString_Delete(s);
      }
      if (const char* s = api_.DPCTLPlatform_GetVersion(p)) {
        platform_version = s;
        api_.DPCTLCString_Delete(s);
      }
      api_.DPCTLPlatform_Delete(p);
    }
  }
  // UR's adapter under SYCL: as asked, or, for auto, as UR's platform name says ("Intel(R)
  // oneAPI Unified Runtime over Level-Zero V2" is v2's; v1's has no "V2").
  std::string l0 = l0_request_;
  if (l0 == "auto" && platform.find("Level-Zero") != std::string::npos)
    l0 = platform.find("Level-Zero V2") != std::string::npos ? "v2" : "v1";
  i.driver_name = "SYCL (Intel oneAPI DPC++ runtime)";
  // "level_zero/<l0> oneAPI <release>": the leading word lets an expectations file name the
  // backend, as on ur.
  i.driver_version = "level_zero/" + l0 + " oneAPI " + release_ +
                     (built_by.empty() ? "" : " (libsycl: " + built_by.substr(built_by.rfind('(') + 1));
  if (!built_by.empty() && i.driver_version.back() != ')') i.driver_version += ")";
  i.api_version = "SYCL 2020, sycl_ext_oneapi_ipc_memory" + std::string(api_.ipc_phys_get ? ", _ipc_physical_memory" : "") +
                  (api_.ipc_event_get ? ", _ipc_event" : "");
  i.extra["release"] = release_;
  i.extra["release_dir"] = release_dir_;
  i.extra["libsycl"] = api_.sycl_path();
  i.extra["libsycl_built_by"] = built_by.empty() ? "unknown (no compiler identification in libsycl)" : built_by;
  i.extra["backend"] = "level_zero";
  i.extra["l0_adapter_requested"] = l0_request_;
  i.extra["l0_adapter"] = l0;
  i.extra["ipc_memory_namespace"] = ipc_namespace_ ? "ipc::memory" : "ipc_memory";
  if (!platform.empty()) i.extra["platform"] = platform;
  if (!platform_version.empty()) i.extra["platform_version"] = platform_version;
  std::string lacks;
  for (const auto& m : api_.lacks())
    for (std::size_t k = 0; k < kExportCount; ++k)
      if (m == kExports[k].mangled) lacks += (lacks.empty() ? "" : "; ") + std::string(kExports[k].demangled);
  if (!lacks.empty()) i.extra["libsycl_lacks"] = lacks;
  for (std::size_t k = 0; k < devices_.size(); ++k) {
    DeviceInfo di;
    if (const char* s = api_.DPCTLDevice_GetName(devices_[k])) {
      di.name = s;
      api_.DPCTLCString_Delete(s);
    }
    di.uuid = "sycl-device-" + std::to_string(k);
    // The three aspects, as SYCL answers them; an aspect this release does not define (no
    // export of its IPC functions) reads false and says so.
    const struct {
      const char* name;
      int aspect;
      bool defined;
    } aspects[] = {{"ipc_memory", kAspectIpcMemory, true},
                   {"ipc_physical_memory", kAspectIpcPhysicalMemory, api_.ipc_phys_get != nullptr},
                   {"ipc_event", kAspectIpcEvent, api_.ipc_event_get != nullptr}};
    for (const auto& a : aspects) {
      bool has = false;
      if (!a.defined) {
        i.extra["device" + std::to_string(k) + "." + a.name] = "SYCL " + release_ + " has no such aspect";
      } else {
        Outcome o = guarded("device::has", [&] { has = api_.device_has(devices_[k], a.aspect); });
        if (!o.ok()) i.extra["device" + std::to_string(k) + "." + a.name] = "device::has gave " + o.native_name;
      }
      di.aspects[a.name] = has;
    }
    i.devices.push_back(std::move(di));
  }
  // SYCL's handle data is UR's (UMF's header and the provider's bytes).
  i.handle_layout = l0 == "v1" ? "ur-umf-l0-v1/1" : l0 == "v2" ? "ur-umf-l0-v2/1" : "opaque";
  if (l0 == "v2") i.kind_layouts["physical"] = "ur-l0-v2-physical/1";
  else i.kind_layouts["physical"] = "opaque";
  i.kind_layouts["event"] = "opaque";
  i.opened_memory_is_host_mapping = toolkit::library_loaded("libze_ipcheck");
  i.transport = "pidfd";
  i.extra["mem_open_flags_default"] = "0 (SYCL's open has no flags)";
  const std::pair<const char*, const char*> verbs[] = {
      {"phys_create", "phys_create"}, {"phys_get", "ipc_phys_get"},   {"phys_put", "ipc_phys_put"},
      {"phys_open", "open_ipc_phys"}, {"event_create", "make_event"}, {"event_get", "ipc_event_get"},
      {"event_put", "ipc_event_put"}, {"event_open", "open_ipc_event"}, {"event_signal", "signal_event"}};
  for (const auto& [verb, member] : verbs)
    for (std::size_t k = 0; k < kExportCount; ++k)
      if (std::strcmp(kExports[k].member, member) == 0)
        for (const auto& m : api_.lacks())
          if (m == kExports[k].mangled)
            i.unsupported_verbs[verb] = "SYCL " + release_ + " exports no " + kExports[k].demangled;
  return i;
}

namespace {

const AdapterRegistration registered_sycl{{"sycl",
                                           "Intel's released SYCL runtime (libsycl.so.9 of a oneAPI release, loaded at "
                                           "run time, with dpctl's libsyclinterface) on Level Zero, UR's v1 or v2 "
                                           "adapter under it",
                                           {"sycl"},
                                           [] { return std::unique_ptr<Adapter>(new SyclAdapter); },
                                           {"release", "l0"},
                                           {"release"},
                                           [](const std::string& key, const std::string& value) -> std::string {
                                             if (key == "l0") return option_one_of(value, {"v1", "v2", "auto"});
                                             return value.empty() ? "give a release (2026.2.0) or its folder" : "";
                                           },
                                           {},
                                           /*shared_cxx_runtime=*/true}};

}  // namespace
}  // namespace ipcheck::sycl_adapter
