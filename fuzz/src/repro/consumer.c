// Part 3 of 4 of the C program 'ipcheck fuzz --export-c' writes (see cuda.c): the consumer
// process, which opens the finding's handle and judges it as ipcheck's oracle does.
// Leading lines that start with // (these notes) are not copied.
/* ---- the consumer: the open and the oracle ---------------------------------------- */
enum verdict { V_REJECTED, V_MAPPED, V_CRASH, V_HANG, V_FD_LEAK, V_MAPPING_LEAK, V_CONFUSED_DEPUTY, V_STALE_EXPORT,
               V_WRONG_OFFSET, V_WRONG_SIZE, V_UNKNOWN_MAPPING, V_CORRUPT_MAPPING, V_UNREADABLE_MAPPING,
               V_CLOSE_FAILED, V_CONTEXT_LOST, V_SETUP_ERROR };
static const char *verdict_names[] = {"rejected", "mapped", "crash", "hang", "fd_leak", "mapping_leak",
                                      "confused_deputy", "stale_export", "wrong_offset", "wrong_size",
                                      "unknown_mapping", "corrupt_mapping", "unreadable_mapping", "close_failed",
                                      "context_lost", "setup error"};

static struct producer_report from_producer;
static struct shared_page *page;
static pid_t dead_pid;
#if !TARGET_EVENT
static struct alloc_state table[2 * MAX_ALLOCS];
static int table_size;
#endif

static int lowest_free_fd(void) {
  int fd = fcntl(0, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) close(fd);
  return fd;
}

#if !TARGET_EVENT
/* Which allocation, from which offset, holds the 32 bytes read at `address`. */
static int identify(CUdeviceptr address, const unsigned char *head, uint64_t *offset) {
  int k = (int)((8 - (address & 7)) & 7);
  uint64_t w0 = load64(head + k, 8), w1 = load64(head + k + 8, 8);
  for (int i = 0; i < table_size; ++i) {
    uint64_t o = w0 - table[i].salt;
    if (o < table[i].size && o % 8 == 0 && w1 == w0 + 8 && o >= (uint64_t)k) {
      *offset = o - (uint64_t)k;
      return i;
    }
  }
  return -1;
}

static int judge(CUdeviceptr address, const unsigned char *handle, char *detail, size_t n) {
  unsigned char head[32];
  CUresult r = cu.cuMemcpyDtoH_v2(head, address, sizeof head);
  if (r != 0) {
    snprintf(detail, n, "cuIpcOpenMemHandle succeeded and returned %#llx, but cuMemcpyDtoH of its first 32 bytes answered %s",
             (unsigned long long)address, err_name(r));
    return V_UNREADABLE_MAPPING;
  }
  uint64_t offset = 0;
  int a = identify(address, head, &offset);
  if (a < 0) {
    snprintf(detail, n, "the mapping at %#llx holds no allocation's pattern (first 8 bytes %#llx)",
             (unsigned long long)address, (unsigned long long)load64(head, 8));
    return V_UNKNOWN_MAPPING;
  }
  if (table[a].decoy) {
    snprintf(detail, n, "the mapping holds %s from offset %llu: an allocation the producer never exported",
             table[a].name, (unsigned long long)offset);
    return V_CONFUSED_DEPUTY;
  }
  const struct range *e = NULL;
  for (int i = 0; i < table[a].n_live; ++i)
    if (table[a].live[i].offset == offset) e = &table[a].live[i];
  if (!e) {
    snprintf(detail, n, "the mapping holds %s from offset %llu, where no export starts", table[a].name,
             (unsigned long long)offset);
    return V_WRONG_OFFSET;
  }
  if (SIZE_FIELD_OFFSET >= 0) {
    uint64_t claimed = load64(handle + SIZE_FIELD_OFFSET, SIZE_FIELD_WIDTH);
    if (claimed != e->size) {
      snprintf(detail, n, "the mapping holds %s from offset %llu (an export of %llu bytes) for a handle claiming %llu bytes",
               table[a].name, (unsigned long long)offset, (unsigned long long)e->size, (unsigned long long)claimed);
      return V_WRONG_SIZE;
    }
  }
  unsigned char *got = malloc(e->size), *want = malloc(e->size + offset);
  if (!got || !want) {
    free(got);
    free(want);
    snprintf(detail, n, "out of host memory");
    return V_SETUP_ERROR;
  }
  int v = V_MAPPED;
  r = cu.cuMemcpyDtoH_v2(got, address, e->size);
  if (r != 0) {
    snprintf(detail, n, "the mapping holds %s from offset %llu, but cuMemcpyDtoH of the export's %llu bytes answered %s",
             table[a].name, (unsigned long long)offset, (unsigned long long)e->size, err_name(r));
    v = V_WRONG_SIZE;
  } else {
    fill_canary(table[a].salt, want, e->size + offset);
    for (uint64_t b = 0; b < e->size; ++b)
      if (got[b] != want[offset + b]) {
        snprintf(detail, n, "the mapping holds %s from offset %llu, but byte %llu of %llu differs from its pattern",
                 table[a].name, (unsigned long long)offset, (unsigned long long)b, (unsigned long long)e->size);
        v = V_CORRUPT_MAPPING;
        break;
      }
    if (v == V_MAPPED)
      snprintf(detail, n, "the mapping holds %s from offset %llu, all %llu bytes of the export", table[a].name,
               (unsigned long long)offset, (unsigned long long)e->size);
  }
  free(got);
  free(want);
  return v;
}

#endif

static void print_handle(const char *label, const unsigned char *h) {
  printf("[consumer] %-8s", label);
  for (int i = 0; i < 64; ++i) printf("%s%02x", i % 8 ? "" : " ", h[i]);
  printf("\n");
}

/* The input: a fresh handle of BASE_NAME with the finding's changes; 0 (and the page says
   why) when the set-up lacks an export a change takes its value from. */
static int apply_patches(const struct producer_report *own, const unsigned char *base, unsigned char *input) {
  memcpy(input, base, 64);
  for (const struct patch *c = patches; c->offset >= 0; ++c) {
    uint64_t v = c->literal;
    if (c->source == SRC_PRODUCER_EXPORT || c->source == SRC_WORKER_EXPORT) {
      const int count = c->source == SRC_PRODUCER_EXPORT ? from_producer.n_exports : own->n_exports;
      if (c->source_index >= count) {
        snprintf(page->detail, sizeof page->detail, "consumer: the set-up made no export #%d for %s", c->source_index, c->what);
        page->verdict = V_SETUP_ERROR;
        return 0;
      }
      const unsigned char *src = c->source == SRC_PRODUCER_EXPORT ? from_producer.handles[c->source_index]
                                                                  : own->handles[c->source_index];
      v = load64(src + c->source_offset, c->source_width);
    } else if (c->source == SRC_PRODUCER_PID) {
      v = (uint64_t)from_producer.pid;
    } else if (c->source == SRC_WORKER_PID) {
      v = (uint64_t)getpid();
    } else if (c->source == SRC_DEAD_PID) {
      v = (uint64_t)dead_pid;
    }
    store64(input + c->offset, c->width, v);
    printf("[consumer] %s\n", c->what);
  }
  return 1;
}

/* The page says the set-up failed, and why; the consumer's exit status. */
static int setup_failed(const char *why) {
  snprintf(page->detail, sizeof page->detail, "%s", why);
  page->verdict = V_SETUP_ERROR;
  return 2;
}

/* The input: the handle BASE_NAME names with the finding's changes, shown beside it; 0 (and
   the page says why) when the set-up lacks what it is made from. */
static int make_input(const struct producer_report *own, unsigned char *input) {
  if ((BASE_SIDE == 0 ? from_producer.n_exports : own->n_exports) <= BASE_INDEX) {
    snprintf(page->detail, sizeof page->detail, "consumer: the set-up made no %s", BASE_NAME);
    page->verdict = V_SETUP_ERROR;
    return 0;
  }
  const unsigned char *base = BASE_SIDE == 0 ? from_producer.handles[BASE_INDEX] : own->handles[BASE_INDEX];
  if (!apply_patches(own, base, input)) return 0;
  print_handle(BASE_NAME, base);
  print_handle("input", input);
  printf("[consumer] bytes changed:");
  for (int i = 0; i < 64; ++i)
    if (input[i] != base[i]) printf(" %d:%02x->%02x", i, base[i], input[i]);
  printf("\n");
  fflush(stdout);
  return 1;
}

/* The consumer's context no longer answers (`probe` says how it was asked): the verdict
   becomes context_lost, and its detail keeps what the open was judged before. */
static int context_lost(int v, char *detail, size_t n, const char *probe, CUresult health) {
  char before[1024];
  snprintf(before, sizeof before, "%s", detail);
  snprintf(detail, n, "after this open (%s: %.512s), %s answered %s: its context is lost", verdict_names[v], before,
           probe, err_name(health));
  return V_CONTEXT_LOST;
}

/* A clean verdict (rejected or mapped) becomes fd_leak when the lowest free descriptor is
   above `fd_floor`, the lowest before the open: the open (and `undo`, when it opened) left
   one behind. */
static int check_fd_leak(int v, int fd_floor, const char *undo, char *detail, size_t n) {
  if (v != V_REJECTED && v != V_MAPPED) return v;
  int floor = lowest_free_fd();
  if (floor <= fd_floor) return v;
  snprintf(detail, n, "descriptor %d was left open by the open%s", fd_floor, undo);
  return V_FD_LEAK;
}

/* The verdict and its detail, on the page for the parent; the consumer's exit status. */
static int report_verdict(int v, const char *detail) {
  snprintf(page->detail, sizeof page->detail, "%s", detail);
  page->verdict = v;
  page->stage = 3;
  return 0;
}

#if !TARGET_EVENT
/* What the producer's allocations hold and which are exported (the consumer knows the
   set-up, as the campaign's workers do). */
static void describe_producer_allocs(void) {
  for (int i = 0; i < N_PRODUCER_ALLOCS; ++i) {
    table[i].name = producer_allocs[i].name;
    table[i].salt = salt_of(0, i);
    table[i].size = producer_allocs[i].bytes;
    table[i].decoy = producer_allocs[i].decoy || !from_producer.exported[i];
    table[i].n_live = 0;
  }
  for (int k = 0; k < from_producer.n_exports; ++k) {
    struct alloc_state *a = &table[from_producer.export_alloc[k]];
    a->live[a->n_live].offset = from_producer.export_offset[k];
    a->live[a->n_live++].size = SIZE_FIELD_OFFSET >= 0 ? load64(from_producer.handles[k] + SIZE_FIELD_OFFSET, SIZE_FIELD_WIDTH)
                                                      : table[from_producer.export_alloc[k]].size - from_producer.export_offset[k];
  }
  table_size = N_PRODUCER_ALLOCS + N_WORKER_ALLOCS;
}

/* Calibration, as the campaign's workers do: each unchanged producer handle opened once;
   where CUDA maps it (an interior export maps its allocation's base) counts as the export. */
static void calibrate(const struct producer_report *own) {
  for (int k = 0; k < from_producer.n_exports; ++k) {
    CUipcMemHandle h;
    CUdeviceptr p = 0;
    memcpy(h.reserved, from_producer.handles[k], 64);
    CUresult r = cu.cuIpcOpenMemHandle_v2(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    if (r != 0) {
      printf("[consumer] unchanged producer.export[%d] does not open: %s\n", k, err_name(r));
      continue;
    }
    unsigned char head[32];
    uint64_t offset = 0;
    int a = cu.cuMemcpyDtoH_v2(head, p, sizeof head) == 0 ? identify(p, head, &offset) : -1;
    if (a >= 0 && !table[a].decoy) {
      int known = 0;
      for (int i = 0; i < table[a].n_live; ++i) known |= table[a].live[i].offset == offset;
      if (!known && table[a].n_live < 8) {
        table[a].live[table[a].n_live].offset = offset;
        table[a].live[table[a].n_live++].size = table[a].size - offset;
        printf("[consumer] calibration: unchanged producer.export[%d] maps %s from offset %llu\n", k, table[a].name,
               (unsigned long long)offset);
      }
    }
    cu.cuIpcCloseMemHandle(p);
  }
  for (int k = 0; k < own->n_exports; ++k) {  /* the campaign's workers try their own too */
    CUipcMemHandle h;
    CUdeviceptr p = 0;
    memcpy(h.reserved, own->handles[k], 64);
    if (cu.cuIpcOpenMemHandle_v2(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) == 0) cu.cuIpcCloseMemHandle(p);
  }
}

/* Opens the input (the page's stage says when the consumer is inside the open), judges what
   it maps and closes it; the verdict in `*verdict`, the open's answer returned. */
static CUresult open_and_judge(const unsigned char *input, int *verdict, char *detail, size_t n) {
  CUipcMemHandle h;
  CUdeviceptr p = 0;
  memcpy(h.reserved, input, 64);
  page->stage = 1;
  CUresult r = cu.cuIpcOpenMemHandle_v2(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
  page->stage = 2;
  if (r != 0) {
    *verdict = V_REJECTED;
    snprintf(detail, n, "cuIpcOpenMemHandle answered %s", err_name(r));
    return r;
  }
  int v = judge(p, input, detail, n);
  CUresult closed = cu.cuIpcCloseMemHandle(p);
  unsigned char probe;
  if (v == V_MAPPED && closed != 0) {
    v = V_CLOSE_FAILED;
    snprintf(detail, n, "cuIpcCloseMemHandle(%#llx) answered %s", (unsigned long long)p, err_name(closed));
  } else if (v == V_MAPPED && cu.cuMemcpyDtoH_v2(&probe, p, 1) == 0) {
    v = V_MAPPING_LEAK;
    snprintf(detail, n, "cuMemcpyDtoH still reads %#llx after cuIpcCloseMemHandle", (unsigned long long)p);
  }
  *verdict = v;
  return r;
}

static CUdeviceptr own_ptrs[MAX_ALLOCS];

/* The consumer's own allocations (exported, as the campaign's workers' are), then what it
   knows of the producer's, and the calibration; 0 when the set-up failed (error_text says). */
static int set_up_consumer(struct producer_report *own) {
  if (!init_cuda() || !build_setup(worker_allocs, N_WORKER_ALLOCS, 1, own_ptrs, table + N_PRODUCER_ALLOCS, own))
    return 0;
  describe_producer_allocs();
  calibrate(own);
  return 1;
}

/* Whether the consumer's context still answers: 0, or what a read of its own allocation
   answered. */
static CUresult context_health(void) {
  unsigned char word[8];
  return cu.cuMemcpyDtoH_v2(word, own_ptrs[0], sizeof word);
}
#define HEALTH_PROBE "a read of the consumer's own allocation"
#define UNDO_WORD " and close"
#else
/* Opens the input as an event (the page's stage says when the consumer is inside the open),
   judges its state and destroys it; the verdict in `*verdict`, the open's answer returned. */
static CUresult open_and_judge(const unsigned char *input, int *verdict, char *detail, size_t n) {
  CUipcEventHandle h;
  CUevent ev = NULL;
  memcpy(h.reserved, input, 64);
  page->stage = 1;
  CUresult r = cu.cuIpcOpenEventHandle(&ev, h);
  page->stage = 2;
  if (r != 0) {
    *verdict = V_REJECTED;
    snprintf(detail, n, "cuIpcOpenEventHandle answered %s", err_name(r));
    return r;
  }
  /* Every live export of the producer is complete; every other event of both processes
     (the producer's decoys, all of the consumer's own) is pending. */
  int v;
  CUresult q = cu.cuEventQuery(ev);
  if (q == 0) {
    v = V_MAPPED;
    snprintf(detail, n, "the opened event is complete, as every live export of the producer is");
  } else if (q == CUDA_ERROR_NOT_READY) {
    v = V_CONFUSED_DEPUTY;
    snprintf(detail, n, "the opened event is pending (cuEventQuery answered CUDA_ERROR_NOT_READY): every live "
             "export of the producer is complete, so it is an event this consumer was never given");
  } else {
    v = V_UNREADABLE_MAPPING;
    snprintf(detail, n, "cuIpcOpenEventHandle succeeded, but cuEventQuery of the opened event answered %s",
             err_name(q));
  }
  CUresult closed = cu.cuEventDestroy_v2(ev);
  if (v == V_MAPPED && closed != 0) {
    v = V_CLOSE_FAILED;
    snprintf(detail, n, "cuEventDestroy of the opened event answered %s", err_name(closed));
  }
  *verdict = v;
  return r;
}

static CUevent own_events[MAX_ALLOCS];

/* The consumer's own events (pending behind its gates); 0 when the set-up failed. */
static int set_up_consumer(struct producer_report *own) {
  return init_cuda() && make_gates() && build_events(worker_events, N_WORKER_EVENTS, 0, own_events, own);
}

/* Whether the consumer's context still answers: 0, or what a query of its own first event,
   which must still read pending, answered. */
static CUresult context_health(void) {
  CUresult q = cu.cuEventQuery(own_events[0]);
  return q == CUDA_ERROR_NOT_READY ? 0 : q;
}
#define HEALTH_PROBE "cuEventQuery of the consumer's own event"
#define UNDO_WORD " and release"
#endif

static int consumer_main(void) {
  role = "consumer";
  static struct producer_report own;
  memset(&own, 0, sizeof own);
  if (!set_up_consumer(&own)) return setup_failed(error_text);
  unsigned char input[64];
  if (!make_input(&own, input)) return 2;
  int fd_floor = lowest_free_fd();
  int v;
  char detail[1024];
  CUresult r = open_and_judge(input, &v, detail, sizeof detail);
  CUresult health = context_health();
  if (health != 0) v = context_lost(v, detail, sizeof detail, HEALTH_PROBE, health);
  v = check_fd_leak(v, fd_floor, r == 0 ? UNDO_WORD : "", detail, sizeof detail);
  return report_verdict(v, detail);
}
