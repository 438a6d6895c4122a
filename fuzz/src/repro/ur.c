// Part 1 of 4 of the Unified Runtime program 'ipcheck fuzz --export-c' writes (the CUDA one:
// see cuda.c): the UR entry points it calls, declared here (no UR headers needed) and loaded
// from libur_loader.so.0 with dlopen, the command line (which loader, which backend), the
// error helpers, the runtime's set-up and the device read the oracle uses. It is followed by
// common.c, ur_roles.c and parent.c. Leading lines that start with // (these notes) are not
// copied.
/* ---- Unified Runtime, declared here (no UR headers needed) ------------------------- */
typedef int32_t ur_result_t; /* the enum's values, as ur_api.h numbers them */
typedef void *ur_adapter_handle_t;
typedef void *ur_platform_handle_t;
typedef void *ur_device_handle_t;
typedef void *ur_context_handle_t;
typedef void *ur_queue_handle_t;
#define UR_RESULT_SUCCESS 0
#define UR_ADAPTER_INFO_BACKEND 0u
#define UR_DEVICE_TYPE_ALL 2u
#define UR_BACKEND_LEVEL_ZERO 1u
#define UR_BACKEND_CUDA 3u
#define UMF_HEADER_BYTES 40 /* UMF's umf_ipc_data_t before the memory provider's bytes */

static struct {
  ur_result_t (*urLoaderInit)(uint32_t, void *);
  ur_result_t (*urAdapterGet)(uint32_t, ur_adapter_handle_t *, uint32_t *);
  ur_result_t (*urAdapterGetInfo)(ur_adapter_handle_t, uint32_t, size_t, void *, size_t *);
  ur_result_t (*urPlatformGet)(ur_adapter_handle_t, uint32_t, ur_platform_handle_t *, uint32_t *);
  ur_result_t (*urDeviceGet)(ur_platform_handle_t, uint32_t, uint32_t, ur_device_handle_t *, uint32_t *);
  ur_result_t (*urContextCreate)(uint32_t, const ur_device_handle_t *, const void *, ur_context_handle_t *);
  ur_result_t (*urQueueCreate)(ur_context_handle_t, ur_device_handle_t, const void *, ur_queue_handle_t *);
  ur_result_t (*urEnqueueUSMMemcpy)(ur_queue_handle_t, bool, void *, const void *, size_t, uint32_t, const void *,
                                    void *);
  ur_result_t (*urUSMDeviceAlloc)(ur_context_handle_t, ur_device_handle_t, const void *, void *, size_t, void **);
  ur_result_t (*urUSMHostAlloc)(ur_context_handle_t, const void *, void *, size_t, void **);
  ur_result_t (*urUSMSharedAlloc)(ur_context_handle_t, ur_device_handle_t, const void *, void *, size_t, void **);
  ur_result_t (*urIPCGetMemHandleExp)(ur_context_handle_t, void *, void **, size_t *);
  ur_result_t (*urIPCPutMemHandleExp)(ur_context_handle_t, void *);
  ur_result_t (*urIPCOpenMemHandleExp)(ur_context_handle_t, ur_device_handle_t, void *, size_t, void **);
  ur_result_t (*urIPCCloseMemHandleExp)(ur_context_handle_t, void *);
} ur;

static const char *role = "main";
static char error_text[512];

/* What the program runs on: the finding's backend and Level Zero adapter unless the command
   line chooses others, and the loader it names. */
static const char *backend = FINDING_BACKEND;
static const char *l0_adapter = FINDING_L0;
static const char *loader_path = "libur_loader.so.0";

static const char *err_name(ur_result_t r) {
  static char buf[48];
  switch (r) {
    case 0: return "UR_RESULT_SUCCESS";
    case 1: return "UR_RESULT_ERROR_INVALID_OPERATION";
    case 4: return "UR_RESULT_ERROR_INVALID_VALUE";
    case 5: return "UR_RESULT_ERROR_INVALID_CONTEXT";
    case 11: return "UR_RESULT_ERROR_INVALID_MEM_OBJECT";
    case 20: return "UR_RESULT_ERROR_DEVICE_LOST";
    case 37: return "UR_RESULT_ERROR_UNINITIALIZED";
    case 38: return "UR_RESULT_ERROR_OUT_OF_HOST_MEMORY";
    case 39: return "UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY";
    case 44: return "UR_RESULT_ERROR_UNSUPPORTED_FEATURE";
    case 45: return "UR_RESULT_ERROR_INVALID_ARGUMENT";
    case 46: return "UR_RESULT_ERROR_INVALID_NULL_HANDLE";
    case 48: return "UR_RESULT_ERROR_INVALID_NULL_POINTER";
    case 49: return "UR_RESULT_ERROR_INVALID_SIZE";
    case 50: return "UR_RESULT_ERROR_UNSUPPORTED_SIZE";
    case 53: return "UR_RESULT_ERROR_INVALID_ENUMERATION";
    case 64: return "UR_RESULT_ERROR_INVALID_USM_SIZE";
    case 66: return "UR_RESULT_ERROR_ADAPTER_SPECIFIC";
    case 0x7ffffffe: return "UR_RESULT_ERROR_UNKNOWN";
  }
  snprintf(buf, sizeof buf, "ur_result_t %d", (int)r);
  return buf;
}

/* Records the first failure of a set-up step; returns 0 on failure, 1 on success. */
static int ok(const char *what, ur_result_t r) {
  if (r == UR_RESULT_SUCCESS) return 1;
  if (!error_text[0]) snprintf(error_text, sizeof error_text, "%s: %s answered %s", role, what, err_name(r));
  return 0;
}

/* The command line: [--backend level_zero|cuda] [--l0 v1|v2] [LOADER]; LOADER (or
   REPRO_UR_LOADER) names libur_loader.so.0, by default found on the library path. */
static int parse_args(int argc, char **argv) {
  const char *env = getenv("REPRO_UR_LOADER");
  if (env && *env) loader_path = env;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
      backend = argv[++i];
      if (strcmp(backend, "level_zero") != 0 && strcmp(backend, "cuda") != 0) {
        printf("--backend %s: use level_zero or cuda\n", backend);
        return 0;
      }
    } else if (strcmp(argv[i], "--l0") == 0 && i + 1 < argc) {
      l0_adapter = argv[++i];
      if (strcmp(l0_adapter, "v1") != 0 && strcmp(l0_adapter, "v2") != 0) {
        printf("--l0 %s: use v1 or v2 (UR's Level Zero adapters)\n", l0_adapter);
        return 0;
      }
    } else if (argv[i][0] != '-') {
      loader_path = argv[i];
    } else {
      printf("usage: %s [--backend level_zero|cuda] [--l0 v1|v2] [path/to/libur_loader.so.0]\n"
             "  (the finding's: --backend %s%s%s; REPRO_UR_LOADER also names the loader)\n",
             argv[0], FINDING_BACKEND, FINDING_L0[0] ? " --l0 " : "", FINDING_L0);
      return 0;
    }
  }
  if (strcmp(backend, "cuda") == 0) l0_adapter = "";
  else if (!l0_adapter[0]) l0_adapter = "v2";
  /* Another runtime's handle has other provider bytes after UMF's header: only changes to
     the header mean the same there. */
  if (strcmp(backend, FINDING_BACKEND) != 0 || strcmp(l0_adapter, FINDING_L0) != 0)
    for (const struct patch *c = patches; c->offset >= 0; ++c)
      if (c->offset + c->width > UMF_HEADER_BYTES) {
        printf("the finding changes %s, past UMF's %d-byte header: those bytes are %s's%s%s, not %s%s%s's; run it "
               "without --backend/--l0\n",
               c->what, UMF_HEADER_BYTES, FINDING_BACKEND, FINDING_L0[0] ? " " : "", FINDING_L0, backend,
               l0_adapter[0] ? " " : "", l0_adapter);
        return 0;
      }
  printf("runtime  Unified Runtime (%s), backend %s%s%s\n", loader_path, backend, l0_adapter[0] ? ", Level Zero " : "",
         l0_adapter);
  return 1;
}

static int load_ur(void) {
  void *lib = dlopen(loader_path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(error_text, sizeof error_text, "%s: cannot load %s: %s (give its path as the argument, or on "
             "LD_LIBRARY_PATH)", role, loader_path, dlerror());
    return 0;
  }
#define LOAD(name)                                                                                   \
  do {                                                                                               \
    *(void **)(&ur.name) = dlsym(lib, #name);                                                        \
    if (!ur.name) {                                                                                  \
      snprintf(error_text, sizeof error_text, "%s: %s has no %s", role, loader_path, #name);        \
      return 0;                                                                                      \
    }                                                                                                \
  } while (0)
  LOAD(urLoaderInit); LOAD(urAdapterGet); LOAD(urAdapterGetInfo); LOAD(urPlatformGet); LOAD(urDeviceGet);
  LOAD(urContextCreate); LOAD(urQueueCreate); LOAD(urEnqueueUSMMemcpy); LOAD(urUSMDeviceAlloc);
  LOAD(urUSMHostAlloc); LOAD(urUSMSharedAlloc); LOAD(urIPCGetMemHandleExp); LOAD(urIPCPutMemHandleExp);
  LOAD(urIPCOpenMemHandleExp); LOAD(urIPCCloseMemHandleExp);
#undef LOAD
  return 1;
}

/* ---- the runtime, as ipcheck's ur adapter sets it up ----------------------------- */
static ur_context_handle_t context;
static ur_device_handle_t devices[8];
static ur_queue_handle_t queues[8];
static int device_count;

/* The backend's first platform with devices, a context of all its devices (as the adapter
   makes it), and a queue on each. */
static int init_ur(void) {
  if (strcmp(backend, "level_zero") == 0)  /* UR's loader reads it at urLoaderInit */
    setenv("UR_LOADER_USE_LEVEL_ZERO_V2", strcmp(l0_adapter, "v2") == 0 ? "1" : "0", 1);
  if (!load_ur()) return 0;
  if (!ok("urLoaderInit", ur.urLoaderInit(0, NULL))) return 0;
  ur_adapter_handle_t adapters[8];
  uint32_t n_adapters = 0;
  if (!ok("urAdapterGet", ur.urAdapterGet(8, adapters, &n_adapters))) return 0;
  const uint32_t want = strcmp(backend, "cuda") == 0 ? UR_BACKEND_CUDA : UR_BACKEND_LEVEL_ZERO;
  for (uint32_t i = 0; i < n_adapters && i < 8 && device_count == 0; ++i) {
    uint32_t b = 0;
    ur_platform_handle_t platform = NULL;
    uint32_t n = 0, nd = 0;
    if (ur.urAdapterGetInfo(adapters[i], UR_ADAPTER_INFO_BACKEND, sizeof b, &b, NULL) != UR_RESULT_SUCCESS || b != want)
      continue;
    if (ur.urPlatformGet(adapters[i], 1, &platform, &n) != UR_RESULT_SUCCESS || n == 0) continue;
    if (ur.urDeviceGet(platform, UR_DEVICE_TYPE_ALL, 8, devices, &nd) != UR_RESULT_SUCCESS || nd == 0) continue;
    device_count = nd > 8 ? 8 : (int)nd;
  }
  if (device_count == 0) {
    snprintf(error_text, sizeof error_text, "%s: Unified Runtime has no %s platform with a device (%u adapter(s) loaded%s)", role,
             backend, n_adapters,
             want == UR_BACKEND_LEVEL_ZERO ? "; a Level Zero driver: ZE_ENABLE_ALT_DRIVERS, the Level Zero loader on "
                                            "LD_LIBRARY_PATH" : "; the CUDA adapter and driver");
    return 0;
  }
  if (!ok("urContextCreate", ur.urContextCreate((uint32_t)device_count, devices, NULL, &context))) return 0;
  for (int i = 0; i < device_count; ++i)
    if (!ok("urQueueCreate", ur.urQueueCreate(context, devices[i], NULL, &queues[i]))) return 0;
  return 1;
}

/* A blocking copy through device `device`'s queue; NULL, or what UR answered. */
static const char *copy_on(int device, void *dst, const void *src, size_t n) {
  static char why[160];
  ur_result_t r = ur.urEnqueueUSMMemcpy(queues[device], true, dst, src, n, 0, NULL, NULL);
  if (r == UR_RESULT_SUCCESS) return NULL;
  snprintf(why, sizeof why, "urEnqueueUSMMemcpy answered %s", err_name(r));
  return why;
}

/* The oracle's device read (common.c): opened mappings are on device 0. */
static const char *dev_read(uint64_t address, void *out, size_t n) {
  return copy_on(0, out, (const void *)(uintptr_t)address, n);
}
