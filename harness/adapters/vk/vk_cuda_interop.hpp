// CUDA imports a Vulkan export (cuImportExternalMemory of an OPAQUE_FD descriptor): the vk
// adapter's native("cuda_import"). libcuda is loaded at run time through the cuda adapter's
// loader, so the build needs no CUDA; without a driver the call answers not_implemented.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ipcheck/adapter.hpp"

namespace ipcheck::vk {

struct CudaImportRequest {
  int fd = -1;                  // the caller's descriptor; a successful import owns it
  std::uint64_t size = 0;       // the Vulkan allocation's size (the whole payload)
  std::uint64_t offset = 0;     // where the bytes to check start
  std::size_t bytes = 0;        // how many to check and write
  bool dedicated = false;       // the Vulkan allocation was dedicated (CUDA_EXTERNAL_MEMORY_DEDICATED)
  std::uint8_t uuid[16] = {};   // the Vulkan device's deviceUUID: the CUDA device must be the same GPU
  std::uint64_t read_seed = 0;  // the bytes must hold pattern(read_seed)
  std::uint64_t write_seed = 0; // then get pattern(write_seed)
};

Outcome cuda_import(const CudaImportRequest& req);

}  // namespace ipcheck::vk
