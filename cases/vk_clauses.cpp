// The vk profile: clauses from the Vulkan specification's external-memory chapter and its
// valid-usage rules (VK_KHR_external_memory_fd, VK_KHR_external_semaphore_fd), judged on the
// `vk` adapter. The sycl and rb clauses that apply to Vulkan run through the shared catalog.
#include "ipcheck/clause.hpp"

namespace ipcheck {
namespace {

#define VK_SPEC "Vulkan 1.3 specification, "
#define VK_MAN "https://registry.khronos.org/vulkan/specs/1.3-extensions/man/html/"

const ClauseRegistration vk_catalog{{
    {"vk.mem.export.fd", Level::must, VK_SPEC "vkGetMemoryFdKHR (" VK_MAN "vkGetMemoryFdKHR.html)",
     "each call to vkGetMemoryFdKHR must create a new file descriptor holding a reference to the memory object's "
     "payload; where the operating system supports it the implementation must set it to close on execve", "",
     "Vulkan 1.3, vkGetMemoryFdKHR: \"Each call to vkGetMemoryFdKHR must create a new file descriptor holding a reference to the memory object's payload\""},
    {"vk.mem.import.distinct", Level::must, VK_SPEC "VkImportMemoryFdInfoKHR (" VK_MAN "VkImportMemoryFdInfoKHR.html)",
     "the same payload may be imported multiple times into one instance; each import operation must create a distinct "
     "VkDeviceMemory object (two imports: two objects sharing one payload, each freed on its own)", "",
     "Vulkan 1.3, VkImportMemoryFdInfoKHR: \"Importing the same payload multiple times ... each import operation must create a distinct VkDeviceMemory object\""},
    {"vk.mem.import.payload_reference", Level::must,
     VK_SPEC "VkImportMemoryFdInfoKHR (" VK_MAN "VkImportMemoryFdInfoKHR.html)",
     "the imported memory object holds a reference to its payload: it stays readable after the exporter freed its "
     "memory object and closed its descriptor", "",
     "Vulkan 1.3, External Memory: an imported memory object holds \"a reference to its payload\" (VkImportMemoryFdInfoKHR)"},
    {"vk.mem.import.consumes_fd", Level::must, VK_SPEC "VkImportMemoryFdInfoKHR (" VK_MAN "VkImportMemoryFdInfoKHR.html)",
     "importing memory from a file descriptor transfers ownership of the descriptor to the implementation: after a "
     "successful import and vkFreeMemory the process holds no descriptor of it", "",
     "Vulkan 1.3, VkImportMemoryFdInfoKHR: \"Importing memory from a file descriptor transfers ownership of the file descriptor from the application to the Vulkan implementation.\""},
    {"vk.mem.import.failed_keeps_fd", Level::must,
     "VK_KHR_external_memory_fd, issue 1 (" VK_MAN "VK_KHR_external_memory_fd.html) and VkImportMemoryFdInfoKHR",
     "only a successful import transfers the descriptor to the driver (\"a successful import transfers it back to the "
     "driver\"): after a failed import the descriptor is still open and the application's to close", "",
     "VK_KHR_external_memory_fd, issue 1: \"a successful import transfers it back to the driver\" (only a successful one)"},
    {"vk.mem.import.invalid_handle", Level::must,
     VK_SPEC "VkExternalMemoryHandleTypeFlagBits, external memory handle types compatibility (" VK_MAN
             "VkExternalMemoryHandleTypeFlagBits.html); VkResult (" VK_MAN "VkResult.html)",
     "an import of a descriptor that is not a memory export of this driver and device (a plain memfd as OPAQUE_FD; an "
     "OPAQUE_FD export as DMA_BUF) fails with VK_ERROR_INVALID_EXTERNAL_HANDLE, never maps it", "",
     "Vulkan 1.3, VkResult: \"VK_ERROR_INVALID_EXTERNAL_HANDLE: An external handle is not a valid handle of the specified type.\""},
    {"vk.mem.import.match", Level::observe,
     VK_SPEC "VkMemoryAllocateInfo, VUID-VkMemoryAllocateInfo-allocationSize-01742 (" VK_MAN "VkMemoryAllocateInfo.html)",
     "allocationSize and memoryTypeIndex of an OPAQUE_FD import must match those of the export (the application's duty; "
     "undefined otherwise): what the driver does with a size a page larger or smaller, or another memory type", "",
     "Vulkan 1.3, VUID-VkMemoryAllocateInfo-allocationSize-01742: allocationSize and memoryTypeIndex of an OPAQUE_FD import \"must match those specified when the payload being imported was created\" (the application's duty: observed)"},
    {"vk.sem.import.shared", Level::must,
     VK_SPEC "VkImportSemaphoreFdInfoKHR (" VK_MAN "VkImportSemaphoreFdInfoKHR.html), timeline semaphores",
     "a timeline semaphore exported with vkGetSemaphoreFdKHR (OPAQUE_FD) and imported in another process shares its "
     "payload: a host signal (vkSignalSemaphore) on either side is seen by the other's counter value and wait", "",
     "Vulkan 1.3, VkImportSemaphoreFdInfoKHR: importing a payload makes the semaphore share it with the exporter (timeline semaphores: signal and wait through either)"},
    {"vk.cuda.import", Level::must,
     "CUDA driver API, cuImportExternalMemory (https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EXTRES__INTEROP.html) "
     "with Vulkan's VK_KHR_external_memory_fd",
     "CUDA imports a Vulkan OPAQUE_FD memory export of the same GPU (cuImportExternalMemory, "
     "cuExternalMemoryGetMappedBuffer) and sees Vulkan's bytes; Vulkan sees CUDA's writes", "",
     "CUDA Driver API reference, cuImportExternalMemory: \"Imports an externally allocated memory object and returns a handle to that in extMem_out.\" (CU_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD)"},
}};

#undef VK_SPEC
#undef VK_MAN

}  // namespace
}  // namespace ipcheck
