// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The OS-level audit, kernel side: follows each registered role process (and whatever it
 * forks) and records, per role and adapter verb, the syscalls that create, pass, map and
 * release IPC objects; and every descriptor and shared mapping the role body created until
 * the body released it. The verb comes from the role's own `ipcheck_verb_mark`, read from
 * its memory at each syscall. Nothing here depends on the adapter: it sees closed drivers
 * the same way. This file holds the programs; the settings and maps are in
 * ipcaudit_maps.bpf.h, and what the programs call in ipcaudit_helpers.bpf.h. */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "ipcaudit.h"
#include "ipcaudit_maps.bpf.h"
#include "ipcaudit_helpers.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

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
