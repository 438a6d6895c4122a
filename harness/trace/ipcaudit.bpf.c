// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The OS-level audit, kernel side: follows each registered role process (and whatever it
 * forks) and records, per role and adapter verb, the syscalls that create, pass, map and
 * release IPC objects; and every descriptor and shared mapping the role body created until
 * the body released it. The verb comes from the role's own `ipcheck_verb_mark`, read from
 * its memory at each syscall. Nothing here depends on the adapter: it sees closed drivers
 * the same way. */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "ipcaudit.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

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

static __always_inline struct scratch *scratch(void)
{
  u32 zero = 0;
  return bpf_map_lookup_elem(&scratches, &zero);
}

/* Thread-group id as the runner numbers it (its pid namespace), 0 when not in it. */
static __always_inline u32 task_tgid(struct task_struct *task)
{
  if (!pidns_ino) return BPF_CORE_READ(task, tgid);
  struct pid *pid = BPF_CORE_READ(task, group_leader, thread_pid);
  unsigned int level = BPF_CORE_READ(pid, level);
  struct upid up = {};
  bpf_probe_read_kernel(&up, sizeof(up), &pid->numbers[level & 31]);
  if (BPF_CORE_READ(up.ns, ns.inum) != pidns_ino) return 0;
  return up.nr;
}

static __always_inline void note_drop(u32 role)
{
  struct ipcaudit_role *r = bpf_map_lookup_elem(&roles, &role);
  if (r) __sync_fetch_and_add(&r->dropped, 1);
}

/* Path components of a file, leaf first, across mount points. */
static __always_inline void describe_file(struct file *file, struct ipcaudit_file *out)
{
  struct inode *inode = BPF_CORE_READ(file, f_inode);
  out->ino = BPF_CORE_READ(inode, i_ino);
  out->mode = BPF_CORE_READ(inode, i_mode);
  struct dentry *d = BPF_CORE_READ(file, f_path.dentry);
  struct vfsmount *vfs = BPF_CORE_READ(file, f_path.mnt);
  struct mount *mnt = container_of(vfs, struct mount, mnt);
  unsigned int parts = 0;
  for (int i = 0; i < 2 * IPCAUDIT_PATH_PARTS && parts < IPCAUDIT_PATH_PARTS; i++) {
    struct dentry *root = BPF_CORE_READ(mnt, mnt.mnt_root);
    if (d == root) {
      struct mount *parent = BPF_CORE_READ(mnt, mnt_parent);
      if (!parent || parent == mnt) break;
      d = BPF_CORE_READ(mnt, mnt_mountpoint);
      mnt = parent;
      continue;
    }
    const unsigned char *name = BPF_CORE_READ(d, d_name.name);
    bpf_probe_read_kernel_str(out->name[parts & (IPCAUDIT_PATH_PARTS - 1)], IPCAUDIT_NAME_LEN, name);
    parts++;
    struct dentry *up = BPF_CORE_READ(d, d_parent);
    if (!up || up == d) break;
    d = up;
  }
  out->parts = parts;
}

static __always_inline struct fdtable *current_fdtable(void)
{
  struct task_struct *task = bpf_get_current_task_btf();
  return BPF_CORE_READ(task, files, fdt);
}

static __always_inline struct file *fd_file(struct fdtable *fdt, u64 fd)
{
  struct file **table = BPF_CORE_READ(fdt, fd);
  unsigned int max = BPF_CORE_READ(fdt, max_fds);
  struct file *file = 0;
  if (fd >= max) return 0;
  bpf_probe_read_kernel(&file, sizeof(file), &table[fd]);
  return file;
}

static __always_inline void add_count(struct ipcaudit_count_key *key, u64 n, u32 role)
{
  u64 *v = bpf_map_lookup_elem(&counts, key);
  if (v) {
    __sync_fetch_and_add(v, n);
    return;
  }
  if (bpf_map_update_elem(&counts, key, &n, BPF_NOEXIST) == 0) return;
  v = bpf_map_lookup_elem(&counts, key);  /* another CPU made it first */
  if (v)
    __sync_fetch_and_add(v, n);
  else
    note_drop(role);
}

static __always_inline struct ipcaudit_count_key *count_key(struct pending *pe, u32 counter)
{
  struct scratch *s = scratch();
  if (!s) return 0;
  struct ipcaudit_count_key *key = &s->key;
  __builtin_memset(key, 0, sizeof(*key));
  key->role = pe->role;
  key->counter = counter;
  __builtin_memcpy(key->verb, pe->verb, IPCAUDIT_VERB_LEN);
  return key;
}

static __always_inline void count(struct pending *pe, u32 counter, u64 n)
{
  if (!pe->counting || !n) return;
  struct ipcaudit_count_key *key = count_key(pe, counter);
  if (key) add_count(key, n, pe->role);
}

/* The highest ordinal of the verb seen: its call count when the role cannot report one. */
static __always_inline void count_ordinal(struct pending *pe)
{
  if (!pe->ordinal) return;
  struct ipcaudit_count_key *key = count_key(pe, IPCAUDIT_C_CALLS_TRACED);
  if (!key) return;
  u64 *v = bpf_map_lookup_elem(&counts, key);
  if (v) {
    if (*v < pe->ordinal) *v = pe->ordinal;
    return;
  }
  if (bpf_map_update_elem(&counts, key, &pe->ordinal, BPF_NOEXIST) != 0) note_drop(pe->role);
}

static __always_inline void count_ioctl_target(struct pending *pe, struct file *file)
{
  if (!pe->counting) return;
  struct ipcaudit_count_key *key = count_key(pe, IPCAUDIT_C_IOCTL_TARGET);
  if (!key) return;
  if (file) describe_file(file, &key->target);
  key->target.ino = 0;  /* keys must not depend on the object */
  add_count(key, 1, pe->role);
}

/* ---- descriptors ---- */

struct diff_ctx {
  struct pending *pe;
  struct proc_state *st;
  struct fdtable *fdt;
  unsigned long *open_fds;
  u32 words_now;
  s64 replaced;  /* dup2/dup3 target that was open before: released and created again */
  /* per word */
  u32 word;
  u64 created;
  u64 released;
};

static __always_inline void fd_created(struct diff_ctx *c, u32 fd)
{
  struct pending *pe = c->pe;
  count(pe, IPCAUDIT_C_FDS_CREATED, 1);
  if (pe->phase != IPCAUDIT_PHASE_BODY) return;
  struct scratch *s = scratch();
  if (!s) return;
  struct ipcaudit_fd *rec = &s->fd;
  __builtin_memset(rec, 0, sizeof(*rec));
  struct file *file = fd_file(c->fdt, fd);
  rec->file = (u64)file;
  rec->ordinal = pe->ordinal;
  rec->nr = (u32)pe->nr;
  rec->state = IPCAUDIT_OPEN;
  __builtin_memcpy(rec->verb, pe->verb, IPCAUDIT_VERB_LEN);
  if (file) describe_file(file, &rec->what);
  struct ipcaudit_fd_key key = {.role = pe->role, .tgid = pe->tgid, .fd = fd};
  if (bpf_map_update_elem(&fds, &key, rec, BPF_ANY) != 0) note_drop(pe->role);
}

static __always_inline void fd_released(struct diff_ctx *c, u32 fd)
{
  struct pending *pe = c->pe;
  count(pe, IPCAUDIT_C_FDS_CLOSED, 1);
  struct ipcaudit_fd_key key = {.role = pe->role, .tgid = pe->tgid, .fd = fd};
  struct ipcaudit_fd *rec = bpf_map_lookup_elem(&fds, &key);
  if (!rec) return;
  if (pe->phase == IPCAUDIT_PHASE_BODY)
    bpf_map_delete_elem(&fds, &key);
  else if (rec->state == IPCAUDIT_OPEN)
    rec->state = IPCAUDIT_RELEASED_AFTER_BODY;
}

static long diff_bit(u32 bit, struct diff_ctx *c)
{
  u64 mask = 1ULL << (bit & 63);
  u32 fd = c->word * 64 + (bit & 63);
  if (c->released & mask) fd_released(c, fd);
  if (c->created & mask) fd_created(c, fd);
  return 0;
}

static long diff_word(u32 w, struct diff_ctx *c)
{
  if (w >= IPCAUDIT_FD_WORDS) return 1;
  struct proc_state *st = c->st;
  u64 now = 0;
  if (w < c->words_now) bpf_probe_read_kernel(&now, sizeof(now), &c->open_fds[w]);
  u64 known = st->known[w];
  u64 created = now & ~known;
  u64 released = known & ~now;
  u64 replaced = 0;
  if (c->replaced >= 0 && (u64)c->replaced / 64 == w) replaced = (1ULL << ((u64)c->replaced & 63)) & now & known;
  /* Claim the changes atomically: a concurrent exit of another thread counts each once. */
  if (created) created &= ~__sync_fetch_and_or(&st->known[w], created);
  if (released) released &= __sync_fetch_and_and(&st->known[w], ~released);
  created |= replaced;
  released |= replaced;
  if (!created && !released) return 0;
  c->word = w;
  c->created = created;
  c->released = released;
  bpf_loop(64, diff_bit, c, 0);
  return 0;
}

/* First sight of a process (at a syscall entry, before the syscall can change anything):
 * what it holds now is its baseline, not a creation. */
static __always_inline void take_baseline(struct proc_state *st)
{
  struct fdtable *fdt = current_fdtable();
  if (!fdt) return;
  unsigned int max_fds = BPF_CORE_READ(fdt, max_fds);
  u32 words = max_fds / 64;
  if (words > IPCAUDIT_FD_WORDS) words = IPCAUDIT_FD_WORDS;
  unsigned long *open_fds = BPF_CORE_READ(fdt, open_fds);
  for (u32 w = 0; w < IPCAUDIT_FD_WORDS; w++) {
    if (w >= words) break;
    bpf_probe_read_kernel(&st->known[w], sizeof(u64), &open_fds[w]);
  }
  st->words = words;
  st->ready = 1;
}

/* Compares the process's descriptor table with what it was known to hold. */
static __always_inline void diff_fds(struct pending *pe, s64 replaced)
{
  struct proc_state *st = bpf_map_lookup_elem(&states, &pe->tgid);
  if (!st) return;
  struct fdtable *fdt = current_fdtable();
  if (!fdt) return;
  unsigned int max_fds = BPF_CORE_READ(fdt, max_fds);
  u32 words_now = max_fds / 64;
  if (words_now > IPCAUDIT_FD_WORDS) {
    struct ipcaudit_role *r = bpf_map_lookup_elem(&roles, &pe->role);
    if (r && !r->fd_overflow) r->fd_overflow = 1;
    words_now = IPCAUDIT_FD_WORDS;
  }
  struct diff_ctx c = {
      .pe = pe,
      .st = st,
      .fdt = fdt,
      .open_fds = BPF_CORE_READ(fdt, open_fds),
      .words_now = words_now,
      .replaced = replaced,
  };
  if (!st->ready) return;
  u32 words = words_now > st->words ? words_now : st->words;
  if (words_now > st->words) st->words = words_now;
  bpf_loop(words, diff_word, &c, 0);
}

/* ---- mappings ---- */

struct unmap_ctx {
  u32 role;
  u32 tgid;
  u32 phase;
  u64 start;
  u64 end;
};

static long unmap_one(struct bpf_map *map, struct ipcaudit_map_key *key, struct ipcaudit_map *m, struct unmap_ctx *c)
{
  if (key->role != c->role || key->tgid != c->tgid) return 0;
  if (key->start < c->start || key->start + m->length > c->end) return 0;
  if (c->phase == IPCAUDIT_PHASE_BODY)
    bpf_map_delete_elem(map, key);
  else if (m->state == IPCAUDIT_OPEN)
    m->state = IPCAUDIT_RELEASED_AFTER_BODY;
  return 0;
}

static __always_inline void unmapped(struct pending *pe, u64 start, u64 length)
{
  u64 end = start + ((length + 4095) & ~4095ULL);
  struct ipcaudit_map_key key = {.role = pe->role, .tgid = pe->tgid, .start = start};
  struct ipcaudit_map *m = bpf_map_lookup_elem(&mappings, &key);
  if (m && start + m->length == end) {  /* the usual case: exactly one whole mapping */
    if (pe->phase == IPCAUDIT_PHASE_BODY)
      bpf_map_delete_elem(&mappings, &key);
    else if (m->state == IPCAUDIT_OPEN)
      m->state = IPCAUDIT_RELEASED_AFTER_BODY;
    return;
  }
  struct unmap_ctx c = {.role = pe->role, .tgid = pe->tgid, .phase = pe->phase, .start = start, .end = end};
  bpf_for_each_map_elem(&mappings, unmap_one, &c, 0);
}

static __always_inline void mapped(struct pending *pe, u64 start)
{
  u64 length = pe->args[1];
  u32 prot = (u32)pe->args[2];
  u32 flags = (u32)pe->args[3];
  s64 fd = (s64)pe->args[4];
  struct file *file = 0;
  if (!(flags & MAP_ANONYMOUS_FLAG) && fd >= 0) {
    struct fdtable *fdt = current_fdtable();
    if (fdt) file = fd_file(fdt, (u64)fd);
  }
  u32 type = flags & MAP_SHARED_TYPE;
  bool shared = type == 1 || type == 3;
  if (!shared && file) {
    umode_t mode = BPF_CORE_READ(file, f_inode, i_mode);
    shared = (mode & S_IFMT_) == S_IFCHR_;
  }
  count(pe, shared ? IPCAUDIT_C_MMAP_SHARED : IPCAUDIT_C_MMAP_PRIVATE, 1);
  if (!shared || pe->phase != IPCAUDIT_PHASE_BODY) return;
  struct scratch *s = scratch();
  if (!s) return;
  struct ipcaudit_map *m = &s->map;
  __builtin_memset(m, 0, sizeof(*m));
  m->length = (length + 4095) & ~4095ULL;
  m->ordinal = pe->ordinal;
  m->prot = prot;
  m->flags = flags;
  m->state = IPCAUDIT_OPEN;
  __builtin_memcpy(m->verb, pe->verb, IPCAUDIT_VERB_LEN);
  if (file) describe_file(file, &m->what);
  struct ipcaudit_map_key key = {.role = pe->role, .tgid = pe->tgid, .start = start};
  if (bpf_map_update_elem(&mappings, &key, m, BPF_ANY) != 0) note_drop(pe->role);
}

/* Descriptors a sendmsg passes with SCM_RIGHTS (first control message). */
static __always_inline u64 fds_in_sendmsg(u64 msg)
{
  struct user_msghdr mh = {};
  if (bpf_probe_read_user(&mh, sizeof(mh), (void *)msg) != 0) return 0;
  if (!mh.msg_control || mh.msg_controllen < 16) return 0;
  struct {
    u64 len;
    int level;
    int type;
  } cm = {};
  if (bpf_probe_read_user(&cm, sizeof(cm), mh.msg_control) != 0) return 0;
  if (cm.level != SOL_SOCKET_ || cm.type != SCM_RIGHTS_ || cm.len <= 16) return 0;
  return (cm.len - 16) / 4;
}

/* ---- programs ---- */

SEC("tp_btf/sys_enter")
int BPF_PROG(ipcaudit_sys_enter, struct pt_regs *regs, long id)
{
  if (force_reject) return *(volatile int *)(long)id;  /* a scalar dereference: refused */
  struct task_struct *task = bpf_get_current_task_btf();
  u32 tgid = task_tgid(task);
  if (!tgid) return 0;
  struct ipcaudit_proc *p = bpf_map_lookup_elem(&procs, &tgid);
  if (!p) return 0;
  struct pending *pe = bpf_task_storage_get(&pendings, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
  if (!pe) {
    note_drop(p->role);
    return 0;
  }
  pe->nr = id;
  pe->role = p->role;
  pe->tgid = tgid;
  pe->cls = id >= 0 && id < IPCAUDIT_MAX_SYSCALL ? syscall_class[id] : IPCAUDIT_SYS_OTHER;
  pe->args[0] = PT_REGS_PARM1_CORE_SYSCALL(regs);
  pe->args[1] = PT_REGS_PARM2_CORE_SYSCALL(regs);
  pe->args[2] = PT_REGS_PARM3_CORE_SYSCALL(regs);
  pe->args[3] = PT_REGS_PARM4_CORE_SYSCALL(regs);
  pe->args[4] = PT_REGS_PARM5_CORE_SYSCALL(regs);
  pe->args[5] = 0;
  pe->ordinal = 0;
  pe->fds_sent = 0;
  __builtin_memset(pe->verb, 0, sizeof(pe->verb));

  /* Which verb is running, and where the role is: read from the role's own memory. */
  u32 phase = IPCAUDIT_PHASE_BEFORE_BODY;
  u64 *addr = bpf_map_lookup_elem(&marks, &tgid);
  struct scratch *s = scratch();
  if (addr && *addr && s) {
    struct ipcaudit_mark *m = &s->mark;
    if (bpf_probe_read_user(m, sizeof(*m), (void *)*addr) == 0) {
      phase = m->phase <= IPCAUDIT_PHASE_AFTER_BODY ? (u32)m->phase : IPCAUDIT_PHASE_AFTER_BODY;
      if (m->seq & 1) {
        __builtin_memcpy(pe->verb, m->verb, IPCAUDIT_VERB_LEN);
        pe->verb[IPCAUDIT_VERB_LEN - 1] = 0;
        pe->ordinal = m->ordinal;
      }
    } else {
      struct ipcaudit_role *r = bpf_map_lookup_elem(&roles, &p->role);
      if (r) __sync_fetch_and_add(&r->mark_faults, 1);
    }
  }
  pe->phase = phase;
  /* Verb calls count in every phase (init runs before the body); the rest only in the body. */
  pe->counting = pe->ordinal != 0 || phase == IPCAUDIT_PHASE_BODY;

  struct proc_state *st = bpf_map_lookup_elem(&states, &tgid);
  if (!st) {
    u32 zero = 0;
    struct proc_state *fresh = bpf_map_lookup_elem(&empty_state, &zero);
    if (fresh) bpf_map_update_elem(&states, &tgid, fresh, BPF_NOEXIST);
    st = bpf_map_lookup_elem(&states, &tgid);
  }
  if (st) {
    st->phase = phase;
    if (!st->ready) take_baseline(st);
  }

  if (pe->cls == IPCAUDIT_SYS_IOCTL) {
    count(pe, IPCAUDIT_C_IOCTL, 1);
    struct fdtable *fdt = current_fdtable();
    count_ioctl_target(pe, fdt ? fd_file(fdt, pe->args[0]) : 0);
  } else if (pe->cls == IPCAUDIT_SYS_SENDMSG && pe->counting) {
    pe->fds_sent = fds_in_sendmsg(pe->args[1]);
  }
  return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(ipcaudit_sys_exit, struct pt_regs *regs, long ret)
{
  struct task_struct *task = bpf_get_current_task_btf();
  struct pending *pe = bpf_task_storage_get(&pendings, task, 0, 0);
  if (!pe || pe->nr < 0) return 0;
  long nr = pe->nr;
  if (!bpf_map_lookup_elem(&procs, &pe->tgid)) {
    pe->nr = -1;
    return 0;
  }
  bool ok = (unsigned long)ret < (unsigned long)-MAX_ERRNO_;

  count(pe, IPCAUDIT_C_SYSCALLS, 1);
  if (!ok) count(pe, IPCAUDIT_C_FAILED, 1);
  if (pe->counting) count_ordinal(pe);

  s64 replaced = -1;
  if (ok) {
    switch (pe->cls) {
      case IPCAUDIT_SYS_MEMFD_CREATE: count(pe, IPCAUDIT_C_MEMFD_CREATE, 1); break;
      case IPCAUDIT_SYS_PIDFD_OPEN: count(pe, IPCAUDIT_C_PIDFD_OPEN, 1); break;
      case IPCAUDIT_SYS_PIDFD_GETFD: count(pe, IPCAUDIT_C_PIDFD_GETFD, 1); break;
      case IPCAUDIT_SYS_DUP: count(pe, IPCAUDIT_C_DUP, 1); break;
      case IPCAUDIT_SYS_DUP2:
        count(pe, IPCAUDIT_C_DUP, 1);
        if (pe->args[0] != pe->args[1]) replaced = ret;
        break;
      case IPCAUDIT_SYS_FCNTL:
        if (pe->args[1] == F_DUPFD_ || pe->args[1] == F_DUPFD_CLOEXEC_) count(pe, IPCAUDIT_C_DUP, 1);
        break;
      case IPCAUDIT_SYS_OPEN: count(pe, IPCAUDIT_C_OPEN, 1); break;
      case IPCAUDIT_SYS_CLOSE: count(pe, IPCAUDIT_C_CLOSE, 1); break;
      case IPCAUDIT_SYS_MMAP: mapped(pe, (u64)ret); break;
      case IPCAUDIT_SYS_MUNMAP:
        count(pe, IPCAUDIT_C_MUNMAP, 1);
        unmapped(pe, pe->args[0], pe->args[1]);
        break;
      case IPCAUDIT_SYS_MREMAP: count(pe, IPCAUDIT_C_MREMAP, 1); break;
      case IPCAUDIT_SYS_SENDMSG:
        count(pe, IPCAUDIT_C_SENDMSG, 1);
        count(pe, IPCAUDIT_C_FDS_SENT, pe->fds_sent);
        break;
      case IPCAUDIT_SYS_RECVMSG: count(pe, IPCAUDIT_C_RECVMSG, 1); break;
      default: break;
    }
  }
  if (nr >= 0 && nr < IPCAUDIT_MAX_SYSCALL && syscall_touches_fds[nr]) diff_fds(pe, replaced);
  pe->nr = -1;
  return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(ipcaudit_fork, struct task_struct *parent, struct task_struct *child)
{
  if (BPF_CORE_READ(child, pid) != BPF_CORE_READ(child, tgid)) return 0;  /* a thread */
  u32 ptgid = task_tgid(parent);
  if (!ptgid) return 0;
  struct ipcaudit_proc *p = bpf_map_lookup_elem(&procs, &ptgid);
  if (!p) return 0;
  u32 ctgid = task_tgid(child);
  if (!ctgid) return 0;
  struct ipcaudit_proc c = {.role = p->role, .is_role = 0};
  if (bpf_map_update_elem(&procs, &ctgid, &c, BPF_ANY) != 0) {
    note_drop(p->role);
    return 0;
  }
  u64 *addr = bpf_map_lookup_elem(&marks, &ptgid);
  if (addr) bpf_map_update_elem(&marks, &ctgid, addr, BPF_ANY);  /* same image, same address */
  struct ipcaudit_role *r = bpf_map_lookup_elem(&roles, &c.role);
  if (r) __sync_fetch_and_add(&r->processes, 1);
  return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(ipcaudit_exec, struct task_struct *task)
{
  u32 tgid = task_tgid(task);
  if (tgid) bpf_map_delete_elem(&marks, &tgid);  /* a new image: the old address means nothing */
  return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(ipcaudit_exit, struct task_struct *task)
{
  if (BPF_CORE_READ(task, signal, live.counter) != 0) return 0;  /* other threads remain */
  u32 tgid = task_tgid(task);
  if (!tgid) return 0;
  struct ipcaudit_proc *p = bpf_map_lookup_elem(&procs, &tgid);
  if (!p) return 0;
  if (p->is_role) {
    struct ipcaudit_role *r = bpf_map_lookup_elem(&roles, &p->role);
    struct proc_state *st = bpf_map_lookup_elem(&states, &tgid);
    if (r) {
      r->end_phase = st ? st->phase : IPCAUDIT_PHASE_BEFORE_BODY;
      r->ended = 1;
    }
  }
  /* What it still held is not released by a syscall: its records stay, as never released. */
  bpf_map_delete_elem(&states, &tgid);
  bpf_map_delete_elem(&marks, &tgid);
  bpf_map_delete_elem(&procs, &tgid);
  return 0;
}
