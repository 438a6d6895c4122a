// Part 3 of 4 of the Unified Runtime program 'ipcheck fuzz --export-c' writes (see ur.c):
// the campaign's set-up made with UR (as ipcheck's ur adapter makes it), the producer, and
// the consumer, which opens the finding's handle with urIPCOpenMemHandleExp and judges it
// with common.c's oracle. Leading lines that start with // (these notes) are not copied.
/* ---- the set-up: USM allocations, exported with urIPCGetMemHandleExp ------------------ */
/* Allocates and fills one role's set-up; exports as the campaign does: a live export keeps
   its handle data (UR frees it at the put), a revoked one is put at once. */
static int build_setup(const struct alloc_spec *specs, int n, int side, void **ptrs, struct alloc_state *table,
                       struct producer_report *exports) {
  for (int i = 0; i < n; ++i) {
    const struct alloc_spec *s = &specs[i];
    int device = s->device < device_count ? s->device : device_count - 1;
    char what[160];
    snprintf(what, sizeof what, "allocating %s (%zu bytes)", s->name, s->bytes);
    if (s->kind == KIND_SHARED) {
      if (!ok(what, ur.urUSMSharedAlloc(context, devices[device], NULL, NULL, s->bytes, &ptrs[i]))) return 0;
    } else if (s->kind == KIND_HOST) {
      if (!ok(what, ur.urUSMHostAlloc(context, NULL, NULL, s->bytes, &ptrs[i]))) return 0;
    } else if (!ok(what, ur.urUSMDeviceAlloc(context, devices[device], NULL, NULL, s->bytes, &ptrs[i]))) {
      return 0;
    }
    table[i].name = s->name;
    table[i].salt = salt_of(side, i);
    table[i].size = s->bytes;
    table[i].decoy = s->decoy;
    table[i].n_live = table[i].n_revoked = 0;
    unsigned char *fill = malloc(s->bytes);
    if (!fill) return 0;
    fill_canary(table[i].salt, fill, s->bytes);
    const char *failed = copy_on(device, ptrs[i], fill, s->bytes);
    free(fill);
    if (failed) {
      snprintf(error_text, sizeof error_text, "%s: filling %s: %s", role, s->name, failed);
      return 0;
    }
    for (int e = 0; e < s->n_exports; ++e) {
      void *data = NULL;
      size_t size = 0;
      ur_result_t r = ur.urIPCGetMemHandleExp(context, (char *)ptrs[i] + s->offsets[e], &data, &size);
      if (r != UR_RESULT_SUCCESS && s->kind != KIND_DEVICE) {  /* optional for host and shared memory: a decoy */
        printf("[%s] %s is not exported: urIPCGetMemHandleExp answered %s (a decoy, as in the campaign)\n", role,
               s->name, err_name(r));
        table[i].decoy = 1;
        break;
      }
      snprintf(what, sizeof what, "urIPCGetMemHandleExp(%s + %llu)", s->name, (unsigned long long)s->offsets[e]);
      if (!ok(what, r)) return 0;
      if (!data || size < UMF_HEADER_BYTES || size > MAX_HANDLE_BYTES ||
          (exports->handle_len && size != (size_t)exports->handle_len)) {
        snprintf(error_text, sizeof error_text, "%s: %s gave %zu bytes at %p, not a handle of UMF's header and a "
                 "provider's bytes (at most %d here)", role, what, size, data, MAX_HANDLE_BYTES);
        return 0;
      }
      if (strcmp(backend, FINDING_BACKEND) == 0 && strcmp(l0_adapter, FINDING_L0) == 0 && size != HANDLE_BYTES) {
        snprintf(error_text, sizeof error_text, "%s: %s gave a %zu-byte handle; the finding's (layout %s) has %d: "
                 "another UR build?", role, what, size, HANDLE_LAYOUT, HANDLE_BYTES);
        return 0;
      }
      exports->handle_len = (int)size;
      if (s->revoked) {
        int k = exports->n_revoked++;
        exports->revoked_alloc[k] = i;
        memcpy(exports->revoked_handles[k], data, size);
        snprintf(what, sizeof what, "urIPCPutMemHandleExp(%s)", s->name);
        if (!ok(what, ur.urIPCPutMemHandleExp(context, data))) return 0;
        table[i].revoked[table[i].n_revoked].offset = 0;
        table[i].revoked[table[i].n_revoked++].size = s->bytes;
        continue;
      }
      int k = exports->n_exports++;
      exports->export_alloc[k] = i;
      exports->export_offset[k] = s->offsets[e];
      memcpy(exports->handles[k], data, size);
      exports->exported[i] = 1;
      table[i].live[table[i].n_live].offset = s->offsets[e];
      table[i].live[table[i].n_live++].size = load64(exports->handles[k] + SIZE_FIELD_OFFSET, SIZE_FIELD_WIDTH);
    }
  }
  return 1;
}

/* ---- the producer: exports, reports, then keeps everything alive until told ------- */
static int producer_main(int report_fd, int stop_fd) {
  role = "producer";
  static struct producer_report rep;
  static void *ptrs[MAX_ALLOCS];
  static struct alloc_state own_table[MAX_ALLOCS];
  memset(&rep, 0, sizeof rep);
  rep.pid = (int)getpid();
  rep.ok = init_ur() && build_setup(producer_allocs, N_PRODUCER_ALLOCS, 0, ptrs, own_table, &rep);
  if (!rep.ok) snprintf(rep.error, sizeof rep.error, "%s", error_text);
  for (int i = 0; rep.ok && i < N_PRODUCER_ALLOCS; ++i)
    printf("[producer] %-20s %6zu bytes at %p%s\n", producer_allocs[i].name, producer_allocs[i].bytes, ptrs[i],
           own_table[i].decoy ? "  (never exported)" : own_table[i].n_revoked ? "  (exported, then put)" : "");
  fflush(stdout);
  if (write(report_fd, &rep, sizeof rep) != (ssize_t)sizeof rep) return 2;
  char c;
  while (read(stop_fd, &c, 1) > 0) {
  }
  _exit(0); /* the allocations and the live exports die with the process */
}

/* ---- the consumer: the open and the oracle ---------------------------------------- */
/* Calibration, as the campaign's workers do: each unchanged producer handle opened once;
   where UR maps it counts as the export. */
static void calibrate(const struct producer_report *own) {
  for (int k = 0; k < from_producer.n_exports; ++k) {
    unsigned char h[MAX_HANDLE_BYTES];
    void *p = NULL;
    memcpy(h, from_producer.handles[k], (size_t)from_producer.handle_len);
    ur_result_t r = ur.urIPCOpenMemHandleExp(context, devices[0], h, (size_t)from_producer.handle_len, &p);
    if (r != UR_RESULT_SUCCESS || !p) {
      printf("[consumer] unchanged producer.export[%d] does not open: %s\n", k, err_name(r));
      continue;
    }
    unsigned char head[32];
    uint64_t offset = 0;
    int a = dev_read((uint64_t)(uintptr_t)p, head, sizeof head) == NULL ? identify((uint64_t)(uintptr_t)p, head, &offset) : -1;
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
    ur.urIPCCloseMemHandleExp(context, p);
  }
  for (int k = 0; k < own->n_exports; ++k) {  /* the campaign's workers try their own too */
    unsigned char h[MAX_HANDLE_BYTES];
    void *p = NULL;
    memcpy(h, own->handles[k], (size_t)own->handle_len);
    if (ur.urIPCOpenMemHandleExp(context, devices[0], h, (size_t)own->handle_len, &p) == UR_RESULT_SUCCESS && p)
      ur.urIPCCloseMemHandleExp(context, p);
  }
}

/* Opens the input on device 0 (the page's stage says when the consumer is inside the open),
   judges what it maps and closes it; the verdict in `*verdict`, the open's answer returned.
   A success without a pointer is no mapping: UR's own defect, judged unreadable. */
static ur_result_t open_and_judge(const unsigned char *input, int *verdict, char *detail, size_t n) {
  unsigned char h[MAX_HANDLE_BYTES];
  void *p = NULL;
  memcpy(h, input, (size_t)from_producer.handle_len); /* UR takes the data by non-const pointer */
  page->stage = 1;
  ur_result_t r = ur.urIPCOpenMemHandleExp(context, devices[0], h, (size_t)from_producer.handle_len, &p);
  page->stage = 2;
  if (r != UR_RESULT_SUCCESS) {
    *verdict = V_REJECTED;
    snprintf(detail, n, "urIPCOpenMemHandleExp answered %s", err_name(r));
    return r;
  }
  if (!p) {
    *verdict = V_UNREADABLE_MAPPING;
    snprintf(detail, n, "urIPCOpenMemHandleExp answered UR_RESULT_SUCCESS without a pointer");
    return r;
  }
  int v = judge((uint64_t)(uintptr_t)p, input, detail, n);
  ur_result_t closed = ur.urIPCCloseMemHandleExp(context, p);
  unsigned char probe;
  if (v == V_MAPPED && closed != UR_RESULT_SUCCESS) {
    v = V_CLOSE_FAILED;
    snprintf(detail, n, "urIPCCloseMemHandleExp(%p) answered %s", p, err_name(closed));
  } else if (v == V_MAPPED && dev_read((uint64_t)(uintptr_t)p, &probe, 1) == NULL) {
    v = V_MAPPING_LEAK;
    snprintf(detail, n, "urEnqueueUSMMemcpy still reads %p after urIPCCloseMemHandleExp", p);
  }
  *verdict = v;
  return r;
}

static void *own_ptrs[MAX_ALLOCS];

/* The consumer's own allocations (exported, as the campaign's workers' are), then what it
   knows of the producer's, and the calibration; 0 when the set-up failed (error_text says). */
static int set_up_consumer(struct producer_report *own) {
  own->handle_len = from_producer.handle_len;
  if (!init_ur() || !build_setup(worker_allocs, N_WORKER_ALLOCS, 1, own_ptrs, table + N_PRODUCER_ALLOCS, own))
    return 0;
  describe_producer_allocs();
  calibrate(own);
  return 1;
}

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
  ur_result_t r = open_and_judge(input, &v, detail, sizeof detail);
  /* Whether the consumer's context still answers: a read of its own allocation. */
  unsigned char word[8];
  const char *health = copy_on(0, word, own_ptrs[0], sizeof word);
  if (health) v = context_lost(v, detail, sizeof detail, "a read of the consumer's own allocation", health);
  v = check_fd_leak(v, fd_floor, r == UR_RESULT_SUCCESS ? " and close" : "", detail, sizeof detail);
  return report_verdict(v, detail);
}
