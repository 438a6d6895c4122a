/* ipcheck-bench-cuda-floor: the floor of CUDA IPC opens when several processes open at once.
 *
 *   ipcheck-bench-cuda-floor [--procs N] [--seconds S] [--read BYTES] [--exports N] [--churn N]
 *                            [--probe none|read|sync|closed] [--library PATH]
 *
 * A producer allocates a 4-KiB buffer (cuMemAlloc) and exports it (cuIpcGetMemHandle); N
 * consumer processes each open and close that handle (cuIpcOpenMemHandle with
 * CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS, cuIpcCloseMemHandle) in a loop for S seconds, with
 * nothing else: no oracle, no checks. Prints one JSON line: the processes, the pairs done in
 * all and per process, the rate in all and per process, and the median time of one pair
 * and of each step in it.
 * This is what `ipcheck fuzz -j N` on cuda is held against: the driver's own cost of N
 * processes opening at once. libcuda is loaded with dlopen; no CUDA headers are needed.
 *
 * What a fuzz oracle must add to a pair, measured the same way: --read BYTES copies the first
 * BYTES of each mapping to the host (cuMemcpyDtoH) between open and close (at most 4096);
 * --probe read then copies 8 bytes of the consumer's own allocation after the close (the
 * campaign's context check), --probe sync calls cuCtxSynchronize there instead, --probe closed
 * copies 1 byte of the mapping just closed (the campaign's leak check; it must fail).
 * --exports N: the producer exports N allocations and each consumer opens them in turn, as a
 * campaign's inputs do, rather than one handle again and again. --churn N: N more processes
 * meanwhile start a CUDA context, allocate and exit, again and again (what a campaign's
 * standby and retired workers do), to show what that costs the pair.
 * Exit status: 0 measured, 1 a CUDA call failed (named on stderr), 2 usage, 77 no GPU.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdarg.h>
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
  CUresult (*cuMemcpyDtoH_v2)(void *, CUdeviceptr, size_t);
  CUresult (*cuCtxSynchronize)(void);
} cu;

enum Probe { kProbeNone, kProbeRead, kProbeSync, kProbeClosed };
static size_t g_read;        /* --read */
static int g_exports = 1;    /* --exports: allocations exported, opened in turn */
static int g_churn;          /* --churn: processes starting and ending CUDA contexts meanwhile */
static enum Probe g_probe;   /* --probe */

/* Shared between the processes (MAP_SHARED | MAP_ANONYMOUS before fork). */
struct Shared {
  CUipcMemHandle handle[64];
  volatile int exported; /* 1 exported, -1 the producer failed */
  volatile int ready;    /* consumers set up */
  volatile int go;       /* 1: start, 2: stop */
  struct {
    unsigned long long pairs;
    double median_us;
    double median_step_us[4]; /* open, read, close, probe */
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
  LOAD(cuIpcCloseMemHandle); LOAD(cuMemcpyDtoH_v2); LOAD(cuCtxSynchronize);
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

static double median_of(double *v, size_t n) {
  if (n == 0) return 0;
  qsort(v, n, sizeof v[0], by_value);
  return v[n / 2];
}

/* One pair and what --read and --probe add; each step's time in step[]. */
static int one_pair(struct Shared *s, CUdeviceptr own, unsigned long long n, double step[4]) {
  static unsigned char host[4096];
  CUdeviceptr p = 0;
  double t = now_s(), u;
  if (!ok("cuIpcOpenMemHandle", cu.cuIpcOpenMemHandle_v2(&p, s->handle[n % (unsigned)g_exports], 1))) return 0;
  u = now_s(), step[0] = (u - t) * 1e6, t = u;
  if (g_read && !ok("cuMemcpyDtoH of the mapping", cu.cuMemcpyDtoH_v2(host, p, g_read))) return 0;
  u = now_s(), step[1] = (u - t) * 1e6, t = u;
  if (!ok("cuIpcCloseMemHandle", cu.cuIpcCloseMemHandle(p))) return 0;
  u = now_s(), step[2] = (u - t) * 1e6, t = u;
  if (g_probe == kProbeRead && !ok("cuMemcpyDtoH of the own allocation", cu.cuMemcpyDtoH_v2(host, own, 8))) return 0;
  if (g_probe == kProbeSync && !ok("cuCtxSynchronize", cu.cuCtxSynchronize())) return 0;
  if (g_probe == kProbeClosed && cu.cuMemcpyDtoH_v2(host, p, 1) == 0) {
    fprintf(stderr, "ipcheck-bench-cuda-floor: a read of the closed mapping succeeded\n");
    return 0;
  }
  step[3] = (now_s() - t) * 1e6;
  return 1;
}

static void consumer(struct Shared *s, int k) {
  CUdeviceptr own = 0;
  if (!context() || !ok("cuMemAlloc", cu.cuMemAlloc_v2(&own, 4096))) {
    s->worker[k].failed = 1;
    __sync_fetch_and_add(&s->ready, 1);
    _exit(1);
  }
  __sync_fetch_and_add(&s->ready, 1);
  while (s->go == 0) usleep(100);
  enum { kSamples = 4096 };
  static double sample[kSamples], steps[4][kSamples];
  unsigned long long n = 0;
  while (s->go == 1) {
    double step[4];
    const double t = now_s();
    if (!one_pair(s, own, n, step)) {
      s->worker[k].failed = 1;
      break;
    }
    sample[n % kSamples] = (now_s() - t) * 1e6;
    for (int i = 0; i < 4; ++i) steps[i][n % kSamples] = step[i];
    ++n;
  }
  const size_t m = n < kSamples ? (size_t)n : kSamples;
  s->worker[k].pairs = n;
  s->worker[k].median_us = median_of(sample, m);
  for (int i = 0; i < 4; ++i) s->worker[k].median_step_us[i] = median_of(steps[i], m);
  _exit(s->worker[k].failed);
}

/* --churn: what a campaign's standby and retired workers do beside the one that fuzzes: a
 * process sets up a CUDA context, allocates, and exits, again and again. */
static void churner(struct Shared *s) {
  while (s->go != 2) {
    const pid_t c = fork();
    if (c == 0) {
      CUdeviceptr p = 0;
      _exit(context() && ok("cuMemAlloc", cu.cuMemAlloc_v2(&p, 4096)) ? 0 : 1);
    }
    if (c > 0) waitpid(c, NULL, 0);
  }
  _exit(0);
}

static int g_procs = 1;         /* --procs */
static double g_seconds = 5;   /* --seconds */
static const char *g_library;  /* --library */

#define OPTIONS                                                                                      \
  "options: --procs N (1-256), --seconds S, --read BYTES (0-4096), --exports N (1-64), --churn N (0-16), " \
  "--probe none|read|sync|closed, --library PATH"

/* One line on stderr, "ipcheck-bench-cuda-floor: " and the printf-formatted rest; returns 2. */
__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("ipcheck-bench-cuda-floor: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return 2;
}

/* The command line into the g_ options: 0, or 2 with the bad one named on stderr. */
static int parse_args(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) return usage_error("'%s' is not an option or lacks its value; " OPTIONS, a);
    ++i;
    if (!strcmp(a, "--procs")) g_procs = atoi(v);
    else if (!strcmp(a, "--seconds")) g_seconds = atof(v);
    else if (!strcmp(a, "--library")) g_library = v;
    else if (!strcmp(a, "--exports")) g_exports = atoi(v);
    else if (!strcmp(a, "--churn")) g_churn = atoi(v);
    else if (!strcmp(a, "--read")) g_read = (size_t)strtoul(v, NULL, 10);
    else if (!strcmp(a, "--probe") && !strcmp(v, "none")) g_probe = kProbeNone;
    else if (!strcmp(a, "--probe") && !strcmp(v, "read")) g_probe = kProbeRead;
    else if (!strcmp(a, "--probe") && !strcmp(v, "sync")) g_probe = kProbeSync;
    else if (!strcmp(a, "--probe") && !strcmp(v, "closed")) g_probe = kProbeClosed;
    else if (!strcmp(a, "--probe"))
      return usage_error("--probe is '%s'; give none, read (8 bytes of the own allocation), sync (cuCtxSynchronize) "
                         "or closed (1 byte of the closed mapping, which must fail)", v);
    else
      return usage_error("'%s' is not an option; " OPTIONS, a);
  }
  if (g_churn < 0 || g_churn > 16)
    return usage_error("--churn is %d; give 0 to 16 processes that start and end contexts", g_churn);
  if (g_exports < 1 || g_exports > 64)
    return usage_error("--exports is %d; give 1 to 64 allocations to open in turn", g_exports);
  if (g_read > 4096)
    return usage_error("--read is %zu bytes; the export is 4096, give 0 to 4096", g_read);
  if (g_procs < 1 || g_procs > 256 || !(g_seconds > 0))
    return usage_error("--procs is %d and --seconds %g; give 1 to 256 processes and seconds above 0", g_procs, g_seconds);
  return 0;
}

/* The producer: its own process, so that no consumer shares its context. */
static void producer(struct Shared *s) {
  int count = 0;
  CUdeviceptr p = 0;
  if (!ok("cuInit", cu.cuInit(0)) || !ok("cuDeviceGetCount", cu.cuDeviceGetCount(&count)) || count < 1) {
    s->exported = -77;
    _exit(77);
  }
  int made = context();
  for (int k = 0; made && k < g_exports; ++k)
    made = ok("cuMemAlloc", cu.cuMemAlloc_v2(&p, 4096)) && ok("cuIpcGetMemHandle", cu.cuIpcGetMemHandle(&s->handle[k], p));
  if (!made) {
    s->exported = -1;
    _exit(1);
  }
  s->exported = 1;
  while (s->go != 2) usleep(1000);
  _exit(0);
}

/* One JSON line: the totals and the medians over the consumers' medians. */
static void report(const struct Shared *s, double elapsed, int failed) {
  unsigned long long total = 0;
  double medians[256], step[4][256];
  for (int k = 0; k < g_procs; ++k) {
    total += s->worker[k].pairs;
    medians[k] = s->worker[k].median_us;
    for (int i = 0; i < 4; ++i) step[i][k] = s->worker[k].median_step_us[i];
  }
  static const char *const probe_name[] = {"none", "read", "sync", "closed"};
  const size_t n = (size_t)g_procs;
  printf("{\"procs\": %d, \"seconds\": %.3f, \"exports\": %d, \"churn\": %d, \"read\": %zu, \"probe\": \"%s\", \"pairs\": %llu, \"pairs_per_s\": %.1f, "
         "\"pairs_per_s_per_proc\": %.1f, \"median_pair_us\": %.2f, \"median_open_us\": %.2f, \"median_read_us\": %.2f, "
         "\"median_close_us\": %.2f, \"median_probe_us\": %.2f, \"failed\": %s}\n",
         g_procs, elapsed, g_exports, g_churn, g_read, probe_name[g_probe], total, total / elapsed, total / elapsed / g_procs,
         median_of(medians, n), median_of(step[0], n), median_of(step[1], n), median_of(step[2], n), median_of(step[3], n),
         failed ? "true" : "false");
}

int main(int argc, char **argv) {
  if (parse_args(argc, argv)) return 2;
  if (!load(g_library)) return 77;
  struct Shared *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (s == MAP_FAILED) return 1;
  memset(s, 0, sizeof *s);
  const pid_t made = fork();
  if (made == 0) producer(s);
  while (s->exported == 0) usleep(1000);
  if (s->exported < 0) {
    waitpid(made, NULL, 0);
    if (s->exported == -77) fprintf(stderr, "ipcheck-bench-cuda-floor: no GPU here\n");
    return s->exported == -77 ? 77 : 1;
  }
  pid_t pids[256], churn[16];
  for (int k = 0; k < g_procs; ++k)
    if ((pids[k] = fork()) == 0) consumer(s, k);
  while (s->ready < g_procs) usleep(1000);
  for (int k = 0; k < g_churn; ++k)
    if ((churn[k] = fork()) == 0) churner(s);
  const double t0 = now_s();
  s->go = 1;
  usleep((useconds_t)(g_seconds * 1e6));
  s->go = 2;
  for (int k = 0; k < g_churn; ++k) waitpid(churn[k], NULL, 0);
  int failed = 0;
  for (int k = 0; k < g_procs; ++k) {
    int st = 0;
    waitpid(pids[k], &st, 0);
    failed |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
  }
  const double elapsed = now_s() - t0;
  waitpid(made, NULL, 0);
  report(s, elapsed, failed);
  return failed ? 1 : 0;
}
