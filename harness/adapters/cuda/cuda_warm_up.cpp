// The `cuda` adapter's warm-up (cuda_adapter.hpp says why): each kind of call once, in
// groups that each end with a context synchronize, before the role's audit baseline.
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include "cuda_adapter.hpp"

namespace ipcheck::cuda_adapter {

struct CudaAdapter::WarmUp {
  explicit WarmUp(const Driver& driver) : cu(driver) {}

  const Driver& cu;
  std::vector<std::string> failed;
  int calls = 0;
  std::string broken;  // "after <group>: <error>"

  // Counts the call; a failure is recorded by its name and CUDA's.
  bool ok(const char* what, CUresult r) {
    ++calls;
    if (r != CUDA_SUCCESS) failed.push_back(std::string(what) + " " + cu.error_name(r));
    return r == CUDA_SUCCESS;
  }
  // Synchronizes the context; the first group after which that fails broke it.
  bool synced(const char* group) {
    const CUresult r = cu.cuCtxSynchronize();
    if (r != CUDA_SUCCESS && broken.empty()) broken = std::string("after ") + group + ": " + cu.error_name(r);
    return r == CUDA_SUCCESS;
  }
};

Outcome CudaAdapter::warm_up() {
  WarmUp w(*cu_);
  std::vector<std::byte> bytes(4096, std::byte{0x5a});
  warm_up_memory(w, bytes);
  warm_up_events(w);
  if (devices_[0].vmm && devices_[0].posix_fd) warm_up_physical(w);
  w.synced("the warm-up");
  warm_up_ = std::to_string(w.calls) + " calls, " +
             (w.failed.empty() ? std::string("all succeeded") : std::to_string(w.failed.size()) + " failed:");
  for (const auto& f : w.failed) warm_up_ += " " + f;
  if (!w.failed.empty()) std::fprintf(stderr, "[cuda] warm-up: %s\n", warm_up_.c_str());
  if (w.broken.empty()) return Outcome::success();
  std::fprintf(stderr, "[cuda] warm-up left the context broken (%s); resetting the primary context\n", w.broken.c_str());
  warm_up_ += "; context broken " + w.broken + ", primary context reset";
  return reset_broken_context(w.broken, bytes.size());
}

// Device memory (allocated, copied both ways, its IPC handle taken), then pinned host memory.
void CudaAdapter::warm_up_memory(WarmUp& w, std::vector<std::byte>& bytes) {
  CUdeviceptr p = 0;
  if (w.ok("cuMemAlloc", cu_->cuMemAlloc_v2(&p, bytes.size()))) {
    w.ok("cuMemcpyHtoD", cu_->cuMemcpyHtoD_v2(p, bytes.data(), bytes.size()));
    w.ok("cuMemcpyDtoH", cu_->cuMemcpyDtoH_v2(bytes.data(), p, bytes.size()));
    CUipcMemHandle h{};
    w.ok("cuIpcGetMemHandle", cu_->cuIpcGetMemHandle(&h, p));
    w.synced("device memory");
    cu_->cuMemFree_v2(p);
  }
  // Kept until the adapter ends, as the event gates' page is in a role with events: while one
  // allocation lives, the driver's pinned-host pool keeps its 2 MiB chunk, so a case's
  // cuMemAllocHost takes from it instead of mapping a chunk the audit would count as the
  // case's (memory.get.non_device ended xfail, "leak", in roles started without events).
  w.ok("cuMemAllocHost", cu_->cuMemAllocHost_v2(&warm_host_, bytes.size()));
  w.synced("host memory");
}

// An IPC event: created, its IPC handle taken, recorded and waited for.
void CudaAdapter::warm_up_events(WarmUp& w) {
  CUevent ev = nullptr;
  if (w.ok("cuEventCreate", cu_->cuEventCreate(&ev, kEventInterprocess | kEventDisableTiming))) {
    CUipcEventHandle h{};
    w.ok("cuIpcGetEventHandle", cu_->cuIpcGetEventHandle(&h, ev));
    w.ok("cuEventRecord", cu_->cuEventRecord(ev, nullptr));
    w.ok("cuEventSynchronize", cu_->cuEventSynchronize(ev));
    w.synced("events");
    cu_->cuEventDestroy_v2(ev);
  }
}

// One granule of physical memory on device 0: created, exported as a descriptor, mapped
// read-write into a reserved range.
void CudaAdapter::warm_up_physical(WarmUp& w) {
  const CUmemAllocationProp prop = phys_prop(0, true);
  std::size_t g = 0;
  CUmemGenericAllocationHandle h = 0;
  if (w.ok("cuMemGetAllocationGranularity", cu_->cuMemGetAllocationGranularity(&g, &prop, kMemAllocGranularityMinimum)) &&
      w.ok("cuMemCreate", cu_->cuMemCreate(&h, g, &prop, 0))) {
    int fd = -1;
    if (w.ok("cuMemExportToShareableHandle", cu_->cuMemExportToShareableHandle(&fd, h, kMemHandleTypePosixFd, 0)))
      ::close(fd);
    CUdeviceptr va = 0;
    if (w.ok("cuMemAddressReserve", cu_->cuMemAddressReserve(&va, g, 0, 0, 0))) {
      if (w.ok("cuMemMap", cu_->cuMemMap(va, g, 0, h, 0))) {
        CUmemAccessDesc access{};
        access.location = prop.location;
        access.flags = kMemAccessProtReadWrite;
        w.ok("cuMemSetAccess", cu_->cuMemSetAccess(va, g, &access, 1));
        w.synced("physical memory");
        cu_->cuMemUnmap(va, g);
      }
      cu_->cuMemAddressFree(va, g);
    }
    cu_->cuMemRelease(h);
  }
}

Outcome CudaAdapter::reset_broken_context(const std::string& broken, std::size_t probe_bytes) {
  const Device d = devices_[0];
  if (!cu_->cuDevicePrimaryCtxReset_v2)
    return Outcome::failure(Errc::device_lost, "cuda: the warm-up left the context broken (" + broken +
                                                   ") and this driver has no cuDevicePrimaryCtxReset");
  if (const CUresult r = cu_->cuDevicePrimaryCtxReset_v2(d.handle); r != CUDA_SUCCESS)
    return fail(r, "cuDevicePrimaryCtxReset after the warm-up broke the context (" + broken + ")");
  warm_host_ = nullptr;  // the reset took it
  // Take the reset context afresh: release our reference, retain it again, make it current.
  cu_->cuDevicePrimaryCtxRelease_v2(d.handle);
  devices_[0].ctx = nullptr;
  if (const CUresult r = cu_->cuDevicePrimaryCtxRetain(&devices_[0].ctx, d.handle); r != CUDA_SUCCESS)
    return fail(r, "cuDevicePrimaryCtxRetain after resetting the context the warm-up broke (" + broken + ")");
  current_ = -1;
  if (auto o = use(0, "init"); !o.ok()) return o;
  CUdeviceptr probe = 0;
  CUresult r = cu_->cuMemAlloc_v2(&probe, probe_bytes);
  if (r == CUDA_SUCCESS) {
    cu_->cuMemFree_v2(probe);
    r = cu_->cuCtxSynchronize();
  }
  if (r != CUDA_SUCCESS) return fail(r, "the first allocation after resetting the context the warm-up broke (" + broken + ")");
  return Outcome::success();
}

}  // namespace ipcheck::cuda_adapter
