// Compiled (syntax only) against a release's own SYCL headers (CTest sycl:abi+<release>): the
// facts include/ipcheck/sycl/sycl_api.hpp's hand-written declarations rest on. A release whose
// headers disagree fails to compile here, naming the assertion.
#include <sycl/context.hpp>
#include <sycl/device.hpp>
#include <sycl/event.hpp>
#include <sycl/exception.hpp>
#include <sycl/ext/oneapi/experimental/ipc_memory.hpp>
#include <sycl/ext/oneapi/virtual_mem/physical_mem.hpp>
#include <sycl/ext/oneapi/virtual_mem/virtual_mem.hpp>
#include <sycl/queue.hpp>
#include <type_traits>
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // ipc_memory (2026.2.0 keeps it, deprecated)
#if __has_include(<sycl/ext/oneapi/experimental/ipc_event.hpp>)
#include <sycl/ext/oneapi/experimental/ipc_event.hpp>
#include <sycl/ext/oneapi/experimental/ipc_physical_memory.hpp>
#include <sycl/ext/oneapi/experimental/reusable_events.hpp>
#define IPCHECK_HAS_IPC_NAMESPACE 1
#endif

#include "ipcheck/sycl/sycl_api.hpp"

namespace api = ipcheck::sycl_api;
namespace exp = sycl::ext::oneapi::experimental;

// Objects: one shared_ptr to the impl, non-trivial (passed and returned indirectly).
template <class T>
constexpr bool one_shared_ptr = sizeof(T) == sizeof(api::SyclObject) && alignof(T) == alignof(api::SyclObject) &&
                                !std::is_trivially_copyable_v<T>;
static_assert(one_shared_ptr<sycl::context>);
// sycl::device is a device_impl pointer: the adapter only passes dpctl's devices by reference.
static_assert(sizeof(sycl::device) == sizeof(void*));
static_assert(one_shared_ptr<sycl::queue>);
static_assert(one_shared_ptr<sycl::event>);
static_assert(one_shared_ptr<exp::physical_mem>);

// The handle: two words, trivially copyable (returned in registers as api::IpcHandle).
template <class H>
constexpr bool like_ipc_handle = std::is_trivially_copyable_v<H> && sizeof(H) == sizeof(api::IpcHandle) &&
                                 alignof(H) == alignof(api::IpcHandle);
static_assert(like_ipc_handle<exp::ipc_memory::handle>);

// The functions, with the exact types the adapter's declarations were written for.
[[maybe_unused]] auto* f1 = static_cast<exp::ipc_memory::handle (*)(void*, const sycl::context&)>(&exp::ipc_memory::get);
[[maybe_unused]] auto* f2 = static_cast<void (*)(exp::ipc_memory::handle&, const sycl::context&)>(&exp::ipc_memory::put);
[[maybe_unused]] auto* f3 = static_cast<void (*)(void*, const sycl::context&)>(&exp::ipc_memory::close);
[[maybe_unused]] auto* f4 = static_cast<void* (*)(const std::byte*, size_t, const sycl::context&, const sycl::device&)>(
    &sycl::detail::openIPCMemHandle);
[[maybe_unused]] auto* f5 =
    static_cast<uintptr_t (*)(uintptr_t, size_t, const sycl::context&)>(&exp::reserve_virtual_mem);
[[maybe_unused]] auto* f6 = static_cast<void (*)(uintptr_t, size_t, const sycl::context&)>(&exp::free_virtual_mem);
[[maybe_unused]] auto* f7 = static_cast<void (*)(const void*, size_t, const sycl::context&)>(&exp::unmap);
[[maybe_unused]] auto* f8 = static_cast<size_t (*)(const sycl::device&, const sycl::context&, exp::granularity_mode)>(
    &exp::get_mem_granularity);
[[maybe_unused]] auto f9 = static_cast<void* (exp::physical_mem::*)(uintptr_t, size_t, exp::address_access_mode, size_t)
                                           const>(&exp::physical_mem::map);
[[maybe_unused]] auto f10 = static_cast<size_t (exp::physical_mem::*)() const noexcept>(&exp::physical_mem::size);
[[maybe_unused]] auto f11 = static_cast<bool (sycl::device::*)(sycl::aspect) const>(&sycl::device::has);
static_assert(std::is_same_v<decltype(std::declval<const sycl::exception&>().code()), const std::error_code&>);
static_assert(std::is_base_of_v<std::exception, sycl::exception> && std::is_polymorphic_v<sycl::exception>);

// Enumerations.
static_assert(static_cast<int>(sycl::aspect::ext_oneapi_ipc_memory) == api::kAspectIpcMemory);
static_assert(std::is_same_v<std::underlying_type_t<exp::address_access_mode>, char> &&
              static_cast<char>(exp::address_access_mode::read_write) == api::kAccessReadWrite);
static_assert(std::is_same_v<std::underlying_type_t<exp::granularity_mode>, char> &&
              static_cast<char>(exp::granularity_mode::recommended) == api::kGranularityRecommended);
#define IPCHECK_CHECK_ERRC(name, value) static_assert(static_cast<int>(sycl::errc::name) == value);
IPCHECK_SYCL_ERRC(IPCHECK_CHECK_ERRC)
#undef IPCHECK_CHECK_ERRC

#ifdef IPCHECK_HAS_IPC_NAMESPACE
static_assert(like_ipc_handle<exp::ipc::handle>);
[[maybe_unused]] auto* g1 = static_cast<exp::ipc::handle (*)(void*, const sycl::context&)>(&exp::ipc::memory::get);
[[maybe_unused]] auto* g2 = static_cast<void (*)(exp::ipc::handle&, const sycl::context&)>(&exp::ipc::memory::put);
[[maybe_unused]] auto* g3 = static_cast<void (*)(void*, const sycl::context&)>(&exp::ipc::memory::close);
[[maybe_unused]] auto* g4 = static_cast<exp::ipc::handle (*)(exp::physical_mem&)>(&exp::ipc::physical_memory::get);
[[maybe_unused]] auto* g5 =
    static_cast<void (*)(exp::ipc::handle&, const sycl::context&)>(&exp::ipc::physical_memory::put);
[[maybe_unused]] auto* g6 =
    static_cast<exp::physical_mem (*)(const std::byte*, size_t, const sycl::context&, const sycl::device&)>(
        &sycl::detail::openIPCPhysicalMemHandle);
[[maybe_unused]] auto* g7 = static_cast<exp::ipc::handle (*)(const sycl::event&)>(&exp::ipc::event::get);
[[maybe_unused]] auto* g8 = static_cast<void (*)(exp::ipc::handle&, const sycl::context&)>(&exp::ipc::event::put);
[[maybe_unused]] auto* g9 =
    static_cast<sycl::event (*)(const std::byte*, size_t, const sycl::context&)>(&sycl::detail::openIPCEventHandle);
[[maybe_unused]] auto* g10 = static_cast<sycl::event (*)(const sycl::context&, uint32_t)>(&exp::detail::make_event);
[[maybe_unused]] auto* g11 = static_cast<void (*)(sycl::queue, sycl::event&)>(&exp::enqueue_signal_event);
[[maybe_unused]] auto g12 = static_cast<bool (exp::physical_mem::*)() const noexcept>(&exp::physical_mem::ipc_enabled);
static_assert(static_cast<int>(sycl::aspect::ext_oneapi_ipc_physical_memory) == api::kAspectIpcPhysicalMemory);
static_assert(static_cast<int>(sycl::aspect::ext_oneapi_ipc_event) == api::kAspectIpcEvent);
static_assert(exp::detail::make_event_flag_enable_ipc == api::kMakeEventIpc &&
              exp::detail::make_event_flag_enable_profiling == api::kMakeEventProfiling);
#endif
