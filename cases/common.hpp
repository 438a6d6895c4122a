// Vocabulary shared by case bodies: patterned buffers, handle transfer, size parameters,
// devices by aspect, physical mappings, events, and the role's own descriptor count.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "ipcheck/adapter_toolkit.hpp"
#include "ipcheck/audit.hpp"
#include "ipcheck/case.hpp"
#include "ipcheck/owned.hpp"

namespace ipcheck::catalog {

inline constexpr std::size_t kPage = 4096;
inline constexpr std::size_t kOddSize = 3 * 4096 + 123;  // not a page multiple: exposes rounding bugs
inline constexpr std::size_t k64MiB = 64ull << 20;

// "Not signaled yet" waits: long enough to see a wrongly shared state, short for the suite.
inline constexpr std::chrono::milliseconds kShortWait{150};
// Waits that must succeed: generous for a loaded machine, they end as soon as the signal comes.
inline constexpr std::chrono::seconds kLongWait{3};

// Set-up helpers (alloc_filled, export_*, open_*, create_*, map_physical, put_or_skip,
// end_export) make their checks as set-up steps (SetupSteps): a failure fails the case, a
// pass decides nothing about the clause. Checks that decide a clause carry the evidence of
// the runtime's answer (an Outcome, or a Seen from verify/holds/query/wait_for).

// Allocates `bytes` on `device`, fills it with pattern(seed); ends the role on failure.
Owned alloc_filled(Role& r, std::size_t bytes, std::uint64_t seed, std::string_view clause, int device = 0,
                   MemKind kind = MemKind::device, Where w = Where::current());

// Writes pattern(seed) over [p, p + bytes).
bool fill(Role& r, DevPtr p, std::size_t bytes, std::uint64_t seed, std::string_view clause, const std::string& what,
          Where w = Where::current());

// Checks [p, p + bytes) holds pattern(seed, bytes, offset); names the first wrong offset on failure.
bool verify(Role& r, DevPtr p, std::size_t bytes, std::uint64_t seed, std::string_view clause, const std::string& what,
            std::size_t offset = 0, Where w = Where::current());

// Whether [p, p + bytes) holds pattern(seed, bytes, offset), without judging, with the read's
// evidence (false also when the read fails).
Seen holds(Role& r, DevPtr p, std::size_t bytes, std::uint64_t seed, std::size_t offset = 0);

// Exports `p` with mem_get (ending the role on failure) and owns the export (put on drop).
Owned export_memory(Role& r, DevPtr p, Exported& out, std::string_view clause, Where w = Where::current());

// Receives a handle sent with send_handle and opens it as memory; ends the role on failure.
Owned open_received(Role& r, const Received& h, std::string_view clause, const std::string& what, int device = 0,
                    Where w = Where::current());

// The same, adding the open's evidence to `by` (for checks on what the open returned).
Owned open_received(Role& r, const Received& h, std::string_view clause, const std::string& what, Evidence& by,
                    int device = 0, Where w = Where::current());

// Owns whatever a call that should have failed returned anyway, so nothing leaks.
inline Owned keep_mapping(Role& r, const Result<DevPtr>& res) {
  return res.ok() ? Owned::mapping(r.adapter(), res.value) : Owned();
}
inline Owned keep_opened_physical(Role& r, const Result<ObjectId>& res) {
  return res.ok() ? Owned::opened_physical(r.adapter(), res.value) : Owned();
}
inline Owned keep_event(Role& r, const Result<ObjectId>& res) {
  return res.ok() ? Owned::event(r.adapter(), res.value) : Owned();
}
inline Owned keep_mem_export(Role& r, const Result<Exported>& res) {
  return res.ok() ? Owned::mem_export(r.adapter(), res.value.id) : Owned();
}
inline Owned keep_phys_export(Role& r, const Result<Exported>& res) {
  return res.ok() ? Owned::phys_export(r.adapter(), res.value.id) : Owned();
}
inline Owned keep_event_export(Role& r, const Result<Exported>& res) {
  return res.ok() ? Owned::event_export(r.adapter(), res.value.id) : Owned();
}

// Ends an export whose put the case does not test: an API without put (CUDA memory and
// events) is noted, not failed. Other outcomes are checked.
bool end_export(Role& r, Owned& exported, std::string_view clause, const std::string& what, Where w = Where::current());
// Puts an export the case is about: skips where the API has no put.
void put_or_skip(Role& r, Owned& exported, std::string_view clause, const std::string& what,
                 Where w = Where::current());

// Aspect names as adapters report them: "ipc_memory", "ipc_physical_memory", "ipc_event".
// The first device with (or without) the aspect, if any.
std::optional<int> device_with(const AdapterInfo& info, const std::string& aspect, int other_than = -1);
std::optional<int> device_without(const AdapterInfo& info, const std::string& aspect);
std::optional<int> device_with(Role& r, const std::string& aspect, int other_than = -1);
std::optional<int> device_without(Role& r, const std::string& aspect);
// Skips with a reason naming the aspect and how to get such a device with ref.
int need_device_without(Role& r, const std::string& aspect);
int need_device_with(Role& r, const std::string& aspect, int other_than = -1);

// Preconditions (Case::needs), judged before any role starts and again in each role, with
// the same reasons as the role helpers above:
// a device with `aspect` (other than device `other_than`, where that is not -1);
Precondition needs_device_with(std::string aspect, int other_than = -1);
// a device without `aspect`;
Precondition needs_device_without(std::string aspect);
// two devices with `aspect` (multi-device cases);
Precondition needs_two_devices_with(std::string aspect);
// the adapter `adapter` (cases about one API's rules), `why` saying so;
Precondition needs_adapter(std::string adapter, std::string why);
// the verb `verb` (AdapterInfo::unsupported_verbs), `what` naming what the case does with it.
RuntimeNeed needs_verb(std::string verb, std::string what);

// Small text messages between roles (sizes, notices).
void send_text(Role& r, const std::string& to, const std::string& tag, const std::string& text);
std::string receive_text(Role& r, const std::string& tag);

// A physical object mapped into a reserved range; unmapped before the range is freed.
struct PhysicalView {
  Owned reservation;
  Owned mapping;
  DevPtr ptr() const { return reservation.get(); }
};
// Reserves `bytes` on `device` and maps `pm` there; ends the role on failure.
PhysicalView map_physical(Role& r, ObjectId pm, std::size_t bytes, std::string_view clause, int device = 0,
                          Where w = Where::current());

// Physical sizes are multiples of the adapter's granularity.
std::size_t granular(Role& r, std::size_t at_least, int device = 0);

// Creates an IPC physical object of `bytes` (skipping where unsupported); ends the role on failure.
Owned create_physical(Role& r, std::size_t bytes, bool ipc, std::string_view clause, int device = 0,
                      Where w = Where::current());
// Exports a physical object (skipping where unsupported) and owns the export.
Owned export_physical(Role& r, ObjectId pm, Exported& out, std::string_view clause, Where w = Where::current());
// Opens a received physical handle; ends the role on failure.
Owned open_physical(Role& r, const Received& h, std::string_view clause, const std::string& what, int device = 0,
                    Where w = Where::current());

// Creates an IPC event (skipping where unsupported) and exports it.
Owned create_event(Role& r, EventFlags flags, std::string_view clause, int device = 0, Where w = Where::current());
Owned export_event(Role& r, ObjectId ev, Exported& out, std::string_view clause, Where w = Where::current());
Owned open_event(Role& r, const Received& h, std::string_view clause, const std::string& what, int device = 0,
                 Where w = Where::current());
// Queries an event (whether it is signaled, and who said so); ends the role when the query
// itself fails.
Seen query(Role& r, ObjectId ev, std::string_view clause, const std::string& what, Where w = Where::current());
// Waits up to `t` for an event: whether it was signaled; ends the role when the wait itself fails.
Seen wait_for(Role& r, ObjectId ev, std::chrono::nanoseconds t, std::string_view clause, const std::string& what,
              Where w = Where::current());

// An IPC event's state before its signal, seen through either handle, is what its case's clause
// (ur.event.*) says and also what cuda.event.pending says: CUDA's profile judges the latter and
// observes the ur ones. Checks `pending` (its value and evidence: !query(...)) under `clause`
// and again under cuda.event.pending, so that each profile judges it.
bool check_pending(Role& r, const Seen& pending, std::string_view clause, const std::string& message,
                   Where w = Where::current());
inline constexpr const char* kEventPending = "cuda.event.pending";

// rb.event.wake_latency: how long after a signal call in one process a waiter in another woke.
// The signaler takes the time just before its signal and sends it (tag) once the signal
// returned; the waiter takes the time as its wait returns and judges the difference (the
// monotonic clock is the system's, the same in both processes). More than
// kWakeLatencyLimit fails the should clause, with the latency and the evidence of the wait.
inline constexpr const char* kWakeLatency = "rb.event.wake_latency";
inline constexpr std::chrono::milliseconds kWakeLatencyLimit{100};
void send_signal_time(Role& r, const std::string& to, const std::string& tag,
                      std::chrono::steady_clock::time_point before_signal);
void check_wake_latency(Role& r, const Seen& woke, std::chrono::steady_clock::time_point woke_at,
                        const std::string& tag, const std::string& what, Where w = Where::current());

// Empty where a signal from any process ends an event's pending state; otherwise why only the
// process that made an event pending can end it (AdapterInfo::pending_event_note; cuda).
std::string only_its_maker_ends_pending(Role& r);

// What a call returned, as an observation value: "ok" or the errc name ("invalid").
std::string outcome_word(const Outcome& o);

// A clean refusal (rb clauses): an error that leaves the process usable. Success fails, and
// so does device_lost (the refusal cost the process its context). Which code it was is
// observed as `observe_as` (when given): the rb clauses name no code, ref answers
// exporter_gone, CUDA CUDA_ERROR_INVALID_HANDLE.
bool check_clean_refusal(Role& r, const Outcome& o, std::string_view clause, const std::string& what,
                         const std::string& observe_as = {}, Where w = Where::current());

// This process's descriptors and tracked (shared or device) mappings, for in-role leak checks.
struct ResourceCount {
  ProcSnapshot snapshot;
  std::size_t fds() const { return snapshot.fds.size(); }
  std::size_t mappings() const { return snapshot.mappings.size(); }
};
ResourceCount count_resources();
// Checks nothing was left behind between two counts; names the first items that appeared.
bool check_no_growth(Role& r, const ResourceCount& before, const ResourceCount& after, std::string_view clause,
                     const std::string& what, Where w = Where::current());

// ---- Fault injection (ipcheck run --inject ROLE:STEP): the survivors' side.
inline constexpr const char* kConsumerCrash = "rb.consumer.crash";
inline constexpr const char* kProducerCrash = "rb.producer.crash";
inline constexpr const char* kExporterGone = "rb.open.exporter_gone";
// A call after an exporter's death must return this promptly (rb.open.exporter_gone).
inline constexpr std::chrono::seconds kPromptAfterDeath{1};

// Whether the runner kills `role` (a base name) at `step` in this run.
inline bool killed_at(const Role& r, const std::string& role, const std::string& step) {
  return r.injection() && r.injection().role == role && r.injection().step == step;
}
// Waits for `role`, which the runner kills in this run, and checks that it died by SIGKILL.
void await_killed(Role& r, const std::string& role, std::string_view clause, Where w = Where::current());
// Checks that `open` (an open of a handle whose exporter was killed) fails with
// exporter_gone, within kPromptAfterDeath (rb.open.exporter_gone). The call owns what it opened.
void check_open_after_death(Role& r, const std::string& what, const std::function<Outcome()>& open,
                            Where w = Where::current());

using toolkit::hex;  // "0x1f"
std::string size_name(std::size_t bytes);  // "4 KiB", "12411 B", "64 MiB"
std::string ms(std::chrono::steady_clock::duration d);  // "12.3 ms"

// A positive count from --param `key` (for example cycles=1000); ends the role, naming the
// parameter, the value and the fix, when it is not one.
long count_param(Role& r, const std::string& key, long fallback);

}  // namespace ipcheck::catalog
