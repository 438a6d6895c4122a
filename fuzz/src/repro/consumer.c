// Part 4 of 5 of the CUDA program 'ipcheck fuzz --export-c' writes (see cuda.c): the consumer
// process, which opens the finding's handle and judges it as ipcheck's oracle does (the
// oracle itself is common.c's).
// Leading lines that start with // (these notes) are not copied.
/* ---- the consumer: the open and the oracle ---------------------------------------- */
#if !TARGET_EVENT
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
  unsigned char input[MAX_HANDLE_BYTES];
  if (!make_input(&own, input)) return 2;
  int fd_floor = lowest_free_fd();
  int v;
  char detail[1024];
  CUresult r = open_and_judge(input, &v, detail, sizeof detail);
  CUresult health = context_health();
  if (health != 0) v = context_lost(v, detail, sizeof detail, HEALTH_PROBE, err_name(health));
  v = check_fd_leak(v, fd_floor, r == 0 ? UNDO_WORD : "", detail, sizeof detail);
  return report_verdict(v, detail);
}
