// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The OS-level audit's kernel side (ipcaudit.bpf.c): what its programs call. Which process
 * and file a task and descriptor are, the counters, the descriptor table compared with what
 * a process was known to hold, the shared mappings made and unmade, and the descriptors a
 * sendmsg passes. Included by ipcaudit.bpf.c only, after ipcaudit_maps.bpf.h. */
#ifndef IPCHECK_TRACE_IPCAUDIT_HELPERS_BPF_H
#define IPCHECK_TRACE_IPCAUDIT_HELPERS_BPF_H

#include "ipcaudit_maps.bpf.h"

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

#endif  /* IPCHECK_TRACE_IPCAUDIT_HELPERS_BPF_H */
