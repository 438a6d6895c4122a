// The `ze` adapter: ipcheck's verbs over the Level Zero API, through the system loader.
//
// Claims the sycl, ur and ze profiles. It runs against whatever driver the loader finds: an
// Intel GPU's compute-runtime (libze_intel_gpu.so.1), or in CI libze_ipcheck (lib/zedriver)
// named by ZE_ENABLE_ALT_DRIVERS. Memory moves with immediate command lists (a GPU's device
// memory is not host-visible). Every outcome carries the ze_result_t and its name.
//
// Handle conventions (how the 64 bytes of ze_ipc_mem_handle_t travel):
//   fd     a descriptor leads the handle (compute-runtime's default): it is sent by SCM_RIGHTS
//          with the bytes (Exported::fd) and the consumer writes its received descriptor into
//          bytes 0..3 before zeMemOpenIpcHandle / zeEventPoolOpenIpcHandle.
//   opaque the handle names its exporter; bytes alone, the driver takes the descriptor with
//          pidfd_getfd.
// libze_ipcheck names its convention as an extension property; for other drivers the adapter
// option handle=fd|opaque says it (default fd).
//
// Level Zero has no reference counts for events and physical memory, and API 1.4 has no
// event objects without pools: the adapter keeps a count per object (as Unified Runtime does)
// and gives each event a one-event pool.
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "ipcheck/adapter_toolkit.hpp"
#include "ze_adapter.hpp"
#include "ze_ipcheck/handle_layout.hpp"

namespace ipcheck::ze {

Errc errc_of(ze_result_t r) {
  switch (r) {
    case ZE_RESULT_SUCCESS: return Errc::success;
    case ZE_RESULT_ERROR_INVALID_ARGUMENT:
    case ZE_RESULT_ERROR_INVALID_NULL_HANDLE:
    case ZE_RESULT_ERROR_INVALID_NULL_POINTER:
    case ZE_RESULT_ERROR_INVALID_SIZE:
    case ZE_RESULT_ERROR_UNSUPPORTED_SIZE:
    case ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT:
    case ZE_RESULT_ERROR_INVALID_ENUMERATION:
    case ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION:
    case ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT:
    case ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE:
    case ZE_RESULT_ERROR_OVERLAPPING_REGIONS: return Errc::invalid;
    case ZE_RESULT_ERROR_UNSUPPORTED_FEATURE:
    case ZE_RESULT_ERROR_UNSUPPORTED_VERSION: return Errc::feature_not_supported;
    case ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS: return Errc::permission_denied;
    case ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY:
    case ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY: return Errc::exhausted;
    case ZE_RESULT_NOT_READY: return Errc::timeout;
    case ZE_RESULT_ERROR_DEVICE_LOST:
    case ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET: return Errc::device_lost;
    // libze_ipcheck answers NOT_AVAILABLE when the exporter of a handle has exited.
    case ZE_RESULT_ERROR_NOT_AVAILABLE: return Errc::exporter_gone;
    default: return Errc::other;
  }
}

bool env_is_one(const char* name) {
  const char* v = std::getenv(name);
  return v && std::strcmp(v, "1") == 0;  // the loader's getenv_tobool reads "1" only
}

std::string bytes_hex(const std::uint8_t* p, std::size_t n) {
  std::string s;
  char b[4];
  for (std::size_t i = 0; i < n; ++i) {
    std::snprintf(b, sizeof b, "%02x", p[i]);
    s += b;
  }
  return s;
}

ZeAdapter::~ZeAdapter() {
  // Objects the case left behind go back to the driver before the process ends.
  if (!ctx_) return;
  for (auto& [id, e] : events_) drop_event(e);
  for (auto& [id, p] : phys_) api_.zePhysicalMemDestroy(ctx_, p.handle);
  for (auto& l : lists_)
    if (l) api_.zeCommandListDestroy(l);
  api_.zeContextDestroy(ctx_);
}

Outcome ZeAdapter::init(const AdapterConfig& config) {
  validation_ = env_is_one("ZE_ENABLE_VALIDATION_LAYER") && env_is_one("ZE_ENABLE_PARAMETER_VALIDATION");
  std::string handle_opt = "auto";
  for (const auto& [k, v] : config.options) {
    if (k == "handle") {
      if (v != "fd" && v != "opaque" && v != "auto")
        return Outcome::failure(Errc::invalid, "ze: adapter option handle=" + v + "; use fd, opaque or auto");
      handle_opt = v;
    } else if (k == "driver") {
      driver_index_ = std::atoi(v.c_str());
    } else if (k == "devices") {
      ::setenv("IPCHECK_REF_DEVICES", v.c_str(), 1);  // libze_ipcheck's device set (ipcref's syntax)
    } else {
      return Outcome::failure(Errc::invalid, "ze: unknown adapter option '" + k + "'; ze knows: handle, driver, devices");
    }
  }
  // libze_ipcheck reads its convention at zeInit; an option or an explicit transport picks it.
  if (handle_opt != "auto")
    ::setenv(ze_ipcheck::kEnvIpcHandle, handle_opt.c_str(), 1);
  else if (config.transport == "scm")
    ::setenv(ze_ipcheck::kEnvIpcHandle, "fd", 0);
  else if (config.transport == "pidfd")
    ::setenv(ze_ipcheck::kEnvIpcHandle, "opaque", 0);

  if (std::string why = api_.open(); !why.empty())
    return Outcome::failure(Errc::not_implemented, "no Level Zero driver: " + why);
  if (const ze_result_t r = api_.zeInit(0); r != ZE_RESULT_SUCCESS) {
    const char* alt = std::getenv("ZE_ENABLE_ALT_DRIVERS");
    const std::string where = alt ? std::string("ZE_ENABLE_ALT_DRIVERS=") + alt
                                  : std::string("libze_intel_gpu.so.1 or libze_intel_vpu.so.1");
    if (r == ZE_RESULT_ERROR_UNINITIALIZED)
      return Outcome::failure(Errc::not_implemented,
                              "no Level Zero driver: zeInit gave ZE_RESULT_ERROR_UNINITIALIZED; the loader found no "
                              "driver that initialises (it tried " + where + "). Install Intel's compute-runtime, or "
                              "point ZE_ENABLE_ALT_DRIVERS at an absolute driver path such as "
                              "<build>/lib/libze_ipcheck.so.1",
                              r, ze::result_name(r));
    return Outcome::failure(errc_of(r), "zeInit failed with " + std::string(ze::result_name(r)) + " (driver " +
                                            where + "; its standard error says why)",
                            r, ze::result_name(r));
  }
  uint32_t n = 0;
  if (Outcome o = call("zeDriverGet", api_.zeDriverGet(&n, nullptr)); !o.ok()) return o;
  if (n == 0) return Outcome::failure(Errc::not_implemented, "no Level Zero driver: zeDriverGet found none");
  if (driver_index_ < 0 || static_cast<uint32_t>(driver_index_) >= n)
    return Outcome::failure(Errc::invalid, "ze: adapter option driver=" + std::to_string(driver_index_) +
                                               " is not one of the " + std::to_string(n) + " drivers");
  std::vector<ze_driver_handle_t> drivers(n);
  if (Outcome o = call("zeDriverGet", api_.zeDriverGet(&n, drivers.data())); !o.ok()) return o;
  driver_ = drivers[static_cast<std::size_t>(driver_index_)];
  api_.resolve_newer(driver_);

  uint32_t nd = 0;
  if (Outcome o = call("zeDeviceGet", api_.zeDeviceGet(driver_, &nd, nullptr)); !o.ok()) return o;
  devices_.resize(nd);
  if (Outcome o = call("zeDeviceGet", api_.zeDeviceGet(driver_, &nd, devices_.data())); !o.ok()) return o;
  devices_.resize(nd);
  if (devices_.empty()) return Outcome::failure(Errc::not_implemented, "no Level Zero device: the driver has none");
  lists_.assign(devices_.size(), nullptr);
  ze_context_desc_t cd{ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
  if (Outcome o = call("zeContextCreate", api_.zeContextCreate(driver_, &cd, &ctx_)); !o.ok()) return o;

  if (Outcome o = read_convention(handle_opt); !o.ok()) return o;
  if ((config.transport == "scm" && !fd_first_) || (config.transport == "pidfd" && fd_first_))
    return Outcome::failure(
        Errc::invalid, "ze: --transport " + config.transport + ", but the driver's IPC handles " +
                           (fd_first_ ? "carry a descriptor that only SCM_RIGHTS can move"
                                      : "name their exporter (the driver takes descriptors with pidfd_getfd)") +
                           "; use --transport auto");
  // Under Yama ptrace_scope 1, let the run's processes take this process's descriptors
  // (opaque handles, physical memory descriptors). Without Yama the call fails harmlessly.
  if (config.runner_pid > 0) ::prctl(PR_SET_PTRACER, static_cast<unsigned long>(config.runner_pid), 0, 0, 0);
  return Outcome::success();
}

AdapterInfo ZeAdapter::info() {
  AdapterInfo i;
  const std::vector<std::string> libs = driver_libraries();
  for (const auto& l : libs) {
    const auto slash = l.rfind('/');
    i.driver_name += (i.driver_name.empty() ? "" : ", ") + (slash == std::string::npos ? l : l.substr(slash + 1));
    i.extra["driver_path"] += (i.extra["driver_path"].empty() ? "" : ", ") + l;
  }
  if (i.driver_name.empty()) i.driver_name = "unknown Level Zero driver";
  ze_driver_properties_t dp{ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES, nullptr, {}, 0};
  if (api_.zeDriverGetProperties(driver_, &dp) == ZE_RESULT_SUCCESS) {
    const uint32_t v = dp.driverVersion;
    // compute-runtime's encoding (also libze_ipcheck's): major << 24 | minor << 16 | build.
    i.driver_version = std::to_string(v >> 24) + "." + std::to_string((v >> 16) & 0xff) + "." +
                       std::to_string(v & 0xffff);
    i.extra["driver_version_raw"] = hex(v);
    i.extra["driver_uuid"] = bytes_hex(dp.uuid.id, sizeof dp.uuid.id);
  }
  if (std::string s = intel_version_string(); !s.empty()) i.driver_version = s;
  ze_api_version_t av{};
  if (api_.zeDriverGetApiVersion(driver_, &av) == ZE_RESULT_SUCCESS)
    i.api_version = "Level Zero " + std::to_string(ZE_MAJOR_VERSION(av)) + "." + std::to_string(ZE_MINOR_VERSION(av));
  i.extra["loader"] = "libze_loader.so.1 " + api_.loader_version();
  i.extra["validation_layer"] = validation_on() ? "on (parameter validation)"
                                                : (env_is_one("ZE_ENABLE_VALIDATION_LAYER") ? "on" : "off");
  i.extra["handle_convention"] = fd_first_ ? "fd" : "opaque";
  if (validation_on())
    i.extra["workaround"] = "zeVirtualMemReserve gets a start hint: the validation layer of loader 1.8 refuses "
                            "pStart == nullptr, which the specification allows";
  for (const auto& [name, from] : api_.newer_found) i.extra["fn." + name] = from;

  const auto& aspects = device_aspects();
  for (std::size_t k = 0; k < devices_.size(); ++k) {
    DeviceInfo di;
    ze_device_properties_t p{};
    p.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
    if (api_.zeDeviceGetProperties(devices_[k], &p) == ZE_RESULT_SUCCESS) {
      di.name = p.name;
      di.uuid = bytes_hex(p.uuid.id, sizeof p.uuid.id);
    }
    di.aspects = aspects[k];
    if (k < aspect_errors_.size()) di.aspect_errors = aspect_errors_[k];
    i.devices.push_back(di);
  }
  i.handle_layout = layout_;
  i.kind_layouts["physical"] = "ze-adapter-physical/1";  // the adapter's own record (PhysHandle)
  // libze_ipcheck maps with mmap; a GPU driver maps into device address space it keeps.
  i.opened_memory_is_host_mapping = layout_ == ze_ipcheck::kLayoutFd || layout_ == ze_ipcheck::kLayoutOpaque;
  i.transport = fd_first_ ? "scm" : "pidfd";
  return i;
}

Outcome ZeAdapter::call(const char* function, ze_result_t r, const std::string& what) {
  if (r == ZE_RESULT_SUCCESS) return Outcome::runtime_success(function);
  std::string msg = std::string(function) + " gave " + ze::result_name(r);
  if (!what.empty()) msg = what + ": " + msg;
  if (auto& f = api_.zeDriverGetLastErrorDescription) {
    const char* s = nullptr;
    // Only a description that names this call: a layer may have refused it before the driver.
    if (f.fn(f.via_driver ? static_cast<ze_driver_handle_t>(api_.translate(ZEL_HANDLE_DRIVER, driver_)) : driver_,
             &s) == ZE_RESULT_SUCCESS &&
        s && *s && std::strstr(s, function))
      msg += " (driver: " + std::string(s) + ")";
  }
  return Outcome::runtime_failure(function, errc_of(r), msg, static_cast<long long>(r), ze::result_name(r));
}

Outcome ZeAdapter::newer_missing(const char* function, const char* version, const char* verb) const {
  return Outcome::failure(
      Errc::not_implemented,
      std::string(verb) + " needs " + function + " (Level Zero " + version + "), which is missing: libze_loader.so.1" +
          (api_.loader_version().empty() ? "" : " (loader " + api_.loader_version() + ")") +
          " does not export it and the driver does not offer it through zeDriverGetExtensionFunctionAddress");
}

ze_context_handle_t ZeAdapter::context_for(bool via_driver) const {
  return via_driver ? static_cast<ze_context_handle_t>(api_.translate(ZEL_HANDLE_CONTEXT, ctx_)) : ctx_;
}

ze_physical_mem_handle_t ZeAdapter::phys_for(bool via_driver, ze_physical_mem_handle_t h) const {
  return via_driver ? static_cast<ze_physical_mem_handle_t>(api_.translate(ZEL_HANDLE_PHYSICAL_MEM, h)) : h;
}

const std::vector<std::map<std::string, bool>>& ZeAdapter::device_aspects() {
  if (!aspects_.empty()) return aspects_;
  ze_driver_ipc_properties_t ip{ZE_STRUCTURE_TYPE_DRIVER_IPC_PROPERTIES, nullptr, 0};
  // A query that fails answers no value: the aspects it decides read false, and the error
  // is kept (DeviceInfo::aspect_errors), never reduced to "no".
  const ze_result_t ipr = api_.zeDriverGetIpcProperties(driver_, &ip);
  aspect_errors_.assign(devices_.size(), {});
  for (std::size_t k = 0; k < devices_.size(); ++k) {
    const int d = static_cast<int>(k);
    std::map<std::string, bool> a;
    if (ipr != ZE_RESULT_SUCCESS)
      for (const char* aspect : {"ipc_memory", "ipc_event"})
        aspect_errors_[k][aspect] = std::string("zeDriverGetIpcProperties gave ") + ze::result_name(ipr);
    a["ipc_memory"] = (ip.flags & ZE_IPC_PROPERTY_FLAG_MEMORY) && can_export_memory(d);
    a["ipc_event"] = (ip.flags & ZE_IPC_PROPERTY_FLAG_EVENT_POOL) && can_export_event(d);
    ze_device_external_memory_properties_t em{};
    em.stype = ZE_STRUCTURE_TYPE_DEVICE_EXTERNAL_MEMORY_PROPERTIES;
    const ze_result_t emr = api_.zeDeviceGetExternalMemoryProperties(devices_[k], &em);
    if (emr != ZE_RESULT_SUCCESS)
      aspect_errors_[k]["ipc_physical_memory"] = std::string("zeDeviceGetExternalMemoryProperties gave ") + ze::result_name(emr);
    const bool exports = emr == ZE_RESULT_SUCCESS && (em.memoryAllocationExportTypes & kPhysExportType) != 0;
    a["ipc_physical_memory"] = exports && api_.zePhysicalMemGetProperties && can_export_physical(d);
    aspects_.push_back(std::move(a));
  }
  return aspects_;
}

bool ZeAdapter::can_export_memory(int device) {
  auto a = alloc(device, 4096, MemKind::device);
  if (!a.ok()) return false;
  auto e = mem_get(a.value);
  if (e.ok()) {
    mem_put(e.value.id);  // without zeMemPutIpcHandle the free below releases it
    mem_exports_.erase(e.value.id);
  }
  free(a.value);
  return e.ok();
}

bool ZeAdapter::can_export_event(int device) {
  auto ev = event_create(device, {true, false});
  if (!ev.ok()) return false;
  auto e = event_get(ev.value);
  if (e.ok()) {
    event_put(e.value.id);
    event_exports_.erase(e.value.id);
  }
  event_release(ev.value);
  return e.ok();
}

bool ZeAdapter::can_export_physical(int device) {
  auto pm = phys_create(device, phys_granularity(device), true);
  if (!pm.ok()) return false;
  auto e = phys_get(pm.value);
  if (e.ok()) phys_put(e.value.id);
  phys_release(pm.value);
  return e.ok();
}

Outcome ZeAdapter::read_convention(const std::string& option) {
  uint32_t n = 0;
  std::vector<ze_driver_extension_properties_t> ext;
  if (api_.zeDriverGetExtensionProperties(driver_, &n, nullptr) == ZE_RESULT_SUCCESS && n) {
    ext.resize(n);
    if (api_.zeDriverGetExtensionProperties(driver_, &n, ext.data()) != ZE_RESULT_SUCCESS) ext.clear();
    ext.resize(std::min<std::size_t>(ext.size(), n));
  }
  bool ours = false;
  for (const auto& e : ext) {
    if (std::strcmp(e.name, ze_ipcheck::kExtensionFdHandle) == 0) {
      ours = true;
      fd_first_ = true;
    } else if (std::strcmp(e.name, ze_ipcheck::kExtensionOpaqueHandle) == 0) {
      ours = true;
      fd_first_ = false;
    }
  }
  if (ours) {
    if (option != "auto" && (option == "fd") != fd_first_)
      return Outcome::failure(Errc::invalid, "ze: handle=" + option + ", but libze_ipcheck runs with " +
                                                 ze_ipcheck::kEnvIpcHandle + "=" + (fd_first_ ? "fd" : "opaque") +
                                                 " from its environment");
    layout_ = fd_first_ ? ze_ipcheck::kLayoutFd : ze_ipcheck::kLayoutOpaque;
    return Outcome::success();
  }
  fd_first_ = option != "opaque";
  bool intel = false;
  for (const auto& l : driver_libraries()) intel = intel || l.find("ze_intel_gpu") != std::string::npos;
  // Names fuzz/ knows for compute-runtime's handles (context_imp.h: IpcMemoryData and
  // IpcOpaqueMemoryData); another driver's bytes are unknown to it.
  layout_ = intel ? (fd_first_ ? "ze-intel-fd/1" : "ze-intel-opaque/1")
                  : (fd_first_ ? "ze-unknown-fd" : "ze-unknown-opaque");
  return Outcome::success();
}

std::vector<std::string> ZeAdapter::driver_libraries() {
  std::vector<std::string> out;
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        const std::string name = info->dlpi_name ? info->dlpi_name : "";
        if (name.empty() || name.find("libze_loader") != std::string::npos ||
            name.find("libze_validation_layer") != std::string::npos ||
            name.find("libze_tracing_layer") != std::string::npos)
          return 0;
        if (void* h = ::dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD)) {
          if (::dlsym(h, "zeGetDriverProcAddrTable")) static_cast<std::vector<std::string>*>(data)->push_back(name);
          ::dlclose(h);
        }
        return 0;
      },
      &out);
  return out;
}

std::string ZeAdapter::intel_version_string() {
  void* f = nullptr;
  if (api_.zeDriverGetExtensionFunctionAddress(driver_, "zeIntelGetDriverVersionString", &f) != ZE_RESULT_SUCCESS || !f)
    return {};
  using Fn = ze_result_t(ZE_APICALL*)(ze_driver_handle_t, char*, size_t*);
  auto fn = reinterpret_cast<Fn>(f);
  const auto drv = static_cast<ze_driver_handle_t>(api_.translate(ZEL_HANDLE_DRIVER, driver_));
  size_t n = 0;
  if (fn(drv, nullptr, &n) != ZE_RESULT_SUCCESS || n == 0 || n > 4096) return {};
  std::string s(n, '\0');
  if (fn(drv, s.data(), &n) != ZE_RESULT_SUCCESS) return {};
  s.resize(std::strlen(s.c_str()));
  return s;
}

namespace {
const AdapterRegistration registered_ze{{"ze",
                               "Level Zero through the system loader (Intel's driver, or libze_ipcheck via "
                               "ZE_ENABLE_ALT_DRIVERS)",
                               {"sycl", "ur", "ze"},
                               [] { return std::unique_ptr<Adapter>(new ZeAdapter); },
                               {"handle", "driver", "devices"},
                               {},
                               [](const std::string& key, const std::string& value) -> std::string {
                                 if (key == "handle") return option_one_of(value, {"fd", "opaque", "auto"});
                                 if (key == "driver") return option_whole_number(value, 255);
                                 return value.empty() ? "give the device set (IPCHECK_REF_DEVICES' syntax)" : "";
                               },
                               {.starts_per_device = 4, .jobs_per_device = 4}}};
}  // namespace

}  // namespace ipcheck::ze
