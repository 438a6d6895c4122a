// libcuda loaded at run time: dlopen, then dlsym of every function the `cuda` adapter
// calls. No link dependency on the driver, so one ipcheck build runs with and without it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ipcheck/cuda/cuda_api.hpp"

namespace ipcheck::cuda_api {

// Functions every use of the adapter needs: X(member, exported symbol).
#define IPCHECK_CUDA_CORE_FUNCTIONS(X)                   \
  X(cuInit, "cuInit")                                    \
  X(cuDriverGetVersion, "cuDriverGetVersion")            \
  X(cuGetErrorName, "cuGetErrorName")                    \
  X(cuGetErrorString, "cuGetErrorString")                \
  X(cuDeviceGetCount, "cuDeviceGetCount")                \
  X(cuDeviceGet, "cuDeviceGet")                          \
  X(cuDeviceGetName, "cuDeviceGetName")                  \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute")        \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") \
  X(cuDevicePrimaryCtxRelease_v2, "cuDevicePrimaryCtxRelease_v2") \
  X(cuCtxSetCurrent, "cuCtxSetCurrent")                  \
  X(cuCtxSynchronize, "cuCtxSynchronize")                \
  X(cuMemGetInfo_v2, "cuMemGetInfo_v2")                  \
  X(cuMemAlloc_v2, "cuMemAlloc_v2")                      \
  X(cuMemFree_v2, "cuMemFree_v2")                        \
  X(cuMemAllocHost_v2, "cuMemAllocHost_v2")              \
  X(cuMemFreeHost, "cuMemFreeHost")                      \
  X(cuMemcpyHtoD_v2, "cuMemcpyHtoD_v2")                  \
  X(cuMemcpyDtoH_v2, "cuMemcpyDtoH_v2")                  \
  X(cuIpcGetMemHandle, "cuIpcGetMemHandle")              \
  X(cuIpcOpenMemHandle_v2, "cuIpcOpenMemHandle_v2")      \
  X(cuIpcCloseMemHandle, "cuIpcCloseMemHandle")          \
  X(cuEventCreate, "cuEventCreate")                      \
  X(cuEventRecord, "cuEventRecord")                      \
  X(cuEventQuery, "cuEventQuery")                        \
  X(cuEventSynchronize, "cuEventSynchronize")            \
  X(cuEventDestroy_v2, "cuEventDestroy_v2")              \
  X(cuIpcGetEventHandle, "cuIpcGetEventHandle")          \
  X(cuIpcOpenEventHandle, "cuIpcOpenEventHandle")

// Functions some drivers lack; the verbs that need them answer not_implemented.
#define IPCHECK_CUDA_OPTIONAL_FUNCTIONS(X)                                       \
  X(cuDeviceGetUuid_v2, "cuDeviceGetUuid_v2")                                    \
  X(cuDevicePrimaryCtxReset_v2, "cuDevicePrimaryCtxReset_v2")                    \
  X(cuMemAllocManaged, "cuMemAllocManaged")                                      \
  X(cuMemCreate, "cuMemCreate")                                                  \
  X(cuMemRelease, "cuMemRelease")                                                \
  X(cuMemExportToShareableHandle, "cuMemExportToShareableHandle")                \
  X(cuMemImportFromShareableHandle, "cuMemImportFromShareableHandle")            \
  X(cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity")              \
  X(cuMemGetAllocationPropertiesFromHandle, "cuMemGetAllocationPropertiesFromHandle") \
  X(cuMemRetainAllocationHandle, "cuMemRetainAllocationHandle")                  \
  X(cuMemAddressReserve, "cuMemAddressReserve")                                  \
  X(cuMemAddressFree, "cuMemAddressFree")                                        \
  X(cuMemMap, "cuMemMap")                                                        \
  X(cuMemUnmap, "cuMemUnmap")                                                    \
  X(cuMemSetAccess, "cuMemSetAccess")                                            \
  X(cuImportExternalMemory, "cuImportExternalMemory")                            \
  X(cuExternalMemoryGetMappedBuffer, "cuExternalMemoryGetMappedBuffer")          \
  X(cuDestroyExternalMemory, "cuDestroyExternalMemory")                        \
  X(cuStreamCreate, "cuStreamCreate")                                            \
  X(cuStreamDestroy_v2, "cuStreamDestroy_v2")                                    \
  X(cuStreamSynchronize, "cuStreamSynchronize")                                  \
  X(cuStreamQuery, "cuStreamQuery")                                              \
  X(cuStreamWaitValue32_v2, "cuStreamWaitValue32_v2")                            \
  X(cuMemHostAlloc, "cuMemHostAlloc")                                            \
  X(cuMemHostGetDevicePointer_v2, "cuMemHostGetDevicePointer_v2")                \
  X(cuCtxCreate_v2, "cuCtxCreate_v2")                                            \
  X(cuCtxDestroy_v2, "cuCtxDestroy_v2")                                          \
  X(cuCtxPushCurrent_v2, "cuCtxPushCurrent_v2")                                  \
  X(cuCtxPopCurrent_v2, "cuCtxPopCurrent_v2")

class Driver {
 public:
  // Loads `library` (a name dlopen searches for, or a path); with an empty name, tries
  // libcuda.so.1 and then the usual driver folders. Returns null and says why in `error`.
  static std::unique_ptr<Driver> load(const std::string& library, std::string& error);

  // libcuda is never unloaded: after cuInit its threads and atexit handlers refer to it.
  ~Driver() = default;
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  const std::string& path() const { return path_; }  // the file dlopen resolved
  // "CUDA_ERROR_INVALID_VALUE"; "CUresult 12345" for a code the driver cannot name.
  std::string error_name(CUresult r) const;
  // The driver's own sentence for the code ("invalid argument").
  std::string error_text(CUresult r) const;
  // Optional functions that this driver lacks, by symbol.
  const std::vector<std::string>& missing_optional() const { return missing_optional_; }
  // What the event gate needs (a stream wait on host memory the device can see, in a context
  // of its own).
  bool has_stream_wait() const {
    return cuStreamCreate && cuStreamDestroy_v2 && cuStreamSynchronize && cuStreamQuery && cuStreamWaitValue32_v2 && cuMemHostAlloc &&
           cuMemHostGetDevicePointer_v2 && cuCtxCreate_v2 && cuCtxDestroy_v2 && cuCtxPushCurrent_v2 &&
           cuCtxPopCurrent_v2;
  }
  bool has_vmm() const {
    return cuMemCreate && cuMemRelease && cuMemExportToShareableHandle && cuMemImportFromShareableHandle &&
           cuMemGetAllocationGranularity && cuMemGetAllocationPropertiesFromHandle && cuMemAddressReserve &&
           cuMemAddressFree && cuMemMap && cuMemUnmap && cuMemSetAccess;
  }

#define IPCHECK_CUDA_MEMBER(name, symbol) PFN_##name name = nullptr;
  IPCHECK_CUDA_CORE_FUNCTIONS(IPCHECK_CUDA_MEMBER)
  IPCHECK_CUDA_OPTIONAL_FUNCTIONS(IPCHECK_CUDA_MEMBER)
#undef IPCHECK_CUDA_MEMBER

 private:
  Driver() = default;
  void* handle_ = nullptr;
  std::string path_;
  std::vector<std::string> missing_optional_;
};

}  // namespace ipcheck::cuda_api
