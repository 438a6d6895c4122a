// The adapter toolkit's base for the Level-Zero-shaped adapters (ze, ur, sycl:
// harness/adapters/README.md): runtimes with Level Zero's shape, a list of devices in one
// context, memory named by its pointer, physical memory and events named by the handles the
// runtime hands out, and IPC exports that live from their get to their put. What those adapters
// repeat is written once here: the verbs' declarations, the device list and its index check,
// the tables an ObjectId names (physical memory, events, the exports of each kind) with their
// ids, the adapter's own answers (an id it does not know, an export that is not live, a close of
// an object created here), the plumbing of a put and of reference counts, and a polling wait.
// Each adapter keeps its options, its runtime's calls and what it decides about them.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ipcheck/adapter.hpp"

// Every verb of ipcheck::Adapter (adapter.hpp says what each does) but device_count and the
// virtual ranges, declared as overrides: a Level-Zero-shaped adapter implements them all, and its
// class names them with this line. What a verb of one adapter does is written at its definition.
#define IPCHECK_LEVEL_ZERO_SHAPED_VERBS                                                               \
  Outcome init(const AdapterConfig& config) override;                                                 \
  AdapterInfo info() override;                                                                        \
  Result<DevPtr> alloc(int device, std::size_t bytes, MemKind kind) override;                         \
  Outcome free(DevPtr p) override;                                                                    \
  Outcome write(DevPtr dst, std::span<const std::byte> src) override;                                 \
  Outcome read(DevPtr src, std::span<std::byte> dst) override;                                        \
  Result<Exported> mem_get(DevPtr p) override;                                                        \
  Outcome mem_put(ObjectId id) override;                                                              \
  Result<DevPtr> mem_open(std::span<const std::byte> bytes, int fd, int device, std::uint64_t flags) \
      override;                                                                                       \
  Outcome mem_close(DevPtr p) override;                                                               \
  std::size_t phys_granularity(int device) override;                                                  \
  Result<ObjectId> phys_create(int device, std::size_t bytes, bool ipc) override;                     \
  Result<Exported> phys_get(ObjectId pm) override;                                                    \
  Outcome phys_put(ObjectId id) override;                                                             \
  Result<ObjectId> phys_open(std::span<const std::byte> bytes, int fd, int device) override;          \
  Outcome phys_close(ObjectId pm) override;                                                           \
  Outcome phys_retain(ObjectId pm) override;                                                          \
  Outcome phys_release(ObjectId pm) override;                                                         \
  Result<std::size_t> phys_size(ObjectId pm) override;                                                \
  Result<bool> phys_ipc_enabled(ObjectId pm) override;                                                \
  Result<ObjectId> event_create(int device, EventFlags flags) override;                               \
  Result<Exported> event_get(ObjectId ev) override;                                                   \
  Outcome event_put(ObjectId id) override;                                                            \
  Result<ObjectId> event_open(std::span<const std::byte> bytes, int fd, int device) override;         \
  Outcome event_signal(ObjectId ev) override;                                                         \
  Outcome event_reset(ObjectId ev) override;                                                          \
  Result<bool> event_query(ObjectId ev) override;                                                     \
  Result<bool> event_wait(ObjectId ev, std::chrono::nanoseconds timeout) override;                    \
  Outcome event_retain(ObjectId ev) override;                                                         \
  Outcome event_release(ObjectId ev) override;                                                        \
  Result<std::uint64_t> native_identity(ObjectId id) override;                                        \
  Outcome native(const std::string& what, const std::map<std::string, std::string>& args) override;

// The virtual-range verbs, for an adapter that does not take them from LevelZeroRanges (sycl).
#define IPCHECK_LEVEL_ZERO_SHAPED_RANGE_VERBS                                                         \
  Result<DevPtr> vm_reserve(int device, std::size_t bytes) override;                                  \
  Outcome vm_free(DevPtr p, std::size_t bytes) override;                                              \
  Outcome vm_map(DevPtr p, std::size_t bytes, ObjectId pm, std::size_t offset) override;              \
  Outcome vm_unmap(DevPtr p, std::size_t bytes) override;

namespace ipcheck::toolkit {

// The adapter's own answers (Outcome::failure, Errc::invalid), each message led by `prefix`
// (the adapter's "ur: ", or none):
//   "<verb>: <id> is not a live <kind> of this adapter (released already?)"
Outcome unknown_object(const std::string& prefix, const char* verb, const char* kind, ObjectId id);
//   "<verb>: export id <id> is not a live export"
Outcome not_a_live_export(const std::string& prefix, const char* verb, ObjectId id);
//   "phys_close: object <id> was created here, not opened; release it with phys_release"
Outcome created_not_opened(const std::string& prefix, ObjectId id);
//   "device index <index> is not one of the <count> devices"
Outcome no_such_device(const std::string& prefix, int index, std::size_t count);

// A wait for a runtime whose wait has no timeout: `query` (the event's state, a Result<bool>)
// every 200 µs until it fails, answers true, or `deadline` passes; the last answer.
template <class Query>
Result<bool> poll_until(std::chrono::steady_clock::time_point deadline, Query&& query) {
  for (;;) {
    Result<bool> r = query();
    if (!r.ok() || r.value || std::chrono::steady_clock::now() >= deadline) return r;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// The base of a Level-Zero-shaped adapter: its devices (`Device`: the runtime's handle), the
// physical memory (`Phys`) and events (`Event`) it holds by ObjectId, and its live exports of
// each kind by export id (what the put needs: `MemExport`, `PhysExport`, `EventExport`). Ids of
// objects and exports come from one counter, from 1. Every lookup and every answer of its own
// is the adapter's (Outcome::success/failure), never the runtime's.
template <class Device, class Phys, class Event, class MemExport, class PhysExport = MemExport,
          class EventExport = MemExport>
class LevelZeroShaped : public Adapter {
 public:
  std::size_t device_count() override { return devices_.size(); }

 protected:
  // `name`: the adapter's registered name; `prefix` leads the messages of its own answers.
  LevelZeroShaped(std::string name, std::string prefix) : prefix_(std::move(prefix)) {
    adapter_name_ = std::move(name);
  }

  // The device at `index`, or no_such_device.
  Outcome device_at(int index) const {
    if (index < 0 || static_cast<std::size_t>(index) >= devices_.size())
      return no_such_device(prefix_, index, devices_.size());
    return Outcome::success();
  }
  Outcome device_at(int index, Device& out) const {
    Outcome o = device_at(index);
    if (o.ok()) out = devices_[static_cast<std::size_t>(index)];
    return o;
  }

  ObjectId new_id() { return next_id_++; }
  Outcome unknown(const char* verb, const char* kind, ObjectId id) const {
    return unknown_object(prefix_, verb, kind, id);
  }
  Phys* phys(ObjectId id) { return live(phys_, id); }
  Event* event(ObjectId id) { return live(events_, id); }

  // `body(Phys&)` or `body(Event&)` on the live object `id`, or unknown(verb, kind, id) when it
  // is not live: the verb's answer either way (an Outcome, or a Result).
  template <class F>
  auto on_phys(const char* verb, ObjectId id, F&& body) -> decltype(body(std::declval<Phys&>())) {
    Phys* p = phys(id);
    if (!p) return {unknown(verb, "physical memory", id)};
    return body(*p);
  }
  template <class F>
  auto on_event(const char* verb, ObjectId id, F&& body) -> decltype(body(std::declval<Event&>())) {
    Event* e = event(id);
    if (!e) return {unknown(verb, "event", id)};
    return body(*e);
  }

  template <class T>
  static T* live(std::map<ObjectId, T>& table, ObjectId id) {
    auto it = table.find(id);
    return it == table.end() ? nullptr : &it->second;
  }

  // A get's export: a new export id and the handle's `size` bytes at `data`, `kept` (what the put
  // needs) in `table` under that id.
  template <class X, class Kept>
  Exported keep_export(std::map<ObjectId, X>& table, Kept&& kept, const void* data, std::size_t size) {
    Exported e;
    e.id = new_id();
    const auto* b = static_cast<const std::byte*>(data);
    e.bytes.assign(b, b + size);
    table[e.id] = std::forward<Kept>(kept);
    return e;
  }

  // A put: `put(X&)` on the live export `id` of `table` (not_a_live_export, naming `verb`, when
  // there is none), then the entry goes: always (the runtime frees the handle whatever it
  // answers), or only when the put succeeded (`keep_on_failure`: a failed put leaves it live).
  template <class X, class Put>
  Outcome put_export(std::map<ObjectId, X>& table, ObjectId id, const char* verb, bool keep_on_failure, Put&& put) {
    auto it = table.find(id);
    if (it == table.end()) return not_a_live_export(prefix_, verb, id);
    Outcome o = put(it->second);
    if (o.ok() || !keep_on_failure) table.erase(it);
    return o;
  }

  // Whether phys_close may close `pm`: unknown when it is not live, created_not_opened when
  // this process created it rather than opened it from a handle.
  Outcome closable(ObjectId pm) {
    Phys* p = phys(pm);
    if (!p) return unknown("phys_close", "physical memory", pm);
    if (!p->opened) return created_not_opened(prefix_, pm);
    return Outcome::success();
  }

  // References only the adapter counts (`T::refs`; Level Zero counts none): one fewer on entry
  // `id` of `table`, and at the last `destroy(T&)` gives the object back to the runtime and the
  // entry goes, whatever the runtime answers.
  template <class T, class Destroy>
  static Outcome drop_reference(std::map<ObjectId, T>& table, ObjectId id, Destroy&& destroy) {
    T& x = table.at(id);
    if (--x.refs > 0) return Outcome::success();
    const Outcome o = destroy(x);
    table.erase(id);
    return o;
  }

  // References the runtime counts too (UR): `o` is the runtime's retain (`delta` 1) or release
  // or close (-1) of entry `id` of `table`; when it succeeded the adapter's count `T::refs`
  // follows, and at zero the entry goes.
  template <class T>
  static Outcome follow_count(std::map<ObjectId, T>& table, ObjectId id, Outcome o, int delta) {
    if (!o.ok()) return o;
    auto it = table.find(id);
    if (it != table.end() && (it->second.refs += delta) == 0) table.erase(it);
    return o;
  }

  std::string prefix_;
  std::vector<Device> devices_;
  std::map<ObjectId, Phys> phys_;
  std::map<ObjectId, Event> events_;
  std::map<ObjectId, MemExport> mem_exports_;
  std::map<ObjectId, PhysExport> phys_exports_;
  std::map<ObjectId, EventExport> event_exports_;

 private:
  ObjectId next_id_ = 1;
};

// A runtime's four virtual memory calls where they take Level Zero's arguments, the context
// first: zeVirtualMem{Reserve,Free,Map,Unmap}, and UR's urVirtualMem*, which mirror them. With
// them, the range a reserve asks for (`reserve_hint`, nullptr: the runtime chooses), the access
// argument that maps read-write, and the calls' names (`names`: reserve, free, map, unmap).
template <class Ctx, class Reserve, class Free, class Map, class Unmap, class Access>
struct VirtualMemCalls {
  Ctx context;
  const void* reserve_hint;
  Reserve reserve;
  Free free;
  Map map;
  Unmap unmap;
  Access read_write;
  const char* const* names;
};
template <class Ctx, class Reserve, class Free, class Map, class Unmap, class Access>
VirtualMemCalls<Ctx, Reserve, Free, Map, Unmap, Access> virtual_mem_calls(Ctx context, const void* reserve_hint,
                                                                           Reserve reserve, Free free, Map map,
                                                                           Unmap unmap, Access read_write,
                                                                           const char* const (&names)[4]) {
  return {context, reserve_hint, reserve, free, map, unmap, read_write, names};
}

// The virtual-range verbs over such calls, written once for the adapters whose runtime has them
// (ze, ur): `Self` (the adapter, befriending this class) says which they are (virtual_mem(): a
// VirtualMemCalls) and reads each result with its call(name, result), as its other verbs do;
// `Base` is its LevelZeroShaped, whose `Phys::handle` a map passes. The ranges are the
// runtime's: nothing here keeps them.
template <class Self, class Base>
class LevelZeroRanges : public Base {
 public:
  Result<DevPtr> vm_reserve(int, std::size_t bytes) override {
    const auto c = self().virtual_mem();
    void* p = nullptr;
    const Outcome o = self().call(c.names[0], c.reserve(c.context, c.reserve_hint, bytes, &p));
    return {o, reinterpret_cast<DevPtr>(p)};
  }
  Outcome vm_free(DevPtr p, std::size_t bytes) override {
    const auto c = self().virtual_mem();
    return self().call(c.names[1], c.free(c.context, reinterpret_cast<void*>(p), bytes));
  }
  Outcome vm_map(DevPtr p, std::size_t bytes, ObjectId pm, std::size_t offset) override {
    auto* ph = this->phys(pm);
    if (!ph) return this->unknown("vm_map", "physical memory", pm);
    const auto c = self().virtual_mem();
    return self().call(c.names[2], c.map(c.context, reinterpret_cast<void*>(p), bytes, ph->handle, offset, c.read_write));
  }
  Outcome vm_unmap(DevPtr p, std::size_t bytes) override {
    const auto c = self().virtual_mem();
    return self().call(c.names[3], c.unmap(c.context, reinterpret_cast<void*>(p), bytes));
  }

 protected:
  using Base::Base;

 private:
  Self& self() { return static_cast<Self&>(*this); }
};

}  // namespace ipcheck::toolkit
