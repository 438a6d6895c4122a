// What the `sycl` adapter calls in Intel's SYCL runtime (libsycl.so.9 of oneAPI 2026.1.2 and
// 2026.2.0) and in dpctl's C interface (libDPCTLSyclInterface.so of dpctl 0.22.1), declared
// here; no SYCL header or library at build time: both are opened at run time and every entry
// point is looked up with dlsym.
//
// libsycl's exports are C++: each is named by its Itanium mangled name and called through a
// function type written by hand from the release's own headers (include/sycl/ of the wheel).
// The mangled name fixes namespace, name and parameter types but not the return type, so the
// ABI of each call rests on these facts, which tests/sycl_abi_check.cpp asserts against each
// release's headers and tests/check_sycl_symbols.cmake against each release's exports (CTest
// sycl:abi+<release>, sycl:symbols+<release>):
//   - sycl::context, queue, event and ext::oneapi::experimental::physical_mem hold one
//     std::shared_ptr to their impl and nothing else (16 bytes; OwnerLessBase is empty): the
//     adapter's SyclObject has that layout, so copying one is SYCL's copy and destroying one
//     is SYCL's release. sycl::device is not one (a plain device_impl pointer, 8 bytes): the
//     adapter never makes or copies a device, it passes dpctl's. A const reference parameter
//     is a pointer to the object; dpctl's DPCTLSycl*Ref are pointers to them (its wrap/unwrap).
//   - ipc::handle (2026.2.0) and ipc_memory::handle (both) are {std::byte* MData; size_t MSize},
//     trivially copyable: returned in two registers (IpcHandle).
//   - a returned sycl::event or physical_mem (non-trivial: a shared_ptr) comes back through a
//     hidden pointer to storage the caller provides (the first argument); a sycl::queue passed
//     by value is a pointer to a copy the caller owns and destroys after the call.
//   - errors are C++ exceptions: sycl::exception (virtual base std::exception), whose code()
//     is a std::error_code of sycl_category with a sycl::errc value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <system_error>

namespace ipcheck::sycl_api {

// sycl::ext::oneapi::experimental::ipc::handle, ipc_memory::handle.
struct IpcHandle {
  std::byte* data = nullptr;
  std::size_t size = 0;
};

// sycl::context, device, queue, event, physical_mem: one shared_ptr to the impl.
struct SyclObject {
  std::shared_ptr<void> impl;
};
static_assert(sizeof(SyclObject) == 2 * sizeof(void*));

// sycl::errc (include/sycl/exception.hpp; the same values in both releases).
#define IPCHECK_SYCL_ERRC(X)                                                                          \
  X(success, 0) X(runtime, 1) X(kernel, 2) X(accessor, 3) X(nd_range, 4) X(event, 5)                  \
  X(kernel_argument, 6) X(build, 7) X(invalid, 8) X(memory_allocation, 9) X(platform, 10)             \
  X(profiling, 11) X(feature_not_supported, 12) X(kernel_not_supported, 13) X(backend_mismatch, 14)
// "invalid" for 8; nullptr for a value the list lacks.
const char* errc_name(int value) noexcept;

// sycl::aspect values of the IPC aspects (include/sycl/info/aspects.def).
inline constexpr int kAspectIpcMemory = 88;           // both releases
inline constexpr int kAspectIpcPhysicalMemory = 96;   // 2026.2.0
inline constexpr int kAspectIpcEvent = 99;            // 2026.2.0
// ext::oneapi::experimental::address_access_mode::read_write, granularity_mode::recommended.
inline constexpr char kAccessReadWrite = 2;
inline constexpr char kGranularityRecommended = 1;
// ext::oneapi::experimental::detail::make_event_flags.
inline constexpr std::uint32_t kMakeEventIpc = 1u << 1, kMakeEventProfiling = 1u << 0;

using Ctx = const SyclObject*;  // const sycl::context&
using Dev = const void*;        // const sycl::device& (a device_impl pointer: never copied here)

// libsycl's exports: X(member, required, mangled name, what c++filt prints, function type).
// `required`: 1 when both releases export it (a release that lacks one is not usable), 0 when
// only some do (the verbs that need it answer not_implemented naming it).
#define IPCHECK_SYCL_EXPORTS(X)                                                                                  \
  X(device_has, 1, "_ZNK4sycl3_V16device3hasENS0_6aspectE", "sycl::_V1::device::has(sycl::_V1::aspect) const",    \
    bool (*)(Dev, int))                                                                                          \
  X(exception_code, 1, "_ZNK4sycl3_V19exception4codeEv", "sycl::_V1::exception::code() const",                   \
    const std::error_code& (*)(const void*))                                                                     \
  X(ipc_memory_get, 1, "_ZN4sycl3_V13ext6oneapi12experimental10ipc_memory3getEPvRKNS0_7contextE",                \
    "sycl::_V1::ext::oneapi::experimental::ipc_memory::get(void*, sycl::_V1::context const&)",                   \
    IpcHandle (*)(void*, Ctx))                                                                                   \
  X(ipc_memory_put, 1, "_ZN4sycl3_V13ext6oneapi12experimental10ipc_memory3putERNS4_6handleERKNS0_7contextE",     \
    "sycl::_V1::ext::oneapi::experimental::ipc_memory::put(sycl::_V1::ext::oneapi::experimental::ipc_memory::"   \
    "handle&, sycl::_V1::context const&)",                                                                       \
    void (*)(IpcHandle*, Ctx))                                                                                   \
  X(ipc_memory_close, 1, "_ZN4sycl3_V13ext6oneapi12experimental10ipc_memory5closeEPvRKNS0_7contextE",            \
    "sycl::_V1::ext::oneapi::experimental::ipc_memory::close(void*, sycl::_V1::context const&)",                 \
    void (*)(void*, Ctx))                                                                                        \
  X(open_ipc_mem, 1, "_ZN4sycl3_V16detail16openIPCMemHandleEPKSt4bytemRKNS0_7contextERKNS0_6deviceE",             \
    "sycl::_V1::detail::openIPCMemHandle(std::byte const*, unsigned long, sycl::_V1::context const&, "           \
    "sycl::_V1::device const&)",                                                                                 \
    void* (*)(const std::byte*, std::size_t, Ctx, Dev))                                                          \
  X(ipc_mem_get, 0, "_ZN4sycl3_V13ext6oneapi12experimental3ipc6memory3getEPvRKNS0_7contextE",                    \
    "sycl::_V1::ext::oneapi::experimental::ipc::memory::get(void*, sycl::_V1::context const&)",                  \
    IpcHandle (*)(void*, Ctx))                                                                                   \
  X(ipc_mem_put, 0, "_ZN4sycl3_V13ext6oneapi12experimental3ipc6memory3putERNS4_6handleERKNS0_7contextE",         \
    "sycl::_V1::ext::oneapi::experimental::ipc::memory::put(sycl::_V1::ext::oneapi::experimental::ipc::handle&, " \
    "sycl::_V1::context const&)",                                                                                \
    void (*)(IpcHandle*, Ctx))                                                                                   \
  X(ipc_mem_close, 0, "_ZN4sycl3_V13ext6oneapi12experimental3ipc6memory5closeEPvRKNS0_7contextE",                \
    "sycl::_V1::ext::oneapi::experimental::ipc::memory::close(void*, sycl::_V1::context const&)",                \
    void (*)(void*, Ctx))                                                                                        \
  X(phys_create, 0, "_ZN4sycl3_V13ext6oneapi12experimental12physical_mem6createERKNS0_6deviceERKNS0_7contextEmb", \
    "sycl::_V1::ext::oneapi::experimental::physical_mem::create(sycl::_V1::device const&, sycl::_V1::context "   \
    "const&, unsigned long, bool)",                                                                              \
    void (*)(SyclObject*, Dev, Ctx, std::size_t, bool))                                                          \
  X(phys_size, 1, "_ZNK4sycl3_V13ext6oneapi12experimental12physical_mem4sizeEv",                                 \
    "sycl::_V1::ext::oneapi::experimental::physical_mem::size() const", std::size_t (*)(const SyclObject*))      \
  X(phys_map, 1, "_ZNK4sycl3_V13ext6oneapi12experimental12physical_mem3mapEmmNS3_19address_access_modeEm",      \
    "sycl::_V1::ext::oneapi::experimental::physical_mem::map(unsigned long, unsigned long, "                     \
    "sycl::_V1::ext::oneapi::experimental::address_access_mode, unsigned long) const",                           \
    void* (*)(const SyclObject*, std::uintptr_t, std::size_t, char, std::size_t))                                \
  X(granularity, 1,                                                                                              \
    "_ZN4sycl3_V13ext6oneapi12experimental19get_mem_granularityERKNS0_6deviceERKNS0_7contextENS3_16granularity_" \
    "modeE",                                                                                                     \
    "sycl::_V1::ext::oneapi::experimental::get_mem_granularity(sycl::_V1::device const&, sycl::_V1::context "    \
    "const&, sycl::_V1::ext::oneapi::experimental::granularity_mode)",                                           \
    std::size_t (*)(Dev, Ctx, char))                                                                             \
  X(reserve_vm, 1, "_ZN4sycl3_V13ext6oneapi12experimental19reserve_virtual_memEmmRKNS0_7contextE",               \
    "sycl::_V1::ext::oneapi::experimental::reserve_virtual_mem(unsigned long, unsigned long, sycl::_V1::context " \
    "const&)",                                                                                                   \
    std::uintptr_t (*)(std::uintptr_t, std::size_t, Ctx))                                                        \
  X(free_vm, 1, "_ZN4sycl3_V13ext6oneapi12experimental16free_virtual_memEmmRKNS0_7contextE",                     \
    "sycl::_V1::ext::oneapi::experimental::free_virtual_mem(unsigned long, unsigned long, sycl::_V1::context "   \
    "const&)",                                                                                                   \
    void (*)(std::uintptr_t, std::size_t, Ctx))                                                                  \
  X(unmap_vm, 1, "_ZN4sycl3_V13ext6oneapi12experimental5unmapEPKvmRKNS0_7contextE",                             \
    "sycl::_V1::ext::oneapi::experimental::unmap(void const*, unsigned long, sycl::_V1::context const&)",        \
    void (*)(const void*, std::size_t, Ctx))                                                                     \
  X(phys_ipc_enabled, 0, "_ZNK4sycl3_V13ext6oneapi12experimental12physical_mem11ipc_enabledEv",                  \
    "sycl::_V1::ext::oneapi::experimental::physical_mem::ipc_enabled() const", bool (*)(const SyclObject*))      \
  X(ipc_phys_get, 0, "_ZN4sycl3_V13ext6oneapi12experimental3ipc15physical_memory3getERNS3_12physical_memE",      \
    "sycl::_V1::ext::oneapi::experimental::ipc::physical_memory::get(sycl::_V1::ext::oneapi::experimental::"     \
    "physical_mem&)",                                                                                            \
    IpcHandle (*)(SyclObject*))                                                                                  \
  X(ipc_phys_put, 0,                                                                                             \
    "_ZN4sycl3_V13ext6oneapi12experimental3ipc15physical_memory3putERNS4_6handleERKNS0_7contextE",               \
    "sycl::_V1::ext::oneapi::experimental::ipc::physical_memory::put(sycl::_V1::ext::oneapi::experimental::ipc::" \
    "handle&, sycl::_V1::context const&)",                                                                       \
    void (*)(IpcHandle*, Ctx))                                                                                   \
  X(open_ipc_phys, 0,                                                                                            \
    "_ZN4sycl3_V16detail24openIPCPhysicalMemHandleEPKSt4bytemRKNS0_7contextERKNS0_6deviceE",                     \
    "sycl::_V1::detail::openIPCPhysicalMemHandle(std::byte const*, unsigned long, sycl::_V1::context const&, "   \
    "sycl::_V1::device const&)",                                                                                 \
    SyclObject* (*)(SyclObject*, const std::byte*, std::size_t, Ctx, Dev))                                       \
  X(make_event, 0, "_ZN4sycl3_V13ext6oneapi12experimental6detail10make_eventERKNS0_7contextEj",                  \
    "sycl::_V1::ext::oneapi::experimental::detail::make_event(sycl::_V1::context const&, unsigned int)",         \
    SyclObject* (*)(SyclObject*, Ctx, std::uint32_t))                                                            \
  X(signal_event, 0, "_ZN4sycl3_V13ext6oneapi12experimental20enqueue_signal_eventENS0_5queueERNS0_5eventE",      \
    "sycl::_V1::ext::oneapi::experimental::enqueue_signal_event(sycl::_V1::queue, sycl::_V1::event&)",           \
    void (*)(SyclObject*, SyclObject*))                                                                          \
  X(ipc_event_get, 0, "_ZN4sycl3_V13ext6oneapi12experimental3ipc5event3getERKNS0_5eventE",                      \
    "sycl::_V1::ext::oneapi::experimental::ipc::event::get(sycl::_V1::event const&)",                            \
    IpcHandle (*)(const SyclObject*))                                                                            \
  X(ipc_event_put, 0, "_ZN4sycl3_V13ext6oneapi12experimental3ipc5event3putERNS4_6handleERKNS0_7contextE",        \
    "sycl::_V1::ext::oneapi::experimental::ipc::event::put(sycl::_V1::ext::oneapi::experimental::ipc::handle&, " \
    "sycl::_V1::context const&)",                                                                                \
    void (*)(IpcHandle*, Ctx))                                                                                   \
  X(open_ipc_event, 0, "_ZN4sycl3_V16detail18openIPCEventHandleEPKSt4bytemRKNS0_7contextE",                      \
    "sycl::_V1::detail::openIPCEventHandle(std::byte const*, unsigned long, sycl::_V1::context const&)",         \
    SyclObject* (*)(SyclObject*, const std::byte*, std::size_t, Ctx))

// dpctl 0.22.1's C interface (dpctl/include/syclinterface/*.h): devices, contexts, queues, USM,
// the copies of the data checks and event status. Its Refs are pointers to SYCL objects.
#define IPCHECK_DPCTL_FUNCTIONS(X)                                                      \
  X(DPCTLDeviceMgr_GetDevices, void* (*)(int))                                          \
  X(DPCTLDeviceVector_Size, std::size_t (*)(void*))                                     \
  X(DPCTLDeviceVector_GetAt, void* (*)(void*, std::size_t))                       \
  X(DPCTLDeviceVector_Delete, void (*)(void*))                                          \
  X(DPCTLDevice_GetName, const char* (*)(Dev))                                          \
  X(DPCTLDevice_GetDriverVersion, const char* (*)(Dev))                                 \
  X(DPCTLDevice_GetPlatform, SyclObject* (*)(Dev))                                      \
  X(DPCTLDevice_Delete, void (*)(void*))                                          \
  X(DPCTLPlatform_GetName, const char* (*)(const SyclObject*))                          \
  X(DPCTLPlatform_GetVersion, const char* (*)(const SyclObject*))                       \
  X(DPCTLPlatform_Delete, void (*)(SyclObject*))                                        \
  X(DPCTLCString_Delete, void (*)(const char*))                                         \
  X(DPCTLContext_CreateFromDevices, SyclObject* (*)(void*, void (*)(int), int))         \
  X(DPCTLContext_Delete, void (*)(SyclObject*))                                         \
  X(DPCTLQueue_Create, SyclObject* (*)(Ctx, Dev, void (*)(int), int))                   \
  X(DPCTLQueue_Delete, void (*)(SyclObject*))                                           \
  X(DPCTLQueue_Wait, void (*)(const SyclObject*))                                       \
  X(DPCTLQueue_Memcpy, SyclObject* (*)(const SyclObject*, void*, const void*, std::size_t)) \
  X(DPCTLmalloc_device, void* (*)(std::size_t, const SyclObject*))                      \
  X(DPCTLmalloc_host, void* (*)(std::size_t, const SyclObject*))                        \
  X(DPCTLmalloc_shared, void* (*)(std::size_t, const SyclObject*))                      \
  X(DPCTLfree_with_queue, void (*)(void*, const SyclObject*))                           \
  X(DPCTLEvent_Wait, void (*)(SyclObject*))                                             \
  X(DPCTLEvent_Delete, void (*)(SyclObject*))                                           \
  X(DPCTLEvent_GetCommandExecutionStatus, int (*)(SyclObject*))

// dpctl's enum values (dpctl_sycl_enum_types.h).
inline constexpr int kDpctlLevelZero = 1 << 17, kDpctlGpu = 1 << 4;
inline constexpr int kDpctlComplete = 3;  // DPCTLSyclEventStatusType: UNKNOWN, SUBMITTED, RUNNING, COMPLETE

// One declared export, for the symbol test and info.
struct ExportDecl {
  const char* member;
  bool required;
  const char* mangled;
  const char* demangled;
};
extern const ExportDecl kExports[];
extern const std::size_t kExportCount;

}  // namespace ipcheck::sycl_api
