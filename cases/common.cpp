#include "common.hpp"

#include <cstdio>
#include <cstdlib>


namespace ipcheck::catalog {

namespace {
std::span<const std::byte> as_bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}
}  // namespace

Owned alloc_filled(Role& r, std::size_t bytes, std::uint64_t seed, std::string_view clause, int device, MemKind kind,
                   Where w) {
  SetupSteps setup(r);
  Adapter& a = r.adapter();
  auto res = a.alloc(device, bytes, kind);
  r.skip_if_unsupported(res.outcome, std::string("alloc of ") + mem_kind_name(kind) + " memory");
  Owned mem = Owned::allocation(a, r.require(res, clause, "alloc " + size_name(bytes), w));
  if (!fill(r, mem.get(), bytes, seed, clause, "fill the allocation", w)) throw RoleAbort{"fill failed"};
  return mem;
}

bool fill(Role& r, DevPtr p, std::size_t bytes, std::uint64_t seed, std::string_view clause, const std::string& what,
          Where w) {
  const auto data = pattern(seed, bytes);
  const Outcome o = r.adapter().write(p, data);
  if (o.ok()) return true;
  return r.check_ok(o, clause, what, w);
}

bool verify(Role& r, DevPtr p, std::size_t bytes, std::uint64_t seed, std::string_view clause, const std::string& what,
            std::size_t offset, Where w) {
  std::vector<std::byte> got(bytes);
  const Outcome o = r.adapter().read(p, got);
  if (!o.ok()) return r.check_ok(o, clause, what + ": read " + size_name(bytes), w);
  // The bytes are what the runtime mapped there: its read decides.
  const std::size_t bad = first_mismatch(got, seed, offset);
  if (bad == static_cast<std::size_t>(-1))
    return r.check(true, Evidence::of(o), clause, what + ": " + size_name(bytes) + " as written", w);
  const auto want = pattern(seed, 1, offset + bad);
  return r.check(false, Evidence::of(o), clause,
                 what + ": byte " + std::to_string(bad) + " of " + std::to_string(bytes) + " is " +
                     hex(static_cast<unsigned>(got[bad])) + ", expected " + hex(static_cast<unsigned>(want[0])) +
                     " (wrong offset, stale or foreign memory)",
                 w);
}

Seen holds(Role& r, DevPtr p, std::size_t bytes, std::uint64_t seed, std::size_t offset) {
  std::vector<std::byte> got(bytes);
  const Outcome o = r.adapter().read(p, got);
  return {o.ok() && first_mismatch(got, seed, offset) == static_cast<std::size_t>(-1), Evidence::of(o)};
}

Owned export_memory(Role& r, DevPtr p, Exported& out, std::string_view clause, Where w) {
  SetupSteps setup(r);
  auto res = r.adapter().mem_get(p);
  r.skip_if_unsupported(res.outcome, "mem_get");
  out = r.require(std::move(res), clause, "mem_get", w);
  return Owned::mem_export(r.adapter(), out.id);
}

Owned open_received(Role& r, const Received& h, std::string_view clause, const std::string& what, int device, Where w) {
  SetupSteps setup(r);
  auto res = r.adapter().mem_open(h.bytes, h.fd.get(), device);
  return Owned::mapping(r.adapter(), r.require(res, clause, what, w));
}

Owned open_received(Role& r, const Received& h, std::string_view clause, const std::string& what, Evidence& by,
                    int device, Where w) {
  SetupSteps setup(r);
  auto res = r.adapter().mem_open(h.bytes, h.fd.get(), device);
  by.with(res.outcome);
  return Owned::mapping(r.adapter(), r.require(res, clause, what, w));
}

bool end_export(Role& r, Owned& exported, std::string_view clause, const std::string& what, Where w) {
  SetupSteps setup(r);
  const Outcome o = exported.reset();
  if (o.code == Errc::not_implemented) {
    r.note(what + ": the API has no put (" + o.describe() + ")");
    return true;
  }
  return r.check_ok(o, clause, what, w);
}

void put_or_skip(Role& r, Owned& exported, std::string_view clause, const std::string& what, Where w) {
  SetupSteps setup(r);
  const Outcome o = exported.reset();
  if (o.code == Errc::not_implemented) r.skip(what + ": " + o.describe());
  r.require_ok(o, clause, what, w);
}

std::optional<int> device_with(const AdapterInfo& info, const std::string& aspect, int other_than) {
  for (std::size_t i = 0; i < info.devices.size(); ++i) {
    auto it = info.devices[i].aspects.find(aspect);
    if (static_cast<int>(i) != other_than && it != info.devices[i].aspects.end() && it->second) return static_cast<int>(i);
  }
  return std::nullopt;
}

std::optional<int> device_without(const AdapterInfo& info, const std::string& aspect) {
  for (std::size_t i = 0; i < info.devices.size(); ++i) {
    auto it = info.devices[i].aspects.find(aspect);
    if (it != info.devices[i].aspects.end() && !it->second) return static_cast<int>(i);
  }
  return std::nullopt;
}

std::optional<int> device_with(Role& r, const std::string& aspect, int other_than) {
  return device_with(r.adapter().info(), aspect, other_than);
}

std::optional<int> device_without(Role& r, const std::string& aspect) { return device_without(r.adapter().info(), aspect); }

namespace {

std::string no_device_without(const std::string& aspect) {
  return "needs a device without aspect " + aspect +
         " and every device here has it (with ref: IPCHECK_REF_DEVICES='ref0=all;ref1=none', as CTest's ref+noaspects "
         "tests run)";
}

std::string no_device_with(const std::string& aspect, int other_than) {
  return other_than < 0 ? "needs a device with aspect " + aspect + ", and none has it"
                        : "needs a second device with aspect " + aspect + " besides device " +
                              std::to_string(other_than) + ", and there is none";
}

}  // namespace

int need_device_without(Role& r, const std::string& aspect) {
  if (auto d = device_without(r, aspect)) return *d;
  r.skip(no_device_without(aspect));
  throw RoleAbort{"skipped"};  // not reached: skip ends the role
}

int need_device_with(Role& r, const std::string& aspect, int other_than) {
  if (auto d = device_with(r, aspect, other_than)) return *d;
  r.skip(no_device_with(aspect, other_than));
  throw RoleAbort{"skipped"};  // not reached: skip ends the role
}

Precondition needs_device_with(std::string aspect, int other_than) {
  return [aspect = std::move(aspect), other_than](const std::string&, const AdapterInfo& info) -> std::optional<std::string> {
    if (device_with(info, aspect, other_than)) return std::nullopt;
    return no_device_with(aspect, other_than);
  };
}

Precondition needs_device_without(std::string aspect) {
  return [aspect = std::move(aspect)](const std::string&, const AdapterInfo& info) -> std::optional<std::string> {
    if (device_without(info, aspect)) return std::nullopt;
    return no_device_without(aspect);
  };
}

Precondition needs_two_devices_with(std::string aspect) {
  return [aspect = std::move(aspect)](const std::string&, const AdapterInfo& info) -> std::optional<std::string> {
    const auto first = device_with(info, aspect);
    if (first && device_with(info, aspect, *first)) return std::nullopt;
    return "needs two devices with aspect " + aspect + ", and " +
           (first ? "only device " + std::to_string(*first) + " has it" : std::string("none has it"));
  };
}

Precondition needs_adapter(std::string adapter, std::string why) {
  return [adapter = std::move(adapter), why = std::move(why)](const std::string& name,
                                                              const AdapterInfo&) -> std::optional<std::string> {
    if (name == adapter) return std::nullopt;
    return why;
  };
}

RuntimeNeed needs_verb(std::string verb, std::string what) {
  return RuntimeNeed{[verb = std::move(verb), what = std::move(what)](const std::string& name,
                                                          const AdapterInfo& info) -> std::optional<std::string> {
    const auto it = info.unsupported_verbs.find(verb);
    if (it == info.unsupported_verbs.end()) return std::nullopt;
    return what + ": " + verb + " is not_implemented on adapter '" + name + "': " + it->second;
  }};
}

void send_text(Role& r, const std::string& to, const std::string& tag, const std::string& text) {
  r.send(to, tag, as_bytes(text));
}

std::string receive_text(Role& r, const std::string& tag) {
  const Received m = r.receive(tag);
  return {reinterpret_cast<const char*>(m.bytes.data()), m.bytes.size()};
}

PhysicalView map_physical(Role& r, ObjectId pm, std::size_t bytes, std::string_view clause, int device, Where w) {
  SetupSteps setup(r);
  Adapter& a = r.adapter();
  PhysicalView v;
  auto res = a.vm_reserve(device, bytes);
  r.skip_if_unsupported(res.outcome, "vm_reserve");
  v.reservation = Owned::reservation(a, r.require(res, clause, "vm_reserve " + size_name(bytes), w), bytes);
  const Outcome m = a.vm_map(v.reservation.get(), bytes, pm, 0);
  r.skip_if_unsupported(m, "vm_map");
  r.require_ok(m, clause, "vm_map " + size_name(bytes), w);
  v.mapping = Owned::vm_mapping(a, v.reservation.get(), bytes);
  return v;
}

std::size_t granular(Role& r, std::size_t at_least, int device) {
  const std::size_t g = r.adapter().phys_granularity(device);
  return (at_least + g - 1) / g * g;
}

Owned create_physical(Role& r, std::size_t bytes, bool ipc, std::string_view clause, int device, Where w) {
  SetupSteps setup(r);
  auto res = r.adapter().phys_create(device, bytes, ipc);
  r.skip_if_unsupported(res.outcome, std::string("phys_create") + (ipc ? " with IPC" : ""));
  return Owned::physical(r.adapter(), r.require(res, clause, "phys_create " + size_name(bytes), w));
}

Owned export_physical(Role& r, ObjectId pm, Exported& out, std::string_view clause, Where w) {
  SetupSteps setup(r);
  auto res = r.adapter().phys_get(pm);
  r.skip_if_unsupported(res.outcome, "phys_get");
  out = r.require(std::move(res), clause, "phys_get", w);
  return Owned::phys_export(r.adapter(), out.id);
}

Owned open_physical(Role& r, const Received& h, std::string_view clause, const std::string& what, int device, Where w) {
  SetupSteps setup(r);
  auto res = r.adapter().phys_open(h.bytes, h.fd.get(), device);
  r.skip_if_unsupported(res.outcome, "phys_open");
  return Owned::opened_physical(r.adapter(), r.require(res, clause, what, w));
}

Owned create_event(Role& r, EventFlags flags, std::string_view clause, int device, Where w) {
  SetupSteps setup(r);
  auto res = r.adapter().event_create(device, flags);
  r.skip_if_unsupported(res.outcome, std::string("event_create") + (flags.ipc ? " with IPC" : ""));
  return Owned::event(r.adapter(), r.require(res, clause, "event_create", w));
}

Owned export_event(Role& r, ObjectId ev, Exported& out, std::string_view clause, Where w) {
  SetupSteps setup(r);
  auto res = r.adapter().event_get(ev);
  r.skip_if_unsupported(res.outcome, "event_get");
  out = r.require(std::move(res), clause, "event_get", w);
  return Owned::event_export(r.adapter(), out.id);
}

Owned open_event(Role& r, const Received& h, std::string_view clause, const std::string& what, int device, Where w) {
  SetupSteps setup(r);
  auto res = r.adapter().event_open(h.bytes, h.fd.get(), device);
  r.skip_if_unsupported(res.outcome, "event_open");
  return Owned::event(r.adapter(), r.require(res, clause, what, w));
}

Seen query(Role& r, ObjectId ev, std::string_view clause, const std::string& what, Where w) {
  auto res = r.adapter().event_query(ev);
  const Evidence by = Evidence::of(res.outcome);
  SetupSteps setup(r);  // the query working is a step; what it answered is the caller's check
  return {r.require(std::move(res), clause, what, w), by};
}

Seen wait_for(Role& r, ObjectId ev, std::chrono::nanoseconds t, std::string_view clause, const std::string& what,
              Where w) {
  auto res = r.adapter().event_wait(ev, t);
  const Evidence by = Evidence::of(res.outcome);
  SetupSteps setup(r);
  return {r.require(std::move(res), clause, what, w), by};
}

bool check_pending(Role& r, const Seen& pending, std::string_view clause, const std::string& message, Where w) {
  const bool ok = r.check(pending, clause, message, w);
  return r.check(pending, kEventPending, message, w) && ok;
}

void send_signal_time(Role& r, const std::string& to, const std::string& tag,
                      std::chrono::steady_clock::time_point before_signal) {
  send_text(r, to, tag, std::to_string(before_signal.time_since_epoch().count()));
}

void check_wake_latency(Role& r, const Seen& woke, std::chrono::steady_clock::time_point woke_at,
                        const std::string& tag, const std::string& what, Where w) {
  if (!woke) return;  // the wait timed out: its own clause says so; there is no latency to judge
  const std::string sent = receive_text(r, tag);
  char* end = nullptr;
  const long long ticks = std::strtoll(sent.c_str(), &end, 10);
  if (sent.empty() || *end != '\0') {
    r.check(false, kWakeLatency, what + ": the signaler's time '" + sent + "' is not a number (a case bug)", w);
    return;
  }
  const auto signaled_at = std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(ticks));
  const auto latency = woke_at - signaled_at;
  r.check(latency <= kWakeLatencyLimit, woke.by, kWakeLatency,
          what + " woke " + ms(latency) + " after the signal call began (limit " + ms(kWakeLatencyLimit) + ")", w);
}

std::string only_its_maker_ends_pending(Role& r) {
  const AdapterInfo info = r.adapter().info();
  return info.any_process_ends_pending_event ? std::string() : info.pending_event_note;
}

std::string outcome_word(const Outcome& o) { return o.ok() ? "ok" : errc_name(o.code); }

bool check_clean_refusal(Role& r, const Outcome& o, std::string_view clause, const std::string& what,
                         const std::string& observe_as, Where w) {
  if (!o.ok()) r.native_error(what, o);
  if (!observe_as.empty())
    r.observe(observe_as, o.ok() ? std::string("opened") : outcome_word(o) + (o.native_name.empty() ? "" : " " + o.native_name));
  if (o.ok()) return r.check(false, Evidence::of(o), clause, what + " succeeded; it must be refused", w);
  if (o.code == Errc::device_lost)
    return r.check(false, Evidence::of(o), clause,
                   what + " answered " + o.describe() + ": a refusal that loses the process's context is not clean", w);
  return r.check(true, Evidence::of(o), clause, what + " refused cleanly: " + o.describe(), w);
}

ResourceCount count_resources() { return {take_proc_snapshot()}; }

bool check_no_growth(Role& r, const ResourceCount& before, const ResourceCount& after, std::string_view clause,
                     const std::string& what, Where w) {
  const auto grew = diff_snapshots(before.snapshot, after.snapshot);
  std::string items;
  for (std::size_t i = 0; i < grew.size() && i < 3; ++i) items += (i ? "; " : "") + grew[i].kind + " " + grew[i].item;
  // What the process holds is what the runtime under it left: ipcheck's audit only counts it.
  return r.check(grew.empty(), Evidence::of(Outcome::runtime_success("/proc/self audit")), clause,
                 what + ": descriptors " + std::to_string(before.fds()) + " -> " + std::to_string(after.fds()) +
                     ", shared mappings " + std::to_string(before.mappings()) + " -> " +
                     std::to_string(after.mappings()) + (grew.empty() ? "" : "; new: " + items),
                 w);
}

void await_killed(Role& r, const std::string& role, std::string_view clause, Where w) {
  const std::string how = r.wait_exit(role);
  SetupSteps setup(r);  // the runner's kill, not the runtime's doing
  r.check(how == "signal SIGKILL", clause,
          role + " was killed at " + r.injection().describe() + " and ended by " + how, w);
}

void check_open_after_death(Role& r, const std::string& what, const std::function<Outcome()>& open, Where w) {
  const auto t0 = std::chrono::steady_clock::now();
  const Outcome o = open();
  const auto took = std::chrono::steady_clock::now() - t0;
  check_clean_refusal(r, o, kExporterGone, what + " after the exporter was killed",
                      "robustness.open.exporter_gone.killed", w);
  r.check(took < kPromptAfterDeath, Evidence::of(o), kExporterGone, what + " returned after " + ms(took), w);
}

std::string size_name(std::size_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

std::string ms(std::chrono::steady_clock::duration d) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f ms", std::chrono::duration<double, std::milli>(d).count());
  return b;
}

long count_param(Role& r, const std::string& key, long fallback) {
  const std::string text = r.param(key, std::to_string(fallback));
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v <= 0) {
    const std::string why = "--param " + key + "=" + text + " is not a positive count; give a number such as " + key +
                            "=" + std::to_string(fallback);
    r.check(false, "harness.param", why);
    throw RoleAbort{why};
  }
  return v;
}

}  // namespace ipcheck::catalog
