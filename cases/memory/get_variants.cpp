// sycl.mem.get.non_device: get on host and shared allocations (SYCL requires device USM).
// sycl.mem.get.interior: get on a pointer inside an allocation (CUDA exports the base).
// Both are observed: the value says what a second process gets from such a handle.
#include "../common.hpp"

namespace ipcheck::catalog::memory_get_variants {
namespace {

constexpr std::uint64_t kSeed = 0x6e70;
constexpr std::size_t kInteriorOffset = kPage + 256;  // past a page boundary, not page aligned
constexpr std::size_t kInteriorAlloc = 4 * kPage;

// Exports `kind` memory if the adapter lets it; the consumer reports what it opens.
void offer(Role& r, MemKind kind, std::vector<Owned>& keep) {
  const std::string name = mem_kind_name(kind);
  auto mem = r.adapter().alloc(0, kPage, kind);
  if (!mem.ok()) {
    r.observe("memory.get." + name, "alloc_" + outcome_word(mem.outcome), "sycl.mem.get.non_device");
    send_text(r, "consumer", name, "");
    return;
  }
  keep.push_back(Owned::allocation(r.adapter(), mem.value));
  if (!fill(r, mem.value, kPage, kSeed, "sycl.mem.get.non_device", "fill " + name + " memory"))
    throw RoleAbort{"fill failed"};
  auto res = r.adapter().mem_get(mem.value);
  if (!res.ok()) {
    r.native_error("mem_get of " + name + " memory", res.outcome);
    r.observe("memory.get." + name, outcome_word(res.outcome), "sycl.mem.get.non_device");
    send_text(r, "consumer", name, "");
    return;
  }
  keep.push_back(Owned::mem_export(r.adapter(), res.value.id));
  r.send_handle("consumer", name, res.value);
}

void non_device_producer(Role& r) {
  std::vector<Owned> keep;
  offer(r, MemKind::host, keep);
  offer(r, MemKind::shared, keep);
  r.barrier("consumer-done");
  while (!keep.empty()) keep.pop_back();  // puts before frees
}

void take(Role& r, const std::string& name) {
  Received h = r.receive(name);
  if (h.bytes.empty()) return;  // refused at alloc or get: the producer observed it
  auto res = r.adapter().mem_open(h.bytes, h.fd.get(), 0);
  Owned mapped = keep_mapping(r, res);
  std::string value;
  if (!res.ok()) {
    r.native_error("mem_open of exported " + name + " memory", res.outcome);
    value = "exports_open_" + outcome_word(res.outcome);
  } else {
    value = holds(r, mapped.get(), kPage, kSeed) ? "exports_and_opens" : "exports_opens_other_data";
  }
  r.observe("memory.get." + name, value, "sycl.mem.get.non_device");
}

void non_device_consumer(Role& r) {
  take(r, "host");
  take(r, "shared");
  r.barrier("consumer-done");
}

IPCHECK_CASE(Case("memory.get.non_device", "Observes get on host and shared allocations, and what such a handle opens")
                 .clause("sycl.mem.get.non_device")
                 .role("producer", non_device_producer)
                 .role("consumer", non_device_consumer));

void interior_producer(Role& r) {
  Owned mem = alloc_filled(r, kInteriorAlloc, kSeed, "sycl.mem.get.interior");
  auto res = r.adapter().mem_get(mem.get() + kInteriorOffset);
  r.skip_if_unsupported(res.outcome, "mem_get");
  Owned exported = keep_mem_export(r, res);
  if (!res.ok()) {
    r.native_error("mem_get of an interior pointer", res.outcome);
    r.observe("memory.get.interior", outcome_word(res.outcome), "sycl.mem.get.interior");
    send_text(r, "consumer", "handle", "");
  } else {
    r.send_handle("consumer", "handle", res.value);
  }
  r.barrier("consumer-done");
}

void interior_consumer(Role& r) {
  Received h = r.receive("handle");
  if (!h.bytes.empty()) {
    Owned mapped = open_received(r, h, "sycl.mem.get.interior", "mem_open of the interior handle");
    // "interior": the pointer opens at the interior address; "base": at the allocation's start.
    const std::size_t probe = kInteriorAlloc - kInteriorOffset;
    std::string value = "other_data";
    const Seen interior = holds(r, mapped.get(), probe, kSeed, kInteriorOffset);
    Evidence by = interior.by;
    if (interior) {
      value = "interior";
    } else {
      const Seen base = holds(r, mapped.get(), kInteriorAlloc, kSeed, 0);
      by.with(base.by);
      if (base) value = "base";
    }
    r.observe("memory.get.interior", value, "sycl.mem.get.interior");
    // Either is allowed (which one is the observation above); any other bytes are a wrong mapping.
    r.check(value != "other_data", by, "rb.open.interior",
            value == "other_data" ? "the interior export maps neither the bytes at the pointer (" +
                                        std::to_string(kInteriorOffset) + " bytes in) nor the allocation's base"
                                  : "the interior export maps the " + value + " bytes");
    r.check_ok(mapped.reset(), "sycl.mem.get.interior", "mem_close of the interior mapping");
  }
  r.barrier("consumer-done");
}

IPCHECK_CASE(Case("memory.get.interior",
                  "get on a pointer inside an allocation maps the bytes at the pointer or the base (which one is observed)")
                 .clauses({"sycl.mem.get.interior", "rb.open.interior"})
                 .role("producer", interior_producer)
                 .role("consumer", interior_consumer));

}  // namespace
}  // namespace ipcheck::catalog::memory_get_variants
