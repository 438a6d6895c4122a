// ur.device.support_query: each IPC support query answers a value. An adapter asks its
// runtime whether each device shares memory, physical memory and events; a query that
// answers an error is kept (DeviceInfo::aspect_errors) and judged here, instead of being
// read as "no" before results.json (where a device without the aspect and a runtime that
// could not say look the same).
#include "../common.hpp"

namespace ipcheck::catalog::device_support_query {
namespace {

constexpr const char* kClause = "ur.device.support_query";

void prober(Role& r) {
  const AdapterInfo info = r.adapter().info();
  if (info.devices.empty()) r.skip("the adapter reports no device");
  for (std::size_t k = 0; k < info.devices.size(); ++k) {
    const DeviceInfo& d = info.devices[k];
    for (const char* aspect : {"ipc_memory", "ipc_physical_memory", "ipc_event"}) {
      const std::string what = "device " + std::to_string(k) + " (" + d.name + ") " + aspect + " support query";
      if (const auto e = d.aspect_errors.find(aspect); e != d.aspect_errors.end()) {
        r.check(false, Evidence::adapter(), kClause, what + " answered an error, not a value: " + e->second);
        continue;
      }
      const auto v = d.aspects.find(aspect);
      r.check(v != d.aspects.end(), Evidence::adapter(), kClause,
              what + (v == d.aspects.end() ? " was never asked" : std::string(" answered ") + (v->second ? "yes" : "no")));
    }
  }
}

IPCHECK_CASE(Case("device.support_query",
                  "Every IPC support query of every device answers a value (an error is reported, never read as no)")
                 .clause(kClause)
                 .role("prober", prober));

}  // namespace
}  // namespace ipcheck::catalog::device_support_query
