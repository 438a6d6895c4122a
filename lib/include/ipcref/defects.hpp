// Seeded defects: deliberate bugs that a test-only build of ipcref (IPCREF_WITH_DEFECTS)
// can switch on one at a time with IPCREF_DEFECT=<name>, each breaking one clause the
// way a real runtime once did. The default build compiles none of them in.
#pragma once

#include <span>

namespace ipcref::defects {

enum class id : int {
  none = 0,
  open_same_mapping,       // repeated open returns the first mapping
  close_keeps_mapping,     // close forgets the pointer but does not unmap
  skip_token_check,        // open maps any sealed object the handle names
  skip_size_check,         // open accepts a wrong byte count
  allow_profiling_ipc,     // IPC + profiling events are created
  put_keeps_export,        // put does not revoke the export
  opened_phys_size_zero,   // an opened physical object reports size 0
  close_ignores_refcount,  // physical close frees a retained object
  event_signal_private,    // a signal through an opened event stays in that process
  leak_fd_per_open,        // every open leaks one descriptor
  crash_on_truncated,      // a short handle is read past its end (SIGSEGV)
  hang_exporter_gone,      // open spins forever when the exporter has exited
  skip_pid_guard,          // a reused pid is trusted
  double_close_ok,         // closing an unknown pointer succeeds silently
  stale_mapping_cache,     // mappings are cached by (pid, fd) and served after reallocation
  lose_context_on_garbage, // malformed handle bytes poison the process: every later open is device_lost
  importer_writes_liveness, // liveness read from a copy in the data object, in every importer's reach
  open_ignores_kind,       // open takes the kind from the record, not from the verb called
  trust_record_range,      // open maps the record's offset and size without matching them to the export
  interior_offset_page_aligned, // an interior export records its offset rounded down to a page
  put_revokes_all,         // put revokes every export of the object, not the one put
  virtual_map_from_zero,   // virtual_map maps a physical object from its start, whatever the offset
  other_device_mem_copy,   // memory opened on a device other than the exporter's is a private copy
  other_device_event_private, // an event opened on a device other than its creator's keeps its own state
  other_device_phys_copy,  // physical memory opened on another device maps as a private copy
  slow_wake,               // a signal does not wake a waiter; waiters poll every 300 ms
  slow_open,               // every memory open sleeps 50 us (a performance defect: the bench gate catches it)
  // The remembered-export fast path (a repeated open of an export this process proved):
  fast_token_only,         // a remembered export is proven by its slot's token, not its offset and size
  fast_witness_only,       // a remembered export is proven by its object's witness alone, its slot unread
  fast_no_identity,        // a remembered export's descriptor is not checked to be its object still (no fstat)
  fast_no_kind,            // a remembered export opens through any kind's verb
  reopen_replaces_live_mapping, // an open of a new export of the same exporter remaps the importer's earlier, live mappings onto it
  aspect_query_fails,      // the physical IPC support query fails (device::has(ipc_physical_memory) throws device_lost)
  open_writes_handle,      // a memory open writes into the handle bytes it was given (clears their descriptor field)
  event_open_unchecked_before_create, // event::open checks the device's ipc_event aspect only once the process created an event
};

struct info {
  id defect;
  const char* name;
  const char* clause;       // the clause a correct harness reports broken ("bench:<figure>": a
                            // performance defect, which the bench gate catches, not a case)
  const char* description;
};

// Every defect of the catalog, whether or not this build compiles them in.
std::span<const info> catalog() noexcept;
// True in the test-only build that can switch defects on.
bool compiled_in() noexcept;
// The defect selected by IPCREF_DEFECT in this process (none in the default build).
id active() noexcept;
inline bool is(id d) noexcept { return compiled_in() && active() == d; }

}  // namespace ipcref::defects
