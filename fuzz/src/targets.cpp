#include "targets.hpp"

#include <dirent.h>

#include <algorithm>
#include <cstdlib>

#include "ipcheck/fuzz/symbolic.hpp"

namespace ipcheck::fuzz::detail {

std::string target_title(const std::string& target, const std::string& adapter) {
  return std::string(target_noun(target)) + " (" + adapter + ")";
}

std::set<int> open_fds() {
  std::set<int> out;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    const int own = ::dirfd(d);
    while (dirent* e = ::readdir(d))
      if (e->d_name[0] != '.' && std::atoi(e->d_name) != own) out.insert(std::atoi(e->d_name));
    ::closedir(d);
  }
  return out;
}

void name_new_fds(const std::set<int>& before, const std::string& name, SetupState& s) {
  int extra = 0;
  for (int fd : open_fds())
    if (!before.count(fd))
      s.fds.push_back({name + (extra++ ? ".fd" + std::to_string(extra) : ".fd"), FieldRole::fd, static_cast<std::uint64_t>(fd)});
}

CanaryAlloc canary_for(const std::string& name, std::uint64_t salt_seed, std::size_t index, std::size_t bytes, bool decoy) {
  CanaryAlloc c;
  c.name = name;
  c.salt = derive_seed(salt_seed, index) & ~7ull;
  c.size = bytes;
  c.decoy = decoy;
  return c;
}

nlohmann::json outcome_json(const Outcome& o) {
  return {{"errc", errc_name(o.code)}, {"native", o.native}, {"native_name", o.native_name}, {"message", o.message}};
}

// Decoys sit between exports and are larger than any export, as in the memory set-up; the
// 4-granule export makes the map offset matter.
const std::vector<PhysSpec>& producer_phys_setup() {
  static const std::vector<PhysSpec> s = {
      {1, false, false}, {4, true, false}, {4, false, false}, {4, true, false},
      {2, false, false}, {4, true, false}, {1, false, true},
  };
  return s;
}

const std::vector<PhysSpec>& consumer_phys_setup() {
  static const std::vector<PhysSpec> s = {{2, false, false}, {4, true, false}};
  return s;
}

namespace {

// Fills a physical object with its canary through a mapping of the whole object.
void fill_physical(Adapter& a, ObjectId pm, std::size_t bytes, std::uint64_t salt, const std::string& name) {
  const DevPtr va = need(a.vm_reserve(0, bytes), "reserve a range to fill " + name);
  Owned range = Owned::reservation(a, va, bytes);
  need(a.vm_map(va, bytes, pm, 0), "map " + name + " to fill it");
  Owned mapping = Owned::vm_mapping(a, va, bytes);
  std::vector<std::byte> fill(bytes);
  fill_canary(salt, 0, fill);
  need(a.write(va, fill), "fill " + name);
}

}  // namespace

void build_physical_setup(Adapter& a, const std::vector<PhysSpec>& specs, const std::string& who,
                          std::uint64_t salt_seed, SetupState& s) {
  const std::size_t g = a.phys_granularity(0);
  if (g == 0) throw RoleFailure("phys_granularity", Outcome::failure(Errc::not_implemented, "the adapter reports granularity 0"));
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const PhysSpec& spec = specs[i];
    const std::string name = who + ".alloc[" + std::to_string(i) + "]";
    const std::size_t bytes = spec.granules * g;
    const std::set<int> before = open_fds();
    const ObjectId pm = need(a.phys_create(0, bytes, true), "phys_create " + name);
    s.allocations.push_back(Owned::physical(a, pm));
    name_new_fds(before, name, s);
    CanaryAlloc c = canary_for(name, salt_seed, i, bytes, spec.decoy);
    fill_physical(a, pm, bytes, c.salt, name);
    if (!spec.decoy) {
      Exported e = need(a.phys_get(pm), "phys_get " + name);
      const Outcome put = spec.revoked ? a.phys_put(e.id) : Outcome::success();
      if (spec.revoked && put.code != Errc::not_implemented) {  // no put: the export stays live
        s.revoked_names.push_back(who + ".revoked[" + std::to_string(s.revoked.size()) + "]");
        need(put, "phys_put " + s.revoked_names.back());
        c.revoked.push_back({0, bytes});
        s.revoked.push_back(std::move(e));
      } else {
        s.export_names.push_back(who + ".export[" + std::to_string(s.exported.size()) + "]");
        s.exports.push_back(Owned::phys_export(a, e.id));
        c.live.push_back({0, bytes});
        s.exported.push_back(std::move(e));
      }
    }
    s.table.push_back(std::move(c));
  }
}

namespace {

// True when `in` is its base export exactly: no field changed, same length, same descriptor.
bool unchanged(const MutatorContext& ctx, const Input& in) {
  return in.base < ctx.bases.size() && changed_fields(ctx, in) == 0 && in.length == ctx.bases[in.base].length &&
         in.descriptor == ctx.bases[in.base].descriptor;
}

// A refused map is a finding when the handle is a live export's, unchanged, and the range is
// legal for it (granular, non-empty, inside the object); empty otherwise.
std::string refused_legal(const PhysicalOracle& o, const Input& in) {
  const MutatorContext& ctx = *o.ctx;
  if (!unchanged(ctx, in)) return {};
  const std::string& name = ctx.base_names[in.base];
  if (name.find(".export[") == std::string::npos || in.base >= ctx.map_sizes.size()) return {};
  const std::uint64_t size = ctx.map_sizes[in.base], g = o.granularity;
  const std::uint64_t off = in.map_offset, len = in.map_size;
  if (size == 0 || len == 0 || off % g || len % g || off > size || len > size - off) return {};
  return "vm_map of [" + std::to_string(off) + ", +" + std::to_string(len) + ") of " + name +
         " (unchanged, a " + std::to_string(size) + "-byte object opened successfully) was refused";
}

// What a successful map of [off, +len) at `va` shows.
Executed judge_physical(const PhysicalOracle& o, DevPtr va, std::uint64_t off, std::uint64_t len) {
  Executed e;
  e.verdict = Verdict::mapped;
  std::byte head[32];
  const std::string range = "[" + std::to_string(off) + ", +" + std::to_string(len) + ")";
  if (len < sizeof head || !o.reader->read(va, head)) {
    e.verdict = len < sizeof head ? Verdict::wrong_size : Verdict::unreadable_mapping;
    e.detail = "vm_map of " + range + " succeeded, but its first " + std::to_string(sizeof head) + " bytes cannot be read";
    return e;
  }
  const auto id = identify(o.table, va, head);
  if (!id) {
    e.verdict = Verdict::unknown_mapping;
    e.detail = "the mapping of " + range + " holds no object's canary (first bytes " + hexnum(load_le(head, 8)) + ")";
    return e;
  }
  const CanaryAlloc& a = o.table[id->alloc];
  const std::string shows = "the mapping of " + range + " shows " + a.name + " from offset " + std::to_string(id->offset);
  if (a.decoy || (a.live.empty() && a.revoked.empty())) {
    e.verdict = Verdict::confused_deputy;
    e.detail = shows + ", an object of the exporter that was never exported";
  } else if (a.live.empty()) {
    e.verdict = Verdict::stale_export;
    e.detail = shows + ", whose export was put before the campaign";
  } else if (id->offset != off) {
    e.verdict = Verdict::wrong_offset;
    e.detail = shows + ", not from offset " + std::to_string(off);
  } else if (off > a.size || len > a.size - off) {
    e.verdict = Verdict::wrong_size;
    e.detail = shows + ": a map past the end of the " + std::to_string(a.size) + "-byte object succeeded";
  } else {
    o.scratch->resize(len);
    if (!o.reader->read(va, *o.scratch)) {
      e.verdict = Verdict::wrong_size;
      e.detail = shows + ", but fewer than the " + std::to_string(len) + " mapped bytes are readable";
    } else if (const std::size_t bad = canary_mismatch(a.salt, off, *o.scratch); bad != static_cast<std::size_t>(-1)) {
      e.verdict = Verdict::corrupt_mapping;
      e.detail = shows + ", but byte " + std::to_string(bad) + " of the " + std::to_string(len) + " differs from the canary";
    }
  }
  return e;
}

// Reserve, map, judge, unmap, free; the object stays open.
Executed map_and_judge(const PhysicalOracle& o, const Input& in, ObjectId pm) {
  Executed e;
  const std::uint64_t g = o.granularity, off = in.map_offset, len = in.map_size;
  const std::uint64_t span = std::max<std::uint64_t>(g, (len + g - 1) / g * g);
  Result<DevPtr> va = o.adapter->vm_reserve(0, span);
  if (!va.ok()) {  // the harness's own range: not the handle's doing
    e.outcome = std::move(va.outcome);
    return e;
  }
  const Outcome mapped = o.adapter->vm_map(va.value, len, pm, off);
  if (!mapped.ok()) {
    e.outcome = mapped;
    // A range the runtime says it does not support (CUDA's cuMemMap takes offset 0 only, as its
    // documentation says) is an honest refusal, counted by its native code; any other refusal of
    // a legal range of a real export is a finding.
    const std::string why = mapped.code == Errc::feature_not_supported ? std::string() : refused_legal(o, in);
    if (!why.empty()) {
      e.verdict = Verdict::map_refused;
      e.detail = why + ": " + mapped.describe();
    }
  } else {
    e = judge_physical(o, va.value, off, len);
    const Outcome unmapped = o.adapter->vm_unmap(va.value, len);
    if (!unmapped.ok() && !is_finding(e.verdict)) {
      e.verdict = Verdict::close_failed;
      e.detail = "vm_unmap of the mapping vm_map made failed: " + unmapped.describe();
    }
  }
  const Outcome freed = o.adapter->vm_free(va.value, span);
  if (!freed.ok() && !is_finding(e.verdict)) {
    e.verdict = Verdict::close_failed;
    e.detail = "vm_free of the range vm_reserve gave failed: " + freed.describe();
  } else if (mapped.ok() && !is_finding(e.verdict) && o.host_mappings && host_mapped(va.value)) {
    e.verdict = Verdict::mapping_leak;
    e.detail = "the mapping at " + hexnum(va.value) + " is still mapped after vm_unmap and vm_free";
  }
  return e;
}

}  // namespace

Executed execute_physical(const PhysicalOracle& o, const Input& in, int fd, TimeSpent& ns) {
  std::uint64_t t = now_ns();
  Result<ObjectId> r = o.adapter->phys_open(in.data(), fd, 0);
  t = spent(ns.open, t);
  Executed e;
  if (!r.ok()) {
    e.outcome = std::move(r.outcome);
    if (e.outcome.code == Errc::device_lost) {
      e.verdict = Verdict::context_lost;
      e.detail = "phys_open answered " + e.outcome.describe() + ": the process's context is lost; the worker is replaced";
    }
    return e;
  }
  e = map_and_judge(o, in, r.value);
  t = spent(ns.oracle, t);
  const Outcome closed = o.adapter->phys_close(r.value);
  spent(ns.close, t);
  if (!closed.ok() && !is_finding(e.verdict)) {
    e.verdict = Verdict::close_failed;
    e.detail = "phys_close of the object phys_open returned failed: " + closed.describe();
  }
  return e;
}

// ---------------------------------------------------------------- events

void build_event_setup(Adapter& a, const std::vector<EventSpec>& specs, const std::string& who, bool signal_live,
                       SetupState& s) {
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const EventSpec& spec = specs[i];
    const std::string name = who + ".alloc[" + std::to_string(i) + "]";
    const std::set<int> before = open_fds();
    const ObjectId ev = need(a.event_create(0, EventFlags{true, false}), "event_create " + name);
    s.allocations.push_back(Owned::event(a, ev));
    name_new_fds(before, name, s);
    CanaryAlloc c;  // the table names the event and its class; events have no bytes
    c.name = name;
    c.decoy = spec.decoy;
    bool live = false;
    if (!spec.decoy) {
      Exported e = need(a.event_get(ev), "event_get " + name);
      const Outcome put = spec.revoked ? a.event_put(e.id) : Outcome::success();
      if (spec.revoked && put.code != Errc::not_implemented) {  // no put: the export stays live
        s.revoked_names.push_back(who + ".revoked[" + std::to_string(s.revoked.size()) + "]");
        need(put, "event_put " + s.revoked_names.back());
        c.revoked.push_back({0, 0});
        s.revoked.push_back(std::move(e));
      } else {
        s.export_names.push_back(who + ".export[" + std::to_string(s.exported.size()) + "]");
        s.exports.push_back(Owned::event_export(a, e.id));
        c.live.push_back({0, 0});
        s.exported.push_back(std::move(e));
        live = true;
      }
    }
    if (live && signal_live) need(a.event_signal(ev), "event_signal " + name);
    s.table.push_back(std::move(c));
  }
}

namespace {

// A call on the worker's own event after an open: its failure is this input's doing (the open
// damaged the process's runtime state), as context_health says for memory.
struct OwnCall {
  Executed* e;
  const std::string* name;
  bool ok(const Outcome& o, const char* verb) {
    if (o.ok()) return true;
    e->verdict = Verdict::context_lost;
    e->outcome = o;
    e->detail = "after this open, " + std::string(verb) + " of the worker's own " + *name + " answered " +
                o.describe() + ": the process's runtime state is damaged; the worker is replaced";
    return false;
  }
};

// Which own event `ev` is: each own event is signaled alone and `ev` queried. -1: none (or
// the own events cannot be toggled); -2: a call failed (`e` says which).
int find_own(const EventOracle& o, ObjectId ev, Executed& e) {
  if (!o.toggles) return -1;
  Adapter& a = *o.adapter;
  for (std::size_t k = 0; k < o.own.size(); ++k) {
    OwnCall call{&e, &o.own_table[k].name};
    if (!call.ok(a.event_signal(o.own[k]), "event_signal")) return -2;
    Result<bool> seen = a.event_query(ev);
    if (!call.ok(a.event_reset(o.own[k]), "event_reset")) return -2;
    if (!seen.ok()) {
      e.verdict = Verdict::unreadable_mapping;
      e.outcome = seen.outcome;
      e.detail = "event_query of the opened event failed after a first query succeeded: " + seen.outcome.describe();
      return -2;
    }
    if (seen.value) return static_cast<int>(k);
  }
  return -1;
}

// The opened event is own event k, a live export: a signal through it must reach the source,
// and a reset of the source must reach it. Where only the process that made an event pending
// can end it (o.owner_ends), the source first ends its own pending state and a reset through
// the opened event must make the source pending, which the signal through it then ends.
void judge_own_live(const EventOracle& o, ObjectId ev, std::size_t k, Executed& e) {
  Adapter& a = *o.adapter;
  const std::string& name = o.own_table[k].name;
  OwnCall call{&e, &name};
  bool reset_reached_source = true;
  if (o.owner_ends) {
    if (!call.ok(a.event_signal(o.own[k]), "event_signal")) return;
    if (!call.ok(a.event_reset(ev), "event_reset through the opened event of")) return;
    Result<bool> after_reset = a.event_query(o.own[k]);
    if (!call.ok(after_reset.outcome, "event_query")) return;
    reset_reached_source = !after_reset.value;
  }
  if (!call.ok(a.event_signal(ev), "event_signal through the opened event of")) return;
  Result<bool> source = a.event_query(o.own[k]);
  if (!call.ok(source.outcome, "event_query")) return;
  if (!call.ok(a.event_reset(o.own[k]), "event_reset")) return;
  Result<bool> opened = a.event_query(ev);
  if (!opened.ok()) {
    e.verdict = Verdict::unreadable_mapping;
    e.outcome = opened.outcome;
    e.detail = "event_query of the opened event (" + name + ") failed after a reset of its source: " + opened.outcome.describe();
  } else if (!reset_reached_source) {
    e.verdict = Verdict::corrupt_mapping;
    e.detail = "the opened event follows " + name + "'s signal, but a reset through it is not seen by " + name;
  } else if (!source.value) {
    e.verdict = Verdict::corrupt_mapping;
    e.detail = o.owner_ends ? "the opened event follows " + name + "'s signal, but a signal through it does not end "
                              "the pending state its own reset gave " + name
                            : "the opened event follows " + name + "'s signal, but a signal through it is not seen by " + name;
  } else if (opened.value) {
    e.verdict = Verdict::corrupt_mapping;
    e.detail = "the opened event follows " + name + "'s signal, but still reads signaled after " + name + " was reset";
  } else {
    e.detail = "shares " + name + "'s state both ways";
  }
}

// The producer's event an input's pid and descriptor fields name (layouts that have them:
// ipcref/1), when they name one of its set-up's descriptors ("producer.alloc[N].fd2");
// null otherwise. An unsignaled event is judged as that one.
const CanaryAlloc* named_event(const EventOracle& o, const Input& in) {
  const MutatorContext& ctx = *o.ctx;
  const HandleLayout& l = *ctx.layout;
  const int fd_field = l.find(FieldRole::fd), pid_field = l.find(FieldRole::pid);
  if (fd_field < 0 || in.length < l.size) return nullptr;
  const std::uint64_t fd = l.get(in.bytes, fd_field);
  const std::string prefix = "producer.alloc[";
  for (const NamedValue& v : ctx.values)
    if (pid_field >= 0 && v.name == "producer.pid" && v.value != l.get(in.bytes, pid_field)) return nullptr;
  for (const NamedValue& v : ctx.values) {
    if (v.role != FieldRole::fd || v.value != fd || v.name.rfind(prefix, 0) != 0) continue;
    const std::size_t n = std::strtoul(v.name.c_str() + prefix.size(), nullptr, 10);
    if (n < o.producer.size()) return &o.producer[n];
  }
  return nullptr;
}

// What an opened event is, from its state: signaled, a live export of the producer (every one
// is); unsignaled, one of the worker's own (found by toggling) or no live export at all.
Executed judge_event(const EventOracle& o, const Input& in, ObjectId ev) {
  Executed e;
  e.verdict = Verdict::mapped;
  const MutatorContext& ctx = *o.ctx;
  const std::string& base = ctx.base_names[in.base];
  Result<bool> q = o.adapter->event_query(ev);
  if (!q.ok()) {
    e.outcome = q.outcome;
    e.verdict = q.outcome.code == Errc::device_lost ? Verdict::context_lost : Verdict::unreadable_mapping;
    e.detail = "event_open succeeded, but event_query of the opened event answered " + q.outcome.describe();
    return e;
  }
  const bool own_base = base.rfind("worker.", 0) == 0;
  if (q.value) {
    // Own events rest unsignaled: the unchanged handle of one must not open a signaled event.
    if (own_base && unchanged(ctx, in)) {
      e.verdict = Verdict::corrupt_mapping;
      e.detail = "the unchanged handle of " + base + " (unsignaled) opens an event that reads signaled";
    } else {
      e.detail = "reads signaled, as every live export of the producer does";
    }
    return e;
  }
  const int k = find_own(o, ev, e);
  if (k == -2) return e;
  if (k >= 0) {
    const CanaryAlloc& c = o.own_table[static_cast<std::size_t>(k)];
    if (c.decoy || (c.live.empty() && c.revoked.empty())) {
      e.verdict = Verdict::confused_deputy;
      e.detail = "the opened event is " + c.name + ", an event of this process that was never exported";
    } else if (c.live.empty()) {
      e.verdict = Verdict::stale_export;
      e.detail = "the opened event is " + c.name + ", whose export was put";
    } else {
      judge_own_live(o, ev, static_cast<std::size_t>(k), e);
    }
    return e;
  }
  if (own_base && !o.toggles) {
    e.detail = "reads unsignaled, as the worker's own events do (which one is not known: they cannot be toggled)";
    return e;
  }
  // Unsignaled and none of the worker's: not a live export of the producer.
  const std::string reads = "the opened event reads unsignaled and is none of this worker's events; every live export "
                            "of the producer is signaled, ";
  const CanaryAlloc* named = named_event(o, in);
  if (named && named->decoy) {
    e.verdict = Verdict::confused_deputy;
    e.detail = reads + "so it is most likely " + named->name + " (the handle's pid and descriptor name it), an event that was never exported";
  } else if (named && named->live.empty()) {
    e.verdict = Verdict::stale_export;
    e.detail = reads + "so it is most likely " + named->name + " (the handle's pid and descriptor name it), whose export was put";
  } else if (base.find(".revoked[") != std::string::npos) {
    e.verdict = Verdict::stale_export;
    e.detail = reads + "so it is most likely " + base + ", whose export was put (the input derives from it)";
  } else if (unchanged(ctx, in)) {
    e.verdict = Verdict::corrupt_mapping;
    e.detail = "the unchanged handle of " + base + " (signaled in the producer) opens an event that reads unsignaled: "
               "the opened event does not show its source's state";
  } else {
    e.verdict = Verdict::confused_deputy;
    e.detail = reads + "so it is a never-exported event, a put export's, or no event of the campaign";
  }
  return e;
}

}  // namespace

Executed execute_event(const EventOracle& o, const Input& in, int fd, TimeSpent& ns) {
  std::uint64_t t = now_ns();
  Result<ObjectId> r = o.adapter->event_open(in.data(), fd, 0);
  t = spent(ns.open, t);
  Executed e;
  if (!r.ok()) {
    e.outcome = std::move(r.outcome);
    if (e.outcome.code == Errc::device_lost) {
      e.verdict = Verdict::context_lost;
      e.detail = "event_open answered " + e.outcome.describe() + ": the process's context is lost; the worker is replaced";
    }
    return e;
  }
  e = judge_event(o, in, r.value);
  t = spent(ns.oracle, t);
  const Outcome released = o.adapter->event_release(r.value);
  spent(ns.close, t);
  if (!released.ok() && !is_finding(e.verdict)) {
    e.verdict = Verdict::close_failed;
    e.detail = "event_release of the event event_open returned failed: " + released.describe();
  }
  return e;
}

}  // namespace ipcheck::fuzz::detail
