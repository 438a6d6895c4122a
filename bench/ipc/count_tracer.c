// ipcheck-bench-count: counts what a program does between its markers, exactly, whatever
// the machine's load: the user-space instructions it executes (by single-stepping it with
// ptrace: one trap per instruction), the system calls among them (a step over a `syscall`
// instruction, by number) and the page faults it took (/proc/<pid>/stat, minor and major).
// No hardware counter, no privilege: a VM without a PMU (perf's `instructions:u` is "not
// supported" there) counts the same figures as a bare machine. What the program runs
// between markers runs natively otherwise (PTRACE_CONT), so only the regions cost the
// single-step's time (tens of microseconds an instruction in a VM).
//
//   ipcheck-bench-count --out FILE -- PROGRAM [ARGS...]
//
// A marker is an `int3` with rax = IPCHECK_COUNT_MAGIC, rdi = 1 (begin) or 2 (end) and rsi =
// the region's id (bench/ipc/count_marker.hpp); the program places them only when it was
// told it runs under this tracer (an `int3` untraced is a SIGTRAP). FILE gets one JSON
// object: {"regions": [{"id", "instructions", "syscalls", "calls": {"<nr>": n}, "minflt",
// "majflt"}...]}, one entry per region, in order. The exit status is the program's (128 + the
// signal that ended it); 2 for a bad command line; 3 when the program could not be traced.
// x86-64 Linux only (the build skips it elsewhere).
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "count_marker.h"

// Which instruction addresses start a `syscall` (0f 05): looked up once per address.
enum { kSlots = 1 << 16 };
static uint64_t seen_rip[kSlots];
static unsigned char seen_is_syscall[kSlots];

static int is_syscall_at(pid_t pid, uint64_t rip) {
  uint64_t h = (rip * 0x9E3779B97F4A7C15ull) >> 48;
  for (unsigned i = 0; i < kSlots; ++i, h = (h + 1) & (kSlots - 1)) {
    if (seen_rip[h] == rip) return seen_is_syscall[h];
    if (seen_rip[h] == 0) {
      errno = 0;
      const long word = ptrace(PTRACE_PEEKTEXT, pid, (void*)rip, NULL);
      const int yes = errno == 0 && (word & 0xffff) == 0x050f;
      seen_rip[h] = rip;
      seen_is_syscall[h] = (unsigned char)yes;
      return yes;
    }
  }
  return 0;  // a full table (never in practice): counted as no syscall
}

static int read_faults(pid_t pid, unsigned long long* minflt, unsigned long long* majflt) {
  char path[64], buf[4096];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE* f = fopen(path, "r");
  if (!f) return -1;
  const size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  const char* p = strrchr(buf, ')');  // the command name may hold spaces
  if (!p) return -1;
  // After ")": state ppid pgrp session tty tpgid flags minflt cminflt majflt
  unsigned long long v[8];
  if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %llu %llu %llu", &v[0], &v[1], &v[2]) != 3) return -1;
  *minflt = v[0];
  *majflt = v[2];
  return 0;
}

enum { kMaxCalls = 512 };

struct Region {
  uint64_t id;
  unsigned long long instructions, syscalls, minflt, majflt;
  unsigned calls[kMaxCalls];  // per syscall number (numbers past the table go to the last slot)
};

static FILE* out;
static int first_region = 1;

static void write_region(const struct Region* r) {
  fprintf(out, "%s\n  {\"id\": %llu, \"instructions\": %llu, \"syscalls\": %llu, \"minflt\": %llu, \"majflt\": %llu, \"calls\": {",
          first_region ? "" : ",", (unsigned long long)r->id, r->instructions, r->syscalls, r->minflt, r->majflt);
  first_region = 0;
  const char* sep = "";
  for (int i = 0; i < kMaxCalls; ++i)
    if (r->calls[i]) {
      fprintf(out, "%s\"%d\": %u", sep, i, r->calls[i]);
      sep = ", ";
    }
  fprintf(out, "}}");
}

static int is_marker(const struct user_regs_struct* regs, uint64_t kind) {
  return regs->rax == IPCHECK_COUNT_MAGIC && regs->rdi == kind;
}

int main(int argc, char** argv) {
  const char* out_path = NULL;
  int i = 1;
  for (; i < argc; ++i) {
    if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) out_path = argv[++i];
    else if (strcmp(argv[i], "--") == 0) {
      ++i;
      break;
    } else {
      fprintf(stderr, "ipcheck-bench-count: unknown argument '%s'; usage: ipcheck-bench-count --out FILE -- PROGRAM [ARGS...]\n",
              argv[i]);
      return 2;
    }
  }
  if (!out_path || i >= argc) {
    fprintf(stderr, "ipcheck-bench-count: usage: ipcheck-bench-count --out FILE -- PROGRAM [ARGS...]\n");
    return 2;
  }
  out = fopen(out_path, "w");
  if (!out) {
    fprintf(stderr, "ipcheck-bench-count: cannot write '%s': %s\n", out_path, strerror(errno));
    return 2;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "ipcheck-bench-count: fork: %s\n", strerror(errno));
    return 3;
  }
  if (pid == 0) {
    if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0) {
      fprintf(stderr, "ipcheck-bench-count: PTRACE_TRACEME: %s\n", strerror(errno));
      _exit(3);
    }
    execv(argv[i], argv + i);
    fprintf(stderr, "ipcheck-bench-count: cannot run '%s': %s\n", argv[i], strerror(errno));
    _exit(127);
  }
  int status = 0;
  // The stop at the exec.
  if (waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status)) {
    fprintf(stderr, "ipcheck-bench-count: '%s' did not start under ptrace\n", argv[i]);
    return 3;
  }
  ptrace(PTRACE_SETOPTIONS, pid, NULL, (void*)(long)PTRACE_O_EXITKILL);
  fprintf(out, "{\"regions\": [");
  static struct Region r;
  int stepping = 0, inject = 0;
  uint64_t prev_rip = 0;
  for (;;) {
    if (ptrace(stepping ? PTRACE_SINGLESTEP : PTRACE_CONT, pid, NULL, (void*)(long)inject) != 0) {
      fprintf(stderr, "ipcheck-bench-count: ptrace: %s\n", strerror(errno));
      kill(pid, SIGKILL);
    }
    inject = 0;
    if (waitpid(pid, &status, 0) != pid) {
      if (errno == EINTR) continue;
      break;
    }
    if (WIFEXITED(status) || WIFSIGNALED(status)) break;
    if (!WIFSTOPPED(status)) continue;
    const int sig = WSTOPSIG(status);
    if (sig != SIGTRAP) {
      inject = sig;  // the program's own signal, delivered as it would be untraced
      continue;
    }
    struct user_regs_struct regs;
    if (ptrace(PTRACE_GETREGS, pid, NULL, &regs) != 0) continue;
    if (!stepping) {
      if (is_marker(&regs, IPCHECK_COUNT_BEGIN)) {
        memset(&r, 0, sizeof r);
        r.id = regs.rsi;
        read_faults(pid, &r.minflt, &r.majflt);
        stepping = 1;
        prev_rip = regs.rip;
      } else if (!is_marker(&regs, IPCHECK_COUNT_END)) {
        inject = SIGTRAP;  // not ours
      }
      continue;
    }
    // One instruction executed: the one at prev_rip.
    ++r.instructions;
    if (is_syscall_at(pid, prev_rip)) {
      ++r.syscalls;
      const unsigned long long nr = regs.orig_rax;
      ++r.calls[nr < kMaxCalls ? nr : kMaxCalls - 1];
    }
    prev_rip = regs.rip;
    // The end marker's registers are set and its int3 is next: the region ends before it.
    if (is_marker(&regs, IPCHECK_COUNT_END) && regs.rsi == r.id) {
      errno = 0;
      const long word = ptrace(PTRACE_PEEKTEXT, pid, (void*)regs.rip, NULL);
      if (errno == 0 && (word & 0xff) == 0xcc) {
        unsigned long long minflt = 0, majflt = 0;
        read_faults(pid, &minflt, &majflt);
        r.minflt = minflt - r.minflt;
        r.majflt = majflt - r.majflt;
        write_region(&r);
        stepping = 0;
      }
    }
  }
  fprintf(out, "\n]}\n");
  if (fclose(out) != 0) {
    fprintf(stderr, "ipcheck-bench-count: cannot write '%s': %s\n", out_path, strerror(errno));
    return 3;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 3;
}
