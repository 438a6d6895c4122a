// Opening physical memory handles: byte counts, devices, the opened object's size and
// reference count, stale handles after put, and a second device (observed).
#include <functional>

#include "../common.hpp"

namespace ipcheck::catalog::physical_open {
namespace {

constexpr std::uint64_t kSeed = 0x9a11;

// Exports one IPC object of `granules` granules filled with kSeed to "consumer"; waits for
// the consumer to finish. `clause` names what this case checks, for the set-up steps.
void export_to_consumer(Role& r, std::size_t granules, std::string_view clause, int device = 0,
                        const std::function<void(ObjectId, std::size_t)>& before_export = {}) {
  const std::size_t bytes = granular(r, 1, device) * granules;
  Owned pm = create_physical(r, bytes, true, clause, device);
  if (before_export) before_export(pm.get(), bytes);
  {
    PhysicalView view = map_physical(r, pm.get(), bytes, clause, device);
    if (!fill(r, view.ptr(), bytes, kSeed, clause, "fill the object")) throw RoleAbort{"fill failed"};
  }
  Exported h;
  Owned exported = export_physical(r, pm.get(), h, clause);
  r.send_handle("consumer", "handle", h);
  send_text(r, "consumer", "size", std::to_string(bytes));
  r.barrier("consumer-done");
}

// --- sycl.phys.open.size
void size_consumer(Role& r) {
  Received h = r.receive("handle");
  const std::vector<std::byte>& good = h.bytes;
  std::vector<std::pair<std::string, std::vector<std::byte>>> variants{
      {"empty", {}}, {"one byte short", {good.begin(), good.end() - 1}}, {"one byte long", good}, {"huge (1 MiB)", good}};
  variants[2].second.push_back(std::byte{0});
  variants[3].second.resize(1 << 20, std::byte{0x5a});
  for (const auto& [name, bytes] : variants) {
    auto res = r.adapter().phys_open(bytes, h.fd.get(), 0);
    r.skip_if_unsupported(res.outcome, "phys_open");
    Owned leaked = keep_opened_physical(r, res);
    r.check_error(res.outcome, Errc::invalid, "sycl.phys.open.size",
                  "phys_open with " + name + " (" + std::to_string(bytes.size()) + " bytes)");
  }
  Owned ok = open_physical(r, h, "sycl.phys.open.size", "phys_open with the exact bytes after the bad ones");
  r.barrier("consumer-done");
}

IPCHECK_CASE(Case("physical.open.size", "phys_open with empty, one short, one long and huge byte counts fails with invalid")
                 .clause("sycl.phys.open.size")
                 .role("producer", [](Role& r) { export_to_consumer(r, 1, "sycl.phys.open.size"); })
                 .role("consumer", size_consumer));

// --- sycl.phys.open.ctx_dev
void ctx_dev_consumer(Role& r) {
  Received h = r.receive("handle");
  // The adapter's context holds every device it has; an index past them is outside it.
  const int outside = static_cast<int>(r.adapter().device_count());
  auto res = r.adapter().phys_open(h.bytes, h.fd.get(), outside);
  if (res.outcome.code == Errc::not_implemented) r.skip("phys_open: " + res.outcome.describe());
  Owned leaked = keep_opened_physical(r, res);
  r.check_error(res.outcome, Errc::invalid, "sycl.phys.open.ctx_dev",
                "phys_open on device " + std::to_string(outside) + ", which the context does not contain");
  Owned ok = open_physical(r, h, "sycl.phys.open.ctx_dev", "phys_open on device 0, which it contains");
  r.barrier("consumer-done");
}

IPCHECK_CASE(Case("physical.open.ctx_dev", "phys_open on a device outside the adapter's context fails with invalid")
                 .clause("sycl.phys.open.ctx_dev")
                 .role("producer", [](Role& r) { export_to_consumer(r, 1, "sycl.phys.open.ctx_dev"); })
                 .role("consumer", ctx_dev_consumer));

// --- sycl.phys.open.keeps_size
void keeps_size_consumer(Role& r) {
  Received h = r.receive("handle");
  const std::size_t bytes = std::stoull(receive_text(r, "size"));
  Owned pm = open_physical(r, h, "sycl.phys.open.keeps_size", "phys_open");
  auto size = r.adapter().phys_size(pm.get());
  const Evidence by = Evidence::of(size.outcome);  // the adapter's answer where the API has no size query
  std::size_t got = 0;
  {
    SetupSteps setup(r);
    got = r.require(std::move(size), "sycl.phys.open.keeps_size", "phys_size");
  }
  r.check(got == bytes, by, "sycl.phys.open.keeps_size",
          "the opened object reports " + std::to_string(got) + " bytes, the exported one has " + std::to_string(bytes));
  // The size is real: the whole object maps and holds the producer's data (supporting).
  SetupSteps setup(r);
  PhysicalView view = map_physical(r, pm.get(), bytes, "sycl.phys.open.keeps_size");
  verify(r, view.ptr(), bytes, kSeed, "sycl.phys.open.keeps_size", "the whole opened object");
  r.barrier("consumer-done");
}

IPCHECK_CASE(Case("physical.open.keeps_size", "An opened physical object reports the exported object's size (5 granules)")
                 .clause("sycl.phys.open.keeps_size")
                 .role("producer",
                       [](Role& r) {
                         // The exporter's own object reports its size before anything crosses.
                         export_to_consumer(r, 5, "sycl.phys.open.keeps_size", 0, [&](ObjectId pm, std::size_t bytes) {
                           auto size = r.adapter().phys_size(pm);
                           const Evidence by = Evidence::of(size.outcome);
                           std::size_t got = 0;
                           {
                             SetupSteps setup(r);
                             got = r.require(std::move(size), "sycl.phys.open.keeps_size", "phys_size");
                           }
                           r.check(got == bytes, by, "sycl.phys.open.keeps_size",
                                   "the created object reports " + std::to_string(got) + " bytes of " +
                                       std::to_string(bytes));
                         });
                       })
                 .role("consumer", keeps_size_consumer));

// --- sycl.phys.close.refcount
void refcount_consumer(Role& r) {
  constexpr const char* kClause = "sycl.phys.close.refcount";
  Received h = r.receive("handle");
  const std::size_t bytes = std::stoull(receive_text(r, "size"));
  Owned opened = open_physical(r, h, kClause, "phys_open");
  const ObjectId pm = opened.get();
  // Retained once more: close drops the open's reference, the retain keeps the object alive.
  const Outcome retained = r.adapter().phys_retain(pm);
  r.skip_if_unsupported(retained, "phys_retain");
  r.require_ok(retained, kClause, "phys_retain of the opened object");
  Owned retain = Owned::physical(r.adapter(), pm);  // the retain's reference, dropped by release
  r.check_ok(opened.reset(), kClause, "phys_close while a retain is outstanding");
  const auto size = r.adapter().phys_size(pm);
  r.check(size.ok() && size.value == bytes, Evidence::of(size.outcome), kClause,
          "after close the retained object reports " + (size.ok() ? std::to_string(size.value) + " bytes"
                                                                  : size.outcome.describe()));
  {
    PhysicalView view = map_physical(r, pm, bytes, kClause);
    verify(r, view.ptr(), bytes, kSeed, kClause, "the retained object still maps the producer's data after close");
  }
  r.check_ok(retain.reset(), kClause, "phys_release of the last reference");
  r.barrier("consumer-done");
}

IPCHECK_CASE(Case("physical.close.refcount", "A retained opened object stays valid after close until its last release")
                 .clause("sycl.phys.close.refcount")
                 .role("producer", [](Role& r) { export_to_consumer(r, 2, "sycl.phys.close.refcount"); })
                 .role("consumer", refcount_consumer));

// --- ur.phys.open.stale
void stale_producer(Role& r) {
  const std::size_t bytes = granular(r, kPage);
  Owned pm = create_physical(r, bytes, true, "ur.phys.open.stale");
  Exported first;
  Owned exported = export_physical(r, pm.get(), first, "ur.phys.open.stale");
  r.send_handle("consumer", "stale", first);
  put_or_skip(r, exported, "ur.phys.open.stale", "phys_put of the first export");
  // A new export of the same object, after the put: it must open.
  Exported second;
  Owned again = export_physical(r, pm.get(), second, "ur.phys.open.stale");
  r.send_handle("consumer", "fresh", second);
  r.barrier("consumer-done");
}

void stale_consumer(Role& r) {
  Received stale = r.receive("stale");
  Received fresh = r.receive("fresh");
  auto res = r.adapter().phys_open(stale.bytes, stale.fd.get(), 0);
  Owned leaked = keep_opened_physical(r, res);
  r.check_error(res.outcome, Errc::invalid, "ur.phys.open.stale", "phys_open of a byte copy of a handle already put");
  Owned ok = open_physical(r, fresh, "ur.phys.open.stale", "phys_open of the object's new export");
  r.barrier("consumer-done");
}

IPCHECK_CASE(Case("physical.open.stale", "A byte copy of a physical handle that was put no longer opens; a new export does")
                 .clause("ur.phys.open.stale")
                 .role("producer", stale_producer)
                 .role("consumer", stale_consumer));

// --- sycl.phys.open.other_device (observed)
void other_device_consumer(Role& r) {
  constexpr const char* kClause = "sycl.phys.open.other_device";
  Received h = r.receive("handle");
  const std::size_t bytes = std::stoull(receive_text(r, "size"));
  const int other = need_device_with(r, "ipc_physical_memory", 0);
  auto res = r.adapter().phys_open(h.bytes, h.fd.get(), other);
  Owned pm = keep_opened_physical(r, res);
  std::string value;
  if (!res.ok()) {
    r.native_error("phys_open on another device", res.outcome);
    value = outcome_word(res.outcome);
  } else {
    PhysicalView view = map_physical(r, pm.get(), bytes, kClause, other);
    value = holds(r, view.ptr(), bytes, kSeed) ? "opens" : "opens_other_data";
  }
  r.observe("physical.open.other_device", value, kClause);
  r.barrier("consumer-done");
}

IPCHECK_CASE(Case("physical.open.other_device", "Observes opening a physical handle on a device other than the exporter's")
                 .clause("sycl.phys.open.other_device")
                 .all_devices()
                 .needs(needs_device_with("ipc_physical_memory", 0))
                 .role("producer",
                       [](Role& r) {
                         need_device_with(r, "ipc_physical_memory", 0);
                         export_to_consumer(r, 1, "sycl.phys.open.other_device");
                       })
                 .role("consumer", other_device_consumer));

}  // namespace
}  // namespace ipcheck::catalog::physical_open
