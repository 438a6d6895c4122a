// Robustness clauses hold for every kind of handle: memory, physical memory, events.
// A target is one exported object a peer can tell from any other: memory and physical
// objects hold pattern(seed); an event is signaled when its seed is odd, clear when even.
#pragma once

#include "../common.hpp"

namespace ipcheck::catalog {

enum class HandleKind { memory, physical, event };
const char* kind_name(HandleKind k);
// The verb that puts an export of `k`: "mem_put", "phys_put", "event_put".
const char* put_verb(HandleKind k);

// The exporter's side: the object, its export and the handle to send.
struct Target {
  HandleKind kind = HandleKind::memory;
  std::size_t bytes = 0;
  Owned object;    // allocation, physical object or event
  Owned exported;  // put before the object goes (members end in reverse order)
  Exported handle;
};

// Creates and exports a target of `kind` (skipping where the adapter lacks the verbs).
Target export_target(Role& r, HandleKind kind, std::uint64_t seed, std::string_view clause,
                     std::size_t bytes = kPage);
// The same where the adapter has every verb the kind needs; nullopt (and `why`) where it
// lacks one (not_implemented or feature_not_supported), instead of skipping the case.
std::optional<Target> try_export_target(Role& r, HandleKind kind, std::uint64_t seed, std::string_view clause,
                                        std::string& why, std::size_t bytes = kPage);
// Sends the handle and its size to `to` (tags "<tag>" and "<tag>-size").
void send_target(Role& r, const std::string& to, const std::string& tag, const Target& t);

// The opener's side.
struct ReceivedTarget {
  Received handle;
  std::size_t bytes = 0;
};
ReceivedTarget receive_target(Role& r, const std::string& tag);

struct Opened {
  Outcome outcome;
  Owned object;  // the mapping, opened physical object or opened event, when it opened
};
Opened open_target(Role& r, HandleKind kind, std::span<const std::byte> bytes, int fd, int device = 0);

// Whether an opened object is the target exported with `seed` (never judging), with the
// evidence of every call that told (a size the adapter keeps makes it the adapter's). An
// event expected signaled is waited for up to `settle` (a signal may complete
// asynchronously); a process that has seen the export's signal complete already may wait less.
Seen is_target(Role& r, HandleKind kind, ObjectId opened, std::size_t bytes, std::uint64_t seed,
               std::chrono::nanoseconds settle = std::chrono::seconds(1));

// How warm the opener's runtime is when a forged, stale or foreign handle meets it: cold
// (no open of the export in this process before), warm (the real handle opened once and
// closed again), held (opened once and still open). A runtime that remembers an export
// (UMF's IPC cache, CUDA's repeated-open mapping, ipcref's fast path) answers a repeated
// open from what it remembered: each robustness open check runs in the warm states too, and
// the remembered path is judged by the same rule as the cold one.
enum class Cache { cold, warm, held };
// The case id's suffix for `c`, where the unsuffixed id is the case in state `plain`.
std::string cache_suffix(Cache c, Cache plain = Cache::cold);
// " (after one valid open of the export, closed again)" and the like, for a case's title and
// its checks; "" for the state the unsuffixed id is in (`plain`), whose words stay as they were.
std::string cache_words(Cache c, Cache plain = Cache::cold);
// The opener's one valid open of the real handle (bytes, descriptor) before it presents
// anything else, as a set-up step: it must open (else the case skips or fails as a set-up)
// and, for memory and physical objects, map the export's bytes. Nothing for cold; closed again for warm (a failed close is a check of
// `clause`); for held, what opened, for the caller to keep open until it has judged.
Opened warm_up(Role& r, Cache c, HandleKind kind, std::span<const std::byte> bytes, int fd, std::size_t size,
               std::uint64_t seed, std::string_view clause);

}  // namespace ipcheck::catalog
