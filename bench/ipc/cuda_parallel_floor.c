/* ipcheck-bench-cuda-floor: the floor of CUDA IPC opens when several processes open at once.
 *
 *   ipcheck-bench-cuda-floor [--procs N] [--seconds S] [--library PATH]
 *
 * A producer allocates a 4-KiB buffer (cuMemAlloc) and exports it (cuIpcGetMemHandle); N
 * consumer processes each open and close that handle (cuIpcOpenMemHandle with
 * CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS, cuIpcCloseMemHandle) in a loop for S seconds, with
 * nothing else: no oracle, no checks. Prints one JSON line: the processes, the pairs done in
 * all and per process, the rate in all and per process, and the median time of one pair.
 * This is what `ipcheck fuzz -j N` on cuda is held against: the driver's own cost of N
 * processes opening at once. libcuda is loaded with dlopen; no CUDA headers are needed.
 * Exit status: 0 measured, 1 a CUDA call failed (named on stderr), 2 usage, 77 no GPU.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef unsigned long long CUdeviceptr;
typedef struct {
  unsigned char reserved[64];
} CUipcMemHandle;

static struct {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuMemAlloc_v2)(CUdeviceptr *, size_t);
  CUresult (*cuIpcGetMemHandle)(CUipcMemHandle *, CUdeviceptr);
  CUresult (*cuIpcOpenMemHandle_v2)(CUdeviceptr *, CUipcMemHandle, unsigned);
  CUresult (*cuIpcCloseMemHandle)(CUdeviceptr);
} cu;

/* Shared between the processes (MAP_SHARED | MAP_ANONYMOUS before fork). */
struct Shared {
  CUipcMemHandle handle;
  volatile int exported; /* 1 exported, -1 the producer failed */
  volatile int ready;    /* consumers set up */
  volatile int go;       /* 1: start, 2: stop */
  struct {
    unsigned long long pairs;
    double median_us;
    int failed;
  } worker[256];
};

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int ok(const char *what, CUresult r) {
  if (r == 0) return 1;
  fprintf(stderr, "ipcheck-bench-cuda-floor: %s answered CUDA error %d\n", what, r);
  return 0;
}

static int load(const char *library) {
  void *lib = dlopen(library ? library : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "ipcheck-bench-cuda-floor: no libcuda here (%s)\n", dlerror());
    return 0;
  }
#define LOAD(name)                                                               \
  do {                                                                           \
    *(void **)(&cu.name) = dlsym(lib, #name);                                    \
    if (!cu.name) {                                                              \
      fprintf(stderr, "ipcheck-bench-cuda-floor: libcuda lacks %s\n", #name);    \
      return 0;                                                                  \
    }                                                                            \
  } while (0)
  LOAD(cuInit); LOAD(cuDeviceGetCount); LOAD(cuDeviceGet); LOAD(cuDevicePrimaryCtxRetain);
  LOAD(cuCtxSetCurrent); LOAD(cuMemAlloc_v2); LOAD(cuIpcGetMemHandle); LOAD(cuIpcOpenMemHandle_v2);
  LOAD(cuIpcCloseMemHandle);
#undef LOAD
  return 1;
}

static int context(void) {
  CUdevice d;
  CUcontext c;
  return ok("cuInit", cu.cuInit(0)) && ok("cuDeviceGet", cu.cuDeviceGet(&d, 0)) &&
         ok("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(&c, d)) && ok("cuCtxSetCurrent", cu.cuCtxSetCurrent(c));
}

static int by_value(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void consumer(struct Shared *s, int k) {
  if (!context()) {
    s->worker[k].failed = 1;
    __sync_fetch_and_add(&s->ready, 1);
    _exit(1);
  }
  __sync_fetch_and_add(&s->ready, 1);
  while (s->go == 0) usleep(100);
  enum { kSamples = 4096 };
  static double sample[kSamples];
  unsigned long long n = 0;
  while (s->go == 1) {
    CUdeviceptr p = 0;
    const double t = now_s();
    if (!ok("cuIpcOpenMemHandle", cu.cuIpcOpenMemHandle_v2(&p, s->handle, 1)) ||
        !ok("cuIpcCloseMemHandle", cu.cuIpcCloseMemHandle(p))) {
      s->worker[k].failed = 1;
      break;
    }
    sample[n % kSamples] = (now_s() - t) * 1e6;
    ++n;
  }
  const size_t m = n < kSamples ? (size_t)n : kSamples;
  qsort(sample, m, sizeof sample[0], by_value);
  s->worker[k].pairs = n;
  s->worker[k].median_us = m ? sample[m / 2] : 0;
  _exit(s->worker[k].failed);
}

int main(int argc, char **argv) {
  int procs = 1;
  double seconds = 5;
  const char *library = NULL;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--procs") && i + 1 < argc) procs = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atof(argv[++i]);
    else if (!strcmp(argv[i], "--library") && i + 1 < argc) library = argv[++i];
    else {
      fprintf(stderr, "usage: ipcheck-bench-cuda-floor [--procs N (1-256)] [--seconds S] [--library PATH]; '%s' is not one of them\n", argv[i]);
      return 2;
    }
  }
  if (procs < 1 || procs > 256 || !(seconds > 0)) {
    fprintf(stderr, "ipcheck-bench-cuda-floor: --procs is %d and --seconds %g; give 1 to 256 processes and seconds above 0\n", procs, seconds);
    return 2;
  }
  if (!load(library)) return 77;
  struct Shared *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (s == MAP_FAILED) return 1;
  memset(s, 0, sizeof *s);
  /* The producer: its own process, so that no consumer shares its context. */
  pid_t producer = fork();
  if (producer == 0) {
    int count = 0;
    CUdeviceptr p = 0;
    if (!ok("cuInit", cu.cuInit(0)) || !ok("cuDeviceGetCount", cu.cuDeviceGetCount(&count)) || count < 1) {
      s->exported = -77;
      _exit(77);
    }
    if (!context() || !ok("cuMemAlloc", cu.cuMemAlloc_v2(&p, 4096)) || !ok("cuIpcGetMemHandle", cu.cuIpcGetMemHandle(&s->handle, p))) {
      s->exported = -1;
      _exit(1);
    }
    s->exported = 1;
    while (s->go != 2) usleep(1000);
    _exit(0);
  }
  while (s->exported == 0) usleep(1000);
  if (s->exported < 0) {
    waitpid(producer, NULL, 0);
    if (s->exported == -77) fprintf(stderr, "ipcheck-bench-cuda-floor: no GPU here\n");
    return s->exported == -77 ? 77 : 1;
  }
  pid_t pids[256];
  for (int k = 0; k < procs; ++k)
    if ((pids[k] = fork()) == 0) consumer(s, k);
  while (s->ready < procs) usleep(1000);
  const double t0 = now_s();
  s->go = 1;
  usleep((useconds_t)(seconds * 1e6));
  s->go = 2;
  int failed = 0;
  for (int k = 0; k < procs; ++k) {
    int st = 0;
    waitpid(pids[k], &st, 0);
    failed |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
  }
  const double elapsed = now_s() - t0;
  waitpid(producer, NULL, 0);
  unsigned long long total = 0;
  double medians[256];
  for (int k = 0; k < procs; ++k) {
    total += s->worker[k].pairs;
    medians[k] = s->worker[k].median_us;
  }
  qsort(medians, (size_t)procs, sizeof medians[0], by_value);
  printf("{\"procs\": %d, \"seconds\": %.3f, \"pairs\": %llu, \"pairs_per_s\": %.1f, \"pairs_per_s_per_proc\": %.1f, "
         "\"median_pair_us\": %.2f, \"failed\": %s}\n",
         procs, elapsed, total, total / elapsed, total / elapsed / procs, medians[procs / 2], failed ? "true" : "false");
  return failed ? 1 : 0;
}
