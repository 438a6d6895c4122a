// sycl.phys.get.not_enabled, sycl.phys.get.aspect, sycl.phys.ipc_enabled: what get and
// the IPC-enabled query say about an object, by how and where it was created.
#include "../common.hpp"

namespace ipcheck::catalog::physical_get {
namespace {

void not_enabled(Role& r) {
  const std::size_t bytes = granular(r, kPage);
  Owned plain = create_physical(r, bytes, false, "sycl.phys.get.not_enabled");
  auto res = r.adapter().phys_get(plain.get());
  r.skip_if_unsupported(res.outcome, "phys_get");
  Owned leaked = keep_phys_export(r, res);
  r.check_error(res.outcome, Errc::invalid, "sycl.phys.get.not_enabled",
                "phys_get on an object created without the IPC property");
  // The same call on an IPC object succeeds: the refusal was the missing property.
  SetupSteps setup(r);
  Owned ipc = create_physical(r, bytes, true, "sycl.phys.get.not_enabled");
  Exported h;
  Owned exported = export_physical(r, ipc.get(), h, "sycl.phys.get.not_enabled");
  r.check(!h.bytes.empty(), "sycl.phys.get.not_enabled",
          "phys_get on an IPC object gave " + std::to_string(h.bytes.size()) + " handle bytes");
}

IPCHECK_CASE(Case("physical.get.not_enabled", "phys_get on physical memory created without the IPC property fails with invalid")
                 .clause("sycl.phys.get.not_enabled")
                 .role("producer", not_enabled));

void without_aspect(Role& r) {
  const int bare = need_device_without(r, "ipc_physical_memory");
  const std::size_t bytes = granular(r, kPage, bare);
  auto created = r.adapter().phys_create(bare, bytes, true);
  if (created.outcome.code == Errc::not_implemented) r.skip("phys_create: " + created.outcome.describe());
  // A runtime may refuse the IPC property at creation already; get is then never reached.
  if (created.outcome.code == Errc::feature_not_supported)
    r.skip("device " + std::to_string(bare) + " refuses to create IPC physical memory (" +
           created.outcome.describe() + "): get cannot be reached");
  Owned pm = Owned::physical(r.adapter(), r.require(created, "sycl.phys.get.aspect", "phys_create with IPC"));
  auto res = r.adapter().phys_get(pm.get());
  Owned leaked = keep_phys_export(r, res);
  // An API without the function cannot say anything about the aspect.
  if (res.outcome.code == Errc::not_implemented) r.skip("phys_get: " + res.outcome.describe());
  r.check_error(res.outcome, Errc::feature_not_supported, "sycl.phys.get.aspect",
                "phys_get on device " + std::to_string(bare) + ", which lacks ipc_physical_memory");
}

IPCHECK_CASE(Case("physical.get.aspect", "phys_get on a device without ipc_physical_memory fails with feature_not_supported")
                 .clause("sycl.phys.get.aspect")
                 .all_devices()
                 .needs(needs_device_without("ipc_physical_memory"))
                 .role("producer", without_aspect));

void enabled_producer(Role& r) {
  const std::size_t bytes = granular(r, kPage);
  Owned plain = create_physical(r, bytes, false, "sycl.phys.ipc_enabled");
  Owned ipc = create_physical(r, bytes, true, "sycl.phys.ipc_enabled");
  auto plain_q = r.adapter().phys_ipc_enabled(plain.get());
  auto ipc_q = r.adapter().phys_ipc_enabled(ipc.get());
  const Evidence plain_by = Evidence::of(plain_q.outcome), ipc_by = Evidence::of(ipc_q.outcome);
  bool plain_says = false, ipc_says = false;
  {
    SetupSteps setup(r);
    plain_says = r.require(std::move(plain_q), "sycl.phys.ipc_enabled", "query on plain");
    ipc_says = r.require(std::move(ipc_q), "sycl.phys.ipc_enabled", "query on IPC");
  }
  r.check(!plain_says, plain_by, "sycl.phys.ipc_enabled",
          std::string("an object created without IPC reports ") + (plain_says ? "true" : "false"));
  r.check(ipc_says, ipc_by, "sycl.phys.ipc_enabled",
          std::string("an object created with IPC reports ") + (ipc_says ? "true" : "false"));
  Exported h;
  Owned exported = export_physical(r, ipc.get(), h, "sycl.phys.ipc_enabled");
  r.send_handle("consumer", "handle", h);
  r.barrier("consumer-done");
}

void enabled_consumer(Role& r) {
  Received h = r.receive("handle");
  Owned pm = open_physical(r, h, "sycl.phys.ipc_enabled", "phys_open");
  auto q = r.adapter().phys_ipc_enabled(pm.get());
  const Evidence by = Evidence::of(q.outcome);
  bool says = false;
  {
    SetupSteps setup(r);
    says = r.require(std::move(q), "sycl.phys.ipc_enabled", "query on the opened object");
  }
  r.check(says, by, "sycl.phys.ipc_enabled", std::string("the opened object reports ") + (says ? "true" : "false"));
  r.barrier("consumer-done");
}

IPCHECK_CASE(Case("physical.ipc_enabled", "The IPC-enabled query reflects the creation property, on the original and the opened object")
                 .clause("sycl.phys.ipc_enabled")
                 .role("producer", enabled_producer)
                 .role("consumer", enabled_consumer));

}  // namespace
}  // namespace ipcheck::catalog::physical_get
