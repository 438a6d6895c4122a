// The `ref` adapter: ipcheck's verbs over the reference implementation (lib/, ipcref).
// Claims every profile, including robustness.
#include <sys/uio.h>
#include <unistd.h>

#include <cstdlib>
#include <map>

#include "ipcheck/adapter.hpp"
#include "ipcheck/adapter_toolkit.hpp"
#include "ipcref/ipcref.hpp"

#include "ipcheck_version.h"

namespace ipcheck::ref_adapter {
namespace {

using toolkit::hex;

Errc map_errc(ipcref::errc e) {
  switch (e) {
    case ipcref::errc::invalid: return Errc::invalid;
    case ipcref::errc::feature_not_supported: return Errc::feature_not_supported;
    case ipcref::errc::exporter_gone: return Errc::exporter_gone;
    case ipcref::errc::permission_denied: return Errc::permission_denied;
    case ipcref::errc::exhausted: return Errc::exhausted;
    case ipcref::errc::timeout: return Errc::timeout;
    case ipcref::errc::device_lost: return Errc::device_lost;
  }
  return Errc::other;
}

// ipcref is the runtime under test: its answers are runtime-decided, named by the call.
Outcome from(const char* call, const ipcref::refusal& r) {
  return Outcome::runtime_failure(call, map_errc(r.code), r.message, static_cast<int>(r.code),
                                  std::string("ipcref::errc::") + ipcref::errc_name(r.code));
}
Outcome from(const char* call, const ipcref::exception& e) { return from(call, ipcref::refusal{e.code_value(), e.what()}); }

// A check of the adapter's own (a device index, an export id): decided by the adapter.
struct AdapterRefusal {
  Outcome outcome;
};

// Runs `f`, turning ipcref's exceptions into outcomes (nothing crosses the adapter boundary).
template <class T, class F>
Result<T> guarded(const char* call, F&& f) {
  try {
    auto v = f();
    return {Outcome::runtime_success(call), std::move(v)};
  } catch (const AdapterRefusal& r) {
    return {r.outcome, T{}};
  } catch (const ipcref::exception& e) {
    return {from(call, e), T{}};
  } catch (const std::exception& e) {
    return {Outcome::runtime_failure(call, Errc::other, e.what(), 0, "std::exception"), T{}};
  }
}

template <class F>
Outcome guarded_void(const char* call, F&& f) {
  try {
    f();
    return Outcome::runtime_success(call);
  } catch (const AdapterRefusal& r) {
    return r.outcome;
  } catch (const ipcref::exception& e) {
    return from(call, e);
  } catch (const std::exception& e) {
    return Outcome::runtime_failure(call, Errc::other, e.what(), 0, "std::exception");
  }
}

constexpr const char* kDefaultDevices = "ref0=all;ref1=all;ref2=none";

class RefAdapter final : public Adapter {
 public:
  RefAdapter() { adapter_name_ = "ref"; }

  Outcome init(const AdapterConfig& config) override {
    if (auto it = config.options.find("devices"); it != config.options.end()) {
      ::setenv("IPCHECK_REF_DEVICES", it->second.c_str(), 1);
    } else if (!std::getenv("IPCHECK_REF_DEVICES") && !std::getenv("IPCHECK_REF_CONFIG")) {
      // The model adapter has a device without IPC aspects, so that feature_not_supported
      // paths (sycl.*.aspect) are judged in every run, not only in a special one.
      ::setenv("IPCHECK_REF_DEVICES", kDefaultDevices, 1);
    }
    for (const auto& [k, v] : config.options)
      if (k != "devices")
        return Outcome::failure(Errc::invalid, "ref: unknown adapter option '" + k + "'; ref knows: devices");
    scm_ = config.transport == "scm";
    events_ = config.events;
    return guarded_void("ipcref::get_devices", [&] {
      devices_ = ipcref::get_devices();
      ctx_.emplace(devices_);
      // Under Yama ptrace_scope 1, let the run's process tree take our descriptors and read
      // our export tables: with SCM_RIGHTS too, since the runner's channel carries one
      // descriptor per handle, the data one (ipcref's control descriptor stays home).
      if (config.runner_pid > 0) ipcref::allow_importer(config.runner_pid);
    });
  }

  AdapterInfo info() override {
    AdapterInfo i;
    i.driver_name = "ipcref";
    i.driver_version = IPCHECK_VERSION;
    i.api_version = "sycl_ext_oneapi_inter_process_communication on host memory";
    i.handle_layout = "ipcref/1";
    i.transport = scm_ ? "scm" : "pidfd";
    i.extra["device_config"] = ipcref::device_config_source();
    i.extra["exporter_guard"] = ipcref::exporter_guard_kind();
    // ref claims the cuda profile: its open takes CUDA's peer-access request (0x1) and ignores
    // it, so the cases of an open on another device run both ways here too.
    i.extra["mem_open_peer_flag"] = "0x1";
    for (const auto& d : devices_) {
      DeviceInfo di;
      di.name = d.name();
      di.uuid = "ipcref-" + std::to_string(d.index());
      // A query that throws answers no value: the aspect reads false and its error is kept.
      const std::pair<const char*, ipcref::aspect> queries[] = {{"ipc_memory", ipcref::aspect::ipc_memory},
                                                                {"ipc_physical_memory", ipcref::aspect::ipc_physical_memory},
                                                                {"ipc_event", ipcref::aspect::ipc_event}};
      for (const auto& [name, aspect] : queries) {
        try {
          di.aspects[name] = d.has(aspect);
        } catch (const ipcref::exception& e) {
          di.aspects[name] = false;
          di.aspect_errors[name] = std::string("device::has gave ") + ipcref::errc_name(e.code_value()) + ": " + e.what();
        }
      }
      i.devices.push_back(di);
    }
    return i;
  }

  std::size_t device_count() override { return devices_.size(); }

  Result<DevPtr> alloc(int device, std::size_t bytes, MemKind kind) override {
    return guarded<DevPtr>(alloc_call(kind), [&] {
      void* p = nullptr;
      switch (kind) {
        case MemKind::device: p = ipcref::malloc_device(bytes, dev(device), *ctx_); break;
        case MemKind::shared: p = ipcref::malloc_shared(bytes, dev(device), *ctx_); break;
        case MemKind::host: p = ipcref::malloc_host(bytes, *ctx_); break;
      }
      return reinterpret_cast<DevPtr>(p);
    });
  }

  Outcome free(DevPtr p) override { return guarded_void("ipcref::free", [&] { ipcref::free(ptr(p), *ctx_); }); }

  // Copies through the kernel so that a bad pointer is an error, not a crash of the role.
  Outcome write(DevPtr dst, std::span<const std::byte> src) override {
    iovec local{const_cast<std::byte*>(src.data()), src.size()};
    iovec remote{ptr(dst), src.size()};
    if (::process_vm_writev(::getpid(), &local, 1, &remote, 1, 0) != static_cast<ssize_t>(src.size()))
      return Outcome::failure(Errc::invalid, "write: " + std::to_string(src.size()) + " bytes at " + hex(dst) +
                                                 " are not writable memory", errno, "EFAULT");
    // The bytes land in whatever ipcref mapped there: the runtime decides what they reach.
    return Outcome::runtime_success("process_vm_writev");
  }

  Outcome read(DevPtr src, std::span<std::byte> dst) override {
    iovec local{dst.data(), dst.size()};
    iovec remote{ptr(src), dst.size()};
    if (::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0) != static_cast<ssize_t>(dst.size()))
      return Outcome::failure(Errc::invalid, "read: " + std::to_string(dst.size()) + " bytes at " + hex(src) +
                                                 " are not readable memory", errno, "EFAULT");
    return Outcome::runtime_success("process_vm_readv");
  }

  Result<Exported> mem_get(DevPtr p) override {
    return guarded<Exported>("ipc::memory::get", [&] { return keep(ipcref::ipc::memory::get(ptr(p), *ctx_), Kind::memory); });
  }
  Outcome mem_put(ObjectId id) override {
    return put("ipc::memory::put", id, Kind::memory, [&](ipcref::handle& h) { ipcref::ipc::memory::put(h, *ctx_); });
  }
  Result<DevPtr> mem_open(std::span<const std::byte> bytes, int fd, int device, std::uint64_t flags) override {
    flags = open_flags(flags, 0);  // the API's plain open asks for nothing
    // ipcref's open has no flags parameter. ref claims the ze and cuda profiles, whose open
    // flags name bits 0x1 (ZE_IPC_MEMORY_FLAG_BIAS_CACHED / CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
    // and 0x2 (ZE_IPC_MEMORY_FLAG_BIAS_UNCACHED): hints with no meaning on host memory, taken
    // and ignored; any other bit is refused.
    if ((flags & ~std::uint64_t{0x3}) != 0)
      return {Outcome::failure(Errc::invalid, "ref: memory open defines flag bits 0x1 and 0x2 only, got " + hex(flags))};
    // try_open: a refused handle comes back as a value, not a throw (most of a fuzz worker's
    // opens are refused, and the unwinding cost more than the refusal); the same outcome.
    std::optional<ipcref::refusal> refused;
    Result<DevPtr> opened = guarded<DevPtr>("ipc::memory::open", [&] {
      ipcref::refusal why;
      void* p = ipcref::ipc::memory::try_open(bytes, *ctx_, dev(device), {fd}, why);
      if (!p) refused = std::move(why);
      return reinterpret_cast<DevPtr>(p);
    });
    if (refused) return {from("ipc::memory::open", *refused), DevPtr{}};
    return opened;
  }
  Outcome mem_close(DevPtr p) override { return guarded_void("ipc::memory::close", [&] { ipcref::ipc::memory::close(ptr(p), *ctx_); }); }

  std::size_t phys_granularity(int) override { return ipcref::physical_granularity(); }
  Result<ObjectId> phys_create(int device, std::size_t bytes, bool ipc) override {
    return guarded<ObjectId>("physical_create", [&] { return id(ipcref::physical_create(*ctx_, dev(device), bytes, ipc)); });
  }
  Result<Exported> phys_get(ObjectId pm) override {
    return guarded<Exported>("ipc::physical_memory::get", [&] { return keep(ipcref::ipc::physical_memory::get(phys(pm), *ctx_), Kind::physical); });
  }
  Outcome phys_put(ObjectId id) override {
    return put("ipc::physical_memory::put", id, Kind::physical, [&](ipcref::handle& h) { ipcref::ipc::physical_memory::put(h, *ctx_); });
  }
  Result<ObjectId> phys_open(std::span<const std::byte> bytes, int fd, int device) override {
    return guarded<ObjectId>("ipc::physical_memory::open", [&] { return id(ipcref::ipc::physical_memory::open(bytes, *ctx_, dev(device), {fd})); });
  }
  Outcome phys_close(ObjectId pm) override {
    return guarded_void("ipc::physical_memory::close", [&] { ipcref::ipc::physical_memory::close(phys(pm), *ctx_); });
  }
  Outcome phys_retain(ObjectId pm) override { return guarded_void("physical_retain", [&] { ipcref::physical_retain(phys(pm)); }); }
  Outcome phys_release(ObjectId pm) override { return guarded_void("physical_release", [&] { ipcref::physical_release(phys(pm)); }); }
  Result<std::size_t> phys_size(ObjectId pm) override {
    return guarded<std::size_t>("physical_size", [&] { return ipcref::physical_size(phys(pm)); });
  }
  Result<bool> phys_ipc_enabled(ObjectId pm) override {
    return guarded<bool>("physical_ipc_enabled", [&] { return ipcref::physical_ipc_enabled(phys(pm)); });
  }
  Result<DevPtr> vm_reserve(int, std::size_t bytes) override {
    return guarded<DevPtr>("virtual_reserve", [&] { return reinterpret_cast<DevPtr>(ipcref::virtual_reserve(*ctx_, bytes)); });
  }
  Outcome vm_free(DevPtr p, std::size_t bytes) override {
    return guarded_void("virtual_free", [&] { ipcref::virtual_free(*ctx_, ptr(p), bytes); });
  }
  Outcome vm_map(DevPtr p, std::size_t bytes, ObjectId pm, std::size_t offset) override {
    return guarded_void(
        "virtual_map", [&] { ipcref::virtual_map(*ctx_, ptr(p), bytes, phys(pm), offset, ipcref::access::read_write); });
  }
  Outcome vm_unmap(DevPtr p, std::size_t bytes) override {
    return guarded_void("virtual_unmap", [&] { ipcref::virtual_unmap(*ctx_, ptr(p), bytes); });
  }

  Result<ObjectId> event_create(int device, EventFlags flags) override {
    // Kept as cuda keeps it (it makes no event context then), so a case that uses events
    // without saying so (CaseDef::uses_events) shows in every CI run, not only on a GPU.
    if (!events_)
      return {Outcome::failure(Errc::not_implemented,
                               "ref: this process was started without events (AdapterConfig::events is false: a role "
                               "of a case whose id names no events; mark the case with Case::events())")};
    return guarded<ObjectId>("event_create", [&] {
      return id(ipcref::event_create(*ctx_, dev(device), {flags.ipc, flags.profiling}));
    });
  }
  Result<Exported> event_get(ObjectId e) override {
    return guarded<Exported>("ipc::event::get", [&] { return keep(ipcref::ipc::event::get(event(e), *ctx_), Kind::event); });
  }
  Outcome event_put(ObjectId id) override {
    return put("ipc::event::put", id, Kind::event, [&](ipcref::handle& h) { ipcref::ipc::event::put(h, *ctx_); });
  }
  Result<ObjectId> event_open(std::span<const std::byte> bytes, int fd, int device) override {
    return guarded<ObjectId>("ipc::event::open", [&] { return id(ipcref::ipc::event::open(bytes, *ctx_, dev(device), {fd})); });
  }
  Outcome event_signal(ObjectId e) override { return guarded_void("event_signal", [&] { ipcref::event_signal(event(e)); }); }
  Outcome event_reset(ObjectId e) override { return guarded_void("event_reset", [&] { ipcref::event_reset(event(e)); }); }
  Result<bool> event_query(ObjectId e) override { return guarded<bool>("event_query", [&] { return ipcref::event_query(event(e)); }); }
  Result<bool> event_wait(ObjectId e, std::chrono::nanoseconds t) override {
    return guarded<bool>("event_wait", [&] { return ipcref::event_wait(event(e), t); });
  }
  Outcome event_retain(ObjectId e) override { return guarded_void("event_retain", [&] { ipcref::event_retain(event(e)); }); }
  Outcome event_release(ObjectId e) override { return guarded_void("event_release", [&] { ipcref::event_release(event(e)); }); }

  // ref's ObjectIds are ipcref's own object pointers: the identity ipcref gave.
  Result<std::uint64_t> native_identity(ObjectId id) override {
    return {Outcome::runtime_success("the object ipcref returned"), id};
  }

  // Null arguments where ipcref has a nullable one (a pointer); its context and results
  // are references and return values, so those calls do not exist here.
  Outcome native(const std::string& what, const std::map<std::string, std::string>& args) override {
    if (what != "null_argument") return Adapter::native(what, args);
    const auto verb = args.count("verb") ? args.at("verb") : "";
    const auto arg = args.count("argument") ? args.at("argument") : "";
    if (arg == "pointer" && verb == "mem_get")
      return guarded_void("ipc::memory::get", [&] { (void)ipcref::ipc::memory::get(nullptr, *ctx_); });
    if (arg == "pointer" && verb == "mem_close")
      return guarded_void("ipc::memory::close", [&] { ipcref::ipc::memory::close(nullptr, *ctx_); });
    return Outcome::failure(Errc::not_implemented,
                            "ref: " + verb + " has no nullable " + arg + " (C++ references and return values)");
  }

 private:
  enum class Kind { memory, physical, event };
  struct Kept {
    ipcref::handle handle;
    Kind kind;
  };

  static void* ptr(DevPtr p) { return reinterpret_cast<void*>(p); }
  static ObjectId id(const void* p) { return reinterpret_cast<ObjectId>(p); }
  static ipcref::physical_mem phys(ObjectId v) { return reinterpret_cast<ipcref::physical_mem>(v); }
  static ipcref::event event(ObjectId v) { return reinterpret_cast<ipcref::event>(v); }

  // A device index outside the adapter's list never reaches ipcref: the adapter refuses it.
  const ipcref::device& dev(int index) const {
    if (index < 0 || static_cast<std::size_t>(index) >= devices_.size())
      throw AdapterRefusal{Outcome::failure(Errc::invalid, "ref: device index " + std::to_string(index) +
                                                               " is not one of the " + std::to_string(devices_.size()) +
                                                               " devices")};
    return devices_[static_cast<std::size_t>(index)];
  }

  static const char* alloc_call(MemKind kind) {
    return kind == MemKind::device ? "malloc_device" : kind == MemKind::shared ? "malloc_shared" : "malloc_host";
  }

  Exported keep(ipcref::handle h, Kind kind) {
    Exported e;
    e.id = next_id_++;
    e.bytes.assign(h.data().begin(), h.data().end());
    e.fd = scm_ ? h.descriptor() : -1;
    kept_.emplace(e.id, Kept{std::move(h), kind});
    return e;
  }

  // The handle of export `id`; an unknown id, or one put already, is an invalid put.
  ipcref::handle& take(ObjectId id, Kind kind) {
    auto it = kept_.find(id);
    if (it == kept_.end() || it->second.kind != kind)
      throw AdapterRefusal{Outcome::failure(Errc::invalid, "ref: put: export id " + std::to_string(id) +
                                                               " is not a live export (put already, or never exported)")};
    return it->second.handle;
  }

  // Puts export `id` with `f`; a handle put is forgotten, so get + put in a loop holds nothing.
  template <class F>
  Outcome put(const char* call, ObjectId id, Kind kind, F&& f) {
    Outcome o = guarded_void(call, [&] { f(take(id, kind)); });
    if (o.ok()) kept_.erase(id);
    return o;
  }

  std::vector<ipcref::device> devices_;
  std::optional<ipcref::context> ctx_;
  bool scm_ = false;
  bool events_ = true;  // AdapterConfig::events
  ObjectId next_id_ = 1;
  std::map<ObjectId, Kept> kept_;
};

const AdapterRegistration registered_ref{{"ref",
                               "ipcheck's reference implementation (lib/, host memory)",
                               {"sycl", "ur", "ze", "cuda", "rb"},
                               [] { return std::unique_ptr<Adapter>(new RefAdapter); },
                               {"devices"},
                               {},
                               [](const std::string&, const std::string& value) -> std::string {
                                 return value.empty() ? "give the device set (IPCHECK_REF_DEVICES' syntax)" : "";
                               },
                               {}}};  // host memory: a start costs little, one job per CPU

}  // namespace
}  // namespace ipcheck::ref_adapter
