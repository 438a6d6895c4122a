/* The OS-level audit's shared definitions: what the BPF side (ipcaudit.bpf.c) records in
 * its maps and the user side (ipcaudit.cpp) reads back. Plain C, included by both. */
#ifndef IPCHECK_TRACE_IPCAUDIT_H
#define IPCHECK_TRACE_IPCAUDIT_H

#define IPCAUDIT_VERB_LEN 32       /* as ipcheck_verb_mark_t::verb */
#define IPCAUDIT_NAME_LEN 32       /* one path component */
#define IPCAUDIT_PATH_PARTS 4      /* components kept, leaf first */
#define IPCAUDIT_FD_WORDS 64       /* descriptors 0..4095 are followed */
#define IPCAUDIT_MAX_SYSCALL 512   /* syscall numbers classified */
#define IPCAUDIT_MAX_COUNTS 16384  /* (role, verb, counter) entries at once */
#define IPCAUDIT_MAX_RECORDS 4096  /* descriptors, and mappings, held by the bodies running at once */
#define IPCAUDIT_MAX_PROCS 2048    /* processes followed at once (roles and what they fork) */

/* The role's verb mark as TracingAdapter writes it (harness/include/ipcheck/tracing_adapter.hpp). */
struct ipcaudit_mark {
  unsigned long long seq;      /* odd while a verb runs */
  unsigned long long verb_id;
  char verb[IPCAUDIT_VERB_LEN];
  unsigned long long ordinal;  /* this call's number among the calls of `verb`, from 1 */
  unsigned long long phase;    /* IPCAUDIT_PHASE_* */
};

enum ipcaudit_phase {
  IPCAUDIT_PHASE_BEFORE_BODY = 0, /* start-up, adapter init */
  IPCAUDIT_PHASE_BODY = 1,        /* the case's role body: descriptors and mappings are followed */
  IPCAUDIT_PHASE_AFTER_BODY = 2,  /* audit and exit: closes no longer count as releases */
};

/* What the BPF side does with a syscall, by number (filled in by the user side before load,
 * from <sys/syscall.h>, so the BPF object carries no architecture's numbers). */
enum ipcaudit_class {
  IPCAUDIT_SYS_OTHER = 0,
  IPCAUDIT_SYS_MEMFD_CREATE,
  IPCAUDIT_SYS_PIDFD_OPEN,
  IPCAUDIT_SYS_PIDFD_GETFD,
  IPCAUDIT_SYS_DUP,      /* dup */
  IPCAUDIT_SYS_DUP2,     /* dup2, dup3: may replace an open descriptor */
  IPCAUDIT_SYS_FCNTL,    /* F_DUPFD and F_DUPFD_CLOEXEC count as dup */
  IPCAUDIT_SYS_OPEN,     /* open, openat, openat2 */
  IPCAUDIT_SYS_CLOSE,    /* close, close_range */
  IPCAUDIT_SYS_MMAP,
  IPCAUDIT_SYS_MUNMAP,
  IPCAUDIT_SYS_MREMAP,
  IPCAUDIT_SYS_IOCTL,
  IPCAUDIT_SYS_SENDMSG,
  IPCAUDIT_SYS_RECVMSG,
};

/* Counters of the call profile, per role and verb. Names: ipcaudit_document.cpp. */
enum ipcaudit_counter {
  IPCAUDIT_C_SYSCALLS = 0,    /* every syscall */
  IPCAUDIT_C_FAILED,          /* syscalls that returned an error */
  IPCAUDIT_C_CALLS_TRACED,    /* highest verb ordinal seen (calls, for a role that could not say) */
  IPCAUDIT_C_MEMFD_CREATE,
  IPCAUDIT_C_PIDFD_OPEN,
  IPCAUDIT_C_PIDFD_GETFD,
  IPCAUDIT_C_DUP,
  IPCAUDIT_C_OPEN,
  IPCAUDIT_C_CLOSE,
  IPCAUDIT_C_MMAP_SHARED,     /* MAP_SHARED, or a mapping of a device file */
  IPCAUDIT_C_MMAP_PRIVATE,
  IPCAUDIT_C_MUNMAP,
  IPCAUDIT_C_MREMAP,
  IPCAUDIT_C_IOCTL,
  IPCAUDIT_C_IOCTL_TARGET,    /* ioctls by target file (the key's path) */
  IPCAUDIT_C_SENDMSG,
  IPCAUDIT_C_FDS_SENT,        /* descriptors passed with SCM_RIGHTS */
  IPCAUDIT_C_RECVMSG,
  IPCAUDIT_C_FDS_CREATED,     /* descriptors that appeared in the table, by any syscall */
  IPCAUDIT_C_FDS_CLOSED,      /* descriptors that left it */
  IPCAUDIT_C_COUNT,
};

/* A file as the BPF side saw it: leaf-first path components up to the mount root, then
 * across mounts, plus the inode. The user side renders "/dev/dri/renderD128",
 * "/memfd:ipcref-memory", "socket:[4242]". */
struct ipcaudit_file {
  unsigned long long ino;
  unsigned int mode;  /* inode mode (S_IFCHR, S_IFSOCK...) */
  unsigned int parts;
  char name[IPCAUDIT_PATH_PARTS][IPCAUDIT_NAME_LEN];
};

/* Key of the counters map. `verb` is empty outside any verb; `target` is set only for
 * IPCAUDIT_C_IOCTL_TARGET (with ino 0, so keys do not depend on the object). */
struct ipcaudit_count_key {
  unsigned int role;
  unsigned int counter;
  char verb[IPCAUDIT_VERB_LEN];
  struct ipcaudit_file target;
};

/* Per process followed (key: thread-group id as the runner sees it). */
struct ipcaudit_proc {
  unsigned int role;
  unsigned int is_role;        /* the role's own process, not a descendant */
  unsigned long long mark_addr;  /* address of ipcheck_verb_mark in this process; 0: unknown */
  unsigned int last_phase;
  unsigned int pad;
};

/* Per role (key: role id the user side assigned). */
struct ipcaudit_role {
  unsigned long long dropped;      /* records lost to full maps */
  unsigned long long fd_overflow;  /* descriptors above the followed range */
  unsigned long long mark_faults;  /* the verb mark could not be read */
  unsigned int processes;          /* the role and its descendants */
  unsigned int ended;              /* the role's process has exited */
  unsigned int end_phase;          /* phase it was in when it exited */
  unsigned int pad;
};

/* A descriptor created during the body, until released during the body. */
struct ipcaudit_fd_key {
  unsigned int role;
  unsigned int tgid;
  unsigned int fd;
  unsigned int pad;
};

enum ipcaudit_state {
  IPCAUDIT_OPEN = 0,
  IPCAUDIT_RELEASED_AFTER_BODY = 1,  /* closed or unmapped, but only after the body ended */
};

struct ipcaudit_fd {
  unsigned long long file;         /* struct file address: tells a reused number apart */
  unsigned long long ordinal;      /* the verb call that created it */
  unsigned int nr;                 /* the syscall that created it */
  unsigned int state;
  char verb[IPCAUDIT_VERB_LEN];
  struct ipcaudit_file what;
};

/* A shared mapping created during the body, until unmapped during the body. */
struct ipcaudit_map_key {
  unsigned int role;
  unsigned int tgid;
  unsigned long long start;
};

struct ipcaudit_map {
  unsigned long long length;
  unsigned long long ordinal;
  unsigned int prot;
  unsigned int flags;
  unsigned int state;
  unsigned int pad;
  char verb[IPCAUDIT_VERB_LEN];
  struct ipcaudit_file what;
};

#endif
