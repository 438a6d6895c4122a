#include "kinds.hpp"

namespace ipcheck::catalog {

const char* kind_name(HandleKind k) {
  switch (k) {
    case HandleKind::memory: return "memory";
    case HandleKind::physical: return "physical";
    case HandleKind::event: return "event";
  }
  return "unknown";
}

const char* put_verb(HandleKind k) {
  switch (k) {
    case HandleKind::memory: return "mem_put";
    case HandleKind::physical: return "phys_put";
    case HandleKind::event: return "event_put";
  }
  return "unknown";
}

Target export_target(Role& r, HandleKind kind, std::uint64_t seed, std::string_view clause, std::size_t bytes) {
  SetupSteps setup(r);
  Target t;
  t.kind = kind;
  switch (kind) {
    case HandleKind::memory:
      t.bytes = bytes;
      t.object = alloc_filled(r, bytes, seed, clause);
      t.exported = export_memory(r, t.object.get(), t.handle, clause);
      break;
    case HandleKind::physical: {
      t.bytes = granular(r, bytes);
      t.object = create_physical(r, t.bytes, true, clause);
      {
        PhysicalView view = map_physical(r, t.object.get(), t.bytes, clause);
        if (!fill(r, view.ptr(), t.bytes, seed, clause, "fill the physical object")) throw RoleAbort{"fill failed"};
      }
      t.exported = export_physical(r, t.object.get(), t.handle, clause);
      break;
    }
    case HandleKind::event:
      t.bytes = 0;
      t.object = create_event(r, {.ipc = true}, clause);
      if (seed & 1) r.require_ok(r.adapter().event_signal(t.object.get()), clause, "event_signal of the target");
      t.exported = export_event(r, t.object.get(), t.handle, clause);
      break;
  }
  return t;
}

std::optional<Target> try_export_target(Role& r, HandleKind kind, std::uint64_t seed, std::string_view clause,
                                        std::string& why, std::size_t bytes) {
  Adapter& a = r.adapter();
  auto missing = [&](const Outcome& o, const char* verb) {
    if (o.code != Errc::not_implemented && o.code != Errc::feature_not_supported) return false;
    why = std::string(kind_name(kind)) + ": " + verb + ": " + o.describe();
    return true;
  };
  SetupSteps setup(r);
  Target t;
  t.kind = kind;
  switch (kind) {
    case HandleKind::memory: {
      t.bytes = bytes;
      auto mem = a.alloc(0, bytes, MemKind::device);
      if (missing(mem.outcome, "alloc")) return std::nullopt;
      t.object = Owned::allocation(a, r.require(mem, clause, "alloc"));
      if (!fill(r, t.object.get(), bytes, seed, clause, "fill the allocation")) throw RoleAbort{"fill failed"};
      auto res = a.mem_get(t.object.get());
      if (missing(res.outcome, "mem_get")) return std::nullopt;
      t.handle = r.require(std::move(res), clause, "mem_get");
      t.exported = Owned::mem_export(a, t.handle.id);
      return t;
    }
    case HandleKind::physical: {
      t.bytes = granular(r, bytes);
      auto pm = a.phys_create(0, t.bytes, true);
      if (missing(pm.outcome, "phys_create")) return std::nullopt;
      t.object = Owned::physical(a, r.require(pm, clause, "phys_create"));
      auto va = a.vm_reserve(0, t.bytes);
      if (missing(va.outcome, "vm_reserve")) return std::nullopt;
      {
        Owned reservation = Owned::reservation(a, r.require(va, clause, "vm_reserve"), t.bytes);
        const Outcome m = a.vm_map(reservation.get(), t.bytes, t.object.get(), 0);
        if (missing(m, "vm_map")) return std::nullopt;
        r.require_ok(m, clause, "vm_map");
        Owned mapping = Owned::vm_mapping(a, reservation.get(), t.bytes);
        if (!fill(r, reservation.get(), t.bytes, seed, clause, "fill the physical object")) throw RoleAbort{"fill failed"};
      }
      auto res = a.phys_get(t.object.get());
      if (missing(res.outcome, "phys_get")) return std::nullopt;
      t.handle = r.require(std::move(res), clause, "phys_get");
      t.exported = Owned::phys_export(a, t.handle.id);
      return t;
    }
    case HandleKind::event: {
      auto ev = a.event_create(0, {.ipc = true});
      if (missing(ev.outcome, "event_create")) return std::nullopt;
      t.object = Owned::event(a, r.require(ev, clause, "event_create"));
      if (seed & 1) r.require_ok(a.event_signal(t.object.get()), clause, "event_signal of the target");
      auto res = a.event_get(t.object.get());
      if (missing(res.outcome, "event_get")) return std::nullopt;
      t.handle = r.require(std::move(res), clause, "event_get");
      t.exported = Owned::event_export(a, t.handle.id);
      return t;
    }
  }
  return std::nullopt;
}

void send_target(Role& r, const std::string& to, const std::string& tag, const Target& t) {
  r.send_handle(to, tag, t.handle);
  send_text(r, to, tag + "-size", std::to_string(t.bytes));
}

ReceivedTarget receive_target(Role& r, const std::string& tag) {
  ReceivedTarget t;
  t.handle = r.receive(tag);
  t.bytes = std::stoull(receive_text(r, tag + "-size"));
  return t;
}

Opened open_target(Role& r, HandleKind kind, std::span<const std::byte> bytes, int fd, int device) {
  Adapter& a = r.adapter();
  Opened o;
  switch (kind) {
    case HandleKind::memory: {
      auto res = a.mem_open(bytes, fd, device);
      o.outcome = res.outcome;
      if (res.ok()) o.object = Owned::mapping(a, res.value);
      break;
    }
    case HandleKind::physical: {
      auto res = a.phys_open(bytes, fd, device);
      o.outcome = res.outcome;
      if (res.ok()) o.object = Owned::opened_physical(a, res.value);
      break;
    }
    case HandleKind::event: {
      auto res = a.event_open(bytes, fd, device);
      o.outcome = res.outcome;
      if (res.ok()) o.object = Owned::event(a, res.value);
      break;
    }
  }
  return o;
}

Seen is_target(Role& r, HandleKind kind, ObjectId opened, std::size_t bytes, std::uint64_t seed,
               std::chrono::nanoseconds settle) {
  Adapter& a = r.adapter();
  switch (kind) {
    case HandleKind::memory:
      return holds(r, opened, bytes, seed);
    case HandleKind::physical: {
      auto size = a.phys_size(opened);
      Evidence by = Evidence::of(size.outcome);
      if (!size.ok() || size.value != bytes) return {false, by};
      auto res = a.vm_reserve(0, bytes);
      by.with(res.outcome);
      if (!res.ok()) return {false, by};
      Owned reservation = Owned::reservation(a, res.value, bytes);
      const Outcome mapped = a.vm_map(res.value, bytes, opened, 0);
      by.with(mapped);
      if (!mapped.ok()) return {false, by};
      Owned mapping = Owned::vm_mapping(a, res.value, bytes);
      const Seen data = holds(r, res.value, bytes, seed);
      return {data.value, by.with(data.by)};
    }
    case HandleKind::event: {
      // A signal may complete asynchronously (CUDA records it on a stream): wait for it.
      if (seed & 1) {
        auto w = a.event_wait(opened, settle);
        return {w.ok() && w.value, Evidence::of(w.outcome)};
      }
      auto q = a.event_query(opened);
      return {q.ok() && !q.value, Evidence::of(q.outcome)};
    }
  }
  return {false, Evidence::harness()};
}

std::string cache_suffix(Cache c, Cache plain) {
  if (c == plain) return "";
  switch (c) {
    case Cache::cold: return ".cold";
    case Cache::warm: return ".warm";
    case Cache::held: return ".held";
  }
  return "";
}

std::string cache_words(Cache c, Cache plain) {
  if (c == plain) return "";
  switch (c) {
    case Cache::cold: return "";
    case Cache::warm: return " (after one valid open of the export, closed again)";
    case Cache::held: return " (after one valid open of the export, still open)";
  }
  return "";
}

Opened warm_up(Role& r, Cache c, HandleKind kind, std::span<const std::byte> bytes, int fd, std::size_t size,
               std::uint64_t seed, std::string_view clause) {
  if (c == Cache::cold) return {};
  SetupSteps setup(r);
  const std::string what = std::string("the warm-up open of the real ") + kind_name(kind) + " handle";
  Opened o = open_target(r, kind, bytes, fd);
  r.skip_if_unsupported(o.outcome, std::string(kind_name(kind)) + " open");
  r.require_ok(o.outcome, clause, what);
  // Memory and physical objects are told by their bytes; an event only by its state, which
  // is another clause's (ur.event.*, cuda.event.pending): an open that succeeded warms the cache.
  if (kind != HandleKind::event)
    r.require(is_target(r, kind, o.object.get(), size, seed), clause, what + " maps the export");
  if (c == Cache::warm) {
    r.check_ok(o.object.reset(), clause, "close of " + what);
    return {};
  }
  return o;
}

}  // namespace ipcheck::catalog
