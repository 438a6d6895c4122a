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

#include "ze_ipcheck/handle_layout.hpp"

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
  ze_command_queue_handle_t q = nullptr;
  ze_command_queue_desc_t qd{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, 0, 0, 0,
                             ZE_COMMAND_QUEUE_MODE_DEFAULT, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  EXPECT_EQ(zeCommandQueueCreate(ctx, devices[0], &qd, &q), ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);
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

TEST_F(ZeDriver, StaleAndForeignHandlesAreErrorsNotCrashes) {
  EXPECT_EQ(zeContextGetStatus(reinterpret_cast<ze_context_handle_t>(&driver)), ZE_RESULT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(zeEventHostSignal(reinterpret_cast<ze_event_handle_t>(ctx)), ZE_RESULT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(zeMemFree(ctx, &driver), ZE_RESULT_ERROR_INVALID_ARGUMENT);
  char local[16];
  EXPECT_EQ(zeCommandListAppendMemoryCopy(list, local, reinterpret_cast<void*>(16), sizeof local, nullptr, 0, nullptr),
            ZE_RESULT_ERROR_INVALID_ARGUMENT);
}

}  // namespace
