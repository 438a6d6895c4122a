// The `cuda` adapter: ipcheck's verbs over the CUDA driver API, loaded at run time
// (cuda_driver.hpp), so that one build runs everywhere. Without libcuda, init answers
// not_implemented ("no NVIDIA driver: ..."); without a device, feature_not_supported.
//
// Mapping (CUDA driver API reference, 13.0):
//   memory     cuMemAlloc / cuMemAllocHost / cuMemAllocManaged; write and read through
//              cuMemcpyHtoD (then cuCtxSynchronize) and cuMemcpyDtoH
//   mem IPC    cuIpcGetMemHandle, cuIpcOpenMemHandle (flags a case names go to CUDA exactly,
//              0 as 0, which CUDA refuses; a case that names none, kDefaultOpenFlags, gets
//              CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS, the one flag CUDA documents and requires,
//              as a runtime without open flags passes it), cuIpcCloseMemHandle; no put in CUDA. Repeated opens go to the
//              driver unchanged: CUDA returns the same pointer, reference counted, and each
//              open needs its own close.
//   events     cuEventCreate (ipc: CU_EVENT_INTERPROCESS; profiling off:
//              CU_EVENT_DISABLE_TIMING), cuIpcGetEventHandle / cuIpcOpenEventHandle,
//              query = cuEventQuery, wait = cuEventQuery polled until it completes or the
//              timeout, release = cuEventDestroy. No put or retain in CUDA; no reset either
//              (see below for what ipcheck's reset is).
//              A never-recorded CUDA event is complete (cuEventQuery answers CUDA_SUCCESS),
//              so an IPC event is made pending at creation: recorded on a stream of its own
//              behind cuStreamWaitValue32 on a word of host memory the device sees (the
//              event's gate), which stays closed until the creating process signals; signal
//              = the host writes the gate's value, and the record completes on the device.
//              IPC events and their gated streams live in a second context per device
//              (cuda_events.cpp says why: a closed gate in the primary context made cuMemFree
//              wait forever).
//              Both the exporter's event and every opened one then answer CUDA_ERROR_NOT_READY
//              from cuEventQuery until that signal, CUDA_SUCCESS after: the pending state and
//              its end are CUDA's answers, through both handles. A signal through an opened
//              event, or a second signal, is cuEventRecord on the default stream. Reset =
//              the same gated record again, in the resetting process (created or opened
//              event), ended by that process's next signal. The records of all processes
//              form one sequence per IPC event, complete when its last record has run (on
//              the H100 a record in either process makes the event pending in both), so
//              only the process that made an event pending can end it: `info` says so
//              (any_process_ends_pending_event false) and the cases that need another
//              process's signal to end it say why they cannot run.
//   test only  IPCHECK_CUDA_FAULT=private_event (environment): every record goes to a
//              private event (CU_EVENT_DISABLE_TIMING, not interprocess) instead of the IPC
//              event, the defect the event cases exist to catch; they must fail under it.
//   physical   cuMemCreate (POSIX fd handle type when ipc), cuMemExportToShareableHandle,
//              the fd moved by SCM_RIGHTS or pidfd_getfd, cuMemImportFromShareableHandle,
//              cuMemAddressReserve / cuMemMap / cuMemSetAccess / cuMemUnmap / cuMemRelease.
//
// The class is declared in cuda_adapter.hpp, which names the file of each part. This file:
// set-up (init, the current context), CUDA's results as outcomes, and the registration.
#include <sys/prctl.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>

#include "cuda_adapter.hpp"

namespace ipcheck::cuda_adapter {
namespace {

// CUresult onto ipcheck's vocabulary; the native name travels with every outcome.
Errc map_result(CUresult r) {
  switch (r) {
    case CUDA_SUCCESS: return Errc::success;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_INVALID_CONTEXT:
    case CUDA_ERROR_ALREADY_MAPPED:
    case CUDA_ERROR_NOT_MAPPED:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_ILLEGAL_STATE:
    case CUDA_ERROR_NOT_FOUND:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED: return Errc::invalid;
    case CUDA_ERROR_OUT_OF_MEMORY: return Errc::exhausted;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_DEVICE_NOT_LICENSED:
    case CUDA_ERROR_PEER_ACCESS_UNSUPPORTED:
    case CUDA_ERROR_NOT_SUPPORTED:
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE: return Errc::feature_not_supported;
    case CUDA_ERROR_STUB_LIBRARY:
    case CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER: return Errc::not_implemented;
    case CUDA_ERROR_NOT_PERMITTED: return Errc::permission_denied;
    case CUDA_ERROR_TIMEOUT: return Errc::timeout;
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED: return Errc::device_lost;
    default: return Errc::other;
  }
}

// Errors that leave the context unusable: every later call in the process answers the same.
bool sticky(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED: return true;
    default: return false;
  }
}

}  // namespace

CudaAdapter::~CudaAdapter() {
  // Objects a case left behind die with the primary context (the audit already ran).
  if (!cu_) return;
  // Gated records a case left pending complete first, so that no stream waits forever.
  for (auto& [id, e] : events_) open_gate(e);
  if (warm_host_) cu_->cuMemFreeHost(warm_host_);
  for (auto& d : devices_) {
    if (d.event_ctx) cu_->cuCtxDestroy_v2(d.event_ctx);
    if (d.ctx) cu_->cuDevicePrimaryCtxRelease_v2(d.handle);
  }
}

// What needs no device (the options, libcuda and cuInit): side by side with other processes'
// starts, before the runner's start slot (Adapter::prepare).
Outcome CudaAdapter::prepare(const AdapterConfig& config) {
  if (prepared_) return *prepared_;
  prepared_ = [&] {
    std::string library, connections;
    for (const auto& [k, v] : config.options) {
      if (k == "library") library = v;
      else if (k == "connections") connections = v;
      else
        return Outcome::failure(Errc::invalid, "cuda: unknown adapter option '" + k + "'; cuda knows: library, connections");
    }
    scm_ = config.transport == "scm";
    if (Outcome o = set_connections(connections, config.events); !o.ok()) return o;
    if (Outcome o = start_driver(library); !o.ok()) return o;
    driver_version_ = nvidia_driver_version(cu_->path(), driver_version_source_);
    return read_fault();
  }();
  return *prepared_;
}

Outcome CudaAdapter::init(const AdapterConfig& config) {
  if (Outcome o = prepare(config); !o.ok()) return o;
  if (Outcome o = open_devices(); !o.ok()) return o;
  // Under Yama ptrace_scope 1, let the run's process tree take our descriptors.
  if (!scm_ && config.runner_pid > 0)
    ::prctl(PR_SET_PTRACER, static_cast<unsigned long>(config.runner_pid), 0, 0, 0);
  if (Outcome o = warm_up(); !o.ok()) return o;
  // After the warm-up: a context reset there would take the gate page with it.
  if (config.events)
    make_gates();
  else
    gate_error_ = Outcome::failure(Errc::not_implemented,
                                   "cuda: this process was started without events (AdapterConfig::events is false: a fuzz "
                                   "worker of another target, or a role of a case whose id names no events: mark the "
                                   "case with Case::events()), so no event context or gate was made");
  return Outcome::success();
}

// CUDA_DEVICE_MAX_CONNECTIONS, read by the driver when it makes a context: the hardware
// queues each context gets (8 by default). Context creation is what a role's start costs and
// what the driver serialises between processes; with one queue it took half the time on an
// H200 (primary context 110 -> 53 ms, a second context 105 -> 50 ms, medians of 5) and 16
// processes starting at once finished in 1.5 s instead of 5.5 s. A process without events
// gets one queue by default: its memory and physical verbs are synchronous calls that do not
// depend on it. A process with events keeps the driver's: every IPC event's record waits on
// its own stream behind a gate (cuStreamWaitValue32), and with one queue all streams share it,
// so a closed gate held back the records of every other event of the process (on an H200,
// event.roundtrip waited out its 10-s limit and multi_device.event.other_device failed): a
// dependency ipcheck would create, not the driver. The user's environment wins over the
// default; the adapter option wins over both; `driver` leaves the variable as it is.
Outcome CudaAdapter::set_connections(const std::string& option, bool events) {
  const char* env = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  const std::string shared_queue_note =
      events ? "; with events, one queue makes each gated record wait behind the others' gates" : "";
  if (option == "driver") {
    connections_ = env ? std::string(env) + " (from the environment; --adapter-opt connections=driver)"
                       : "the driver's default (--adapter-opt connections=driver)";
    return Outcome::success();
  }
  if (option.empty() && env) {
    connections_ = std::string(env) + " (from the environment" + (std::string(env) == "1" ? shared_queue_note : "") + ")";
    return Outcome::success();
  }
  if (option.empty() && events) {
    connections_ = "the driver's default (this process uses events, whose gated records need queues of their own)";
    return Outcome::success();
  }
  const std::string value = option.empty() ? "1" : option;
  if (::setenv("CUDA_DEVICE_MAX_CONNECTIONS", value.c_str(), 1) != 0)
    return Outcome::failure(Errc::invalid, "cuda: cannot set CUDA_DEVICE_MAX_CONNECTIONS=" + value);
  connections_ = value + (option.empty() ? " (ipcheck's default for a process without events: contexts start faster "
                                           "with one hardware queue; --adapter-opt connections=driver keeps the driver's)"
                                         : " (--adapter-opt connections" + (value == "1" ? shared_queue_note : "") + ")");
  return Outcome::success();
}

Outcome CudaAdapter::start_driver(const std::string& library) {
  std::string why;
  cu_ = Driver::load(library, why);
  if (!cu_)
    return Outcome::failure(Errc::not_implemented,
                            "no NVIDIA driver: " + why +
                                "; install the NVIDIA driver, or name its libcuda with --adapter-opt library=PATH");
  if (const CUresult r = cu_->cuInit(0); r != CUDA_SUCCESS) {
    Outcome o = fail(r, "cuInit(0) in " + cu_->path());
    if (r == CUDA_ERROR_NO_DEVICE) o.message = "no CUDA device: " + o.message;
    if (r == CUDA_ERROR_STUB_LIBRARY)
      o.message = "no NVIDIA driver: " + o.message +
                  "; that file is the CUDA toolkit's stub, not a driver: take the stubs folder out of the library path";
    return o;
  }
  if (const CUresult r = cu_->cuDriverGetVersion(&api_version_); r != CUDA_SUCCESS)
    return fail(r, "cuDriverGetVersion");
  return Outcome::success();
}

Outcome CudaAdapter::open_devices() {
  int count = 0;
  if (const CUresult r = cu_->cuDeviceGetCount(&count); r != CUDA_SUCCESS) return fail(r, "cuDeviceGetCount");
  if (count <= 0)
    return Outcome::failure(Errc::feature_not_supported, "no CUDA device: cuDeviceGetCount found 0 devices");
  for (int i = 0; i < count; ++i) {
    Device d;
    if (Outcome o = read_device(i, d); !o.ok()) return o;
    if (const CUresult r = cu_->cuDevicePrimaryCtxRetain(&d.ctx, d.handle); r != CUDA_SUCCESS)
      return fail(r, "cuDevicePrimaryCtxRetain(device " + std::to_string(i) + ")");
    devices_.push_back(d);
  }
  if (const CUresult r = cu_->cuCtxSetCurrent(devices_[0].ctx); r != CUDA_SUCCESS)
    return fail(r, "cuCtxSetCurrent(device 0)");
  current_ = 0;
  return Outcome::success();
}

Outcome CudaAdapter::read_fault() {
  if (const char* f = std::getenv("IPCHECK_CUDA_FAULT"); f && *f) {
    if (std::string(f) != "private_event")
      return Outcome::failure(Errc::invalid, std::string("cuda: IPCHECK_CUDA_FAULT='") + f +
                                                 "' is not a fault this adapter knows; the one test-only fault is private_event");
    fault_private_event_ = true;
    std::fprintf(stderr, "[cuda] TEST-ONLY FAULT IPCHECK_CUDA_FAULT=private_event: events are recorded on private events\n");
  }
  return Outcome::success();
}

Outcome CudaAdapter::fail(CUresult r, const std::string& call) const {
  std::string message = call + " answered " + cu_->error_name(r) + ": " + cu_->error_text(r);
  if (sticky(r)) message += " (a sticky error: the context is unusable, every later call in this process fails)";
  return Outcome::runtime_failure(call.substr(0, call.find_first_of("( ")), map_result(r), std::move(message), r,
                                  cu_->error_name(r));
}

Outcome CudaAdapter::unknown(const char* what, ObjectId id) {
  return Outcome::failure(Errc::invalid, std::string("cuda: ") + what + " " + std::to_string(id) +
                                             " is not live in this process (released already, or never made here)");
}

Outcome CudaAdapter::use(int device, const char* verb) {
  if (device < 0 || static_cast<std::size_t>(device) >= devices_.size())
    return Outcome::failure(Errc::invalid, std::string("cuda: ") + verb + ": device " + std::to_string(device) +
                                               " is not one of the " + std::to_string(devices_.size()) + " devices");
  if (device == current_) return Outcome::success();
  if (const CUresult r = cu_->cuCtxSetCurrent(devices_[static_cast<std::size_t>(device)].ctx); r != CUDA_SUCCESS)
    return fail(r, "cuCtxSetCurrent(device " + std::to_string(device) + ")");
  current_ = device;
  return Outcome::success();
}

namespace {

const AdapterRegistration registered_cuda{{"cuda",
                               "NVIDIA's CUDA driver API (libcuda, loaded at run time)",
                               {"sycl", "cuda"},
                               [] { return std::unique_ptr<Adapter>(new CudaAdapter); },
                               {"library", "connections"},
                               {"library"},
                               [](const std::string& key, const std::string& value) -> std::string {
                                 if (key == "connections") {
                                   if (value == "driver") return "";
                                   const std::string want = "give driver, or a whole number from 1 to 32";
                                   return option_whole_number(value, 32).empty() && std::stoul(value) >= 1 ? "" : want;
                                 }
                                 return value.empty() ? "give libcuda's path or name" : "";
                               },
                               // Context creation was the bottleneck on 2x H200: -j 8 ran slower than -j 2 and
                               // timed out two cases; two starts at once per GPU keep it busy, not thrashing.
                               {.starts_per_device = 2, .jobs_per_device = 4, .hold_runtime = true}}};

}  // namespace
}  // namespace ipcheck::cuda_adapter
