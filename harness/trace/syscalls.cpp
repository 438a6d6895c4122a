// The syscall table of the BPF tracer (syscalls.hpp).
#include "syscalls.hpp"

#include <sys/syscall.h>

namespace ipcheck::trace {

const std::vector<SyscallInfo>& syscall_table() {
  static const std::vector<SyscallInfo> table = [] {
    std::vector<SyscallInfo> t = {
        {SYS_memfd_create, "memfd_create", IPCAUDIT_SYS_MEMFD_CREATE, true},
        {SYS_pidfd_open, "pidfd_open", IPCAUDIT_SYS_PIDFD_OPEN, true},
        {SYS_pidfd_getfd, "pidfd_getfd", IPCAUDIT_SYS_PIDFD_GETFD, true},
        {SYS_dup, "dup", IPCAUDIT_SYS_DUP, true},
        {SYS_dup3, "dup3", IPCAUDIT_SYS_DUP2, true},
        {SYS_fcntl, "fcntl", IPCAUDIT_SYS_FCNTL, true},
        {SYS_openat, "openat", IPCAUDIT_SYS_OPEN, true},
        {SYS_openat2, "openat2", IPCAUDIT_SYS_OPEN, true},
        {SYS_close, "close", IPCAUDIT_SYS_CLOSE, true},
        {SYS_close_range, "close_range", IPCAUDIT_SYS_CLOSE, true},
        {SYS_mmap, "mmap", IPCAUDIT_SYS_MMAP, false},
        {SYS_munmap, "munmap", IPCAUDIT_SYS_MUNMAP, false},
        {SYS_mremap, "mremap", IPCAUDIT_SYS_MREMAP, false},
        {SYS_ioctl, "ioctl", IPCAUDIT_SYS_IOCTL, true},
        {SYS_sendmsg, "sendmsg", IPCAUDIT_SYS_SENDMSG, false},
        {SYS_recvmsg, "recvmsg", IPCAUDIT_SYS_RECVMSG, true},
        // Other descriptor makers: named in findings, followed by the table diff.
        {SYS_recvmmsg, "recvmmsg", IPCAUDIT_SYS_OTHER, true},
        {SYS_socket, "socket", IPCAUDIT_SYS_OTHER, true},
        {SYS_socketpair, "socketpair", IPCAUDIT_SYS_OTHER, true},
        {SYS_accept4, "accept4", IPCAUDIT_SYS_OTHER, true},
        {SYS_pipe2, "pipe2", IPCAUDIT_SYS_OTHER, true},
        {SYS_eventfd2, "eventfd2", IPCAUDIT_SYS_OTHER, true},
        {SYS_epoll_create1, "epoll_create1", IPCAUDIT_SYS_OTHER, true},
        {SYS_timerfd_create, "timerfd_create", IPCAUDIT_SYS_OTHER, true},
        {SYS_userfaultfd, "userfaultfd", IPCAUDIT_SYS_OTHER, true},
        {SYS_execve, "execve", IPCAUDIT_SYS_OTHER, true},
        // Syscalls that never add or remove a descriptor: no table diff after them.
        {SYS_read, "read", IPCAUDIT_SYS_OTHER, false},
        {SYS_write, "write", IPCAUDIT_SYS_OTHER, false},
        {SYS_pread64, "pread64", IPCAUDIT_SYS_OTHER, false},
        {SYS_pwrite64, "pwrite64", IPCAUDIT_SYS_OTHER, false},
        {SYS_readv, "readv", IPCAUDIT_SYS_OTHER, false},
        {SYS_writev, "writev", IPCAUDIT_SYS_OTHER, false},
        {SYS_lseek, "lseek", IPCAUDIT_SYS_OTHER, false},
        {SYS_futex, "futex", IPCAUDIT_SYS_OTHER, false},
        {SYS_poll, "poll", IPCAUDIT_SYS_OTHER, false},
        {SYS_ppoll, "ppoll", IPCAUDIT_SYS_OTHER, false},
        {SYS_epoll_wait, "epoll_wait", IPCAUDIT_SYS_OTHER, false},
        {SYS_epoll_pwait, "epoll_pwait", IPCAUDIT_SYS_OTHER, false},
        {SYS_nanosleep, "nanosleep", IPCAUDIT_SYS_OTHER, false},
        {SYS_clock_nanosleep, "clock_nanosleep", IPCAUDIT_SYS_OTHER, false},
        {SYS_clock_gettime, "clock_gettime", IPCAUDIT_SYS_OTHER, false},
        {SYS_gettimeofday, "gettimeofday", IPCAUDIT_SYS_OTHER, false},
        {SYS_getpid, "getpid", IPCAUDIT_SYS_OTHER, false},
        {SYS_gettid, "gettid", IPCAUDIT_SYS_OTHER, false},
        {SYS_getppid, "getppid", IPCAUDIT_SYS_OTHER, false},
        {SYS_mprotect, "mprotect", IPCAUDIT_SYS_OTHER, false},
        {SYS_madvise, "madvise", IPCAUDIT_SYS_OTHER, false},
        {SYS_brk, "brk", IPCAUDIT_SYS_OTHER, false},
        {SYS_rt_sigaction, "rt_sigaction", IPCAUDIT_SYS_OTHER, false},
        {SYS_rt_sigprocmask, "rt_sigprocmask", IPCAUDIT_SYS_OTHER, false},
        {SYS_rt_sigreturn, "rt_sigreturn", IPCAUDIT_SYS_OTHER, false},
        {SYS_sched_yield, "sched_yield", IPCAUDIT_SYS_OTHER, false},
        {SYS_fstat, "fstat", IPCAUDIT_SYS_OTHER, false},
        {SYS_newfstatat, "newfstatat", IPCAUDIT_SYS_OTHER, false},
        {SYS_statx, "statx", IPCAUDIT_SYS_OTHER, false},
        {SYS_fstatfs, "fstatfs", IPCAUDIT_SYS_OTHER, false},
        {SYS_getrandom, "getrandom", IPCAUDIT_SYS_OTHER, false},
        {SYS_sendto, "sendto", IPCAUDIT_SYS_OTHER, false},
        {SYS_recvfrom, "recvfrom", IPCAUDIT_SYS_OTHER, false},
        {SYS_kill, "kill", IPCAUDIT_SYS_OTHER, false},
        {SYS_tgkill, "tgkill", IPCAUDIT_SYS_OTHER, false},
        {SYS_pidfd_send_signal, "pidfd_send_signal", IPCAUDIT_SYS_OTHER, false},
        {SYS_ftruncate, "ftruncate", IPCAUDIT_SYS_OTHER, false},
        {SYS_readlinkat, "readlinkat", IPCAUDIT_SYS_OTHER, false},
        {SYS_getdents64, "getdents64", IPCAUDIT_SYS_OTHER, false},
        {SYS_prctl, "prctl", IPCAUDIT_SYS_OTHER, false},
        {SYS_rseq, "rseq", IPCAUDIT_SYS_OTHER, false},
        {SYS_set_robust_list, "set_robust_list", IPCAUDIT_SYS_OTHER, false},
    };
#ifdef SYS_dup2
    t.push_back({SYS_dup2, "dup2", IPCAUDIT_SYS_DUP2, true});
#endif
#ifdef SYS_open
    t.push_back({SYS_open, "open", IPCAUDIT_SYS_OPEN, true});
#endif
#ifdef SYS_pipe
    t.push_back({SYS_pipe, "pipe", IPCAUDIT_SYS_OTHER, true});
#endif
#ifdef SYS_accept
    t.push_back({SYS_accept, "accept", IPCAUDIT_SYS_OTHER, true});
#endif
    return t;
  }();
  return table;
}

std::string syscall_name(unsigned nr) {
  for (const auto& s : syscall_table())
    if (s.nr == static_cast<long>(nr)) return s.name;
  return "syscall " + std::to_string(nr);
}

}  // namespace ipcheck::trace
