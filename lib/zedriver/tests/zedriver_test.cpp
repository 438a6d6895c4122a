// libze_ipcheck on its own (its exports) and through the system loader (what ipcheck's `ze`
// adapter relies on): initialisation, memory and event pool IPC in one process, and handle
// bytes that must never open. CTest runs it with ZE_ENABLE_ALT_DRIVERS naming the driver.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <level_zero/ze_api.h>
#include <level_zero/ze_ddi.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <level_zero/loader/ze_loader.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "ze_ipcheck/handle_layout.hpp"
#include "ze_ipcheck/newer_ddi.h"

namespace {

const char* driver_path() {
  const char* p = std::getenv("ZE_ENABLE_ALT_DRIVERS");
  return p && *p ? p : nullptr;
}

// The 53 getters libze1 1.8.12 asks every driver for.
const char* const kGetters[] = {
    "zeGetGlobalProcAddrTable", "zeGetDriverProcAddrTable", "zeGetDeviceProcAddrTable",
    "zeGetDeviceExpProcAddrTable", "zeGetContextProcAddrTable", "zeGetCommandQueueProcAddrTable",
    "zeGetCommandListProcAddrTable", "zeGetImageProcAddrTable", "zeGetImageExpProcAddrTable",
    "zeGetFenceProcAddrTable", "zeGetEventPoolProcAddrTable", "zeGetEventProcAddrTable",
    "zeGetEventExpProcAddrTable", "zeGetModuleProcAddrTable", "zeGetModuleBuildLogProcAddrTable",
    "zeGetKernelProcAddrTable", "zeGetKernelExpProcAddrTable", "zeGetSamplerProcAddrTable",
    "zeGetPhysicalMemProcAddrTable", "zeGetMemProcAddrTable", "zeGetVirtualMemProcAddrTable",
    "zeGetFabricVertexExpProcAddrTable", "zeGetFabricEdgeExpProcAddrTable", "zetGetDeviceProcAddrTable",
    "zetGetContextProcAddrTable", "zetGetCommandListProcAddrTable", "zetGetModuleProcAddrTable",
    "zetGetKernelProcAddrTable", "zetGetMetricGroupProcAddrTable", "zetGetMetricGroupExpProcAddrTable",
    "zetGetMetricProcAddrTable", "zetGetMetricStreamerProcAddrTable", "zetGetMetricQueryPoolProcAddrTable",
    "zetGetMetricQueryProcAddrTable", "zetGetTracerExpProcAddrTable", "zetGetDebugProcAddrTable",
    "zesGetDriverProcAddrTable", "zesGetDeviceProcAddrTable", "zesGetSchedulerProcAddrTable",
    "zesGetPerformanceFactorProcAddrTable", "zesGetPowerProcAddrTable", "zesGetFrequencyProcAddrTable",
    "zesGetEngineProcAddrTable", "zesGetStandbyProcAddrTable", "zesGetFirmwareProcAddrTable",
    "zesGetMemoryProcAddrTable", "zesGetFabricPortProcAddrTable", "zesGetTemperatureProcAddrTable",
    "zesGetPsuProcAddrTable", "zesGetFanProcAddrTable", "zesGetLedProcAddrTable", "zesGetRasProcAddrTable",
    "zesGetDiagnosticsProcAddrTable",
};

using Getter = ze_result_t (*)(ze_api_version_t, void*);

TEST(ZeDriverExports, EveryGetterOfTheLoaderSucceeds) {
  ASSERT_NE(driver_path(), nullptr) << "set ZE_ENABLE_ALT_DRIVERS to libze_ipcheck.so.1";
  void* lib = dlopen(driver_path(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  EXPECT_EQ(std::size(kGetters), 53u);
  for (const char* name : kGetters) {
    auto g = reinterpret_cast<Getter>(dlsym(lib, name));
    ASSERT_NE(g, nullptr) << name << " is not exported";
    std::vector<std::byte> table(4096, std::byte{0x5a});
    EXPECT_EQ(g(ZE_API_VERSION_1_4, table.data()), ZE_RESULT_SUCCESS) << name;
    EXPECT_EQ(g(static_cast<ze_api_version_t>(ZE_MAKE_VERSION(2, 0)), table.data()), ZE_RESULT_ERROR_UNSUPPORTED_VERSION) << name;
    EXPECT_EQ(g(ZE_API_VERSION_1_4, nullptr), ZE_RESULT_ERROR_INVALID_NULL_POINTER) << name;
  }
  ze_global_dditable_t global{};
  reinterpret_cast<Getter>(dlsym(lib, "zeGetGlobalProcAddrTable"))(ZE_API_VERSION_1_4, &global);
  EXPECT_NE(global.pfnInit, nullptr);
  // ipcref stays inside: nothing but the getters is visible.
  EXPECT_EQ(dlsym(lib, "_ZN6ipcref14get_devicesEv"), nullptr);
  EXPECT_EQ(dlsym(lib, "_ZN6ipcref11get_devicesEv"), nullptr);
  dlclose(lib);
}

// A newer loader's tables: the slots added after 1.4 are filled when the version passed has
// them, and nothing past a table's 1.4 end is written for a 1.4 loader.
TEST(ZeDriverExports, NewerTableSlotsFollowTheVersion) {
  ASSERT_NE(driver_path(), nullptr) << "set ZE_ENABLE_ALT_DRIVERS to libze_ipcheck.so.1";
  void* lib = dlopen(driver_path(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  const auto v1_17 = static_cast<ze_api_version_t>(ZE_MAKE_VERSION(1, 17));
  auto table = [&](const char* getter, ze_api_version_t version, std::vector<void*>& slots) {
    slots.assign(64, reinterpret_cast<void*>(std::uintptr_t{0x5a5a5a5a}));
    return reinterpret_cast<Getter>(dlsym(lib, getter))(version, slots.data());
  };
  std::vector<void*> t;
  struct Slot {
    const char* getter;
    std::size_t v1_4_size;  // slots in the 1.4 table
    std::size_t index;      // a slot added later that the driver fills
  };
  for (const Slot& s : {Slot{"zeGetMemProcAddrTable", 10, 10}, Slot{"zeGetPhysicalMemProcAddrTable", 2, 2},
                        Slot{"zeGetEventPoolProcAddrTable", 5, 5}, Slot{"zeGetDriverProcAddrTable", 6, 6},
                        Slot{"zeGetCommandListProcAddrTable", 28, 28}, Slot{"zeGetEventProcAddrTable", 7, 12},
                        Slot{"zeGetEventProcAddrTable", 7, 14}, Slot{"zeGetDeviceProcAddrTable", 18, 18}}) {
    ASSERT_EQ(table(s.getter, v1_17, t), ZE_RESULT_SUCCESS) << s.getter;
    EXPECT_NE(t[s.index], nullptr) << s.getter << " slot " << s.index;
    EXPECT_NE(t[s.index], reinterpret_cast<void*>(std::uintptr_t{0x5a5a5a5a})) << s.getter << " slot " << s.index;
    ASSERT_EQ(table(s.getter, ZE_API_VERSION_1_4, t), ZE_RESULT_SUCCESS) << s.getter;
    for (std::size_t i = s.v1_4_size; i < t.size(); ++i)
      EXPECT_EQ(t[i], reinterpret_cast<void*>(std::uintptr_t{0x5a5a5a5a})) << s.getter << " wrote slot " << i;
  }
  // Residency and the free with a policy are 1.x slots the 1.4 table already has.
  ASSERT_EQ(table("zeGetContextProcAddrTable", ZE_API_VERSION_1_4, t), ZE_RESULT_SUCCESS);
  EXPECT_NE(t[offsetof(ze_context_dditable_t, pfnMakeMemoryResident) / sizeof(void*)], nullptr);
  EXPECT_NE(t[offsetof(ze_context_dditable_t, pfnEvictMemory) / sizeof(void*)], nullptr);
  // The descriptor conversions' own table exists from 1.6 on.
  EXPECT_EQ(table("zeGetMemExpProcAddrTable", ZE_API_VERSION_1_4, t), ZE_RESULT_ERROR_UNSUPPORTED_VERSION);
  ASSERT_EQ(table("zeGetMemExpProcAddrTable", IPCHECK_ZE_API_VERSION_1_6, t), ZE_RESULT_SUCCESS);
  EXPECT_NE(t[0], nullptr);
  EXPECT_NE(t[1], nullptr);
  EXPECT_EQ(t[2], reinterpret_cast<void*>(std::uintptr_t{0x5a5a5a5a}));  // 1.7 slots untouched at 1.6
  dlclose(lib);
}

// Through the loader: one context on every device of the one driver.
class ZeDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(driver_path(), nullptr) << "set ZE_ENABLE_ALT_DRIVERS to libze_ipcheck.so.1";
    ASSERT_EQ(zeInit(0), ZE_RESULT_SUCCESS);
    uint32_t n = 1;
    ASSERT_EQ(zeDriverGet(&n, &driver), ZE_RESULT_SUCCESS);
    uint32_t nd = 0;
    ASSERT_EQ(zeDeviceGet(driver, &nd, nullptr), ZE_RESULT_SUCCESS);
    devices.resize(nd);
    ASSERT_EQ(zeDeviceGet(driver, &nd, devices.data()), ZE_RESULT_SUCCESS);
    ASSERT_GE(devices.size(), 1u);
    ze_context_desc_t cd{ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
    ASSERT_EQ(zeContextCreate(driver, &cd, &ctx), ZE_RESULT_SUCCESS);
    ze_command_queue_desc_t qd{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, 0, 0, 0,
                               ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    ASSERT_EQ(zeCommandListCreateImmediate(ctx, devices[0], &qd, &list), ZE_RESULT_SUCCESS);
  }
  void TearDown() override {
    if (list) {
      EXPECT_EQ(zeCommandListDestroy(list), ZE_RESULT_SUCCESS);
    }
    if (ctx) {
      EXPECT_EQ(zeContextDestroy(ctx), ZE_RESULT_SUCCESS);
    }
  }
  void* alloc(std::size_t bytes) {
    ze_device_mem_alloc_desc_t d{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
    void* p = nullptr;
    EXPECT_EQ(zeMemAllocDevice(ctx, &d, bytes, 0, devices[0], &p), ZE_RESULT_SUCCESS);
    return p;
  }
  ze_driver_handle_t driver = nullptr;
  std::vector<ze_device_handle_t> devices;
  ze_context_handle_t ctx = nullptr;
  ze_command_list_handle_t list = nullptr;
};

// With IPCHECK_EXPECT_ZE_LOADER=<version prefix> (the UR stack's tests set 1.32.), the loader
// that answers is that one, not the system's found instead.
TEST_F(ZeDriver, LoaderIsTheExpectedOne) {
  const char* want = std::getenv("IPCHECK_EXPECT_ZE_LOADER");
  if (!want || !*want) GTEST_SKIP() << "IPCHECK_EXPECT_ZE_LOADER is not set";
  size_t n = 0;
  ASSERT_EQ(zelLoaderGetVersions(&n, nullptr), ZE_RESULT_SUCCESS);
  std::vector<zel_component_version_t> v(n);
  ASSERT_EQ(zelLoaderGetVersions(&n, v.data()), ZE_RESULT_SUCCESS);
  std::string loader;
  for (const auto& c : v)
    if (std::string(c.component_name) == "loader")
      loader = std::to_string(c.component_lib_version.major) + "." + std::to_string(c.component_lib_version.minor) +
               "." + std::to_string(c.component_lib_version.patch);
  EXPECT_EQ(loader.rfind(want, 0), 0u) << "the loader is " << loader << ", not " << want;
}

TEST_F(ZeDriver, ReportsItselfAndItsConvention) {
  ze_api_version_t v{};
  ASSERT_EQ(zeDriverGetApiVersion(driver, &v), ZE_RESULT_SUCCESS);
  EXPECT_EQ(v, ZE_API_VERSION_1_4);
  ze_driver_ipc_properties_t ip{ZE_STRUCTURE_TYPE_DRIVER_IPC_PROPERTIES, nullptr, 0};
  ASSERT_EQ(zeDriverGetIpcProperties(driver, &ip), ZE_RESULT_SUCCESS);
  EXPECT_EQ(ip.flags, ZE_IPC_PROPERTY_FLAG_MEMORY | ZE_IPC_PROPERTY_FLAG_EVENT_POOL);
  uint32_t n = 0;
  ASSERT_EQ(zeDriverGetExtensionProperties(driver, &n, nullptr), ZE_RESULT_SUCCESS);
  ASSERT_EQ(n, 1u);
  ze_driver_extension_properties_t e{};
  ASSERT_EQ(zeDriverGetExtensionProperties(driver, &n, &e), ZE_RESULT_SUCCESS);
  const char* conv = std::getenv(ze_ipcheck::kEnvIpcHandle);
  EXPECT_STREQ(e.name, conv && std::string(conv) == "opaque" ? ze_ipcheck::kExtensionOpaqueHandle
                                                             : ze_ipcheck::kExtensionFdHandle);
  void* f = nullptr;
  EXPECT_EQ(zeDriverGetExtensionFunctionAddress(driver, "zeMemPutIpcHandle", &f), ZE_RESULT_SUCCESS);
  EXPECT_NE(f, nullptr);
  EXPECT_EQ(zeDriverGetExtensionFunctionAddress(driver, "zeNoSuchFunction", &f), ZE_RESULT_ERROR_INVALID_ARGUMENT);
  // An entry it leaves null: the loader answers for it.
  EXPECT_EQ(zeContextSystemBarrier(ctx, devices[0]), ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);
  // The identity runtimes check before they use counter-based event IPC (IPCHECK_ZE_IDENTITY=intel).
  ze_driver_properties_t dp{ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES, nullptr, {}, 0};
  ASSERT_EQ(zeDriverGetProperties(driver, &dp), ZE_RESULT_SUCCESS);
  EXPECT_EQ(dp.driverVersion & 0xffff, ze_ipcheck::kIntelDriverBuild);
  ipcheck_ze_device_ip_version_ext_t ipv{IPCHECK_ZE_STRUCTURE_TYPE_DEVICE_IP_VERSION_EXT, nullptr, 0};
  ze_device_properties_t props{};
  props.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
  props.pNext = &ipv;
  ASSERT_EQ(zeDeviceGetProperties(devices[0], &props), ZE_RESULT_SUCCESS);
  EXPECT_EQ(props.vendorId, ze_ipcheck::kIntelVendorId);
  EXPECT_EQ(ipv.ipVersion, ze_ipcheck::kIntelIpVersion);
}

// What SYCL and UR's released adapters ask before they offer USM (device_queries.cpp): without
// the memory access capabilities libsycl reports no usm_device_allocations aspect.
TEST_F(ZeDriver, AnswersTheDeviceQueriesSyclMakes) {
  ze_device_memory_access_properties_t ma{ZE_STRUCTURE_TYPE_DEVICE_MEMORY_ACCESS_PROPERTIES, nullptr, 0, 0, 0, 0, 0};
  ASSERT_EQ(zeDeviceGetMemoryAccessProperties(devices[0], &ma), ZE_RESULT_SUCCESS);
  EXPECT_EQ(ma.stype, ZE_STRUCTURE_TYPE_DEVICE_MEMORY_ACCESS_PROPERTIES);
  EXPECT_NE(ma.hostAllocCapabilities & ZE_MEMORY_ACCESS_CAP_FLAG_RW, 0u);
  EXPECT_NE(ma.deviceAllocCapabilities & ZE_MEMORY_ACCESS_CAP_FLAG_RW, 0u);
  EXPECT_NE(ma.sharedSingleDeviceAllocCapabilities & ZE_MEMORY_ACCESS_CAP_FLAG_RW, 0u);
  EXPECT_EQ(ma.sharedSystemAllocCapabilities, 0u);
  uint32_t n = 0;
  ASSERT_EQ(zeDeviceGetMemoryProperties(devices[0], &n, nullptr), ZE_RESULT_SUCCESS);
  ASSERT_EQ(n, 1u);
  ze_device_memory_properties_t mp{ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES, nullptr, 0, 0, 0, 0, {}};
  ASSERT_EQ(zeDeviceGetMemoryProperties(devices[0], &n, &mp), ZE_RESULT_SUCCESS);
  EXPECT_GT(mp.totalSize, 0u);
  ze_device_compute_properties_t cp{ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES, nullptr, 0, 0, 0, 0, 0, 0, 0, 0, 0, {}};
  ASSERT_EQ(zeDeviceGetComputeProperties(devices[0], &cp), ZE_RESULT_SUCCESS);
  EXPECT_EQ(cp.maxTotalGroupSize, 1u);
  ze_device_module_properties_t mod{};
  mod.stype = ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES;
  ASSERT_EQ(zeDeviceGetModuleProperties(devices[0], &mod), ZE_RESULT_SUCCESS);
  EXPECT_EQ(mod.spirvVersionSupported, 0u);  // no kernels
  ze_device_image_properties_t ip{};
  ip.stype = ZE_STRUCTURE_TYPE_DEVICE_IMAGE_PROPERTIES;
  ASSERT_EQ(zeDeviceGetImageProperties(devices[0], &ip), ZE_RESULT_SUCCESS);
  EXPECT_EQ(ip.maxImageDims2D, 0u);
  EXPECT_EQ(zeDeviceGetMemoryAccessProperties(devices[0], nullptr), ZE_RESULT_ERROR_INVALID_NULL_POINTER);
}

TEST_F(ZeDriver, MemoryHandleOpensAsANewMappingOfTheSameBytes) {
  void* p = alloc(8192);
  const std::string text = "through the loader and back";
  ASSERT_EQ(zeCommandListAppendMemoryCopy(list, p, text.c_str(), text.size() + 1, nullptr, 0, nullptr),
            ZE_RESULT_SUCCESS);
  ze_ipc_mem_handle_t h{};
  ASSERT_EQ(zeMemGetIpcHandle(ctx, p, &h), ZE_RESULT_SUCCESS);
  void* a = nullptr;
  void* b = nullptr;
  ASSERT_EQ(zeMemOpenIpcHandle(ctx, devices[0], h, 0, &a), ZE_RESULT_SUCCESS);
  ASSERT_EQ(zeMemOpenIpcHandle(ctx, devices[0], h, 0, &b), ZE_RESULT_SUCCESS);
  EXPECT_NE(a, p);
  EXPECT_NE(a, b);  // clause ze.mem.open.unique
  char got[64] = {};
  ASSERT_EQ(zeCommandListAppendMemoryCopy(list, got, b, text.size() + 1, nullptr, 0, nullptr), ZE_RESULT_SUCCESS);
  EXPECT_EQ(text, got);
  EXPECT_EQ(zeMemOpenIpcHandle(ctx, devices[0], h, 0x4, &a), ZE_RESULT_ERROR_INVALID_ENUMERATION);
  EXPECT_EQ(zeMemCloseIpcHandle(ctx, a), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeMemCloseIpcHandle(ctx, b), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeMemCloseIpcHandle(ctx, b), ZE_RESULT_ERROR_INVALID_ARGUMENT);  // closed twice
  EXPECT_EQ(zeMemFree(ctx, p), ZE_RESULT_SUCCESS);
  EXPECT_NE(zeMemOpenIpcHandle(ctx, devices[0], h, 0, &a), ZE_RESULT_SUCCESS);  // freed: gone
}

// A call made after the thread's thread_local destructors ran (from an atexit handler or a
// static destructor, where UMF's and UR's teardowns call the driver) still works and records
// its error. The last-error text was a thread_local std::string, destroyed before any atexit
// handler runs: the next call wrote into the freed block (AddressSanitizer: heap-use-after-free;
// found by umf_open_fuzzer). The child exits 3 when the late call is refused as it should be.
namespace late {
ze_context_handle_t ctx = nullptr;
void call_at_exit() {
  int not_a_mapping = 0;
  const ze_result_t r = zeMemCloseIpcHandle(ctx, &not_a_mapping);
  // A pointer that no open returned is refused (and the refusal's text is written).
  std::_Exit(r != ZE_RESULT_SUCCESS ? 3 : 4);
}
}  // namespace late

TEST_F(ZeDriver, CallsAfterThreadLocalDestructorsStillWork) {
  EXPECT_EXIT(
      {
        late::ctx = ctx;
        // A failure first, with a message longer than any short-string buffer.
        ze_ipc_mem_handle_t bad{};
        std::memset(bad.data, 0x7f, sizeof bad.data);
        void* q = nullptr;
        if (zeMemOpenIpcHandle(ctx, devices[0], bad, 0, &q) == ZE_RESULT_SUCCESS) std::_Exit(5);
        std::atexit(late::call_at_exit);
        std::exit(0);
      },
      ::testing::ExitedWithCode(3), "");
}

TEST_F(ZeDriver, DamagedHandleBytesNeverOpen) {
  void* p = alloc(4096);
  ze_ipc_mem_handle_t good{};
  ASSERT_EQ(zeMemGetIpcHandle(ctx, p, &good), ZE_RESULT_SUCCESS);
  // Every single-bit change of the 64 bytes: a descriptor that is not the export's, or a
  // record whose checksum, token or fields no longer match.
  for (int bit = 0; bit < 64 * 8; ++bit) {
    ze_ipc_mem_handle_t bad = good;
    bad.data[bit / 8] = static_cast<char>(bad.data[bit / 8] ^ (1 << (bit % 8)));
    void* q = nullptr;
    const ze_result_t r = zeMemOpenIpcHandle(ctx, devices[0], bad, 0, &q);
    EXPECT_NE(r, ZE_RESULT_SUCCESS) << "bit " << bit << " flipped still opens";
    if (r == ZE_RESULT_SUCCESS) zeMemCloseIpcHandle(ctx, q);
  }
  std::mt19937_64 rng(7);
  for (int i = 0; i < 256; ++i) {
    ze_ipc_mem_handle_t bad{};
    for (auto& c : bad.data) c = static_cast<char>(rng());
    if (i % 2) std::memcpy(bad.data, good.data, 4);  // a live descriptor, garbage after it
    void* q = nullptr;
    const ze_result_t r = zeMemOpenIpcHandle(ctx, devices[0], bad, 0, &q);
    EXPECT_NE(r, ZE_RESULT_SUCCESS) << "random handle " << i << " opens";
    if (r == ZE_RESULT_SUCCESS) zeMemCloseIpcHandle(ctx, q);
  }
  EXPECT_EQ(zeMemFree(ctx, p), ZE_RESULT_SUCCESS);
}

TEST_F(ZeDriver, EventPoolHandleSharesSignals) {
  ze_event_pool_desc_t pd{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr,
                          ZE_EVENT_POOL_FLAG_HOST_VISIBLE | ZE_EVENT_POOL_FLAG_IPC, 4};
  ze_event_pool_handle_t pool = nullptr;
  ASSERT_EQ(zeEventPoolCreate(ctx, &pd, 1, &devices[0], &pool), ZE_RESULT_SUCCESS);
  ze_ipc_event_pool_handle_t h{};
  ASSERT_EQ(zeEventPoolGetIpcHandle(pool, &h), ZE_RESULT_SUCCESS);
  ze_event_pool_handle_t opened = nullptr;
  ASSERT_EQ(zeEventPoolOpenIpcHandle(ctx, h, &opened), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeEventPoolGetIpcHandle(opened, &h), ZE_RESULT_ERROR_INVALID_ARGUMENT);  // no re-export
  ze_event_desc_t ed{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, 3, ZE_EVENT_SCOPE_FLAG_HOST, ZE_EVENT_SCOPE_FLAG_HOST};
  ze_event_handle_t mine = nullptr, theirs = nullptr;
  ASSERT_EQ(zeEventCreate(pool, &ed, &mine), ZE_RESULT_SUCCESS);
  ASSERT_EQ(zeEventCreate(opened, &ed, &theirs), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeEventQueryStatus(theirs), ZE_RESULT_NOT_READY);
  EXPECT_EQ(zeEventHostSynchronize(theirs, 1000000), ZE_RESULT_NOT_READY);
  ASSERT_EQ(zeCommandListAppendSignalEvent(list, mine), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeEventHostSynchronize(theirs, UINT64_MAX), ZE_RESULT_SUCCESS);
  ASSERT_EQ(zeEventHostReset(theirs), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeEventQueryStatus(mine), ZE_RESULT_NOT_READY);
  EXPECT_EQ(zeEventPoolDestroy(pool), ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE);  // its event lives
  EXPECT_EQ(zeEventDestroy(theirs), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeEventPoolCloseIpcHandle(opened), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeEventDestroy(mine), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeEventPoolDestroy(pool), ZE_RESULT_SUCCESS);
  // Level Zero 1.4: no kernel timestamps on an IPC pool.
  pd.flags |= ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP;
  EXPECT_EQ(zeEventPoolCreate(ctx, &pd, 1, &devices[0], &pool), ZE_RESULT_ERROR_INVALID_ARGUMENT);
}

TEST_F(ZeDriver, RegularListsRunWhenAQueueExecutesThem) {
  void* p = alloc(4096);
  ze_command_list_desc_t ld{ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, nullptr, 0, 0};
  ze_command_list_handle_t regular = nullptr;
  ASSERT_EQ(zeCommandListCreate(ctx, devices[0], &ld, &regular), ZE_RESULT_SUCCESS);
  const std::uint32_t pattern = 0xabcd1234;
  ASSERT_EQ(zeCommandListAppendMemoryFill(regular, p, &pattern, sizeof pattern, 4096, nullptr, 0, nullptr),
            ZE_RESULT_SUCCESS);
  std::uint32_t got[4] = {};
  ASSERT_EQ(zeCommandListAppendMemoryCopy(regular, got, p, sizeof got, nullptr, 0, nullptr), ZE_RESULT_SUCCESS);
  EXPECT_EQ(got[0], 0u);  // recorded, not run
  ze_command_queue_desc_t qd{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, 0, 0, 0,
                             ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  ze_command_queue_handle_t q = nullptr;
  ASSERT_EQ(zeCommandQueueCreate(ctx, devices[0], &qd, &q), ZE_RESULT_SUCCESS);
  ze_fence_desc_t fd{ZE_STRUCTURE_TYPE_FENCE_DESC, nullptr, 0};
  ze_fence_handle_t fence = nullptr;
  ASSERT_EQ(zeFenceCreate(q, &fd, &fence), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeFenceQueryStatus(fence), ZE_RESULT_NOT_READY);
  EXPECT_EQ(zeCommandQueueExecuteCommandLists(q, 1, &regular, fence), ZE_RESULT_ERROR_INVALID_ARGUMENT);  // open
  ASSERT_EQ(zeCommandListClose(regular), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeCommandListAppendMemoryCopy(regular, got, p, 4, nullptr, 0, nullptr), ZE_RESULT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(zeCommandQueueExecuteCommandLists(q, 1, &list, nullptr), ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE);
  ASSERT_EQ(zeCommandQueueExecuteCommandLists(q, 1, &regular, fence), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeFenceHostSynchronize(fence, UINT64_MAX), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeCommandQueueSynchronize(q, UINT64_MAX), ZE_RESULT_SUCCESS);
  for (auto w : got) EXPECT_EQ(w, pattern);
  EXPECT_EQ(zeFenceReset(fence), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeFenceHostSynchronize(fence, 1000), ZE_RESULT_NOT_READY);
  EXPECT_EQ(zeCommandListReset(regular), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeCommandListClose(list), ZE_RESULT_ERROR_INVALID_ARGUMENT);  // immediate lists never close
  EXPECT_EQ(zeCommandQueueDestroy(q), ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE);  // its fence lives
  EXPECT_EQ(zeContextDestroy(ctx), ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE);
  EXPECT_EQ(zeFenceDestroy(fence), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeCommandQueueDestroy(q), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeCommandListDestroy(regular), ZE_RESULT_SUCCESS);
  // zeCommandListHostSynchronize (1.6): immediate lists only.
  void* f = nullptr;
  ASSERT_EQ(zeDriverGetExtensionFunctionAddress(driver, "zeCommandListHostSynchronize", &f), ZE_RESULT_SUCCESS);
  auto sync = reinterpret_cast<ipcheck_pfnCommandListHostSynchronize_t>(f);
  void* l = nullptr;
  ASSERT_EQ(zelLoaderTranslateHandle(ZEL_HANDLE_COMMAND_LIST, list, &l), ZE_RESULT_SUCCESS);
  EXPECT_EQ(sync(static_cast<ze_command_list_handle_t>(l), UINT64_MAX), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeMemFree(ctx, p), ZE_RESULT_SUCCESS);
}

TEST_F(ZeDriver, ResidencyChecksTheRangeAndFreeExtFrees) {
  void* p = alloc(8192);
  EXPECT_EQ(zeContextMakeMemoryResident(ctx, devices[0], p, 8192), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeContextMakeMemoryResident(ctx, devices[1 % devices.size()], static_cast<char*>(p) + 4096, 4096),
            ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeContextMakeMemoryResident(ctx, devices[0], p, 8193), ZE_RESULT_ERROR_INVALID_SIZE);
  EXPECT_EQ(zeContextEvictMemory(ctx, devices[0], &driver, 8), ZE_RESULT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(zeContextEvictMemory(ctx, devices[0], p, 8192), ZE_RESULT_SUCCESS);
  ze_memory_free_ext_desc_t fd{ZE_STRUCTURE_TYPE_MEMORY_FREE_EXT_DESC, nullptr, 0x4};
  EXPECT_EQ(zeMemFreeExt(ctx, &fd, p), ZE_RESULT_ERROR_INVALID_ENUMERATION);
  fd.freePolicy = ZE_DRIVER_MEMORY_FREE_POLICY_EXT_FLAG_DEFER_FREE;
  EXPECT_EQ(zeMemFreeExt(ctx, &fd, p), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeMemFree(ctx, p), ZE_RESULT_ERROR_INVALID_ARGUMENT);  // gone
}

// Counter-based events with IPC, as Unified Runtime's v2 adapter makes them (by name).
TEST_F(ZeDriver, CounterBasedEventHandleSharesCompletion) {
  auto fn = [&](const char* name) {
    void* f = nullptr;
    EXPECT_EQ(zeDriverGetExtensionFunctionAddress(driver, name, &f), ZE_RESULT_SUCCESS) << name;
    return f;
  };
  auto create = reinterpret_cast<ipcheck_pfnZexCounterBasedEventCreate2_t>(fn("zexCounterBasedEventCreate2"));
  auto get_ipc = reinterpret_cast<ipcheck_pfnEventCounterBasedGetIpcHandle_t>(fn("zeEventCounterBasedGetIpcHandle"));
  auto open_ipc = reinterpret_cast<ipcheck_pfnEventCounterBasedOpenIpcHandle_t>(fn("zexCounterBasedEventOpenIpcHandle"));
  auto close_ipc = reinterpret_cast<ipcheck_pfnEventCounterBasedCloseIpcHandle_t>(fn("zeEventCounterBasedCloseIpcHandle"));
  ASSERT_TRUE(create && get_ipc && open_ipc && close_ipc);
  // Driver handles: these functions do not pass through the loader.
  void *c = nullptr, *d = nullptr;
  ASSERT_EQ(zelLoaderTranslateHandle(ZEL_HANDLE_CONTEXT, ctx, &c), ZE_RESULT_SUCCESS);
  ASSERT_EQ(zelLoaderTranslateHandle(ZEL_HANDLE_DEVICE, devices[0], &d), ZE_RESULT_SUCCESS);
  auto dctx = static_cast<ze_context_handle_t>(c);
  auto ddev = static_cast<ze_device_handle_t>(d);
  ipcheck_zex_counter_based_event_desc_t desc{IPCHECK_ZEX_STRUCTURE_COUNTER_BASED_EVENT_DESC, nullptr,
                                              IPCHECK_ZE_EVENT_COUNTER_BASED_FLAG_HOST_VISIBLE |
                                                  IPCHECK_ZE_EVENT_COUNTER_BASED_FLAG_NON_IMMEDIATE,
                                              ZE_EVENT_SCOPE_FLAG_HOST, 0};
  ze_event_handle_t plain = nullptr, cb = nullptr, opened = nullptr;
  ASSERT_EQ(create(dctx, ddev, &desc, &plain), ZE_RESULT_SUCCESS);
  ipcheck_ze_ipc_event_counter_based_handle_t h{};
  EXPECT_EQ(get_ipc(plain, &h), ZE_RESULT_ERROR_INVALID_ARGUMENT);  // no IPC flag
  desc.flags |= IPCHECK_ZE_EVENT_COUNTER_BASED_FLAG_IPC | IPCHECK_ZEX_COUNTER_BASED_EVENT_FLAG_KERNEL_TIMESTAMP;
  EXPECT_EQ(create(dctx, ddev, &desc, &cb), ZE_RESULT_ERROR_INVALID_ARGUMENT);  // IPC with timestamps
  desc.flags &= ~IPCHECK_ZEX_COUNTER_BASED_EVENT_FLAG_KERNEL_TIMESTAMP;
  ASSERT_EQ(create(dctx, ddev, &desc, &cb), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeEventQueryStatus(cb), ZE_RESULT_SUCCESS);  // never submitted: complete
  EXPECT_EQ(zeEventHostSignal(cb), ZE_RESULT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(zeEventHostReset(cb), ZE_RESULT_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(get_ipc(cb, &h), ZE_RESULT_SUCCESS);
  ASSERT_EQ(open_ipc(dctx, h, &opened), ZE_RESULT_SUCCESS);
  EXPECT_EQ(get_ipc(opened, &h), ZE_RESULT_ERROR_INVALID_ARGUMENT);  // no re-export
  EXPECT_EQ(zeEventDestroy(opened), ZE_RESULT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(close_ipc(cb), ZE_RESULT_ERROR_INVALID_ARGUMENT);
  // The handle is no memory handle and no pool handle.
  ze_ipc_mem_handle_t as_mem{};
  std::memcpy(as_mem.data, h.data, sizeof as_mem.data);
  void* m = nullptr;
  EXPECT_NE(zeMemOpenIpcHandle(ctx, devices[0], as_mem, 0, &m), ZE_RESULT_SUCCESS);
  ze_ipc_event_pool_handle_t as_pool{};
  std::memcpy(as_pool.data, h.data, sizeof as_pool.data);
  ze_event_pool_handle_t pool = nullptr;
  EXPECT_NE(zeEventPoolOpenIpcHandle(ctx, as_pool, &pool), ZE_RESULT_SUCCESS);

  // A regular list whose command waits on a pool event, then signals the counter-based one:
  // while a queue runs it (another thread), the opened event reads pending; when the pool
  // event is signaled, it completes.
  ze_event_pool_desc_t pd{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1};
  ASSERT_EQ(zeEventPoolCreate(ctx, &pd, 1, &devices[0], &pool), ZE_RESULT_SUCCESS);
  ze_event_desc_t ed{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, 0, ZE_EVENT_SCOPE_FLAG_HOST, ZE_EVENT_SCOPE_FLAG_HOST};
  ze_event_handle_t gate = nullptr;
  ASSERT_EQ(zeEventCreate(pool, &ed, &gate), ZE_RESULT_SUCCESS);
  ze_command_list_desc_t ld{ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, nullptr, 0, 0};
  ze_command_list_handle_t regular = nullptr;
  ASSERT_EQ(zeCommandListCreate(ctx, devices[0], &ld, &regular), ZE_RESULT_SUCCESS);
  ASSERT_EQ(zeCommandListAppendBarrier(regular, cb, 1, &gate), ZE_RESULT_SUCCESS);
  ASSERT_EQ(zeCommandListClose(regular), ZE_RESULT_SUCCESS);
  ze_command_queue_desc_t qd{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, 0, 0, 0,
                             ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  ze_command_queue_handle_t q = nullptr;
  ASSERT_EQ(zeCommandQueueCreate(ctx, devices[0], &qd, &q), ZE_RESULT_SUCCESS);
  std::atomic<ze_result_t> executed{ZE_RESULT_ERROR_UNKNOWN};
  std::thread runner([&] { executed = zeCommandQueueExecuteCommandLists(q, 1, &regular, nullptr); });
  ze_result_t seen = ZE_RESULT_SUCCESS;
  for (int i = 0; i < 2000 && seen == ZE_RESULT_SUCCESS; ++i) {
    seen = zeEventQueryStatus(opened);
    if (seen == ZE_RESULT_SUCCESS) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(seen, ZE_RESULT_NOT_READY);
  EXPECT_EQ(zeEventHostSynchronize(opened, 1000000), ZE_RESULT_NOT_READY);
  ASSERT_EQ(zeEventHostSignal(gate), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeEventHostSynchronize(opened, UINT64_MAX), ZE_RESULT_SUCCESS);
  runner.join();
  EXPECT_EQ(executed.load(), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeEventQueryStatus(cb), ZE_RESULT_SUCCESS);
  // An immediate list signals it too (from the importer's side as well).
  EXPECT_EQ(zeCommandListAppendSignalEvent(list, opened), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeEventQueryStatus(cb), ZE_RESULT_SUCCESS);

  EXPECT_EQ(zeCommandQueueDestroy(q), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeCommandListDestroy(regular), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeEventDestroy(gate), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeEventPoolDestroy(pool), ZE_RESULT_SUCCESS);
  EXPECT_EQ(close_ipc(opened), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeEventDestroy(cb), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeEventDestroy(plain), ZE_RESULT_SUCCESS);
}

TEST_F(ZeDriver, StaleAndForeignHandlesAreErrorsNotCrashes) {
  EXPECT_EQ(zeContextGetStatus(reinterpret_cast<ze_context_handle_t>(&driver)), ZE_RESULT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(zeEventHostSignal(reinterpret_cast<ze_event_handle_t>(ctx)), ZE_RESULT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(zeMemFree(ctx, &driver), ZE_RESULT_ERROR_INVALID_ARGUMENT);
  char local[16];
  EXPECT_EQ(zeCommandListAppendMemoryCopy(list, local, reinterpret_cast<void*>(16), sizeof local, nullptr, 0, nullptr),
            ZE_RESULT_ERROR_INVALID_ARGUMENT);
}

}  // namespace
