// sycl.phys.map.offset: an opened physical object mapped at a non-zero offset within it
// shows the producer's bytes at that offset (a runtime that ignores the offset, or applies
// it twice, shows other bytes).
#include "../common.hpp"

namespace ipcheck::catalog::physical_map_offset {
namespace {

constexpr const char* kClause = "sycl.phys.map.offset";
constexpr std::uint64_t kSeed = 0x0ff5;
constexpr std::size_t kGranules = 3;

void producer(Role& r) {
  const std::size_t g = granular(r, 1);
  const std::size_t bytes = kGranules * g;
  Owned pm = create_physical(r, bytes, true, kClause);
  {
    PhysicalView view = map_physical(r, pm.get(), bytes, kClause);
    if (!fill(r, view.ptr(), bytes, kSeed, kClause, "fill the object")) throw RoleAbort{"fill failed"};
  }
  Exported h;
  Owned exported = export_physical(r, pm.get(), h, kClause);
  r.send_handle("consumer", "handle", h);
  send_text(r, "consumer", "granule", std::to_string(g));
  r.barrier("consumer-done");
}

// Maps `granules` of `pm` from granule `first` into a fresh range and checks the bytes.
void map_and_check(Role& r, ObjectId pm, std::size_t g, std::size_t first, std::size_t granules) {
  Adapter& a = r.adapter();
  const std::size_t bytes = granules * g, offset = first * g;
  Owned reservation;
  {
    SetupSteps setup(r);
    auto va = a.vm_reserve(0, bytes);
    r.skip_if_unsupported(va.outcome, "vm_reserve");
    reservation = Owned::reservation(a, r.require(va, kClause, "vm_reserve"), bytes);
  }
  const Outcome m = a.vm_map(reservation.get(), bytes, pm, offset);
  r.check_ok(m, kClause, "vm_map of " + size_name(bytes) + " at offset " + size_name(offset));
  if (!m.ok()) return;
  Owned mapping = Owned::vm_mapping(a, reservation.get(), bytes);
  verify(r, reservation.get(), bytes, kSeed, kClause,
         "the object mapped from offset " + size_name(offset) + " shows the producer's bytes there", offset);
}

void consumer(Role& r) {
  Received h = r.receive("handle");
  const std::size_t g = std::stoull(receive_text(r, "granule"));
  Owned pm = open_physical(r, h, kClause, "phys_open");
  map_and_check(r, pm.get(), g, 1, 2);  // the last two granules
  map_and_check(r, pm.get(), g, 2, 1);  // the last one
  r.barrier("consumer-done");
}

IPCHECK_CASE(Case("physical.map.offset",
                  "An opened physical object mapped at offsets of one and two granules shows the bytes at those offsets")
                 .clause(kClause)
                 .role("producer", producer)
                 .role("consumer", consumer));

}  // namespace
}  // namespace ipcheck::catalog::physical_map_offset
