// rb.put.one_export: two exports (two gets) of one object; putting one leaves the other
// openable and puttable, for every kind (a runtime whose gets share one reference-counted
// handle must count both). The put one no longer opens (rb.put.revokes is its own case).
#include "kinds.hpp"

namespace ipcheck::catalog::robustness_one_export {
namespace {

constexpr const char* kClause = "rb.put.one_export";
constexpr std::uint64_t kSeed = 0x0e01;  // odd: a signaled event

Owned second_export(Role& r, HandleKind kind, ObjectId object, Exported& out) {
  switch (kind) {
    case HandleKind::memory: return export_memory(r, object, out, kClause);
    case HandleKind::physical: return export_physical(r, object, out, kClause);
    case HandleKind::event: return export_event(r, object, out, kClause);
  }
  throw RoleAbort{"unknown kind"};
}

void producer(Role& r, HandleKind kind) {
  Target t = export_target(r, kind, kSeed, kClause);
  Exported second;
  Owned second_owned = second_export(r, kind, t.object.get(), second);
  r.send_handle("consumer", "first", t.handle);
  r.send_handle("consumer", "second", second);
  send_text(r, "consumer", "size", std::to_string(t.bytes));
  receive_text(r, "received");
  put_or_skip(r, t.exported, kClause, "put of the first export");
  send_text(r, "consumer", "first-put", "");
  receive_text(r, "second-opened");
  // The second export is still the producer's to put.
  r.check_ok(second_owned.reset(), kClause, "put of the second export after the first was put");
  r.barrier("consumer-done");
}

void consumer(Role& r, HandleKind kind) {
  Received first = r.receive("first");
  Received second = r.receive("second");
  const std::size_t bytes = std::stoull(receive_text(r, "size"));
  send_text(r, "producer", "received", "");
  receive_text(r, "first-put");
  Opened o = open_target(r, kind, second.bytes, second.fd.get());
  r.check_ok(o.outcome, kClause, std::string(kind_name(kind)) + " open of the second export after the first was put");
  if (o.outcome.ok())
    r.check(is_target(r, kind, o.object.get(), bytes, kSeed), kClause, "the second export maps the object");
  send_text(r, "producer", "second-opened", "");
  // Observed: what the put export's bytes do now (rb.put.revokes judges it where put revokes).
  Opened stale = open_target(r, kind, first.bytes, first.fd.get());
  r.observe(std::string("robustness.put.one_export.first_after_put.") + kind_name(kind), outcome_word(stale.outcome));
  r.barrier("consumer-done");
}

void register_one_export() {
  for (HandleKind kind : {HandleKind::memory, HandleKind::physical, HandleKind::event}) {
    const std::string name = kind_name(kind);
    register_case(Case("robustness.put.one_export." + name,
                       "Two exports of one " + name + " object: after one is put, the other opens and is put")
                      .clause(kClause)
                      .needs(needs_verb(put_verb(kind), "put of the first export"))
                      .role("producer", [kind](Role& r) { producer(r, kind); })
                      .role("consumer", [kind](Role& r) { consumer(r, kind); })
                      .def);
  }
}

IPCHECK_CASE(register_one_export);

}  // namespace
}  // namespace ipcheck::catalog::robustness_one_export
