#include "vk_cuda_interop.hpp"

#include <cstring>
#include <string>
#include <vector>

#include "ipcheck/cuda/cuda_driver.hpp"
#include "ipcheck/case.hpp"  // pattern, first_mismatch

namespace ipcheck::vk {

using namespace cuda_api;

namespace {

Outcome failed(const Driver& cu, const char* call, CUresult r, const std::string& what) {
  const Errc c = r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_INVALID_HANDLE ? Errc::invalid
                 : r == CUDA_ERROR_OUT_OF_MEMORY                                   ? Errc::exhausted
                 : r == CUDA_ERROR_NOT_SUPPORTED                                   ? Errc::feature_not_supported
                                                                                   : Errc::other;
  return Outcome::runtime_failure(call, c, what + ": " + call + " gave " + cu.error_name(r) + " (" + cu.error_text(r) + ")",
                                  r, cu.error_name(r));
}

}  // namespace

Outcome cuda_import(const CudaImportRequest& req) {
  std::string why;
  static std::unique_ptr<Driver> cu = Driver::load("", why);
  if (!cu) return Outcome::failure(Errc::not_implemented, "cuda_import: no CUDA driver: " + why);
  if (!cu->cuImportExternalMemory || !cu->cuExternalMemoryGetMappedBuffer || !cu->cuDestroyExternalMemory)
    return Outcome::failure(Errc::not_implemented, "cuda_import: " + cu->path() + " lacks cuImportExternalMemory");
  if (const CUresult r = cu->cuInit(0); r != CUDA_SUCCESS) {
    if (r == CUDA_ERROR_NO_DEVICE || r == CUDA_ERROR_STUB_LIBRARY)
      return Outcome::failure(Errc::not_implemented, "cuda_import: no CUDA device (cuInit gave " + cu->error_name(r) + ")");
    return failed(*cu, "cuInit", r, "cuda_import");
  }
  int count = 0;
  cu->cuDeviceGetCount(&count);
  CUdevice dev = -1;
  for (int i = 0; i < count && dev < 0; ++i) {
    CUdevice d = 0;
    CUuuid u{};
    if (cu->cuDeviceGet(&d, i) == CUDA_SUCCESS && cu->cuDeviceGetUuid_v2 &&
        cu->cuDeviceGetUuid_v2(&u, d) == CUDA_SUCCESS && std::memcmp(u.bytes, req.uuid, 16) == 0)
      dev = d;
  }
  if (dev < 0)
    return Outcome::failure(Errc::not_implemented, "cuda_import: no CUDA device has the Vulkan device's UUID "
                                                   "(the Vulkan driver is not NVIDIA's, or the GPU is another one)");
  CUcontext ctx = nullptr;
  if (const CUresult r = cu->cuDevicePrimaryCtxRetain(&ctx, dev); r != CUDA_SUCCESS)
    return failed(*cu, "cuDevicePrimaryCtxRetain", r, "cuda_import");
  struct Release {
    Driver& cu;
    CUdevice dev;
    ~Release() { cu.cuDevicePrimaryCtxRelease_v2(dev); }
  } release{*cu, dev};
  if (const CUresult r = cu->cuCtxSetCurrent(ctx); r != CUDA_SUCCESS) return failed(*cu, "cuCtxSetCurrent", r, "cuda_import");

  CUDA_EXTERNAL_MEMORY_HANDLE_DESC hd{};
  hd.type = kExternalMemoryHandleTypeOpaqueFd;
  hd.handle.fd = req.fd;
  hd.size = req.size;
  hd.flags = req.dedicated ? kExternalMemoryDedicated : 0;
  CUexternalMemory ext = nullptr;
  if (const CUresult r = cu->cuImportExternalMemory(&ext, &hd); r != CUDA_SUCCESS)
    return failed(*cu, "cuImportExternalMemory", r, "cuda_import of " + std::to_string(req.size) + " bytes");
  CUDA_EXTERNAL_MEMORY_BUFFER_DESC bd{};
  bd.offset = req.offset;
  bd.size = req.bytes;
  CUdeviceptr p = 0;
  Outcome o = Outcome::runtime_success("cuImportExternalMemory");
  if (const CUresult r = cu->cuExternalMemoryGetMappedBuffer(&p, ext, &bd); r != CUDA_SUCCESS) {
    o = failed(*cu, "cuExternalMemoryGetMappedBuffer", r, "cuda_import");
  } else {
    std::vector<std::byte> got(req.bytes);
    if (const CUresult r = cu->cuMemcpyDtoH_v2(got.data(), p, got.size()); r != CUDA_SUCCESS) {
      o = failed(*cu, "cuMemcpyDtoH", r, "cuda_import: read the imported bytes");
    } else if (const std::size_t bad = first_mismatch(got, req.read_seed); bad != static_cast<std::size_t>(-1)) {
      o = Outcome::runtime_failure("cuMemcpyDtoH", Errc::other,
                                   "cuda_import: byte " + std::to_string(bad) + " of " + std::to_string(req.bytes) +
                                       " read through CUDA differs from what Vulkan wrote",
                                   0, "data mismatch");
    } else {
      const auto out = pattern(req.write_seed, req.bytes);
      if (const CUresult r = cu->cuMemcpyHtoD_v2(p, out.data(), out.size()); r != CUDA_SUCCESS)
        o = failed(*cu, "cuMemcpyHtoD", r, "cuda_import: write through CUDA");
      else if (const CUresult s = cu->cuCtxSynchronize(); s != CUDA_SUCCESS)
        o = failed(*cu, "cuCtxSynchronize", s, "cuda_import");
      else
        o.message = "CUDA read " + std::to_string(req.bytes) + " bytes as Vulkan wrote them and wrote its own";
    }
    cu->cuMemFree_v2(p);
  }
  if (const CUresult r = cu->cuDestroyExternalMemory(ext); r != CUDA_SUCCESS && o.ok())
    o = failed(*cu, "cuDestroyExternalMemory", r, "cuda_import");
  return o;
}

}  // namespace ipcheck::vk
