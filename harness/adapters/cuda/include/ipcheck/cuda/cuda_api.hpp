// The few CUDA driver API facts the `cuda` adapter uses, declared by hand so that ipcheck
// builds without CUDA's headers and never links libcuda: opaque types, the enum values
// passed in calls, and the signatures looked up with dlsym. Layouts and values follow the
// CUDA driver API reference (13.0); where a call has versioned symbols, the name given is
// the one libcuda exports for the current ABI (`cuMemAlloc` is exported as `cuMemAlloc_v2`).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ipcheck::cuda_api {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUmemGenericAllocationHandle = unsigned long long;
struct CUctx_st;
struct CUstream_st;
struct CUevent_st;
using CUcontext = CUctx_st*;
using CUstream = CUstream_st*;
using CUevent = CUevent_st*;

// Result codes the adapter maps onto ipcheck's Errc or treats specially. Names come from
// cuGetErrorName; this list also names them where the driver cannot (the toolkit's stub).
#define IPCHECK_CUDA_RESULTS(X) \
  X(CUDA_SUCCESS, 0) \
  X(CUDA_ERROR_INVALID_VALUE, 1) \
  X(CUDA_ERROR_OUT_OF_MEMORY, 2) \
  X(CUDA_ERROR_NOT_INITIALIZED, 3) \
  X(CUDA_ERROR_DEINITIALIZED, 4) \
  X(CUDA_ERROR_STUB_LIBRARY, 34) \
  X(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, 36) \
  X(CUDA_ERROR_DEVICE_UNAVAILABLE, 46) \
  X(CUDA_ERROR_NO_DEVICE, 100) \
  X(CUDA_ERROR_INVALID_DEVICE, 101) \
  X(CUDA_ERROR_DEVICE_NOT_LICENSED, 102) \
  X(CUDA_ERROR_INVALID_CONTEXT, 201) \
  X(CUDA_ERROR_MAP_FAILED, 205) \
  X(CUDA_ERROR_UNMAP_FAILED, 206) \
  X(CUDA_ERROR_ALREADY_MAPPED, 208) \
  X(CUDA_ERROR_NOT_MAPPED, 211) \
  X(CUDA_ERROR_ECC_UNCORRECTABLE, 214) \
  X(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, 217) \
  X(CUDA_ERROR_OPERATING_SYSTEM, 304) \
  X(CUDA_ERROR_INVALID_HANDLE, 400) \
  X(CUDA_ERROR_ILLEGAL_STATE, 401) \
  X(CUDA_ERROR_NOT_FOUND, 500) \
  X(CUDA_ERROR_NOT_READY, 600) \
  X(CUDA_ERROR_ILLEGAL_ADDRESS, 700) \
  X(CUDA_ERROR_HARDWARE_STACK_ERROR, 714) \
  X(CUDA_ERROR_ILLEGAL_INSTRUCTION, 715) \
  X(CUDA_ERROR_MISALIGNED_ADDRESS, 716) \
  X(CUDA_ERROR_INVALID_ADDRESS_SPACE, 717) \
  X(CUDA_ERROR_INVALID_PC, 718) \
  X(CUDA_ERROR_LAUNCH_FAILED, 719) \
  X(CUDA_ERROR_CONTEXT_IS_DESTROYED, 709) \
  X(CUDA_ERROR_NOT_PERMITTED, 800) \
  X(CUDA_ERROR_NOT_SUPPORTED, 801) \
  X(CUDA_ERROR_SYSTEM_NOT_READY, 802) \
  X(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, 803) \
  X(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, 804) \
  X(CUDA_ERROR_TIMEOUT, 909) \
  X(CUDA_ERROR_UNKNOWN, 999)

enum : CUresult {
#define IPCHECK_CUDA_RESULT_ENUM(name, value) name = value,
  IPCHECK_CUDA_RESULTS(IPCHECK_CUDA_RESULT_ENUM)
#undef IPCHECK_CUDA_RESULT_ENUM
};

// The name of a code in IPCHECK_CUDA_RESULTS, or null.
const char* known_result_name(CUresult r);

inline constexpr std::size_t kIpcHandleSize = 64;  // CU_IPC_HANDLE_SIZE
struct CUipcMemHandle {
  char reserved[kIpcHandleSize];
};
struct CUipcEventHandle {
  char reserved[kIpcHandleSize];
};
struct CUuuid {
  char bytes[16];
};

inline constexpr unsigned kIpcMemLazyEnablePeerAccess = 0x1;  // CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
inline constexpr unsigned kEventDisableTiming = 0x2;          // CU_EVENT_DISABLE_TIMING
inline constexpr unsigned kEventInterprocess = 0x4;           // CU_EVENT_INTERPROCESS
inline constexpr unsigned kMemAttachGlobal = 0x1;             // CU_MEM_ATTACH_GLOBAL
inline constexpr unsigned kEventDefault = 0x0;                // CU_EVENT_DEFAULT
inline constexpr unsigned kStreamNonBlocking = 0x1;           // CU_STREAM_NON_BLOCKING
inline constexpr unsigned kStreamWaitValueGeq = 0x0;          // CU_STREAM_WAIT_VALUE_GEQ
inline constexpr unsigned kMemHostAllocDeviceMap = 0x2;       // CU_MEMHOSTALLOC_DEVICEMAP
inline constexpr unsigned kMemHostAllocPortable = 0x1;        // CU_MEMHOSTALLOC_PORTABLE

// CUdevice_attribute values.
enum CUdevice_attribute : int {
  kAttrPciBusId = 33,
  kAttrPciDeviceId = 34,
  kAttrUnifiedAddressing = 41,
  kAttrPciDomainId = 50,
  kAttrComputeCapabilityMajor = 75,
  kAttrComputeCapabilityMinor = 76,
  kAttrManagedMemory = 83,
  kAttrVirtualMemoryManagementSupported = 102,
  kAttrHandleTypePosixFileDescriptorSupported = 103,
  kAttrIpcEventSupported = 125,
};

// Virtual memory management (cuMemCreate and friends).
enum CUmemAllocationHandleType : int { kMemHandleTypeNone = 0x0, kMemHandleTypePosixFd = 0x1 };
enum CUmemAllocationType : int { kMemAllocationTypePinned = 0x1 };
enum CUmemLocationType : int { kMemLocationTypeDevice = 0x1 };
enum CUmemAccess_flags : int { kMemAccessProtReadWrite = 0x3 };
enum CUmemAllocationGranularity_flags : int { kMemAllocGranularityMinimum = 0x0 };

struct CUmemLocation {
  CUmemLocationType type;
  int id;
};

struct CUmemAllocationProp {
  CUmemAllocationType type;
  CUmemAllocationHandleType requestedHandleTypes;
  CUmemLocation location;
  void* win32HandleMetaData;
  struct {
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
};

struct CUmemAccessDesc {
  CUmemLocation location;
  CUmemAccess_flags flags;
};

// External memory (Vulkan interop: the vk adapter's cuda_import).
struct CUextMemory_st;
using CUexternalMemory = CUextMemory_st*;
enum CUexternalMemoryHandleType : int { kExternalMemoryHandleTypeOpaqueFd = 1 };
inline constexpr unsigned kExternalMemoryDedicated = 0x1;  // CUDA_EXTERNAL_MEMORY_DEDICATED
struct CUDA_EXTERNAL_MEMORY_HANDLE_DESC {
  CUexternalMemoryHandleType type;
  union {
    int fd;
    struct {
      void* handle;
      const void* name;
    } win32;
    const void* nvSciBufObject;
  } handle;
  unsigned long long size;
  unsigned flags;
  unsigned reserved[16];
};
struct CUDA_EXTERNAL_MEMORY_BUFFER_DESC {
  unsigned long long offset;
  unsigned long long size;
  unsigned flags;
  unsigned reserved[16];
};
static_assert(sizeof(CUDA_EXTERNAL_MEMORY_HANDLE_DESC) == 104 && sizeof(CUDA_EXTERNAL_MEMORY_BUFFER_DESC) == 88);

static_assert(sizeof(CUipcMemHandle) == 64 && sizeof(CUipcEventHandle) == 64);
static_assert(sizeof(CUmemAllocationProp) == 32, "CUmemAllocationProp is 32 bytes on LP64");
static_assert(sizeof(CUmemAccessDesc) == 12);

// Signatures, by the name looked up in libcuda.
using PFN_cuInit = CUresult (*)(unsigned flags);
using PFN_cuDriverGetVersion = CUresult (*)(int* version);
using PFN_cuGetErrorName = CUresult (*)(CUresult error, const char** name);
using PFN_cuGetErrorString = CUresult (*)(CUresult error, const char** text);
using PFN_cuDeviceGetCount = CUresult (*)(int* count);
using PFN_cuDeviceGet = CUresult (*)(CUdevice* device, int ordinal);
using PFN_cuDeviceGetName = CUresult (*)(char* name, int len, CUdevice device);
using PFN_cuDeviceGetUuid_v2 = CUresult (*)(CUuuid* uuid, CUdevice device);
using PFN_cuDeviceGetAttribute = CUresult (*)(int* value, CUdevice_attribute attribute, CUdevice device);
using PFN_cuDevicePrimaryCtxRetain = CUresult (*)(CUcontext* ctx, CUdevice device);
using PFN_cuDevicePrimaryCtxRelease_v2 = CUresult (*)(CUdevice device);
using PFN_cuDevicePrimaryCtxReset_v2 = CUresult (*)(CUdevice device);
using PFN_cuCtxSetCurrent = CUresult (*)(CUcontext ctx);
using PFN_cuCtxSynchronize = CUresult (*)();
using PFN_cuCtxCreate_v2 = CUresult (*)(CUcontext* ctx, unsigned flags, CUdevice device);
using PFN_cuCtxDestroy_v2 = CUresult (*)(CUcontext ctx);
using PFN_cuCtxPushCurrent_v2 = CUresult (*)(CUcontext ctx);
using PFN_cuCtxPopCurrent_v2 = CUresult (*)(CUcontext* ctx);
using PFN_cuMemGetInfo_v2 = CUresult (*)(std::size_t* free, std::size_t* total);
using PFN_cuMemAlloc_v2 = CUresult (*)(CUdeviceptr* ptr, std::size_t bytes);
using PFN_cuMemFree_v2 = CUresult (*)(CUdeviceptr ptr);
using PFN_cuMemAllocHost_v2 = CUresult (*)(void** ptr, std::size_t bytes);
using PFN_cuMemFreeHost = CUresult (*)(void* ptr);
using PFN_cuMemAllocManaged = CUresult (*)(CUdeviceptr* ptr, std::size_t bytes, unsigned flags);
using PFN_cuMemcpyHtoD_v2 = CUresult (*)(CUdeviceptr dst, const void* src, std::size_t bytes);
using PFN_cuMemcpyDtoH_v2 = CUresult (*)(void* dst, CUdeviceptr src, std::size_t bytes);
using PFN_cuIpcGetMemHandle = CUresult (*)(CUipcMemHandle* handle, CUdeviceptr ptr);
using PFN_cuIpcOpenMemHandle_v2 = CUresult (*)(CUdeviceptr* ptr, CUipcMemHandle handle, unsigned flags);
using PFN_cuIpcCloseMemHandle = CUresult (*)(CUdeviceptr ptr);
using PFN_cuEventCreate = CUresult (*)(CUevent* event, unsigned flags);
using PFN_cuEventRecord = CUresult (*)(CUevent event, CUstream stream);
using PFN_cuEventQuery = CUresult (*)(CUevent event);
using PFN_cuEventSynchronize = CUresult (*)(CUevent event);
using PFN_cuEventDestroy_v2 = CUresult (*)(CUevent event);
using PFN_cuIpcGetEventHandle = CUresult (*)(CUipcEventHandle* handle, CUevent event);
using PFN_cuIpcOpenEventHandle = CUresult (*)(CUevent* event, CUipcEventHandle handle);
using PFN_cuStreamCreate = CUresult (*)(CUstream* stream, unsigned flags);
using PFN_cuStreamDestroy_v2 = CUresult (*)(CUstream stream);
using PFN_cuStreamSynchronize = CUresult (*)(CUstream stream);
using PFN_cuStreamQuery = CUresult (*)(CUstream stream);
using PFN_cuStreamWaitValue32_v2 = CUresult (*)(CUstream stream, CUdeviceptr addr, std::uint32_t value, unsigned flags);
using PFN_cuMemHostAlloc = CUresult (*)(void** ptr, std::size_t bytes, unsigned flags);
using PFN_cuMemHostGetDevicePointer_v2 = CUresult (*)(CUdeviceptr* dptr, void* p, unsigned flags);
using PFN_cuMemCreate = CUresult (*)(CUmemGenericAllocationHandle* handle, std::size_t bytes,
                                     const CUmemAllocationProp* prop, unsigned long long flags);
using PFN_cuMemRelease = CUresult (*)(CUmemGenericAllocationHandle handle);
using PFN_cuMemExportToShareableHandle = CUresult (*)(void* shareable, CUmemGenericAllocationHandle handle,
                                                      CUmemAllocationHandleType type, unsigned long long flags);
using PFN_cuMemImportFromShareableHandle = CUresult (*)(CUmemGenericAllocationHandle* handle, void* os_handle,
                                                        CUmemAllocationHandleType type);
using PFN_cuMemGetAllocationGranularity = CUresult (*)(std::size_t* granularity, const CUmemAllocationProp* prop,
                                                       CUmemAllocationGranularity_flags option);
using PFN_cuMemGetAllocationPropertiesFromHandle = CUresult (*)(CUmemAllocationProp* prop,
                                                                CUmemGenericAllocationHandle handle);
using PFN_cuMemRetainAllocationHandle = CUresult (*)(CUmemGenericAllocationHandle* handle, void* addr);
using PFN_cuMemAddressReserve = CUresult (*)(CUdeviceptr* ptr, std::size_t bytes, std::size_t alignment,
                                             CUdeviceptr addr, unsigned long long flags);
using PFN_cuMemAddressFree = CUresult (*)(CUdeviceptr ptr, std::size_t bytes);
using PFN_cuMemMap = CUresult (*)(CUdeviceptr ptr, std::size_t bytes, std::size_t offset,
                                  CUmemGenericAllocationHandle handle, unsigned long long flags);
using PFN_cuMemUnmap = CUresult (*)(CUdeviceptr ptr, std::size_t bytes);
using PFN_cuMemSetAccess = CUresult (*)(CUdeviceptr ptr, std::size_t bytes, const CUmemAccessDesc* desc,
                                        std::size_t count);

using PFN_cuImportExternalMemory = CUresult (*)(CUexternalMemory* out, const CUDA_EXTERNAL_MEMORY_HANDLE_DESC* desc);
using PFN_cuExternalMemoryGetMappedBuffer = CUresult (*)(CUdeviceptr* ptr, CUexternalMemory mem,
                                                         const CUDA_EXTERNAL_MEMORY_BUFFER_DESC* desc);
using PFN_cuDestroyExternalMemory = CUresult (*)(CUexternalMemory mem);

}  // namespace ipcheck::cuda_api
