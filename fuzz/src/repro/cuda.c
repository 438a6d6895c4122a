// Part 1 of 5 of the CUDA program 'ipcheck fuzz --export-c' writes: the CUDA driver API,
// declared here (no CUDA headers needed) and loaded with dlopen, the error helpers and the
// device read the oracle uses. fuzz/src/export_c.cpp writes the program's opening (what the
// finding is, the headers, the finding as data: FINDING_ID, TARGET_EVENT, the set-up tables,
// patches[]); these parts follow it, byte for byte, in the order fuzz/CMakeLists.txt lists them
// (embed.cmake): cuda.c, common.c, producer.c, consumer.c, parent.c. (Unified Runtime's
// program: ur.c, common.c, ur_roles.c, parent.c.) Leading lines that start with // (these
// notes) are not copied.
/* ---- CUDA driver API, declared here (no CUDA headers needed) ---------------------- */
typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUevent;
typedef void *CUstream;
typedef unsigned long long CUdeviceptr;
typedef struct { unsigned char reserved[64]; } CUipcMemHandle;
typedef struct { unsigned char reserved[64]; } CUipcEventHandle;
#define CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS 0x1u
#define CU_MEM_ATTACH_GLOBAL 0x1u
#define CU_EVENT_DISABLE_TIMING 0x2u
#define CU_EVENT_INTERPROCESS 0x4u
#define CU_STREAM_NON_BLOCKING 0x1u
#define CU_STREAM_WAIT_VALUE_GEQ 0x0u
#define CU_MEMHOSTALLOC_DEVICEMAP 0x2u
#define CUDA_ERROR_NOT_READY 600

static struct {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxSynchronize)(void);
  CUresult (*cuMemAlloc_v2)(CUdeviceptr *, size_t);
  CUresult (*cuMemAllocManaged)(CUdeviceptr *, size_t, unsigned);
  CUresult (*cuMemAllocHost_v2)(void **, size_t);
  CUresult (*cuMemFree_v2)(CUdeviceptr);
  CUresult (*cuMemFreeHost)(void *);
  CUresult (*cuMemcpyHtoD_v2)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH_v2)(void *, CUdeviceptr, size_t);
  CUresult (*cuIpcGetMemHandle)(CUipcMemHandle *, CUdeviceptr);
  CUresult (*cuIpcOpenMemHandle_v2)(CUdeviceptr *, CUipcMemHandle, unsigned);
  CUresult (*cuIpcCloseMemHandle)(CUdeviceptr);
  CUresult (*cuEventCreate)(CUevent *, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventDestroy_v2)(CUevent);
  CUresult (*cuIpcGetEventHandle)(CUipcEventHandle *, CUevent);
#if TARGET_EVENT
  CUresult (*cuEventQuery)(CUevent);
  CUresult (*cuIpcOpenEventHandle)(CUevent *, CUipcEventHandle);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamWaitValue32_v2)(CUstream, CUdeviceptr, uint32_t, unsigned);
  CUresult (*cuMemHostAlloc)(void **, size_t, unsigned);
  CUresult (*cuMemHostGetDevicePointer_v2)(CUdeviceptr *, void *, unsigned);
#endif
} cu;

static const char *role = "main";
static char error_text[512];

static const char *err_name(CUresult r) {
  const char *name = NULL;
  static char buf[32];
  if (cu.cuGetErrorName && cu.cuGetErrorName(r, &name) == 0 && name) return name;
  snprintf(buf, sizeof buf, "CUresult %d", r);
  return buf;
}

/* Records the first failure of a set-up step; returns 0 on failure, 1 on success. */
static int ok(const char *what, CUresult r) {
  if (r == 0) return 1;
  if (!error_text[0]) snprintf(error_text, sizeof error_text, "%s: %s answered %s", role, what, err_name(r));
  return 0;
}

static int load_cuda(void) {
  const char *path = getenv("REPRO_LIBCUDA");
  void *lib = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(error_text, sizeof error_text, "%s: cannot load %s: %s", role, path && *path ? path : "libcuda.so.1", dlerror());
    return 0;
  }
#define LOAD(name)                                                                                 \
  do {                                                                                             \
    *(void **)(&cu.name) = dlsym(lib, #name);                                                      \
    if (!cu.name) {                                                                                \
      snprintf(error_text, sizeof error_text, "%s: the driver library has no %s", role, #name);  \
      return 0;                                                                                    \
    }                                                                                              \
  } while (0)
  LOAD(cuGetErrorName); LOAD(cuInit); LOAD(cuDeviceGetCount); LOAD(cuDeviceGet);
  LOAD(cuDevicePrimaryCtxRetain); LOAD(cuCtxSetCurrent); LOAD(cuCtxSynchronize);
  LOAD(cuMemAlloc_v2); LOAD(cuMemAllocManaged); LOAD(cuMemAllocHost_v2); LOAD(cuMemFree_v2);
  LOAD(cuMemFreeHost); LOAD(cuMemcpyHtoD_v2); LOAD(cuMemcpyDtoH_v2); LOAD(cuIpcGetMemHandle);
  LOAD(cuIpcOpenMemHandle_v2); LOAD(cuIpcCloseMemHandle); LOAD(cuEventCreate); LOAD(cuEventRecord);
  LOAD(cuEventSynchronize); LOAD(cuEventDestroy_v2); LOAD(cuIpcGetEventHandle);
#if TARGET_EVENT
  LOAD(cuEventQuery); LOAD(cuIpcOpenEventHandle); LOAD(cuStreamCreate); LOAD(cuStreamWaitValue32_v2);
  LOAD(cuMemHostAlloc); LOAD(cuMemHostGetDevicePointer_v2);
#endif
#undef LOAD
  return 1;
}


#if !TARGET_EVENT
/* The oracle's device read (common.c): NULL, or what the driver answered. */
static const char *dev_read(uint64_t address, void *out, size_t n) {
  static char why[160];
  CUresult r = cu.cuMemcpyDtoH_v2(out, (CUdeviceptr)address, n);
  if (r == 0) return NULL;
  snprintf(why, sizeof why, "cuMemcpyDtoH answered %s", err_name(r));
  return why;
}
#endif

/* The command line: none (REPRO_LIBCUDA names another driver library). */
static int parse_args(int argc, char **argv) {
  if (argc <= 1) return 1;
  printf("usage: %s   (no arguments; REPRO_LIBCUDA=/path/to/libcuda.so.1 names another driver library)\n", argv[0]);
  return 0;
}
