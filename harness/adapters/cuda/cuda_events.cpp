// The `cuda` adapter's event verbs, and the gates that hold an IPC event pending from its
// creation until its creator signals (the top of cuda_adapter.cpp says how).
//
// IPC events and their gated streams live in a context of their own per device, not in the
// primary context the other verbs use: cuMemFree (and every call that synchronises a
// context) waits for all of its context's streams, so a gate still closed in the primary
// context would hang a producer that frees memory while its event is pending (measured on
// the H100, driver 580.159.04: cuMemFree never returned; with the gate in a second context it
// returns at once and the event stays pending). Every call on such an event makes its
// context current for the call (ContextScope).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <utility>

#include "cuda_adapter.hpp"

namespace ipcheck::cuda_adapter {

namespace {

// Asks `query` (cuEventQuery, cuStreamQuery) until it answers other than
// CUDA_ERROR_NOT_READY or `deadline` passes, sleeping 50 us, doubling up to 2 ms, between
// asks; its last answer.
template <class Query>
CUresult poll_until(Query query, std::chrono::steady_clock::time_point deadline) {
  auto pause = std::chrono::microseconds(50);
  for (;;) {
    const CUresult r = query();
    if (r != CUDA_ERROR_NOT_READY) return r;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return r;
    std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(pause, deadline - now));
    pause = std::min(pause * 2, std::chrono::microseconds(2000));
  }
}

}  // namespace

Result<ObjectId> CudaAdapter::event_create(int device, EventFlags flags) {
  if (auto o = use(device, "event_create"); !o.ok()) return {o};
  unsigned f = 0;
  if (flags.ipc) f |= kEventInterprocess;
  if (!flags.profiling) f |= kEventDisableTiming;  // timing is CUDA's profiling
  Event e;
  e.device = device;
  e.ctx = flags.ipc ? devices_[static_cast<std::size_t>(device)].event_ctx : nullptr;
  ContextScope scope(*cu_, e.ctx);
  CUevent ev = nullptr;
  if (const CUresult r = cu_->cuEventCreate(&ev, f); r != CUDA_SUCCESS)
    return {fail(r, "cuEventCreate(" + event_flag_names(f) + ")")};
  e.ev = ev;
  // An IPC event starts pending (see the top of cuda_adapter.cpp): recorded behind a closed gate.
  if (flags.ipc) {
    if (Outcome o = arm(e); !o.ok()) {
      drop(e);
      return {o};
    }
  }
  const ObjectId id = next_id_++;
  events_[id] = e;
  return {Outcome::runtime_success("cuEventCreate"), id};
}

Result<Exported> CudaAdapter::event_get(ObjectId id) {
  Event* e = find_event(id);
  if (!e) return {unknown("event", id)};
  CUipcEventHandle h{};
  ContextScope scope(*cu_, e->ctx);
  if (const CUresult r = cu_->cuIpcGetEventHandle(&h, e->ev); r != CUDA_SUCCESS)
    return {fail(r, std::string("cuIpcGetEventHandle(") + (e->opened ? "an opened event" : "a created event") + ")")};
  Exported x;
  x.id = next_id_++;
  x.bytes.assign(reinterpret_cast<const std::byte*>(h.reserved), reinterpret_cast<const std::byte*>(h.reserved) + sizeof h);
  return {Outcome::runtime_success("cuIpcGetEventHandle"), std::move(x)};
}

Outcome CudaAdapter::event_put(ObjectId) { return Outcome::failure(Errc::not_implemented, kNoEventPut); }

Result<ObjectId> CudaAdapter::event_open(std::span<const std::byte> bytes, int, int device) {
  if (bytes.size() != kIpcHandleSize)
    return {Outcome::failure(Errc::invalid, "cuda: handle is " + std::to_string(bytes.size()) +
                                                " bytes, CUipcEventHandle is " + std::to_string(kIpcHandleSize))};
  if (auto o = use(device, "event_open"); !o.ok()) return {o};
  CUipcEventHandle h;
  std::memcpy(h.reserved, bytes.data(), sizeof h);
  // In the event context, beside the gated streams a reset through it makes (none when this
  // process was started without events: then the primary context, and reset says why not).
  Event e;
  e.ctx = devices_[static_cast<std::size_t>(device)].event_ctx;
  ContextScope scope(*cu_, e.ctx);
  CUevent ev = nullptr;
  if (const CUresult r = cu_->cuIpcOpenEventHandle(&ev, h); r != CUDA_SUCCESS)
    return {fail(r, "cuIpcOpenEventHandle(device " + std::to_string(device) + ")")};
  const ObjectId id = next_id_++;
  e.ev = ev;
  e.device = device;
  e.opened = true;
  events_[id] = e;
  return {Outcome::runtime_success("cuIpcOpenEventHandle"), id};
}

Outcome CudaAdapter::event_signal(ObjectId id) {
  Event* e = find_event(id);
  if (!e) return unknown("event", id);
  if (auto o = use(e->device, "event_signal"); !o.ok()) return o;
  // A signal returns once this process's record has run, as a host signal does elsewhere:
  // a query right after it sees it (unless another process's record is still pending).
  ContextScope scope(*cu_, e->ctx);
  if (e->gate_closed) {
    open_gate(*e);
    // Polled, not cuStreamSynchronize: a record that does not run once its gate is open (seen
    // on 2x H200 for an event opened on the device it was not made on) fails the signal with
    // what the driver said instead of hanging the role.
    CUstream stream = e->stream;
    const CUresult r = poll_until([&] { return cu_->cuStreamQuery(stream); },
                                  std::chrono::steady_clock::now() + kGatedRecordLimit);
    if (r == CUDA_SUCCESS) return Outcome::runtime_success("cuStreamQuery");
    if (r != CUDA_ERROR_NOT_READY) return fail(r, "cuStreamQuery(the event's gated stream, after its gate opened)");
    Outcome o = fail(r, "cuStreamQuery(the event's gated stream, " +
                            std::to_string(std::chrono::duration_cast<std::chrono::seconds>(kGatedRecordLimit).count()) +
                            " s after its gate opened on device " + std::to_string(e->device) +
                            "): the record behind the gate has not run");
    o.code = Errc::timeout;
    return o;
  }
  CUevent target = e->ev;
  if (fault_private_event_) {
    if (!e->priv)
      if (const CUresult r = cu_->cuEventCreate(&e->priv, kEventDisableTiming); r != CUDA_SUCCESS)
        return fail(r, "cuEventCreate(CU_EVENT_DISABLE_TIMING) for the test-only private_event fault");
    target = e->priv;
  }
  if (const CUresult r = cu_->cuEventRecord(target, nullptr); r != CUDA_SUCCESS)
    return fail(r, "cuEventRecord(default stream)");
  if (cu_->cuStreamSynchronize)
    if (const CUresult r = cu_->cuStreamSynchronize(nullptr); r != CUDA_SUCCESS)
      return fail(r, "cuStreamSynchronize(default stream, after cuEventRecord)");
  return Outcome::runtime_success("cuEventRecord");
}

// CUDA has no reset; what makes an event incomplete again is a new record that has not run.
// So reset = a record behind this process's closed gate, and this process's next signal opens
// it. Records of all processes form one sequence per IPC event (measured on the H100: a record
// in either process makes the event pending in both), and the event is complete only when the
// last one has run: a pending state is ended by the process that made it, and only by it
// (AdapterInfo::any_process_ends_pending_event is false).
Outcome CudaAdapter::event_reset(ObjectId id) {
  Event* e = find_event(id);
  if (!e) return unknown("event", id);
  if (auto o = use(e->device, "event_reset"); !o.ok()) return o;
  if (e->gate_closed) return Outcome::success();  // still pending behind this process's gate: no call made
  ContextScope scope(*cu_, e->ctx);
  if (Outcome o = arm(*e); !o.ok()) return o;
  return Outcome::runtime_success("cuEventRecord");
}

Result<bool> CudaAdapter::event_query(ObjectId id) {
  Event* e = find_event(id);
  if (!e) return {unknown("event", id)};
  ContextScope scope(*cu_, e->ctx);
  const CUresult r = cu_->cuEventQuery(e->ev);
  if (r == CUDA_SUCCESS) return {Outcome::runtime_success("cuEventQuery"), true};
  if (r == CUDA_ERROR_NOT_READY) return {Outcome::runtime_success("cuEventQuery"), false};
  return {fail(r, "cuEventQuery")};
}

Result<bool> CudaAdapter::event_wait(ObjectId id, std::chrono::nanoseconds timeout) {
  Event* e = find_event(id);
  if (!e) return {unknown("event", id)};
  ContextScope scope(*cu_, e->ctx);
  CUevent ev = e->ev;
  const CUresult r = poll_until([&] { return cu_->cuEventQuery(ev); }, std::chrono::steady_clock::now() + timeout);
  if (r == CUDA_SUCCESS) return {Outcome::runtime_success("cuEventQuery"), true};
  if (r != CUDA_ERROR_NOT_READY) return {fail(r, "cuEventQuery while waiting")};
  return {Outcome::runtime_success("cuEventQuery"), false};  // still CUDA_ERROR_NOT_READY at the deadline
}

Outcome CudaAdapter::event_retain(ObjectId) {
  return Outcome::failure(Errc::not_implemented, "CUDA events have no reference count to retain");
}

Outcome CudaAdapter::event_release(ObjectId id) {
  Event* e = find_event(id);
  if (!e) return unknown("event", id);
  open_gate(*e);  // a record still pending completes before its event goes
  ContextScope scope(*cu_, e->ctx);
  if (const CUresult r = cu_->cuEventDestroy_v2(e->ev); r != CUDA_SUCCESS)
    return fail(r, std::string("cuEventDestroy(") + (e->opened ? "an opened event" : "a created event") + ")");
  e->ev = nullptr;
  drop(*e);
  events_.erase(id);
  return Outcome::runtime_success("cuEventDestroy");
}

void CudaAdapter::make_gates() {
  if (!cu_->has_stream_wait()) {
    gate_error_ = Outcome::failure(Errc::not_implemented, "cuda: " + cu_->path() +
                                                              " lacks cuStreamWaitValue32_v2/cuStreamQuery/cuMemHostAlloc/cuCtxCreate_v2/"
                                                              "cuCtxPushCurrent_v2 (needed to hold an event pending)");
    return;
  }
  void* host = nullptr;
  // Portable: the page is pinned and mapped for every context, the event contexts included.
  if (const CUresult r = cu_->cuMemHostAlloc(&host, kGateSlots * sizeof(std::uint32_t),
                                             kMemHostAllocDeviceMap | kMemHostAllocPortable);
      r != CUDA_SUCCESS) {
    gate_error_ = fail(r, "cuMemHostAlloc(4096 bytes, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE) for the event gates");
    return;
  }
  std::memset(host, 0, kGateSlots * sizeof(std::uint32_t));
  gate_host_ = static_cast<std::uint32_t*>(host);
  for (Device& d : devices_)
    if (Outcome o = make_event_context(d); !o.ok()) {
      gate_error_ = o;
      gate_host_ = nullptr;  // no IPC event can be held pending: event_create says why
      return;
    }
  gate_value_.assign(kGateSlots, 0);
  gate_used_.assign(kGateSlots, false);
}

Outcome CudaAdapter::make_event_context(Device& d) {
  CUcontext ctx = nullptr;
  if (const CUresult r = cu_->cuCtxCreate_v2(&ctx, 0, d.handle); r != CUDA_SUCCESS)
    return fail(r, "cuCtxCreate for " + d.name + "'s event context");
  CUcontext popped = nullptr;
  cu_->cuCtxPopCurrent_v2(&popped);  // cuCtxCreate made it current
  d.event_ctx = ctx;
  ContextScope scope(*cu_, ctx);
  if (const CUresult r = cu_->cuMemHostGetDevicePointer_v2(&d.gate_dev, gate_host_, 0); r != CUDA_SUCCESS)
    return fail(r, "cuMemHostGetDevicePointer for the event gates in " + d.name + "'s event context");
  // The context's own one-time state for IPC events, before the audit baseline.
  CUevent ev = nullptr;
  CUstream stream = nullptr;
  CUipcEventHandle h{};
  if (cu_->cuEventCreate(&ev, kEventInterprocess | kEventDisableTiming) == CUDA_SUCCESS) {
    cu_->cuIpcGetEventHandle(&h, ev);
    if (cu_->cuStreamCreate(&stream, kStreamNonBlocking) == CUDA_SUCCESS) {
      cu_->cuEventRecord(ev, stream);
      cu_->cuEventSynchronize(ev);
      cu_->cuStreamDestroy_v2(stream);
    }
    cu_->cuEventDestroy_v2(ev);
  }
  return Outcome::success();
}

Outcome CudaAdapter::arm(Event& e) {
  if (!gate_host_) return gate_error_;
  if (!e.ctx)
    return Outcome::failure(Errc::not_implemented,
                            "cuda: only an IPC event can be held pending (behind a gate, in the event context of "
                            "its device); a gate in the primary context would make every synchronising call "
                            "(cuMemFree) wait for it");
  int slot = e.slot;  // a re-arm (reset) keeps its gate and stream
  if (slot < 0) {
    const auto free_slot = std::find(gate_used_.begin(), gate_used_.end(), false);
    if (free_slot == gate_used_.end())
      return Outcome::failure(Errc::exhausted, "cuda: all " + std::to_string(kGateSlots) +
                                                   " event gates are in use (one per live IPC event of this process)");
    slot = static_cast<int>(free_slot - gate_used_.begin());
  }
  if (!e.stream)
    if (const CUresult r = cu_->cuStreamCreate(&e.stream, kStreamNonBlocking); r != CUDA_SUCCESS)
      return fail(r, "cuStreamCreate(CU_STREAM_NON_BLOCKING) for the event's gate");
  // Values only grow: a gate opened before (the word holds its last value) is closed again.
  const std::uint32_t value = gate_value_[static_cast<std::size_t>(slot)] + 1;
  const CUdeviceptr word = devices_[static_cast<std::size_t>(e.device)].gate_dev + static_cast<CUdeviceptr>(slot) * sizeof(std::uint32_t);
  if (const CUresult r = cu_->cuStreamWaitValue32_v2(e.stream, word, value, kStreamWaitValueGeq); r != CUDA_SUCCESS)
    return fail(r, "cuStreamWaitValue32(gate " + std::to_string(slot) + ", CU_STREAM_WAIT_VALUE_GEQ " +
                       std::to_string(value) + ")");
  gate_value_[static_cast<std::size_t>(slot)] = value;
  gate_used_[static_cast<std::size_t>(slot)] = true;
  e.slot = slot;
  e.gate_closed = true;
  CUevent target = e.ev;
  if (fault_private_event_) {
    if (!e.priv)
      if (const CUresult r = cu_->cuEventCreate(&e.priv, kEventDisableTiming); r != CUDA_SUCCESS)
        return fail(r, "cuEventCreate(CU_EVENT_DISABLE_TIMING) for the test-only private_event fault");
    target = e.priv;
  }
  if (const CUresult r = cu_->cuEventRecord(target, e.stream); r != CUDA_SUCCESS)
    return fail(r, "cuEventRecord(the event's gated stream)");
  return Outcome::success();
}

void CudaAdapter::open_gate(Event& e) {
  if (!e.gate_closed) return;
  __atomic_store_n(&gate_host_[e.slot], gate_value_[static_cast<std::size_t>(e.slot)], __ATOMIC_SEQ_CST);
  e.gate_closed = false;
}

void CudaAdapter::drop(Event& e) {
  open_gate(e);
  ContextScope scope(*cu_, e.ctx);
  if (e.ev) cu_->cuEventDestroy_v2(e.ev);
  e.ev = nullptr;
  if (e.priv) cu_->cuEventDestroy_v2(e.priv);
  e.priv = nullptr;
  if (e.stream) cu_->cuStreamDestroy_v2(e.stream);  // returns at once; the stream goes once drained
  e.stream = nullptr;
  if (e.slot >= 0) gate_used_[static_cast<std::size_t>(e.slot)] = false;
  e.slot = -1;
}

std::string CudaAdapter::event_flag_names(unsigned f) {
  std::string s;
  if (f & kEventInterprocess) s += "CU_EVENT_INTERPROCESS";
  if (f & kEventDisableTiming) s += std::string(s.empty() ? "" : " | ") + "CU_EVENT_DISABLE_TIMING";
  return s.empty() ? "CU_EVENT_DEFAULT" : s;
}

}  // namespace ipcheck::cuda_adapter
