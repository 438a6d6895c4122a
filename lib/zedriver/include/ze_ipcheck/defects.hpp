// Seeded defects of libze_ipcheck: deliberate bugs in the Level Zero driver's own code (not
// in ipcref under it), each breaking one clause the way a Level Zero driver could. Only the
// test-only build libze_ipcheck_defects.so.1 (ZE_IPCHECK_WITH_DEFECTS) compiles them in;
// IPCHECK_ZE_DEFECT=<name> in the driver's process switches one on. The defect score
// (cases/tests/defect_score_test.cpp) requires each caught by a case of its clause on `ze`.
// That build links ipcref's defect build too, so IPCREF_DEFECT=<name> works through it.
#pragma once

#include <span>

namespace ze_ipcheck::defects {

enum class id : int {
  none = 0,
  pool_opens_as_memory,          // zeMemOpenIpcHandle maps an event pool's IPC handle as memory
  interior_export_page_aligned,  // zeMemGetIpcHandle exports an interior pointer from its page's start
  put_ignores_refcount,          // zeMemPutIpcHandle revokes the export at the first put of several gets
  map_ignores_offset,            // zeVirtualMemMap maps the physical object from its start, whatever the offset
  phys_import_trusts_size,       // zePhysicalMemCreate imports with the size the caller claims
  other_device_open_snapshot,    // zeMemOpenIpcHandle on another device than the exporter's returns a snapshot
  wake_wrong_word,               // a signal wakes waiters on the wrong futex word: they wake at their deadline
  context_create_fails,          // zeContextCreate(Ex) fails: no runtime over the driver starts
  open_replaces_earlier_mapping, // zeMemOpenIpcHandle remaps the earlier open mappings of the same exporter onto the new one
  ipc_properties_fail,           // zeDeviceGetExternalMemoryProperties answers DEVICE_LOST instead of the export types
  phys_import_writes_fd,         // zePhysicalMemCreate writes -1 into the fd of the const import descriptor it was handed
  pool_open_without_support,     // zeEventPoolOpenIpcHandle (and the counter-based open) open where no device of the context has event IPC
};

struct info {
  id defect;
  const char* name;
  const char* clause;  // the clause a correct harness reports broken
  const char* description;
};

inline constexpr info kCatalog[] = {
    {id::pool_opens_as_memory, "pool_opens_as_memory", "rb.open.cross_kind",
     "zeMemOpenIpcHandle maps an event pool's IPC handle as memory"},
    {id::interior_export_page_aligned, "interior_export_page_aligned", "rb.open.interior",
     "zeMemGetIpcHandle exports an interior pointer from the start of its page"},
    {id::put_ignores_refcount, "put_ignores_refcount", "rb.put.one_export",
     "zeMemPutIpcHandle revokes an export at the first put although it was got twice"},
    {id::map_ignores_offset, "map_ignores_offset", "sycl.phys.map.offset",
     "zeVirtualMemMap maps a physical object from its start, ignoring the offset"},
    {id::phys_import_trusts_size, "phys_import_trusts_size", "rb.open.forged_range",
     "zePhysicalMemCreate imports an external descriptor with the size the caller claims"},
    {id::other_device_open_snapshot, "other_device_open_snapshot", "sycl.mem.open.other_device",
     "zeMemOpenIpcHandle on a device other than the exporter's returns a snapshot of the export's bytes in "
     "private pages, not a mapping of it"},
    {id::wake_wrong_word, "wake_wrong_word", "rb.event.wake_latency",
     "a signal (an event pool slot's, a counter-based event's completion) wakes waiters on the wrong futex word: a "
     "process blocked in zeEventHostSynchronize on the event wakes only at its deadline"},
    {id::context_create_fails, "context_create_fails", "run:starts",
     "zeContextCreate and zeContextCreateEx fail with ZE_RESULT_ERROR_DEVICE_LOST: a runtime over the driver (UR's "
     "adapters) cannot start, and every case of a run skips for the runtime's reason"},
    {id::open_replaces_earlier_mapping, "open_replaces_earlier_mapping", "rb.realloc.fresh",
     "zeMemOpenIpcHandle of a new export remaps the process's earlier, still open mappings of the same exporter "
     "and size onto the new export's pages (a cache that replaces live mappings)"},
    {id::ipc_properties_fail, "ipc_properties_fail", "ur.device.support_query",
     "the physical-memory support query zeDeviceGetExternalMemoryProperties answers ZE_RESULT_ERROR_DEVICE_LOST "
     "instead of the export types"},
    {id::phys_import_writes_fd, "phys_import_writes_fd", "rb.open.input_unchanged",
     "zePhysicalMemCreate importing an external descriptor writes -1 into the fd of the const "
     "ze_external_memory_import_fd_t it was handed (marking the descriptor taken in its caller's structure)"},
    {id::pool_open_without_support, "pool_open_without_support", "ur.event.open.no_support",
     "zeEventPoolOpenIpcHandle and zeEventCounterBasedOpenIpcHandle, in a context where no device has event IPC, "
     "open the handle on the context's first device instead of answering ZE_RESULT_ERROR_UNSUPPORTED_FEATURE"},
};

// Every defect of the catalog, whether or not this build compiles them in.
inline std::span<const info> catalog() noexcept { return kCatalog; }

// True in libze_ipcheck_defects.so.1.
bool compiled_in() noexcept;
// The defect IPCHECK_ZE_DEFECT selects in this process (none outside the defects build).
id active() noexcept;
inline bool is(id d) noexcept { return compiled_in() && active() == d; }

}  // namespace ze_ipcheck::defects
