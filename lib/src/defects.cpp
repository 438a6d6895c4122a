#include "ipcref/defects.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ipcref::defects {
namespace {

constexpr info kCatalog[] = {
    {id::open_same_mapping, "open_same_mapping", "ze.mem.open.unique", "repeated open returns the first mapping"},
    {id::close_keeps_mapping, "close_keeps_mapping", "rb.close.no_leak", "close forgets the pointer but does not unmap it"},
    {id::skip_token_check, "skip_token_check", "rb.open.confused_deputy", "open maps any sealed object the handle names"},
    {id::skip_size_check, "skip_size_check", "sycl.mem.open.size", "open accepts a handle of the wrong byte count"},
    {id::allow_profiling_ipc, "allow_profiling_ipc", "ur.event.create.profiling_ipc", "events with IPC and profiling are created"},
    {id::put_keeps_export, "put_keeps_export", "rb.put.revokes", "put does not revoke the export"},
    {id::opened_phys_size_zero, "opened_phys_size_zero", "sycl.phys.open.keeps_size", "an opened physical object reports size 0"},
    {id::close_ignores_refcount, "close_ignores_refcount", "sycl.phys.close.refcount", "physical close frees an object that was retained"},
    {id::event_signal_private, "event_signal_private", "ur.event.bidirectional", "a signal through an opened event is not seen by the exporter"},
    {id::leak_fd_per_open, "leak_fd_per_open", "rb.close.no_leak", "every open leaks one descriptor"},
    {id::crash_on_truncated, "crash_on_truncated", "rb.open.garbage", "a truncated handle is read past its end"},
    {id::hang_exporter_gone, "hang_exporter_gone", "rb.open.exporter_gone", "open spins forever when the exporter has exited"},
    {id::skip_pid_guard, "skip_pid_guard", "rb.open.pid_reuse", "a handle naming a reused pid reaches the new process"},
    {id::double_close_ok, "double_close_ok", "rb.close.double", "closing a pointer twice succeeds silently"},
    {id::stale_mapping_cache, "stale_mapping_cache", "rb.realloc.fresh", "mappings cached by (pid, fd) are served after reallocation"},
    {id::lose_context_on_garbage, "lose_context_on_garbage", "rb.open.garbage",
     "malformed handle bytes lose the process's state: that open and every later one answer device_lost"},
    {id::importer_writes_liveness, "importer_writes_liveness", "rb.revoke.tamper",
     "open takes an export's liveness from a copy of its slot in the data object's first page, which every "
     "descriptor and memory mapping of it reaches: an importer that writes an old copy back makes a put or freed "
     "export open again"},
    {id::open_ignores_kind, "open_ignores_kind", "rb.open.cross_kind",
     "open judges a handle by the kind its record names, not by the verb called: a physical-memory or event "
     "handle opens as memory"},
    {id::trust_record_range, "trust_record_range", "rb.open.forged_range",
     "open matches only the export's token, not its offset and size: a resealed record with another range "
     "inside the object maps bytes that were never exported"},
    {id::interior_offset_page_aligned, "interior_offset_page_aligned", "rb.open.interior",
     "get of a pointer inside an allocation records the offset of the pointer's page: the importer maps the bytes "
     "before the pointer, neither the pointer's bytes nor the base"},
    {id::put_revokes_all, "put_revokes_all", "rb.put.one_export",
     "put of one export revokes every export of the same object"},
    {id::virtual_map_from_zero, "virtual_map_from_zero", "sycl.phys.map.offset",
     "virtual_map of a physical object at a non-zero offset maps from the object's start"},
    {id::other_device_mem_copy, "other_device_mem_copy", "sycl.mem.open.other_device",
     "memory opened on a device other than the exporter's maps a private copy: writes on either side stay there"},
    {id::other_device_event_private, "other_device_event_private", "sycl.event.other_device",
     "an event opened on a device other than its creator's keeps a private copy of its state: signals do not cross"},
    {id::other_device_phys_copy, "other_device_phys_copy", "sycl.phys.map.other_device",
     "physical memory opened on a device other than the exporter's maps as a private copy"},
    {id::slow_wake, "slow_wake", "rb.event.wake_latency",
     "event_signal sets the state but wakes no waiter; a waiter notices it by waking every 300 ms (a lost wake-up "
     "papered over by polling)"},
    {id::slow_open, "slow_open", "bench:ref/mem_open_close",
     "every memory open sleeps 50 us before it returns (a slow path in the verb): no clause breaks, the bench gate "
     "(ipcheck bench --gate) must fail"},
    {id::fast_token_only, "fast_token_only", "rb.open.forged_range",
     "a repeated open of an export this process proved before (the fast path) matches the slot's token only: a "
     "resealed record with another range inside the object maps bytes that were never exported, once the real "
     "handle was opened"},
    {id::fast_witness_only, "fast_witness_only", "rb.put.revokes",
     "a repeated open of an export this process proved before is proven by its object's witness alone, the "
     "export's slot unread: once the real handle was opened, a put export opens again"},
    {id::fast_no_identity, "fast_no_identity", "rb.open.confused_deputy",
     "a repeated open of an export this process proved before does not check that the exporter's descriptor is its "
     "object still: once an exporter put another file at that number, the importer maps that file"},
    {id::fast_no_kind, "fast_no_kind", "rb.open.cross_kind",
     "a repeated open of an export this process proved before does not compare the object's kind with the verb's: "
     "once the real handle was opened, its record relabelled as another kind (checksum valid) opens through that "
     "kind's verb"},
    {id::reopen_replaces_live_mapping, "reopen_replaces_live_mapping", "rb.realloc.fresh",
     "an open of a new export of the same exporter remaps the importer's earlier, still open mappings of that "
     "exporter onto the new memory: every check of the new open passes, the earlier mappings now read a later "
     "round's bytes"},
    {id::aspect_query_fails, "aspect_query_fails", "ur.device.support_query",
     "the physical-memory IPC support query of a device fails (device::has(ipc_physical_memory) throws "
     "device_lost) where it should answer yes or no"},
    {id::open_writes_handle, "open_writes_handle", "rb.open.input_unchanged",
     "a memory open that took the exporter's descriptor clears the descriptor field of the handle bytes it was "
     "given (a runtime that marks a handle consumed in its caller's buffer): the open works, the caller's handle "
     "no longer does"},
    {id::event_open_unchecked_before_create, "event_open_unchecked_before_create", "ur.event.open.no_support",
     "event::open checks the device's ipc_event aspect only once this process has created an event (the check "
     "lives in the set-up the first create runs): a process that never created one opens event handles on a "
     "device without event IPC"},
};

[[maybe_unused]] id parse_env() noexcept {
  const char* v = std::getenv("IPCREF_DEFECT");
  if (!v || !*v || std::strcmp(v, "none") == 0) return id::none;
  for (const auto& d : kCatalog)
    if (std::strcmp(d.name, v) == 0) return d.defect;
  std::fprintf(stderr, "ipcref: IPCREF_DEFECT=%s names no defect; see ipcref::defects::catalog()\n", v);
  std::abort();
}

}  // namespace

std::span<const info> catalog() noexcept { return kCatalog; }

#ifdef IPCREF_WITH_DEFECTS
bool compiled_in() noexcept { return true; }
id active() noexcept {
  static const id selected = parse_env();
  return selected;
}
#else
bool compiled_in() noexcept { return false; }
id active() noexcept { return id::none; }
#endif

}  // namespace ipcref::defects
