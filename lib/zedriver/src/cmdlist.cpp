// Immediate command lists. Commands run in the calling thread when appended, in order (the
// list's lock), so every list behaves as ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS: when an append
// returns, its work, its waits and its signal are done. Copies go through the kernel
// (process_vm_readv/writev on this process), so a bad pointer is an error, not a crash.
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "entries.hpp"
#include "state.hpp"

namespace zedriver {

namespace {

CommandList* list_of(ze_command_list_handle_t h, const char* function) {
  driver();
  return get<CommandList>(h, Kind::command_list, function, "hCommandList");
}

void wait_all(uint32_t n, ze_event_handle_t* events, const char* function) {
  if (n && !events) fail(ZE_RESULT_ERROR_INVALID_NULL_POINTER, cat(function, ": phWaitEvents is null"));
  // Validate every handle before waiting on any.
  for (uint32_t i = 0; i < n; ++i) get<Event>(events[i], Kind::event, function, "phWaitEvents[i]");
  for (uint32_t i = 0; i < n; ++i) wait_event(events[i], UINT64_MAX, function);
}

void check_signal(ze_event_handle_t h, const char* function) {
  if (h) get<Event>(h, Kind::event, function, "hSignalEvent");
}

// Copies `size` bytes from `src` to `dst` of this process, through the kernel.
void copy_checked(void* dst, const void* src, std::size_t size, const char* function) {
  iovec local{dst, size};
  iovec remote{const_cast<void*>(src), size};
  const ssize_t n = ::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0);
  if (n != static_cast<ssize_t>(size))
    fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
         cat(function, ": copying ", size, " bytes from ", src, " to ", dst, " failed after ", n < 0 ? 0 : n,
             " bytes (", n < 0 ? std::strerror(errno) : "short copy", "): a range is not memory of this process"));
}

}  // namespace

ze_result_t ZE_APICALL CommandListCreateImmediate(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                                  const ze_command_queue_desc_t* altdesc,
                                                  ze_command_list_handle_t* phCommandList) {
  const char* fn = "zeCommandListCreateImmediate";
  return entry(fn, [&] {
    Context* c = context_of(hContext, fn);
    Device* d = get<Device>(hDevice, Kind::device, fn, "hDevice");
    need_pointer(altdesc, fn, "altdesc");
    need_pointer(phCommandList, fn, "phCommandList");
    if (!c->contains(d))
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat(fn, ": device '", d->dev.name(), "' is not in the context"));
    if (altdesc->ordinal != 0)
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
           cat(fn, ": ordinal ", altdesc->ordinal, " is not a queue group; the device has one group, ordinal 0"));
    if (altdesc->mode > ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS)
      fail(ZE_RESULT_ERROR_INVALID_ENUMERATION, cat(fn, ": mode ", static_cast<int>(altdesc->mode), " is unknown"));
    auto l = std::make_unique<CommandList>();
    l->ctx = c;
    ++c->children;
    add_live(l.get(), Kind::command_list);
    *phCommandList = reinterpret_cast<ze_command_list_handle_t>(l.release());
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL CommandListDestroy(ze_command_list_handle_t hCommandList) {
  const char* fn = "zeCommandListDestroy";
  return entry(fn, [&] {
    CommandList* l = list_of(hCommandList, fn);
    remove_live(l);
    --l->ctx->children;
    delete l;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL CommandListAppendBarrier(ze_command_list_handle_t hCommandList, ze_event_handle_t hSignalEvent,
                                                uint32_t numWaitEvents, ze_event_handle_t* phWaitEvents) {
  const char* fn = "zeCommandListAppendBarrier";
  return entry(fn, [&] {
    CommandList* l = list_of(hCommandList, fn);
    check_signal(hSignalEvent, fn);
    std::lock_guard order(l->order);
    wait_all(numWaitEvents, phWaitEvents, fn);
    if (hSignalEvent) signal_event(hSignalEvent, fn);
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL CommandListAppendMemoryCopy(ze_command_list_handle_t hCommandList, void* dstptr,
                                                   const void* srcptr, size_t size, ze_event_handle_t hSignalEvent,
                                                   uint32_t numWaitEvents, ze_event_handle_t* phWaitEvents) {
  const char* fn = "zeCommandListAppendMemoryCopy";
  return entry(fn, [&] {
    CommandList* l = list_of(hCommandList, fn);
    need_pointer(dstptr, fn, "dstptr");
    need_pointer(srcptr, fn, "srcptr");
    check_signal(hSignalEvent, fn);
    const auto d = reinterpret_cast<std::uintptr_t>(dstptr), s = reinterpret_cast<std::uintptr_t>(srcptr);
    if (size && d < s + size && s < d + size)
      fail(ZE_RESULT_ERROR_OVERLAPPING_REGIONS, cat(fn, ": [", srcptr, ", +", size, ") and [", dstptr, ", +", size,
                                                    ") overlap; copy through a staging buffer"));
    std::lock_guard order(l->order);
    wait_all(numWaitEvents, phWaitEvents, fn);
    if (size) copy_checked(dstptr, srcptr, size, fn);
    if (hSignalEvent) signal_event(hSignalEvent, fn);
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL CommandListAppendMemoryFill(ze_command_list_handle_t hCommandList, void* ptr,
                                                   const void* pattern, size_t pattern_size, size_t size,
                                                   ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
                                                   ze_event_handle_t* phWaitEvents) {
  const char* fn = "zeCommandListAppendMemoryFill";
  return entry(fn, [&] {
    CommandList* l = list_of(hCommandList, fn);
    need_pointer(ptr, fn, "ptr");
    need_pointer(pattern, fn, "pattern");
    check_signal(hSignalEvent, fn);
    if (pattern_size == 0 || (pattern_size & (pattern_size - 1)) != 0 || pattern_size > 128)
      fail(ZE_RESULT_ERROR_INVALID_SIZE,
           cat(fn, ": pattern_size ", pattern_size, " is not a power of two up to maxMemoryFillPatternSize 128"));
    std::lock_guard order(l->order);
    wait_all(numWaitEvents, phWaitEvents, fn);
    // A chunk of whole patterns (64 KiB is a multiple of every allowed pattern size).
    std::vector<std::byte> chunk(std::min<std::size_t>(size, 64 * 1024));
    std::byte pat[128];
    copy_checked(pat, pattern, pattern_size, fn);
    for (std::size_t i = 0; i < chunk.size(); ++i) chunk[i] = pat[i % pattern_size];
    for (std::size_t done = 0; done < size;) {
      const std::size_t n = std::min(chunk.size(), size - done);
      copy_checked(static_cast<char*>(ptr) + done, chunk.data(), n, fn);
      done += n;
    }
    if (hSignalEvent) signal_event(hSignalEvent, fn);
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL CommandListAppendSignalEvent(ze_command_list_handle_t hCommandList, ze_event_handle_t hEvent) {
  const char* fn = "zeCommandListAppendSignalEvent";
  return entry(fn, [&] {
    CommandList* l = list_of(hCommandList, fn);
    std::lock_guard order(l->order);
    signal_event(hEvent, fn);
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL CommandListAppendWaitOnEvents(ze_command_list_handle_t hCommandList, uint32_t numEvents,
                                                     ze_event_handle_t* phEvents) {
  const char* fn = "zeCommandListAppendWaitOnEvents";
  return entry(fn, [&] {
    CommandList* l = list_of(hCommandList, fn);
    std::lock_guard order(l->order);
    wait_all(numEvents, phEvents, fn);
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL CommandListAppendEventReset(ze_command_list_handle_t hCommandList, ze_event_handle_t hEvent) {
  const char* fn = "zeCommandListAppendEventReset";
  return entry(fn, [&] {
    CommandList* l = list_of(hCommandList, fn);
    std::lock_guard order(l->order);
    reset_event(hEvent, fn);
    return ZE_RESULT_SUCCESS;
  });
}

}  // namespace zedriver
