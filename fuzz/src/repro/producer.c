// Part 3 of 5 of the CUDA program 'ipcheck fuzz --export-c' writes (see cuda.c): the
// campaign's set-up (allocations, or events under TARGET_EVENT) and the producer process.
// Leading lines that start with // (these notes) are not copied.
static CUcontext contexts[8];
static int device_count;

static int init_cuda(void) {
  if (!load_cuda()) return 0;
  if (!ok("cuInit(0)", cu.cuInit(0))) return 0;
  if (!ok("cuDeviceGetCount", cu.cuDeviceGetCount(&device_count))) return 0;
  if (device_count <= 0) {
    snprintf(error_text, sizeof error_text, "%s: no CUDA device", role);
    return 0;
  }
  if (device_count > 8) device_count = 8;
  for (int i = 0; i < device_count; ++i) {
    CUdevice d;
    if (!ok("cuDeviceGet", cu.cuDeviceGet(&d, i))) return 0;
    if (!ok("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(&contexts[i], d))) return 0;
  }
  if (!ok("cuCtxSetCurrent(device 0)", cu.cuCtxSetCurrent(contexts[0]))) return 0;
  /* The campaign's processes run each kind of call once before their set-up (ipcheck's
     cuda adapter warm-up), so that allocations land where they landed in the campaign. */
  unsigned char bytes[4096];
  memset(bytes, 0x5a, sizeof bytes);
  CUdeviceptr p = 0;
  if (cu.cuMemAlloc_v2(&p, sizeof bytes) == 0) {
    CUipcMemHandle h;
    cu.cuMemcpyHtoD_v2(p, bytes, sizeof bytes);
    cu.cuMemcpyDtoH_v2(bytes, p, sizeof bytes);
    cu.cuIpcGetMemHandle(&h, p);
    if (!ok("cuCtxSynchronize after the warm-up's device memory", cu.cuCtxSynchronize())) return 0;
    cu.cuMemFree_v2(p);
  }
  void *host = NULL;
  if (cu.cuMemAllocHost_v2(&host, sizeof bytes) == 0) cu.cuMemFreeHost(host);
  CUevent ev = NULL;
  if (cu.cuEventCreate(&ev, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING) == 0) {
    CUipcEventHandle eh;
    cu.cuIpcGetEventHandle(&eh, ev);
    cu.cuEventRecord(ev, NULL);
    cu.cuEventSynchronize(ev);
    cu.cuEventDestroy_v2(ev);
  }
  return ok("cuCtxSynchronize after the warm-up", cu.cuCtxSynchronize());
}

#if !TARGET_EVENT
/* Allocates and fills one role's set-up; exports as the campaign does. */
static int build_setup(const struct alloc_spec *specs, int n, int side, CUdeviceptr *ptrs, struct alloc_state *table,
                       struct producer_report *exports) {
  for (int i = 0; i < n; ++i) {
    const struct alloc_spec *s = &specs[i];
    int device = s->device < device_count ? s->device : device_count - 1;
    char what[160];
    if (!ok("cuCtxSetCurrent", cu.cuCtxSetCurrent(contexts[device]))) return 0;
    snprintf(what, sizeof what, "allocating %s (%zu bytes)", s->name, s->bytes);
    if (s->kind == KIND_SHARED) {
      if (!ok(what, cu.cuMemAllocManaged(&ptrs[i], s->bytes, CU_MEM_ATTACH_GLOBAL))) return 0;
    } else if (s->kind == KIND_HOST) {
      void *h = NULL;
      if (!ok(what, cu.cuMemAllocHost_v2(&h, s->bytes))) return 0;
      ptrs[i] = (CUdeviceptr)(uintptr_t)h;
    } else if (!ok(what, cu.cuMemAlloc_v2(&ptrs[i], s->bytes))) {
      return 0;
    }
    table[i].name = s->name;
    table[i].salt = salt_of(side, i);
    table[i].size = s->bytes;
    table[i].decoy = s->decoy;
    table[i].n_live = 0;
    unsigned char *fill = malloc(s->bytes);
    if (!fill) return 0;
    fill_canary(table[i].salt, fill, s->bytes);
    snprintf(what, sizeof what, "filling %s", s->name);
    int filled = ok(what, cu.cuMemcpyHtoD_v2(ptrs[i], fill, s->bytes)) && ok(what, cu.cuCtxSynchronize());
    free(fill);
    if (!filled) return 0;
    for (int e = 0; e < s->n_exports; ++e) {
      CUipcMemHandle h;
      CUresult r = cu.cuIpcGetMemHandle(&h, ptrs[i] + s->offsets[e]);
      if (r != 0 && s->kind != KIND_DEVICE) {  /* CUDA exports no managed memory: one more decoy */
        printf("[%s] %s is not exported: cuIpcGetMemHandle answered %s (a decoy, as in the campaign)\n", role, s->name,
               err_name(r));
        table[i].decoy = 1;
        break;
      }
      snprintf(what, sizeof what, "cuIpcGetMemHandle(%s + %llu)", s->name, (unsigned long long)s->offsets[e]);
      if (!ok(what, r)) return 0;
      int k = exports->n_exports++;
      exports->export_alloc[k] = i;
      exports->export_offset[k] = s->offsets[e];
      memcpy(exports->handles[k], h.reserved, 64);
      exports->handle_len = 64;
      exports->exported[i] = 1;
      uint64_t size = s->bytes - s->offsets[e];
      if (SIZE_FIELD_OFFSET >= 0) size = load64(h.reserved + SIZE_FIELD_OFFSET, SIZE_FIELD_WIDTH);
      table[i].live[table[i].n_live].offset = s->offsets[e];
      table[i].live[table[i].n_live++].size = size;
    }
  }
  return ok("cuCtxSetCurrent(device 0)", cu.cuCtxSetCurrent(contexts[0]));
}

/* ---- the producer: exports, reports, then keeps everything alive until told ------- */
static int producer_main(int report_fd, int stop_fd) {
  role = "producer";
  static struct producer_report rep;
  static CUdeviceptr ptrs[MAX_ALLOCS];
  static struct alloc_state table[MAX_ALLOCS];
  memset(&rep, 0, sizeof rep);
  rep.pid = (int)getpid();
  rep.ok = init_cuda() && build_setup(producer_allocs, N_PRODUCER_ALLOCS, 0, ptrs, table, &rep);
  if (!rep.ok) snprintf(rep.error, sizeof rep.error, "%s", error_text);
  for (int i = 0; rep.ok && i < N_PRODUCER_ALLOCS; ++i)
    printf("[producer] %-20s %6zu bytes at %#llx%s\n", producer_allocs[i].name, producer_allocs[i].bytes,
           (unsigned long long)ptrs[i], table[i].decoy ? "  (never exported)" : "");
  fflush(stdout);
  if (write(report_fd, &rep, sizeof rep) != (ssize_t)sizeof rep) return 2;
  char c;
  while (read(stop_fd, &c, 1) > 0) {
  }
  _exit(0);  /* the allocations die with the process */
}
#else
/* ---- events: complete, or pending behind a gate the host never opens --------------- */
static uint32_t *gate_host;
static CUdeviceptr gate_dev;

static int make_gates(void) {
  void *host = NULL;
  if (!ok("cuMemHostAlloc(4096 bytes, CU_MEMHOSTALLOC_DEVICEMAP) for the event gates",
          cu.cuMemHostAlloc(&host, 4096, CU_MEMHOSTALLOC_DEVICEMAP)))
    return 0;
  memset(host, 0, 4096);
  gate_host = host;
  return ok("cuMemHostGetDevicePointer for the event gates", cu.cuMemHostGetDevicePointer_v2(&gate_dev, host, 0));
}

/* One role's events, in the campaign's order: exported unless decoys. With `complete_live`
   (the producer) a live export is recorded on an idle stream and completes; every other
   event is recorded on its own stream behind a wait for a gate word that stays 0, so it
   stays pending, as ipcheck's cuda adapter makes every IPC event until it is signaled. */
static int build_events(const struct event_spec *specs, int n, int complete_live, CUevent *events,
                        struct producer_report *exports) {
  for (int i = 0; i < n; ++i) {
    char what[160];
    snprintf(what, sizeof what, "cuEventCreate(%s, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING)", specs[i].name);
    if (!ok(what, cu.cuEventCreate(&events[i], CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING))) return 0;
    if (!specs[i].decoy) {
      CUipcEventHandle h;
      snprintf(what, sizeof what, "cuIpcGetEventHandle(%s)", specs[i].name);
      if (!ok(what, cu.cuIpcGetEventHandle(&h, events[i]))) return 0;
      int k = exports->n_exports++;
      exports->export_alloc[k] = i;
      exports->export_offset[k] = 0;
      memcpy(exports->handles[k], h.reserved, 64);
      exports->handle_len = 64;
      exports->exported[i] = 1;
    }
    if (complete_live && !specs[i].decoy) {
      snprintf(what, sizeof what, "cuEventRecord(%s) on an idle stream", specs[i].name);
      /* cuEventSynchronize, not cuCtxSynchronize: the context also holds the gated streams. */
      if (!ok(what, cu.cuEventRecord(events[i], NULL)) || !ok("cuEventSynchronize", cu.cuEventSynchronize(events[i]))) return 0;
      continue;
    }
    CUstream stream;
    if (!ok("cuStreamCreate(CU_STREAM_NON_BLOCKING) for a gate", cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING))) return 0;
    if (!ok("cuStreamWaitValue32 on a gate",
            cu.cuStreamWaitValue32_v2(stream, gate_dev + 4 * (CUdeviceptr)i, 1, CU_STREAM_WAIT_VALUE_GEQ)))
      return 0;
    snprintf(what, sizeof what, "cuEventRecord(%s) behind its gate", specs[i].name);
    if (!ok(what, cu.cuEventRecord(events[i], stream))) return 0;
  }
  return 1;
}

/* ---- the producer: exports, reports, then keeps everything alive until told ------- */
static int producer_main(int report_fd, int stop_fd) {
  role = "producer";
  static struct producer_report rep;
  static CUevent events[MAX_ALLOCS];
  memset(&rep, 0, sizeof rep);
  rep.pid = (int)getpid();
  rep.ok = init_cuda() && make_gates() && build_events(producer_events, N_PRODUCER_EVENTS, 1, events, &rep);
  if (!rep.ok) snprintf(rep.error, sizeof rep.error, "%s", error_text);
  for (int i = 0; rep.ok && i < N_PRODUCER_EVENTS; ++i)
    printf("[producer] %-20s %s\n", producer_events[i].name,
           producer_events[i].decoy ? "pending, never exported" : "exported, complete");
  fflush(stdout);
  if (write(report_fd, &rep, sizeof rep) != (ssize_t)sizeof rep) return 2;
  char c;
  while (read(stop_fd, &c, 1) > 0) {
  }
  if (gate_host)
    for (int i = 0; i < 1024; ++i) gate_host[i] = 1;  /* the pending records may run before the events go */
  _exit(0);
}
#endif

