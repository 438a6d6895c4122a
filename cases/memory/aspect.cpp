// sycl.mem.get.aspect, sycl.mem.open.aspect: memory IPC on a device without the
// ipc_memory aspect is refused with feature_not_supported, at get and at open.
#include "../common.hpp"

namespace ipcheck::catalog::memory_aspect {
namespace {

constexpr std::uint64_t kSeed = 0xa5a1;

void get_without_aspect(Role& r) {
  const int bare = need_device_without(r, "ipc_memory");
  Owned mem = alloc_filled(r, kPage, kSeed, "sycl.mem.get.aspect", bare);
  auto res = r.adapter().mem_get(mem.get());
  Owned leaked = keep_mem_export(r, res);
  r.check_error(res.outcome, Errc::feature_not_supported, "sycl.mem.get.aspect",
                "mem_get of memory on device " + std::to_string(bare) + ", which lacks ipc_memory");
  // The refusal is about the device: memory on a capable device still exports.
  if (auto able = device_with(r, "ipc_memory")) {
    SetupSteps setup(r);  // supporting: the refusal above was about the device
    Owned ok = alloc_filled(r, kPage, kSeed, "sycl.mem.get.aspect", *able);
    Exported h;
    Owned exported = export_memory(r, ok.get(), h, "sycl.mem.get.aspect");
    r.check(!h.bytes.empty(), "sycl.mem.get.aspect",
            "mem_get on device " + std::to_string(*able) + ", which has ipc_memory, gave " +
                std::to_string(h.bytes.size()) + " handle bytes");
  }
}

void producer(Role& r) {
  const int able = need_device_with(r, "ipc_memory");
  need_device_without(r, "ipc_memory");
  Owned mem = alloc_filled(r, kPage, kSeed, "sycl.mem.open.aspect", able);
  Exported h;
  Owned exported = export_memory(r, mem.get(), h, "sycl.mem.open.aspect");
  r.send_handle("consumer", "handle", h);
  r.barrier("consumer-done");
}

void consumer(Role& r) {
  const int bare = need_device_without(r, "ipc_memory");
  const int able = need_device_with(r, "ipc_memory");
  Received h = r.receive("handle");
  auto res = r.adapter().mem_open(h.bytes, h.fd.get(), bare);
  Owned leaked = keep_mapping(r, res);
  r.check_error(res.outcome, Errc::feature_not_supported, "sycl.mem.open.aspect",
                "mem_open on device " + std::to_string(bare) + ", which lacks ipc_memory");
  // The same bytes open on a capable device: the refusal was the aspect, not the handle.
  SetupSteps setup(r);
  Owned mapped = open_received(r, h, "sycl.mem.open.aspect", "mem_open on capable device " + std::to_string(able), able);
  verify(r, mapped.get(), kPage, kSeed, "sycl.mem.open.aspect", "the capable device maps the export");
  r.barrier("consumer-done");
}

IPCHECK_CASE(Case("memory.get.aspect", "mem_get on a device without ipc_memory fails with feature_not_supported")
                 .clause("sycl.mem.get.aspect")
                 .all_devices()
                 .needs(needs_device_without("ipc_memory"))
                 .role("producer", get_without_aspect));

IPCHECK_CASE(Case("memory.open.aspect", "mem_open on a device without ipc_memory fails with feature_not_supported")
                 .clause("sycl.mem.open.aspect")
                 .all_devices()
                 .needs(needs_device_with("ipc_memory"))
                 .needs(needs_device_without("ipc_memory"))
                 .role("producer", producer)
                 .role("consumer", consumer));

}  // namespace
}  // namespace ipcheck::catalog::memory_aspect
