// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The OS-level audit's kernel side (ipcaudit.bpf.c): the settings the user side fills in
 * before load, and the maps with what they hold: the processes followed, each one's verb
 * mark and descriptor state, the counts and the records of what the role bodies created,
 * and per-thread room for the syscall in progress. Included by ipcaudit.bpf.c only, after
 * vmlinux.h, the libbpf headers and ipcaudit.h. */
#ifndef IPCHECK_TRACE_IPCAUDIT_MAPS_BPF_H
#define IPCHECK_TRACE_IPCAUDIT_MAPS_BPF_H

/* Settings, filled in by the user side before load. */
const volatile unsigned char syscall_class[IPCAUDIT_MAX_SYSCALL] = {};
const volatile unsigned char syscall_touches_fds[IPCAUDIT_MAX_SYSCALL] = {};
const volatile unsigned int pidns_ino = 0;  /* the runner's pid namespace; 0: the initial one */
const volatile int force_reject = 0;        /* test hook: the verifier must refuse the program */

#define MAP_SHARED_TYPE 0x03
#define MAP_ANONYMOUS_FLAG 0x20
#define S_IFMT_ 00170000
#define S_IFCHR_ 0020000
#define F_DUPFD_ 0
#define F_DUPFD_CLOEXEC_ 1030
#define SOL_SOCKET_ 1
#define SCM_RIGHTS_ 1
#define MAX_ERRNO_ 4095

/* Processes followed: thread-group id -> role. Written by the user side at spawn. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, IPCAUDIT_MAX_PROCS);
  __type(key, u32);
  __type(value, struct ipcaudit_proc);
} procs SEC(".maps");

/* Address of the verb mark per process. Written by the user side when the role says hello. */
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, IPCAUDIT_MAX_PROCS);
  __type(key, u32);
  __type(value, u64);
} marks SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 512);
  __type(key, u32);
  __type(value, struct ipcaudit_role);
} roles SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, IPCAUDIT_MAX_COUNTS);
  __type(key, struct ipcaudit_count_key);
  __type(value, u64);
} counts SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, IPCAUDIT_MAX_RECORDS);
  __type(key, struct ipcaudit_fd_key);
  __type(value, struct ipcaudit_fd);
} fds SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, IPCAUDIT_MAX_RECORDS);
  __type(key, struct ipcaudit_map_key);
  __type(value, struct ipcaudit_map);
} mappings SEC(".maps");

/* The descriptors each followed process is known to hold: a creation or a release is
 * counted once, by the first syscall exit that sees it, whichever thread made it. */
struct proc_state {
  u32 phase;
  u32 words;
  u32 ready;
  u32 pad;
  u64 known[IPCAUDIT_FD_WORDS];
};

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, IPCAUDIT_MAX_PROCS);
  __type(key, u32);
  __type(value, struct proc_state);
} states SEC(".maps");

/* A zeroed proc_state to create entries from (too large for the stack); never written. */
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, u32);
  __type(value, struct proc_state);
} empty_state SEC(".maps");

/* One syscall in progress, per thread. */
struct pending {
  long nr;  /* -1: none */
  u64 args[6];
  u64 ordinal;
  u64 fds_sent;
  u32 cls;
  u32 phase;
  u32 counting;  /* goes into the call profile */
  u32 role;
  u32 tgid;
  u32 pad;
  char verb[IPCAUDIT_VERB_LEN];
};

struct {
  __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct pending);
} pendings SEC(".maps");

/* Room for records larger than the stack allows. */
struct scratch {
  struct ipcaudit_count_key key;
  struct ipcaudit_fd fd;
  struct ipcaudit_map map;
  struct ipcaudit_mark mark;
};

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, u32);
  __type(value, struct scratch);
} scratches SEC(".maps");

#endif  /* IPCHECK_TRACE_IPCAUDIT_MAPS_BPF_H */
