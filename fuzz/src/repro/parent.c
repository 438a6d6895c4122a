// The last part of the C program 'ipcheck fuzz --export-c' writes, for every runtime (see
// cuda.c): the parent, which never loads the runtime: it forks the producer and the consumer,
// watches the open and says what it found (the exit status).
// Leading lines that start with // (these notes) are not copied.
/* ---- the parent: never loads the runtime; forks the producer and the consumer ------- */
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int finish(int v, const char *detail) {
  printf("finding  %s (expected %s)\n", FINDING_ID, verdict_names[EXPECTED_VERDICT]);
  printf("verdict  %s: %s\n", verdict_names[v], detail);
  if (v == V_SETUP_ERROR) {
    printf("result   set-up error: nothing was judged\n");
    return 2;
  }
  if (v == EXPECTED_VERDICT) {
    printf("result   REPRODUCED\n");
    return 1;
  }
  if (v == V_REJECTED || v == V_MAPPED) {
    printf("result   not reproduced: the driver handled this input cleanly\n");
    return 0;
  }
  printf("result   a different finding (%s), not the one recorded\n", verdict_names[v]);
  return 3;
}

/* Reads the producer's report into from_producer: NULL once it came whole and the set-up
   succeeded, else why not. */
static const char *read_report(int fd) {
  size_t got = 0;
  while (got < sizeof from_producer) {
    ssize_t n = read(fd, (char *)&from_producer + got, sizeof from_producer - got);
    if (n <= 0) break;
    got += (size_t)n;
  }
  if (got != sizeof from_producer) return "the producer died before it reported its exports";
  if (!from_producer.ok) return from_producer.error;
  return NULL;
}

/* The page the consumer judges on, shared with it across the fork: until the consumer says
   otherwise, it ended before judging. 0 when it cannot be mapped (errno says why). */
static int make_page(void) {
  page = mmap(NULL, sizeof *page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return 0;
  memset(page, 0, sizeof *page);
  page->verdict = V_SETUP_ERROR;
  snprintf(page->detail, sizeof page->detail, "the consumer ended before it judged the open");
  return 1;
}

/* Waits for the consumer, which is killed when it stays inside the open (stage 1) for more
   than HANG_SECONDS; 1 if it was, its wait status in `*status`. */
static int wait_for_consumer(pid_t consumer, int *status) {
  double open_since = 0;
  for (;;) {
    pid_t w = waitpid(consumer, status, WNOHANG);
    if (w == consumer) return 0;
    if (page->stage == 1) {
      if (open_since == 0) open_since = now();
      if (now() - open_since > HANG_SECONDS) {
        kill(consumer, SIGKILL);
        waitpid(consumer, status, 0);
        return 1;
      }
    }
    struct timespec ten_ms = {0, 10 * 1000 * 1000};
    nanosleep(&ten_ms, NULL);
  }
}

/* What the consumer's end says: a hang, a crash (where it was), or the verdict on its page. */
static int judge_consumer_end(int hung, int status) {
  char detail[1200];
  if (hung) {
    snprintf(detail, sizeof detail, "%s did not return within %d s; the consumer was killed", OPEN_CALL, HANG_SECONDS);
    return finish(V_HANG, detail);
  }
  if (WIFSIGNALED(status)) {
    const int stage = page->stage;
    snprintf(detail, sizeof detail, "the consumer died of signal %d (%s) %s%s", WTERMSIG(status), strsignal(WTERMSIG(status)),
             stage == 1 ? "inside " : "", stage == 1 ? OPEN_CALL : stage == 2 ? "while judging what the open gave" : "outside the open");
    return finish(V_CRASH, detail);
  }
  return finish(page->verdict, page->detail);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGPIPE, SIG_IGN);
  if (!parse_args(argc, argv)) return 2;
  printf("%s\n", DESCRIPTION);
  printf("found on %s\nwritten  %s\nrecorded %s\ninput    %s\n", FINDING_FOUND_ON, FINDING_WRITTEN_BY, FINDING_OUTCOME,
         FINDING_INPUT);
  if (NEEDS_DEAD_PID) {  /* a pid that named a process which has exited */
    dead_pid = fork();
    if (dead_pid == 0) _exit(0);
    if (dead_pid > 0) waitpid(dead_pid, NULL, 0);
  }
  int report[2], stop[2];
  if (pipe(report) != 0 || pipe(stop) != 0) return finish(V_SETUP_ERROR, strerror(errno));
  fflush(stdout);
  pid_t producer = fork();
  if (producer < 0) return finish(V_SETUP_ERROR, strerror(errno));
  if (producer == 0) {
    close(report[0]);
    close(stop[1]);
    _exit(producer_main(report[1], stop[0]));
  }
  close(report[1]);
  close(stop[0]);
  int rc;
  const char *failed = read_report(report[0]);
  if (failed) {
    close(stop[1]);
    waitpid(producer, &rc, 0);
    return finish(V_SETUP_ERROR, failed);
  }
  if (!make_page()) return finish(V_SETUP_ERROR, strerror(errno));
  pid_t consumer = fork();
  if (consumer < 0) return finish(V_SETUP_ERROR, strerror(errno));
  if (consumer == 0) {
    close(stop[1]);
    int code = consumer_main();
    fflush(stdout);
    _exit(code);  /* no runtime teardown: after a lost context NVIDIA says to terminate the process */
  }
  int status = 0;
  int hung = wait_for_consumer(consumer, &status);
  close(stop[1]);
  waitpid(producer, &rc, 0);
  return judge_consumer_end(hung, status);
}
