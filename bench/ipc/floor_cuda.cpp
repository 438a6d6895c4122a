// cuda's floor: the CUDA driver calls the adapter makes for each verb, made directly
// (same libcuda, same primary context), so the ratio is the adapter's own cost:
//   get: cuIpcGetMemHandle.   open: cuIpcOpenMemHandle(LAZY_ENABLE_PEER_ACCESS).
//   close: cuIpcCloseMemHandle.   first touch: cuMemcpyDtoH of the whole range.
//   physical open + map: pidfd_open + pidfd_getfd + close(pidfd) +
//     cuMemImportFromShareableHandle + close(fd) + cuMemAddressReserve + cuMemMap +
//     cuMemSetAccess + cuMemUnmap + cuMemAddressFree + cuMemRelease.
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <span>

#include "ipcheck/cuda/cuda_driver.hpp"
#include "ipcheck/cuda/fd_record.hpp"
#include "floor.hpp"

namespace ipcheck::bench {
namespace {

using namespace cuda_api;

class CudaFloor final : public Floor {
 public:
  explicit CudaFloor(std::unique_ptr<Driver> cu) : cu_(std::move(cu)) {}

  ~CudaFloor() override {
    if (ctx_) cu_->cuDevicePrimaryCtxRelease_v2(device_);
  }

  bool start(std::string& why) {
    if (CUresult r = cu_->cuInit(0); r != CUDA_SUCCESS) return bad(r, "cuInit", why);
    if (CUresult r = cu_->cuDeviceGet(&device_, 0); r != CUDA_SUCCESS) return bad(r, "cuDeviceGet(0)", why);
    if (CUresult r = cu_->cuDevicePrimaryCtxRetain(&ctx_, device_); r != CUDA_SUCCESS)
      return bad(r, "cuDevicePrimaryCtxRetain", why);
    if (CUresult r = cu_->cuCtxSetCurrent(ctx_); r != CUDA_SUCCESS) return bad(r, "cuCtxSetCurrent", why);
    return true;
  }

  std::map<std::string, std::string> describe() const override {
    return {{"mem_get", "cuIpcGetMemHandle"},
            {"mem_open", "cuIpcOpenMemHandle(CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)"},
            {"mem_open_repeat", "cuIpcOpenMemHandle(CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) while an open of the same "
                                "handle is held (cuIpcCloseMemHandle untimed)"},
            {"mem_close", "cuIpcCloseMemHandle"},
            {"mem_open_close", "cuIpcOpenMemHandle + cuIpcCloseMemHandle"},
            {"mem_first_touch", "cuMemcpyDtoH of the whole range into pageable host memory"},
            {"phys_open_map",
             "pidfd_open + pidfd_getfd + close(pidfd) + cuMemImportFromShareableHandle + close(fd) + "
             "cuMemAddressReserve + cuMemMap + cuMemSetAccess + cuMemUnmap + cuMemAddressFree + cuMemRelease"}};
  }

  void get(DevPtr own, std::size_t) override {
    CUipcMemHandle h{};
    check(cu_->cuIpcGetMemHandle(&h, own), "cuIpcGetMemHandle");
  }

  std::uint64_t open(const ExportMsg& e) override {
    CUipcMemHandle h;
    if (e.bytes.size() != sizeof h) throw FloorError("cuda floor: the export is not a 64-byte CUipcMemHandle");
    std::memcpy(h.reserved, e.bytes.data(), sizeof h);
    CUdeviceptr p = 0;
    check(cu_->cuIpcOpenMemHandle_v2(&p, h, kIpcMemLazyEnablePeerAccess), "cuIpcOpenMemHandle");
    return p;
  }

  void close(std::uint64_t mapped, const ExportMsg&) override {
    check(cu_->cuIpcCloseMemHandle(mapped), "cuIpcCloseMemHandle");
  }

  void touch(std::uint64_t mapped, std::size_t bytes) override {
    host_.resize(std::max(host_.size(), bytes));
    check(cu_->cuMemcpyDtoH_v2(host_.data(), mapped, bytes), "cuMemcpyDtoH");
  }

  Outcome adapter_touch(Adapter& a, DevPtr mapped, std::size_t bytes) override {
    host_.resize(std::max(host_.size(), bytes));
    return a.read(mapped, std::span<std::byte>(host_.data(), bytes));
  }

  void phys_open_map(const ExportMsg& e) override {
    std::string why;
    const auto rec = cuda_adapter::FdRecord::decode(e.bytes, why);
    if (!rec) throw FloorError("cuda floor: " + why);
    ipcref::unique_fd fd;
    if (e.fd) {
      fd.reset(::fcntl(e.fd.get(), F_DUPFD_CLOEXEC, 0));
    } else {
      ipcref::unique_fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, rec->pid, 0)));
      if (!pidfd) throw FloorError(std::string("cuda floor: pidfd_open: ") + std::strerror(errno));
      fd.reset(static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd.get(), rec->fd, 0)));
    }
    if (!fd) throw FloorError(std::string("cuda floor: taking the exported descriptor: ") + std::strerror(errno));
    CUmemGenericAllocationHandle h = 0;
    check(cu_->cuMemImportFromShareableHandle(&h, reinterpret_cast<void*>(static_cast<std::intptr_t>(fd.get())),
                                              kMemHandleTypePosixFd),
          "cuMemImportFromShareableHandle");
    fd.reset();
    CUdeviceptr va = 0;
    CUresult r = cu_->cuMemAddressReserve(&va, e.size, 0, 0, 0);
    if (r == CUDA_SUCCESS) {
      r = cu_->cuMemMap(va, e.size, 0, h, 0);
      if (r == CUDA_SUCCESS) {
        CUmemAccessDesc access{};
        access.location.type = kMemLocationTypeDevice;
        access.location.id = device_;
        access.flags = kMemAccessProtReadWrite;
        r = cu_->cuMemSetAccess(va, e.size, &access, 1);
        cu_->cuMemUnmap(va, e.size);
      }
      cu_->cuMemAddressFree(va, e.size);
    }
    cu_->cuMemRelease(h);
    check(r, "cuMemAddressReserve/cuMemMap/cuMemSetAccess");
  }

 private:
  bool bad(CUresult r, const char* what, std::string& why) const {
    why = std::string(what) + " failed: " + cu_->error_name(r);
    return false;
  }
  void check(CUresult r, const char* what) const {
    if (r != CUDA_SUCCESS) throw FloorError(std::string("cuda floor: ") + what + " failed: " + cu_->error_name(r));
  }

  std::unique_ptr<Driver> cu_;
  CUdevice device_ = 0;
  CUcontext ctx_ = nullptr;
  std::vector<std::byte> host_;
};

}  // namespace

std::unique_ptr<Floor> make_cuda_floor(const std::string& library, std::string& why) {
  auto cu = Driver::load(library, why);
  if (!cu) return nullptr;
  auto f = std::make_unique<CudaFloor>(std::move(cu));
  if (!f->start(why)) return nullptr;
  return f;
}

}  // namespace ipcheck::bench
