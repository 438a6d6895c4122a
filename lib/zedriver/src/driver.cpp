// Initialisation, configuration, the registry of live objects, error plumbing, and the
// driver, device and context entry points.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <map>

#include "ze_ipcheck/defects.hpp"
#include "entries.hpp"
#include "ze_ipcheck/defects.hpp"
#include "state.hpp"

#ifndef ZE_IPCHECK_VERSION_MAJOR
#define ZE_IPCHECK_VERSION_MAJOR 0
#define ZE_IPCHECK_VERSION_MINOR 0
#define ZE_IPCHECK_VERSION_PATCH 0
#endif

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

// An offerable extension function by name; null for any other name.
static void* extension_function(const std::string& n) {
  static const std::map<std::string, void*> functions{
      {"zeMemPutIpcHandle", reinterpret_cast<void*>(&MemPutIpcHandle)},
      {"zeEventPoolPutIpcHandle", reinterpret_cast<void*>(&EventPoolPutIpcHandle)},
      {"zePhysicalMemGetProperties", reinterpret_cast<void*>(&PhysicalMemGetProperties)},
      {"zeMemGetFileDescriptorFromIpcHandleExp", reinterpret_cast<void*>(&MemGetFileDescriptorFromIpcHandleExp)},
      {"zeMemGetIpcHandleFromFileDescriptorExp", reinterpret_cast<void*>(&MemGetIpcHandleFromFileDescriptorExp)},
      {"zeDriverGetLastErrorDescription", reinterpret_cast<void*>(&DriverGetLastErrorDescription)},
      {"zeCommandListHostSynchronize", reinterpret_cast<void*>(&CommandListHostSynchronize)},
      {"zeEventCounterBasedCreate", reinterpret_cast<void*>(&EventCounterBasedCreate)},
      {"zeEventCounterBasedGetIpcHandle", reinterpret_cast<void*>(&EventCounterBasedGetIpcHandle)},
      {"zeEventCounterBasedOpenIpcHandle", reinterpret_cast<void*>(&EventCounterBasedOpenIpcHandle)},
      {"zeEventCounterBasedCloseIpcHandle", reinterpret_cast<void*>(&EventCounterBasedCloseIpcHandle)},
      // Intel's experimental names (compute-runtime): the same functions, but Create2 takes
      // the zex descriptor.
      {"zexCounterBasedEventCreate2", reinterpret_cast<void*>(&ZexCounterBasedEventCreate2)},
      {"zexCounterBasedEventGetIpcHandle", reinterpret_cast<void*>(&EventCounterBasedGetIpcHandle)},
      {"zexCounterBasedEventOpenIpcHandle", reinterpret_cast<void*>(&EventCounterBasedOpenIpcHandle)},
      {"zexCounterBasedEventCloseIpcHandle", reinterpret_cast<void*>(&EventCounterBasedCloseIpcHandle)},
  };
  const auto it = functions.find(n);
  return it == functions.end() ? nullptr : it->second;
}

namespace {

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

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

// ---------------------------------------------------------------- global and driver

namespace {

Driver& get_driver(ze_driver_handle_t h, const char* function) {
  Driver& d = driver();
  get<Driver>(h, Kind::driver, function, "hDriver");
  return d;
}

ze_device_handle_t handle_of(Device* d) { return reinterpret_cast<ze_device_handle_t>(d); }

}  // namespace

ze_result_t ZE_APICALL Init(ze_init_flags_t flags) { return initialize(flags); }

ze_result_t ZE_APICALL DriverGet(uint32_t* pCount, ze_driver_handle_t* phDrivers) {
  return entry("zeDriverGet", [&] {
    need_pointer(pCount, "zeDriverGet", "pCount");
    Driver& d = driver();
    if (*pCount == 0 || !phDrivers) {
      *pCount = 1;
      return ZE_RESULT_SUCCESS;
    }
    phDrivers[0] = reinterpret_cast<ze_driver_handle_t>(&d);
    *pCount = 1;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DriverGetApiVersion(ze_driver_handle_t hDriver, ze_api_version_t* version) {
  return entry("zeDriverGetApiVersion", [&] {
    get_driver(hDriver, "zeDriverGetApiVersion");
    *need_pointer(version, "zeDriverGetApiVersion", "version") = ZE_API_VERSION_1_4;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DriverGetProperties(ze_driver_handle_t hDriver, ze_driver_properties_t* p) {
  return entry("zeDriverGetProperties", [&] {
    Driver& d = get_driver(hDriver, "zeDriverGetProperties");
    need_pointer(p, "zeDriverGetProperties", "pDriverProperties");
    // A stable identity: "ipcheck-ze" and the version, padded with zeros.
    std::memset(p->uuid.id, 0, sizeof p->uuid.id);
    std::memcpy(p->uuid.id, "ipcheck-ze", 10);
    p->uuid.id[12] = ZE_IPCHECK_VERSION_MAJOR;
    p->uuid.id[13] = ZE_IPCHECK_VERSION_MINOR;
    p->uuid.id[14] = ZE_IPCHECK_VERSION_PATCH;
    // compute-runtime's encoding, major << 24 | minor << 16 | build: ipcheck's major and minor,
    // and as build either the compute-runtime build from which runtimes trust counter-based
    // event IPC (identity intel) or ipcheck's patch version.
    p->driverVersion = (static_cast<uint32_t>(ZE_IPCHECK_VERSION_MAJOR) << 24) |
                       (static_cast<uint32_t>(ZE_IPCHECK_VERSION_MINOR) << 16) |
                       (d.config.identity == Identity::intel ? ze_ipcheck::kIntelDriverBuild
                                                             : static_cast<uint32_t>(ZE_IPCHECK_VERSION_PATCH));
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DriverGetIpcProperties(ze_driver_handle_t hDriver, ze_driver_ipc_properties_t* p) {
  return entry("zeDriverGetIpcProperties", [&] {
    Driver& d = get_driver(hDriver, "zeDriverGetIpcProperties");
    need_pointer(p, "zeDriverGetIpcProperties", "pIpcProperties");
    p->flags = 0;
    for (const auto& dev : d.devices) {
      if (dev->dev.has(ipcref::aspect::ipc_memory)) p->flags |= ZE_IPC_PROPERTY_FLAG_MEMORY;
      if (dev->dev.has(ipcref::aspect::ipc_event)) p->flags |= ZE_IPC_PROPERTY_FLAG_EVENT_POOL;
    }
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DriverGetExtensionProperties(ze_driver_handle_t hDriver, uint32_t* pCount,
                                                    ze_driver_extension_properties_t* pProperties) {
  return entry("zeDriverGetExtensionProperties", [&] {
    Driver& d = get_driver(hDriver, "zeDriverGetExtensionProperties");
    need_pointer(pCount, "zeDriverGetExtensionProperties", "pCount");
    // One extension: the name of the active IPC handle convention (handle_layout.hpp).
    const char* name = d.config.convention == Convention::fd ? ze_ipcheck::kExtensionFdHandle
                                                              : ze_ipcheck::kExtensionOpaqueHandle;
    if (*pCount == 0 || !pProperties) {
      *pCount = 1;
      return ZE_RESULT_SUCCESS;
    }
    std::memset(&pProperties[0], 0, sizeof pProperties[0]);
    std::snprintf(pProperties[0].name, sizeof pProperties[0].name, "%s", name);
    pProperties[0].version = 1;
    *pCount = 1;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DriverGetExtensionFunctionAddress(ze_driver_handle_t hDriver, const char* name,
                                                         void** ppFunctionAddress) {
  return entry("zeDriverGetExtensionFunctionAddress", [&] {
    Driver& d = get_driver(hDriver, "zeDriverGetExtensionFunctionAddress");
    need_pointer(name, "zeDriverGetExtensionFunctionAddress", "name");
    need_pointer(ppFunctionAddress, "zeDriverGetExtensionFunctionAddress", "ppFunctionAddress");
    *ppFunctionAddress = nullptr;
    const std::string n = name;
    void* f = extension_function(n);
    if (!f)
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat("zeDriverGetExtensionFunctionAddress: libze_ipcheck has no function '", n,
                                                 "'; it can offer: ", join(offerable_extensions())));
    if (extension_withheld(n))
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat("zeDriverGetExtensionFunctionAddress: '", n,
                                                 "' is withheld by IPCHECK_FAILPOINTS (withhold=ext:", n, ")"));
    if (!d.config.extensions.count(n))
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat("zeDriverGetExtensionFunctionAddress: '", n, "' is not offered: ",
                                                 ze_ipcheck::kEnvExtensions, " leaves it out"));
    *ppFunctionAddress = f;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DriverGetLastErrorDescription(ze_driver_handle_t hDriver, const char** ppString) {
  // Reads the last error without clearing it, so it does not go through `entry`.
  if (!initialized()) return ZE_RESULT_ERROR_UNINITIALIZED;
  if (!hDriver) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!ppString) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (hDriver != reinterpret_cast<ze_driver_handle_t>(&driver())) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  *ppString = last_error();
  return ZE_RESULT_SUCCESS;
}

// ---------------------------------------------------------------- devices

ze_result_t ZE_APICALL DeviceGet(ze_driver_handle_t hDriver, uint32_t* pCount, ze_device_handle_t* phDevices) {
  return entry("zeDeviceGet", [&] {
    Driver& d = get_driver(hDriver, "zeDeviceGet");
    need_pointer(pCount, "zeDeviceGet", "pCount");
    const auto n = static_cast<uint32_t>(d.devices.size());
    if (*pCount == 0 || !phDevices) {
      *pCount = n;
      return ZE_RESULT_SUCCESS;
    }
    const uint32_t give = *pCount < n ? *pCount : n;
    for (uint32_t i = 0; i < give; ++i) phDevices[i] = handle_of(d.devices[i].get());
    *pCount = give;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DeviceGetSubDevices(ze_device_handle_t hDevice, uint32_t* pCount, ze_device_handle_t*) {
  return entry("zeDeviceGetSubDevices", [&] {
    driver();
    get<Device>(hDevice, Kind::device, "zeDeviceGetSubDevices", "hDevice");
    *need_pointer(pCount, "zeDeviceGetSubDevices", "pCount") = 0;  // no sub-devices
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DeviceGetProperties(ze_device_handle_t hDevice, ze_device_properties_t* p) {
  return entry("zeDeviceGetProperties", [&] {
    driver();
    Device* dev = get<Device>(hDevice, Kind::device, "zeDeviceGetProperties", "hDevice");
    need_pointer(p, "zeDeviceGetProperties", "pDeviceProperties");
    void* next = p->pNext;
    const ze_structure_type_t stype = p->stype;
    std::memset(p, 0, sizeof *p);
    p->stype = stype;
    p->pNext = next;
    p->type = ZE_DEVICE_TYPE_GPU;
    const bool intel = driver().config.identity == Identity::intel;
    // As Intel's (IPCHECK_ZE_IDENTITY=intel, the default) or as no PCI device at all.
    p->vendorId = intel ? ze_ipcheck::kIntelVendorId : 0;
    p->deviceId = dev->index;
    p->flags = ZE_DEVICE_PROPERTY_FLAG_INTEGRATED;  // host memory is its memory
    p->coreClockRate = 1;
    p->maxMemAllocSize = 1ull << 46;
    p->maxHardwareContexts = 1;
    p->numThreadsPerEU = 1;
    p->physicalEUSimdWidth = 1;
    p->numEUsPerSubslice = 1;
    p->numSubslicesPerSlice = 1;
    p->numSlices = 1;
    p->timerResolution = 1;  // ns
    p->timestampValidBits = 64;
    p->kernelTimestampValidBits = 64;
    // "ipcheck-dev" and the index: distinct per device, stable across processes.
    std::memcpy(p->uuid.id, "ipcheck-dev", 11);
    p->uuid.id[12] = static_cast<uint8_t>(dev->index >> 24);
    p->uuid.id[13] = static_cast<uint8_t>(dev->index >> 16);
    p->uuid.id[14] = static_cast<uint8_t>(dev->index >> 8);
    p->uuid.id[15] = static_cast<uint8_t>(dev->index);
    std::snprintf(p->name, sizeof p->name, "%s", dev->dev.name().c_str());
    // ze_device_ip_version_ext_t: an Xe2 (Battlemage-class) IP version as Intel's, else 0.
    if (auto* ip = static_cast<ipcheck_ze_device_ip_version_ext_t*>(
            const_cast<void*>(find_in_chain(next, IPCHECK_ZE_STRUCTURE_TYPE_DEVICE_IP_VERSION_EXT))))
      ip->ipVersion = intel ? ze_ipcheck::kIntelIpVersion : 0;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DeviceGetCommandQueueGroupProperties(ze_device_handle_t hDevice, uint32_t* pCount,
                                                            ze_command_queue_group_properties_t* p) {
  return entry("zeDeviceGetCommandQueueGroupProperties", [&] {
    driver();
    get<Device>(hDevice, Kind::device, "zeDeviceGetCommandQueueGroupProperties", "hDevice");
    need_pointer(pCount, "zeDeviceGetCommandQueueGroupProperties", "pCount");
    if (*pCount == 0 || !p) {
      *pCount = 1;
      return ZE_RESULT_SUCCESS;
    }
    p[0].flags = ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE | ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
    p[0].maxMemoryFillPatternSize = 128;
    p[0].numQueues = 1;
    *pCount = 1;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DeviceGetExternalMemoryProperties(ze_device_handle_t hDevice,
                                                         ze_device_external_memory_properties_t* p) {
  return entry("zeDeviceGetExternalMemoryProperties", [&] {
    driver();
    get<Device>(hDevice, Kind::device, "zeDeviceGetExternalMemoryProperties", "hDevice");
    need_pointer(p, "zeDeviceGetExternalMemoryProperties", "pExternalMemoryProperties");
    if (ze_ipcheck::defects::is(ze_ipcheck::defects::id::ipc_properties_fail))
      fail(ZE_RESULT_ERROR_DEVICE_LOST,
           "zeDeviceGetExternalMemoryProperties: the query failed (seeded defect ipc_properties_fail)");
    p->memoryAllocationImportTypes = kFdTypes;
    p->memoryAllocationExportTypes = kFdTypes;
    p->imageImportTypes = 0;
    p->imageExportTypes = 0;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DeviceGetP2PProperties(ze_device_handle_t hDevice, ze_device_handle_t hPeerDevice,
                                              ze_device_p2p_properties_t* p) {
  return entry("zeDeviceGetP2PProperties", [&] {
    driver();
    get<Device>(hDevice, Kind::device, "zeDeviceGetP2PProperties", "hDevice");
    get<Device>(hPeerDevice, Kind::device, "zeDeviceGetP2PProperties", "hPeerDevice");
    need_pointer(p, "zeDeviceGetP2PProperties", "pP2PProperties")->flags = ZE_DEVICE_P2P_PROPERTY_FLAG_ACCESS;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DeviceCanAccessPeer(ze_device_handle_t hDevice, ze_device_handle_t hPeerDevice,
                                           ze_bool_t* value) {
  return entry("zeDeviceCanAccessPeer", [&] {
    driver();
    get<Device>(hDevice, Kind::device, "zeDeviceCanAccessPeer", "hDevice");
    get<Device>(hPeerDevice, Kind::device, "zeDeviceCanAccessPeer", "hPeerDevice");
    *need_pointer(value, "zeDeviceCanAccessPeer", "value") = 1;  // every device sees host memory
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL DeviceGetStatus(ze_device_handle_t hDevice) {
  return entry("zeDeviceGetStatus", [&] {
    driver();
    get<Device>(hDevice, Kind::device, "zeDeviceGetStatus", "hDevice");
    return ZE_RESULT_SUCCESS;
  });
}

// ---------------------------------------------------------------- contexts

namespace {

ze_result_t create_context(ze_driver_handle_t hDriver, const ze_context_desc_t* desc, uint32_t numDevices,
                           ze_device_handle_t* phDevices, ze_context_handle_t* phContext, const char* function) {
  Driver& d = get_driver(hDriver, function);
  need_pointer(desc, function, "desc");
  need_pointer(phContext, function, "phContext");
  if (ze_ipcheck::defects::is(ze_ipcheck::defects::id::context_create_fails))
    fail(ZE_RESULT_ERROR_DEVICE_LOST, cat(function, ": the device was lost (seeded defect context_create_fails)"));
  if (desc->flags & ~static_cast<ze_context_flags_t>(ZE_CONTEXT_FLAG_TBD))
    fail(ZE_RESULT_ERROR_INVALID_ENUMERATION, cat(function, ": desc->flags 0x", std::hex, desc->flags, " has unknown bits"));
  auto c = std::make_unique<Context>();
  if (numDevices == 0) {
    for (auto& dev : d.devices) c->devices.push_back(dev.get());
  } else {
    need_pointer(phDevices, function, "phDevices");
    for (uint32_t i = 0; i < numDevices; ++i) {
      Device* dev = get<Device>(phDevices[i], Kind::device, function, "phDevices[i]");
      if (c->contains(dev)) fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat(function, ": device ", i, " is listed twice"));
      c->devices.push_back(dev);
    }
  }
  std::vector<ipcref::device> devs;
  for (auto* dev : c->devices) devs.push_back(dev->dev);
  c->ctx.emplace(devs);
  add_live(c.get(), Kind::context);
  *phContext = reinterpret_cast<ze_context_handle_t>(c.release());
  return ZE_RESULT_SUCCESS;
}

}  // namespace

ze_result_t ZE_APICALL ContextCreate(ze_driver_handle_t hDriver, const ze_context_desc_t* desc,
                                     ze_context_handle_t* phContext) {
  return entry("zeContextCreate", [&] { return create_context(hDriver, desc, 0, nullptr, phContext, "zeContextCreate"); });
}

ze_result_t ZE_APICALL ContextCreateEx(ze_driver_handle_t hDriver, const ze_context_desc_t* desc, uint32_t numDevices,
                                       ze_device_handle_t* phDevices, ze_context_handle_t* phContext) {
  return entry("zeContextCreateEx",
               [&] { return create_context(hDriver, desc, numDevices, phDevices, phContext, "zeContextCreateEx"); });
}

ze_result_t ZE_APICALL ContextDestroy(ze_context_handle_t hContext) {
  return entry("zeContextDestroy", [&] {
    Context* c = context_of(hContext, "zeContextDestroy");
    if (c->children.load() != 0)
      fail(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE,
           cat("zeContextDestroy: the context still has ", c->children.load(),
               " command lists, command queues, fences, event pools, counter-based events or physical memory ",
               "objects; destroy them first"));
    remove_live(c);
    delete c;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL ContextGetStatus(ze_context_handle_t hContext) {
  return entry("zeContextGetStatus", [&] {
    context_of(hContext, "zeContextGetStatus");
    return ZE_RESULT_SUCCESS;
  });
}

}  // namespace zedriver
