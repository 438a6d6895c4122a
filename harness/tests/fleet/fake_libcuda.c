/* A stand-in for NVIDIA's libcuda.so.1 that has no GPU: for the CTest of resource groups
 * (resource_groups.cmake), which puts it first on LD_LIBRARY_PATH. cuInit writes what the
 * process saw (CUDA_VISIBLE_DEVICES, its pid, when it started and ended) to a file in
 * $IPCHECK_FAKE_CUDA_LOG, sleeps $IPCHECK_FAKE_CUDA_SLEEP_MS (default 1500) so that tests run
 * side by side overlap, and answers CUDA_ERROR_NO_DEVICE: every case skips, as on a machine
 * without a GPU. Every other function the cuda adapter looks up exists and answers the same. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define CUDA_ERROR_NO_DEVICE 100

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

int cuInit(unsigned int flags) {
  (void)flags;
  const long long start = now_ns();
  const char* ms = getenv("IPCHECK_FAKE_CUDA_SLEEP_MS");
  const long wait_ms = ms ? atol(ms) : 1500;
  struct timespec d = {wait_ms / 1000, (wait_ms % 1000) * 1000000L};
  while (nanosleep(&d, &d) != 0) {
  }
  const char* dir = getenv("IPCHECK_FAKE_CUDA_LOG");
  if (dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/cuinit-%d.txt", dir, (int)getpid());
    FILE* f = fopen(path, "w");
    if (f) {
      const char* visible = getenv("CUDA_VISIBLE_DEVICES");
      fprintf(f, "CUDA_VISIBLE_DEVICES=%s\nSTART_NS=%lld\nEND_NS=%lld\n", visible ? visible : "(unset)", start, now_ns());
      fclose(f);
    }
  }
  return CUDA_ERROR_NO_DEVICE;
}

#define NO_DEVICE(name) \
  int name(void) { return CUDA_ERROR_NO_DEVICE; }
NO_DEVICE(cuDriverGetVersion)
NO_DEVICE(cuGetErrorName)
NO_DEVICE(cuGetErrorString)
NO_DEVICE(cuDeviceGetCount)
NO_DEVICE(cuDeviceGet)
NO_DEVICE(cuDeviceGetName)
NO_DEVICE(cuDeviceGetAttribute)
NO_DEVICE(cuDevicePrimaryCtxRetain)
NO_DEVICE(cuDevicePrimaryCtxRelease_v2)
NO_DEVICE(cuCtxSetCurrent)
NO_DEVICE(cuCtxSynchronize)
NO_DEVICE(cuMemGetInfo_v2)
NO_DEVICE(cuMemAlloc_v2)
NO_DEVICE(cuMemFree_v2)
NO_DEVICE(cuMemAllocHost_v2)
NO_DEVICE(cuMemFreeHost)
NO_DEVICE(cuMemcpyHtoD_v2)
NO_DEVICE(cuMemcpyDtoH_v2)
NO_DEVICE(cuIpcGetMemHandle)
NO_DEVICE(cuIpcOpenMemHandle_v2)
NO_DEVICE(cuIpcCloseMemHandle)
NO_DEVICE(cuEventCreate)
NO_DEVICE(cuEventRecord)
NO_DEVICE(cuEventQuery)
NO_DEVICE(cuEventSynchronize)
NO_DEVICE(cuEventDestroy_v2)
NO_DEVICE(cuIpcGetEventHandle)
NO_DEVICE(cuIpcOpenEventHandle)
