// Command lists, command queues and fences. Work runs in the calling thread: an immediate
// list runs each command when it is appended (in order: the list's lock), so every immediate
// list behaves as ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS; a regular list records its commands and
// a queue runs them, in order, inside zeCommandQueueExecuteCommandLists, which returns when
// they are done (then the fence, if any, is signaled). Copies go through the kernel
// (process_vm_readv on this process), so a bad pointer is an error, not a crash.
//
// A counter-based event a command signals is armed when the command is submitted (appended to
// an immediate list; its list executed) and completed when the command is done, so another
// process waiting on it meanwhile (through its IPC handle) waits.
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
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

CommandQueue* queue_of(ze_command_queue_handle_t h, const char* function) {
  driver();
  return get<CommandQueue>(h, Kind::command_queue, function, "hCommandQueue");
}

// Checks a wait list's handles; the events as a vector.
std::vector<ze_event_handle_t> wait_list(uint32_t n, ze_event_handle_t* events, const char* function) {
  if (n && !events) fail(ZE_RESULT_ERROR_INVALID_NULL_POINTER, cat(function, ": phWaitEvents is null"));
  for (uint32_t i = 0; i < n; ++i) get<Event>(events[i], Kind::event, function, "phWaitEvents[i]");
  return std::vector<ze_event_handle_t>(events, events + n);
}

void wait_all(const std::vector<ze_event_handle_t>& events, const char* function) {
  for (auto* e : events) wait_event(e, UINT64_MAX, function);
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

// Runs one command now: arm its signal, wait, work, complete the signal. `body` may throw;
// the event then stays armed (never complete), as a command that failed on a device would.
void run_now(const Command& c, const char* function) {
  const std::uint64_t token = arm_signal(c.signal, function);
  wait_all(c.waits, function);
  if (c.body) c.body();
  finish_signal(c.signal, token, function);
}

// An immediate list runs the command; a regular one records it.
ze_result_t submit(CommandList* l, Command c, const char* function) {
  std::lock_guard order(l->order);
  if (l->immediate) {
    run_now(c, function);
    return ZE_RESULT_SUCCESS;
  }
  if (l->closed)
    fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
         cat(function, ": the command list is closed; reset it with zeCommandListReset before appending"));
  l->commands.push_back(std::move(c));
  return ZE_RESULT_SUCCESS;
}

void check_queue_desc(const ze_command_queue_desc_t* desc, const char* fn) {
  if (desc->ordinal != 0)
    fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
         cat(fn, ": ordinal ", desc->ordinal, " is not a queue group; the device has one group, ordinal 0"));
  if (desc->index != 0)
    fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat(fn, ": index ", desc->index, " is not a queue; the group has one, index 0"));
  if (desc->mode > ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS)
    fail(ZE_RESULT_ERROR_INVALID_ENUMERATION, cat(fn, ": mode ", static_cast<int>(desc->mode), " is unknown"));
}

}  // namespace

// ---------------------------------------------------------------- lists

ze_result_t ZE_APICALL CommandListCreateImmediate(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                                  const ze_command_queue_desc_t* altdesc,
                                                  ze_command_list_handle_t* phCommandList) {
  const char* fn = "zeCommandListCreateImmediate";
  return entry(fn, [&] {
    Context* c = context_of(hContext, fn);
    Device* d = device_in(c, hDevice, fn);
    need_pointer(altdesc, fn, "altdesc");
    need_pointer(phCommandList, fn, "phCommandList");
    check_queue_desc(altdesc, fn);
    auto l = std::make_unique<CommandList>();
    l->ctx = c;
    l->device = d;
    l->immediate = true;
    ++c->children;
    add_live(l.get(), Kind::command_list);
    *phCommandList = reinterpret_cast<ze_command_list_handle_t>(l.release());
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL CommandListCreate(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                         const ze_command_list_desc_t* desc, ze_command_list_handle_t* phCommandList) {
  const char* fn = "zeCommandListCreate";
  return entry(fn, [&] {
    Context* c = context_of(hContext, fn);
    Device* d = device_in(c, hDevice, fn);
    need_pointer(desc, fn, "desc");
    need_pointer(phCommandList, fn, "phCommandList");
    if (desc->commandQueueGroupOrdinal != 0)
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat(fn, ": commandQueueGroupOrdinal ", desc->commandQueueGroupOrdinal,
                                                 " is not a queue group; the device has one group, ordinal 0"));
    // Every flag is a hint here (commands run in order anyway): RELAXED_ORDERING,
    // MAXIMIZE_THROUGHPUT, EXPLICIT_ONLY (1.0), IN_ORDER (1.9), EXP_CLONEABLE (1.9),
    // COPY_OFFLOAD_HINT (1.15): bits 0..5.
    const ze_command_list_flags_t known = 0x3f;
    if (desc->flags & ~known)
      fail(ZE_RESULT_ERROR_INVALID_ENUMERATION, cat(fn, ": desc->flags 0x", std::hex, desc->flags, " has unknown bits"));
    auto l = std::make_unique<CommandList>();
    l->ctx = c;
    l->device = d;
    l->immediate = false;
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
    {
      std::lock_guard order(l->order);
      if (l->executing)
        fail(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE, cat(fn, ": a command queue is executing the list"));
    }
    remove_live(l);
    --l->ctx->children;
    delete l;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL CommandListClose(ze_command_list_handle_t hCommandList) {
  const char* fn = "zeCommandListClose";
  return entry(fn, [&] {
    CommandList* l = list_of(hCommandList, fn);
    std::lock_guard order(l->order);
    if (l->immediate)
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat(fn, ": an immediate command list is never closed"));
    l->closed = true;  // closing twice is harmless
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL CommandListReset(ze_command_list_handle_t hCommandList) {
  const char* fn = "zeCommandListReset";
  return entry(fn, [&] {
    CommandList* l = list_of(hCommandList, fn);
    std::lock_guard order(l->order);
    if (l->executing) fail(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE, cat(fn, ": a command queue is executing the list"));
    // An immediate list has nothing pending: its commands ran when appended.
    l->commands.clear();
    l->closed = false;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL CommandListHostSynchronize(ze_command_list_handle_t hCommandList, uint64_t) {
  const char* fn = "zeCommandListHostSynchronize";
  return entry(fn, [&] {
    CommandList* l = list_of(hCommandList, fn);
    if (!l->immediate)
      fail(ZE_RESULT_ERROR_INVALID_ARGUMENT,
           cat(fn, ": the list is a regular one; synchronize its queue (zeCommandQueueSynchronize) or a fence"));
    // Waits for the appends in progress in other threads; each ran to its end before returning.
    std::lock_guard order(l->order);
    return ZE_RESULT_SUCCESS;
  });
}

// ---------------------------------------------------------------- appends

ze_result_t ZE_APICALL CommandListAppendBarrier(ze_command_list_handle_t hCommandList, ze_event_handle_t hSignalEvent,
                                                uint32_t numWaitEvents, ze_event_handle_t* phWaitEvents) {
  const char* fn = "zeCommandListAppendBarrier";
  return entry(fn, [&] {
    CommandList* l = list_of(hCommandList, fn);
    check_signal(hSignalEvent, fn);
    return submit(l, Command{wait_list(numWaitEvents, phWaitEvents, fn), {}, hSignalEvent}, fn);
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
    auto body = [dstptr, srcptr, size, fn] {
      if (size) copy_checked(dstptr, srcptr, size, fn);
    };
    return submit(l, Command{wait_list(numWaitEvents, phWaitEvents, fn), body, hSignalEvent}, fn);
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
    // The pattern is read at the append (the caller may reuse it at once).
    std::array<std::byte, 128> pat{};
    copy_checked(pat.data(), pattern, pattern_size, fn);
    auto body = [ptr, pat, pattern_size, size, fn] {
      // A chunk of whole patterns (64 KiB is a multiple of every allowed pattern size).
      std::vector<std::byte> chunk(std::min<std::size_t>(size, 64 * 1024));
      for (std::size_t i = 0; i < chunk.size(); ++i) chunk[i] = pat[i % pattern_size];
      for (std::size_t done = 0; done < size;) {
        const std::size_t n = std::min(chunk.size(), size - done);
        copy_checked(static_cast<char*>(ptr) + done, chunk.data(), n, fn);
        done += n;
      }
    };
    return submit(l, Command{wait_list(numWaitEvents, phWaitEvents, fn), body, hSignalEvent}, fn);
  });
}

ze_result_t ZE_APICALL CommandListAppendSignalEvent(ze_command_list_handle_t hCommandList, ze_event_handle_t hEvent) {
  const char* fn = "zeCommandListAppendSignalEvent";
  return entry(fn, [&] {
    CommandList* l = list_of(hCommandList, fn);
    get<Event>(hEvent, Kind::event, fn, "hEvent");
    return submit(l, Command{{}, {}, hEvent}, fn);
  });
}

ze_result_t ZE_APICALL CommandListAppendWaitOnEvents(ze_command_list_handle_t hCommandList, uint32_t numEvents,
                                                     ze_event_handle_t* phEvents) {
  const char* fn = "zeCommandListAppendWaitOnEvents";
  return entry(fn, [&] {
    CommandList* l = list_of(hCommandList, fn);
    return submit(l, Command{wait_list(numEvents, phEvents, fn), {}, nullptr}, fn);
  });
}

ze_result_t ZE_APICALL CommandListAppendEventReset(ze_command_list_handle_t hCommandList, ze_event_handle_t hEvent) {
  const char* fn = "zeCommandListAppendEventReset";
  return entry(fn, [&] {
    CommandList* l = list_of(hCommandList, fn);
    refuse_counter_based(hEvent, fn, "it cannot be reset");
    auto body = [hEvent, fn] { reset_event(hEvent, fn); };
    return submit(l, Command{{}, body, nullptr}, fn);
  });
}

// ---------------------------------------------------------------- queues

ze_result_t ZE_APICALL CommandQueueCreate(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                          const ze_command_queue_desc_t* desc, ze_command_queue_handle_t* phCommandQueue) {
  const char* fn = "zeCommandQueueCreate";
  return entry(fn, [&] {
    Context* c = context_of(hContext, fn);
    Device* d = device_in(c, hDevice, fn);
    need_pointer(desc, fn, "desc");
    need_pointer(phCommandQueue, fn, "phCommandQueue");
    check_queue_desc(desc, fn);
    auto q = std::make_unique<CommandQueue>();
    q->ctx = c;
    q->device = d;
    ++c->children;
    add_live(q.get(), Kind::command_queue);
    *phCommandQueue = reinterpret_cast<ze_command_queue_handle_t>(q.release());
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL CommandQueueDestroy(ze_command_queue_handle_t hCommandQueue) {
  const char* fn = "zeCommandQueueDestroy";
  return entry(fn, [&] {
    CommandQueue* q = queue_of(hCommandQueue, fn);
    if (q->fences.load() != 0)
      fail(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE,
           cat(fn, ": ", q->fences.load(), " fences of the queue are alive; destroy them first"));
    {
      std::lock_guard order(q->order);  // an execution in another thread finishes first
    }
    remove_live(q);
    --q->ctx->children;
    delete q;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL CommandQueueExecuteCommandLists(ze_command_queue_handle_t hCommandQueue, uint32_t numCommandLists,
                                                       ze_command_list_handle_t* phCommandLists,
                                                       ze_fence_handle_t hFence) {
  const char* fn = "zeCommandQueueExecuteCommandLists";
  return entry(fn, [&] {
    CommandQueue* q = queue_of(hCommandQueue, fn);
    need_pointer(phCommandLists, fn, "phCommandLists");
    if (numCommandLists == 0) fail(ZE_RESULT_ERROR_INVALID_SIZE, cat(fn, ": numCommandLists is 0"));
    Fence* fence = nullptr;
    if (hFence) {
      fence = get<Fence>(hFence, Kind::fence, fn, "hFence");
      if (fence->queue != q) fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat(fn, ": the fence belongs to another queue"));
    }
    std::vector<CommandList*> lists;
    for (uint32_t i = 0; i < numCommandLists; ++i) {
      CommandList* l = get<CommandList>(phCommandLists[i], Kind::command_list, fn, "phCommandLists[i]");
      std::lock_guard order(l->order);
      if (l->immediate)
        fail(ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE, cat(fn, ": list ", i, " is an immediate command list"));
      if (!l->closed)
        fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat(fn, ": list ", i, " is not closed; close it with zeCommandListClose"));
      if (l->ctx != q->ctx)
        fail(ZE_RESULT_ERROR_INVALID_ARGUMENT, cat(fn, ": list ", i, " belongs to another context than the queue"));
      lists.push_back(l);
    }
    std::lock_guard order(q->order);
    for (auto* l : lists) {
      std::lock_guard lo(l->order);
      ++l->executing;
    }
    struct Done {
      std::vector<CommandList*>& lists;
      ~Done() {
        for (auto* l : lists) {
          std::lock_guard lo(l->order);
          --l->executing;
        }
      }
    } done{lists};
    // Every counter-based event the lists signal gets its tracking point at submission, then
    // the commands run in order; each completes its event when done.
    std::vector<std::uint64_t> tokens;
    for (auto* l : lists)
      for (const auto& c : l->commands) tokens.push_back(arm_signal(c.signal, fn));
    std::size_t k = 0;
    for (auto* l : lists)
      for (const auto& c : l->commands) {
        wait_all(c.waits, fn);
        if (c.body) c.body();
        finish_signal(c.signal, tokens[k++], fn);
      }
    if (fence) {
      __atomic_store_n(&fence->signaled, 1u, __ATOMIC_SEQ_CST);
      futex_wake_all(&fence->signaled);
    }
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL CommandQueueSynchronize(ze_command_queue_handle_t hCommandQueue, uint64_t timeout) {
  const char* fn = "zeCommandQueueSynchronize";
  return entry(fn, [&] {
    CommandQueue* q = queue_of(hCommandQueue, fn);
    // Executions run inside zeCommandQueueExecuteCommandLists: one in another thread holds the
    // queue's lock until it is done.
    if (timeout == UINT64_MAX) {
      std::lock_guard order(q->order);
      return ZE_RESULT_SUCCESS;
    }
    std::unique_lock order(q->order, std::try_to_lock);
    const std::uint64_t deadline = monotonic_ns() + timeout;
    while (!order.owns_lock()) {
      if (monotonic_ns() >= deadline) return ZE_RESULT_NOT_READY;
      ::usleep(100);
      order.try_lock();
    }
    return ZE_RESULT_SUCCESS;
  });
}

// ---------------------------------------------------------------- fences

ze_result_t ZE_APICALL FenceCreate(ze_command_queue_handle_t hCommandQueue, const ze_fence_desc_t* desc,
                                   ze_fence_handle_t* phFence) {
  const char* fn = "zeFenceCreate";
  return entry(fn, [&] {
    CommandQueue* q = queue_of(hCommandQueue, fn);
    need_pointer(desc, fn, "desc");
    need_pointer(phFence, fn, "phFence");
    if (desc->flags & ~static_cast<ze_fence_flags_t>(ZE_FENCE_FLAG_SIGNALED))
      fail(ZE_RESULT_ERROR_INVALID_ENUMERATION, cat(fn, ": desc->flags 0x", std::hex, desc->flags, " has unknown bits"));
    auto f = std::make_unique<Fence>();
    f->queue = q;
    f->signaled = (desc->flags & ZE_FENCE_FLAG_SIGNALED) ? 1u : 0u;
    ++q->fences;
    add_live(f.get(), Kind::fence);
    *phFence = reinterpret_cast<ze_fence_handle_t>(f.release());
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL FenceDestroy(ze_fence_handle_t hFence) {
  const char* fn = "zeFenceDestroy";
  return entry(fn, [&] {
    driver();
    Fence* f = get<Fence>(hFence, Kind::fence, fn, "hFence");
    remove_live(f);
    --f->queue->fences;
    delete f;
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL FenceHostSynchronize(ze_fence_handle_t hFence, uint64_t timeout) {
  const char* fn = "zeFenceHostSynchronize";
  return entry(fn, [&] {
    driver();
    Fence* f = get<Fence>(hFence, Kind::fence, fn, "hFence");
    const std::uint64_t deadline = timeout == UINT64_MAX ? 0 : monotonic_ns() + timeout;
    while (__atomic_load_n(&f->signaled, __ATOMIC_ACQUIRE) == 0) {
      if (timeout == 0 || (deadline != 0 && monotonic_ns() >= deadline)) return ZE_RESULT_NOT_READY;
      futex_wait(&f->signaled, 0, deadline);
    }
    return ZE_RESULT_SUCCESS;
  });
}

ze_result_t ZE_APICALL FenceQueryStatus(ze_fence_handle_t hFence) {
  const char* fn = "zeFenceQueryStatus";
  return entry(fn, [&] {
    driver();
    Fence* f = get<Fence>(hFence, Kind::fence, fn, "hFence");
    return __atomic_load_n(&f->signaled, __ATOMIC_ACQUIRE) ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY;
  });
}

ze_result_t ZE_APICALL FenceReset(ze_fence_handle_t hFence) {
  const char* fn = "zeFenceReset";
  return entry(fn, [&] {
    driver();
    Fence* f = get<Fence>(hFence, Kind::fence, fn, "hFence");
    __atomic_store_n(&f->signaled, 0u, __ATOMIC_SEQ_CST);
    return ZE_RESULT_SUCCESS;
  });
}

}  // namespace zedriver
