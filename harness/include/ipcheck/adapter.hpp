// The adapter interface: the verbs every GPU IPC API shares, each returning an Outcome
// (never throwing across this boundary). An adapter is created and initialised only in
// a role process, never in the runner.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace ipcheck {

// ipcheck's common error vocabulary; each adapter maps its native codes onto it.
enum class Errc {
  success = 0,
  invalid,                // bad argument or handle
  feature_not_supported,  // the device lacks the capability
  exporter_gone,          // the exporting process has exited
  permission_denied,      // the OS refused (ptrace/Yama, device permissions)
  exhausted,              // out of memory, descriptors, slots
  timeout,                // a wait ran out of time
  not_implemented,        // the adapter or the driver has no such function (skip, not fail)
  device_lost,            // the runtime reports its device unusable
  other,                  // anything else; see native_name
};
const char* errc_name(Errc e) noexcept;

// Who decided an outcome. `runtime`: a call into the IPC implementation under test answered,
// and the outcome is its answer (the call's name and native code travel with it). `adapter`:
// the adapter's own code decided (a byte count the API has no parameter for, a lookup in the
// adapter's tables, ipcheck's own handle record, a verb the API lacks). A check judged from
// an adapter-decided outcome is reported as emulated, never as the driver's.
enum class Decided : std::uint8_t { adapter, runtime };
const char* decided_name(Decided d) noexcept;

struct Outcome {
  Errc code = Errc::success;
  long long native = 0;     // ze_result_t, CUresult, ipcref errc value, errno...
  std::string native_name;  // "ZE_RESULT_ERROR_INVALID_ARGUMENT", "CUDA_ERROR_INVALID_VALUE"
  std::string message;
  Decided by = Decided::adapter;
  std::string call;         // the native call that decided it ("cuIpcOpenMemHandle"), when by == runtime

  bool ok() const noexcept { return code == Errc::success; }
  bool from_runtime() const noexcept { return by == Decided::runtime; }
  // Decided by the adapter's own code.
  static Outcome success() { return {}; }
  static Outcome failure(Errc c, std::string message, long long native = 0, std::string native_name = {}) {
    return {c, native, std::move(native_name), std::move(message), Decided::adapter, {}};
  }
  // Decided by the runtime: `call` answered success, or failed with `native`.
  static Outcome runtime_success(std::string call) {
    Outcome o;
    o.by = Decided::runtime;
    o.call = std::move(call);
    return o;
  }
  static Outcome runtime_failure(std::string call, Errc c, std::string message, long long native,
                                 std::string native_name) {
    return {c, native, std::move(native_name), std::move(message), Decided::runtime, std::move(call)};
  }
  // "invalid (ZE_RESULT_ERROR_INVALID_ARGUMENT): message"
  std::string describe() const;
};

template <class T>
struct Result {
  Outcome outcome;
  T value{};
  bool ok() const noexcept { return outcome.ok(); }
};

using DevPtr = std::uint64_t;    // a device (or host) address as the runtime returns it
using ObjectId = std::uint64_t;  // an adapter-side id for physical memory, events, exports

enum class MemKind { device, host, shared };
const char* mem_kind_name(MemKind k) noexcept;

// What `get` produced: the bytes to send, and a descriptor to move by SCM_RIGHTS when the
// handle convention needs one (-1 otherwise). The descriptor stays the adapter's.
struct Exported {
  ObjectId id = 0;  // pass to the matching put
  std::vector<std::byte> bytes;
  int fd = -1;
};

struct EventFlags {
  bool ipc = false;
  bool profiling = false;
};

struct DeviceInfo {
  DeviceInfo() = default;
  // {name, uuid, aspects[, aspect_errors]}
  DeviceInfo(std::string name_, std::string uuid_, std::map<std::string, bool> aspects_,
             std::map<std::string, std::string> aspect_errors_ = {})
      : name(std::move(name_)), uuid(std::move(uuid_)), aspects(std::move(aspects_)),
        aspect_errors(std::move(aspect_errors_)) {}
  std::string name;
  std::string uuid;
  std::map<std::string, bool> aspects;  // ipc_memory, ipc_physical_memory, ipc_event
  // A support query that answered an error instead of a value: aspect -> the error, as the
  // runtime gave it (the aspect reads false, and case device.support_query judges it).
  std::map<std::string, std::string> aspect_errors;
};

struct AdapterInfo {
  std::string driver_name;
  std::string driver_version;
  std::string api_version;
  std::vector<DeviceInfo> devices;
  std::string handle_layout;             // memory handles' layout (ipcheck/handle_layout.hpp: "ipcref/1", "opaque")
  // Layouts of the other kinds of handle ("physical", "event") where they differ from the
  // memory handles' (an adapter's own record for physical memory, CUDA's event handle).
  std::map<std::string, std::string> kind_layouts;
  // The layout of `kind`'s handles ("memory", "physical", "event").
  std::string layout_of(const std::string& kind) const {
    auto it = kind_layouts.find(kind);
    return it == kind_layouts.end() ? handle_layout : it->second;
  }
  std::string transport;                 // how descriptors move: pidfd | scm | none
  // Whether a pointer open returns is a host mapping of its own (mmap: gone from the
  // address space once closed), or device address space the runtime keeps reserved after
  // close (CUDA's unified address space), where only a read through the runtime tells.
  bool opened_memory_is_host_mapping = true;
  // Whether a signal from any process that holds an event ends a pending state another
  // process set (a reset, or a new IPC event's initial state), as in UR, SYCL, Level Zero and
  // Vulkan. False on cuda, where only the process that made an event pending can end it;
  // `pending_event_note` then says why. Cases that need another process's signal to end a
  // pending state arrange for the same process to make it pending and end it, or say why not.
  bool any_process_ends_pending_event = true;
  std::string pending_event_note;
  std::map<std::string, std::string> extra;  // anything else worth recording
  // Verbs the runtime has no call for (cuda: "mem_put", "event_put"), each with why; such a
  // verb answers not_implemented, and cases that need it skip before their roles start.
  std::map<std::string, std::string> unsupported_verbs;
};

// How a run asks the adapter to behave; adapters ignore what they do not use.
struct AdapterConfig {
  std::string transport = "auto";  // pidfd | scm | auto
  std::map<std::string, std::string> options;  // --adapter-opt key=value
  int runner_pid = 0;                          // allowed to take descriptors under Yama
  // Whether this process may use the event verbs. False lets an adapter skip what only events
  // need (cuda: a second context per device, which makes every mapping of the process
  // slower, and costs each role's start a context: on 2x H200 about a fifth of it); the
  // event verbs then say why they cannot run. A fuzz worker of another target sets it false,
  // and so does a case's role where the case uses no events (CaseDef::uses_events).
  bool events = true;
};

// mem_open's `flags` when a case asks for no flags in particular: what a runtime whose API has
// none (SYCL, UR) passes. Each adapter names its value in `info` (mem_open_flags_default):
// 0 everywhere except cuda, whose cuIpcOpenMemHandle requires CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS.
inline constexpr std::uint64_t kDefaultOpenFlags = ~std::uint64_t{0};
// The flags a mem_open passes on: `flags` as asked, or the adapter's `plain` value for
// kDefaultOpenFlags.
constexpr std::uint64_t open_flags(std::uint64_t flags, std::uint64_t plain) {
  return flags == kDefaultOpenFlags ? plain : flags;
}

class Adapter {
 public:
  virtual ~Adapter() = default;

  // The part of a start that uses no device: loading the runtime and its process-wide
  // initialisation (cuda: libcuda and cuInit). Processes run it side by side; what follows in
  // init (contexts, which a driver makes one process at a time) waits for the runner's start
  // slot (harness/src/runner_admission.hpp). Optional: init runs it when it was not called,
  // and an adapter whose start is all one thing leaves it as it is.
  virtual Outcome prepare(const AdapterConfig& config) {
    (void)config;
    return Outcome::success();
  }
  virtual Outcome init(const AdapterConfig& config) = 0;
  virtual AdapterInfo info() = 0;
  virtual std::size_t device_count() = 0;

  // Memory. `write` and `read` copy between host and any pointer the adapter gave out
  // (allocations and opened mappings); on a GPU they go through the copy engine.
  virtual Result<DevPtr> alloc(int device, std::size_t bytes, MemKind kind);
  virtual Outcome free(DevPtr ptr);
  virtual Outcome write(DevPtr dst, std::span<const std::byte> src);
  virtual Outcome read(DevPtr src, std::span<std::byte> dst);

  virtual Result<Exported> mem_get(DevPtr ptr);
  virtual Outcome mem_put(ObjectId export_id);
  // `fd` is the descriptor received with the bytes (or -1); `flags` are native open flags.
  virtual Result<DevPtr> mem_open(std::span<const std::byte> bytes, int fd, int device,
                                  std::uint64_t flags = kDefaultOpenFlags);
  virtual Outcome mem_close(DevPtr ptr);

  // Physical memory and virtual ranges.
  virtual std::size_t phys_granularity(int device);
  virtual Result<ObjectId> phys_create(int device, std::size_t bytes, bool ipc);
  virtual Result<Exported> phys_get(ObjectId pm);
  virtual Outcome phys_put(ObjectId export_id);
  virtual Result<ObjectId> phys_open(std::span<const std::byte> bytes, int fd, int device);
  virtual Outcome phys_close(ObjectId pm);
  virtual Outcome phys_retain(ObjectId pm);
  virtual Outcome phys_release(ObjectId pm);
  virtual Result<std::size_t> phys_size(ObjectId pm);
  virtual Result<bool> phys_ipc_enabled(ObjectId pm);
  virtual Result<DevPtr> vm_reserve(int device, std::size_t bytes);
  virtual Outcome vm_free(DevPtr ptr, std::size_t bytes);
  virtual Outcome vm_map(DevPtr ptr, std::size_t bytes, ObjectId pm, std::size_t offset);
  virtual Outcome vm_unmap(DevPtr ptr, std::size_t bytes);

  // Events.
  virtual Result<ObjectId> event_create(int device, EventFlags flags);
  virtual Result<Exported> event_get(ObjectId ev);
  virtual Outcome event_put(ObjectId export_id);
  virtual Result<ObjectId> event_open(std::span<const std::byte> bytes, int fd, int device);
  virtual Outcome event_signal(ObjectId ev);
  virtual Outcome event_reset(ObjectId ev);
  virtual Result<bool> event_query(ObjectId ev);
  // True when signaled within `timeout`; false (and success) when the time ran out.
  virtual Result<bool> event_wait(ObjectId ev, std::chrono::nanoseconds timeout);
  virtual Outcome event_retain(ObjectId ev);
  virtual Outcome event_release(ObjectId ev);

  // The runtime's own identity of an object this adapter handed out (physical memory, an
  // event): the CUevent, the ze_event_handle_t, ipcref's object. Checks that objects are
  // distinct compare these, never the adapter's ObjectIds (which always differ).
  virtual Result<std::uint64_t> native_identity(ObjectId id);

  // Calls that only some APIs have, by name; cases that need one skip when it answers
  // not_implemented. Names in use (args in parentheses):
  //   "null_argument" (verb = mem_get | mem_open | mem_close | event_get, argument =
  //       context | pointer | handle | out): the verb with that argument null; answers
  //       the runtime's code (Level Zero with parameter validation:
  //       ZE_RESULT_ERROR_INVALID_NULL_HANDLE / _NULL_POINTER, mapped to invalid).
  //   "context_check": whether the process's runtime context is still usable, as cheaply as
  //       the API allows (CUDA: cuCtxSynchronize, whose sticky error shows a lost context);
  //       a fuzz worker asks after each successful open.
  // Open flags travel in mem_open's `flags`: native bits exactly as given (0 is 0), or
  // kDefaultOpenFlags for what the API's plain open passes.
  virtual Outcome native(const std::string& what, const std::map<std::string, std::string>& args);

  // The input the last open (`verb`: "mem_open", "phys_open" or "event_open") handed the
  // runtime, read back after that call: `now` is what it holds now (a view valid until this
  // adapter's next call), `handed` what it held when handed over. An adapter that hands the
  // runtime the caller's bytes themselves answers them (the default: `given`, with `handed`
  // empty, so the caller compares `now` with its own copy of what it received); one that hands
  // over a copy (ur) or a descriptor of its own making in their place (ze's physical import)
  // answers that, so a write the runtime made into its input is seen (rb.open.input_unchanged).
  struct OpenInput {
    std::string what;               // "" for the handle bytes themselves, else what it is
    std::vector<std::byte> handed;  // empty: the caller's bytes as they were when it called
    std::span<const std::byte> now;
  };
  virtual OpenInput last_open_input(const std::string& verb, std::span<const std::byte> given) {
    (void)verb;
    return {{}, {}, given};
  }

 protected:
  Outcome missing(const char* verb) const;
  std::string adapter_name_;
};

// Registry of adapters. Registration carries what the runner needs without creating one.
struct AdapterDesc {
  std::string name;
  std::string description;
  std::vector<std::string> profiles;  // spec profiles the adapter is judged on
  std::function<std::unique_ptr<Adapter>()> create;
  // The keys of --adapter-opt it accepts; the command line refuses any other before a case runs.
  std::vector<std::string> options;
  // Those of `options` that name a library, a loader or a file (cuda's library, vk's loader):
  // they choose code or paths, so they come only from the command line or the environment of
  // whoever runs ipcheck, never from a file ipcheck reads (a reproducer's are ignored, said so).
  std::vector<std::string> path_options;
  // Checks one option's value the same way, before a case runs (exit 2): "" when it is
  // valid, else what the key takes ("use fd, opaque or auto"). Empty: any value.
  std::function<std::string(const std::string& key, const std::string& value)> check_value;
  // What the adapter costs the machine, for the runner's scheduler (harness/src/runner_admission.hpp).
  struct Cost {
    // Roles that may be initialising the adapter at once on one device (a CUDA context takes
    // 100-300 ms of the device, serialised in the driver); 0: no limit (a start costs little).
    int starts_per_device = 0;
    // Cases run at once per device by default (-j); 0: the adapter runs on the CPU, and the
    // default is one job per CPU.
    int jobs_per_device = 0;
    // The runner keeps one process with the adapter initialised for the whole run (its
    // probe, RuntimeHold in runner.hpp): a runtime whose first client on a device pays for
    // setting the device up (CUDA's cuInit: 320 ms alone, 26 ms beside another process)
    // then starts each role for less. --hold-runtime no turns it off.
    bool hold_runtime = false;
    // A role process that finished a case cleanly serves the next case that may reuse one
    // (same configuration; runner_pool.hpp) instead of exiting: its context is made once, not
    // once per case. For runtimes whose context creation is a role's cost. --reuse-roles no
    // turns it off.
    bool reuse_roles = false;
  } cost;
  // The runtime throws C++ exceptions from a library linked with the shared libstdc++ and
  // libgcc_s (libsycl): its roles run the role program linked with them too
  // (role_executable_for), whose unwinder and personality are the runtime's.
  bool shared_cxx_runtime = false;
};

// What check_value helpers answer: "" when `value` is one of `allowed`, else "use a, b or c".
std::string option_one_of(const std::string& value, const std::vector<std::string>& allowed);
// "" when `value` is a whole number from 0 to `max` (decimal), else what to give.
std::string option_whole_number(const std::string& value, unsigned long max);

void register_adapter(AdapterDesc desc);
const std::vector<AdapterDesc>& adapters();
const AdapterDesc* find_adapter(const std::string& name);

// Registers an adapter at static-initialisation time.
struct AdapterRegistration {
  explicit AdapterRegistration(AdapterDesc desc) { register_adapter(std::move(desc)); }
};

}  // namespace ipcheck
