// Part 2 of the C program 'ipcheck fuzz --export-c' writes, the same for every runtime: the
// canaries, the set-up's bookkeeping, the verdicts, the input (the base handle with the
// finding's changes) and the memory oracle. It follows the runtime's API part (cuda.c or
// ur.c), which defines what this part calls: dev_read (a device read, NULL or why not) and
// role, error_text. The runtime's producer and consumer follow it (producer.c and consumer.c
// for CUDA, ur_roles.c for Unified Runtime), then parent.c.
// Leading lines that start with // (these notes) are not copied.
/* ---- canaries: the 8-byte word at allocation offset o is salt + o (little-endian) --- */
static uint64_t load64(const unsigned char *p, int width) {
  uint64_t v = 0;
  for (int i = width - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}
static void store64(unsigned char *p, int width, uint64_t v) {
  for (int i = 0; i < width; ++i) p[i] = (unsigned char)(v >> (8 * i));
}
#if !TARGET_EVENT
static uint64_t salt_of(int side, int index) {
  return (0x5ca1ab1e00000000ull ^ ((uint64_t)(side * 16 + index + 1) << 40)) & ~7ull;
}
static void fill_canary(uint64_t salt, unsigned char *out, size_t bytes) {
  for (size_t b = 0; b < bytes; ++b) out[b] = (unsigned char)((salt + (b & ~(size_t)7)) >> (8 * (b & 7)));
}
#endif

/* ---- the allocations of both roles, as the campaign makes them ---------------------- */
#define MAX_ALLOCS 16
#define MAX_EXPORTS 16
#define MAX_REVOKED 4
#if !TARGET_EVENT
struct range { uint64_t offset, size; };
struct alloc_state {
  const char *name;
  uint64_t salt, size;
  int decoy;
  int n_live, n_revoked;
  struct range live[8];
  struct range revoked[MAX_REVOKED];  /* exports put before the open (a runtime with a put) */
};
#endif
struct producer_report {  /* producer -> parent, one write (the consumer makes its own) */
  int ok;
  int pid;
  int handle_len;  /* bytes of each handle (HANDLE_BYTES, or the runtime's with --backend) */
  int n_exports, n_revoked;
  int export_alloc[MAX_EXPORTS], revoked_alloc[MAX_REVOKED];
  uint64_t export_offset[MAX_EXPORTS];
  unsigned char handles[MAX_EXPORTS][MAX_HANDLE_BYTES];
  unsigned char revoked_handles[MAX_REVOKED][MAX_HANDLE_BYTES];  /* bytes of handles that were put */
  int exported[MAX_ALLOCS];  /* 1: the allocation has a live export */
  char error[512];
};
struct shared_page {  /* consumer -> parent */
  volatile int stage;  /* 0 set-up, 1 in the open (OPEN_CALL), 2 judging, 3 done */
  volatile int verdict;
  char detail[1024];
};

/* ---- the verdicts, as ipcheck's fuzz oracle names them ------------------------------ */
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
static int identify(uint64_t address, const unsigned char *head, uint64_t *offset) {
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

/* The oracle on what an open mapped at `address` for `handle`: whose bytes, from where, how
   many, and whether they are an export's. */
static int judge(uint64_t address, const unsigned char *handle, char *detail, size_t n) {
  unsigned char head[32];
  const char *failed = dev_read(address, head, sizeof head);
  if (failed) {
    snprintf(detail, n, "%s succeeded and returned %#llx, but a read of its first 32 bytes failed: %s", OPEN_CALL,
             (unsigned long long)address, failed);
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
    for (int i = 0; i < table[a].n_revoked; ++i)
      if (table[a].revoked[i].offset == offset) {
        snprintf(detail, n, "the mapping holds %s from offset %llu, whose export was put before this open",
                 table[a].name, (unsigned long long)offset);
        return V_STALE_EXPORT;
      }
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
  failed = dev_read(address, got, e->size);
  if (failed) {
    snprintf(detail, n, "the mapping holds %s from offset %llu, but a read of the export's %llu bytes failed: %s",
             table[a].name, (unsigned long long)offset, (unsigned long long)e->size, failed);
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

/* What the producer's allocations hold and which are exported (the consumer knows the
   set-up, as the campaign's workers do). */
static void describe_producer_allocs(void) {
  for (int i = 0; i < N_PRODUCER_ALLOCS; ++i) {
    table[i].name = producer_allocs[i].name;
    table[i].salt = salt_of(0, i);
    table[i].size = producer_allocs[i].bytes;
    table[i].decoy = producer_allocs[i].decoy || (!from_producer.exported[i] && !producer_allocs[i].revoked);
    table[i].n_live = table[i].n_revoked = 0;
  }
  for (int k = 0; k < from_producer.n_exports; ++k) {
    struct alloc_state *a = &table[from_producer.export_alloc[k]];
    a->live[a->n_live].offset = from_producer.export_offset[k];
    a->live[a->n_live++].size = SIZE_FIELD_OFFSET >= 0 ? load64(from_producer.handles[k] + SIZE_FIELD_OFFSET, SIZE_FIELD_WIDTH)
                                                      : table[from_producer.export_alloc[k]].size - from_producer.export_offset[k];
  }
  for (int k = 0; k < from_producer.n_revoked; ++k) {
    struct alloc_state *a = &table[from_producer.revoked_alloc[k]];
    a->revoked[a->n_revoked].offset = 0;
    a->revoked[a->n_revoked++].size = a->size;
  }
  table_size = N_PRODUCER_ALLOCS + N_WORKER_ALLOCS;
}
#endif

static void print_handle(const char *label, const unsigned char *h, int len) {
  printf("[consumer] %-8s", label);
  for (int i = 0; i < len; ++i) printf("%s%s%02x", i && i % 32 == 0 ? "\n                   " : "", i % 8 ? "" : " ", h[i]);
  printf("\n");
}

/* The handle a side and index name: 0 a producer export, 1 the consumer's own, 2 a producer
   export that was put, 3 one of the consumer's that was put; NULL when the set-up made none. */
static const unsigned char *handle_of(const struct producer_report *own, int side, int index) {
  const struct producer_report *r = side == 0 || side == 2 ? &from_producer : own;
  if (side < 2) return index < r->n_exports ? r->handles[index] : NULL;
  return index < r->n_revoked ? r->revoked_handles[index] : NULL;
}

/* The input: a fresh handle of BASE_NAME with the finding's changes; 0 (and the page says
   why) when the set-up lacks an export a change takes its value from. */
static int apply_patches(const struct producer_report *own, const unsigned char *base, unsigned char *input) {
  memcpy(input, base, (size_t)from_producer.handle_len);
  for (const struct patch *c = patches; c->offset >= 0; ++c) {
    uint64_t v = c->literal;
    if (c->offset + c->width > from_producer.handle_len) {
      snprintf(page->detail, sizeof page->detail, "consumer: %s lies past this runtime's %d-byte handle", c->what,
               from_producer.handle_len);
      page->verdict = V_SETUP_ERROR;
      return 0;
    }
    if (c->source == SRC_PRODUCER_EXPORT || c->source == SRC_WORKER_EXPORT || c->source == SRC_PRODUCER_REVOKED ||
        c->source == SRC_WORKER_REVOKED) {
      const int side = c->source == SRC_PRODUCER_EXPORT ? 0 : c->source == SRC_WORKER_EXPORT ? 1
                       : c->source == SRC_PRODUCER_REVOKED ? 2 : 3;
      const unsigned char *src = handle_of(own, side, c->source_index);
      if (!src) {
        snprintf(page->detail, sizeof page->detail, "consumer: the set-up made no export #%d for %s", c->source_index, c->what);
        page->verdict = V_SETUP_ERROR;
        return 0;
      }
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
  const unsigned char *base = handle_of(own, BASE_SIDE, BASE_INDEX);
  if (!base) {
    snprintf(page->detail, sizeof page->detail, "consumer: the set-up made no %s", BASE_NAME);
    page->verdict = V_SETUP_ERROR;
    return 0;
  }
  if (!apply_patches(own, base, input)) return 0;
  const int len = from_producer.handle_len;
  print_handle(BASE_NAME, base, len);
  print_handle("input", input, len);
  printf("[consumer] bytes changed:");
  for (int i = 0; i < len; ++i)
    if (input[i] != base[i]) printf(" %d:%02x->%02x", i, base[i], input[i]);
  printf("\n");
  fflush(stdout);
  return 1;
}

/* The consumer's context no longer answers (`probe` says how it was asked, `answer` what it
   answered): the verdict becomes context_lost, and its detail keeps what the open was judged
   before. */
static int context_lost(int v, char *detail, size_t n, const char *probe, const char *answer) {
  char before[1024];
  snprintf(before, sizeof before, "%s", detail);
  snprintf(detail, n, "after this open (%s: %.512s), %s answered %s: its context is lost", verdict_names[v], before,
           probe, answer);
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
