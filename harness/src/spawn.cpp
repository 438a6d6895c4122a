// The supervisor (spawn.hpp): a child started by fork (or clone) + exec in its own process
// group, its exec confirmed, its output captured, its exit waited for and reaped; the runner
// as the subreaper of what its roles leave. What a role keeps of the runner's privileges is
// spawn_privileges.cpp's.
#include "ipcheck/spawn.hpp"

#include "ipcheck/adapter.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "ipcheck/install_layout.hpp"
#include "procfs.hpp"
#include "spawn_privileges.hpp"

extern char** environ;

namespace ipcheck {

std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

std::string self_executable() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string("/proc/self/exe");
}

namespace {
std::string& role_program_name() {
  static std::string name;
  return name;
}
}  // namespace

void set_role_program(std::string name) { role_program_name() = std::move(name); }

std::string role_executable() {
  static const std::string exe = [] {
    if (!role_program_name().empty())
      if (std::string found = find_helper_program(role_program_name()); !found.empty()) return found;
    return self_executable();
  }();
  return exe;
}

std::string role_executable_for(const std::string& adapter) {
  const AdapterDesc* d = find_adapter(adapter);
  if (!d || !d->shared_cxx_runtime || role_program_name().empty()) return role_executable();
  static const std::string shared = find_helper_program(role_program_name() + "-shared");
  return shared.empty() ? role_executable() : shared;
}

std::string last_line(const std::string& text) {
  auto end = text.find_last_not_of("\n ");
  if (end == std::string::npos) return {};
  auto begin = text.rfind('\n', end);
  begin = begin == std::string::npos ? 0 : begin + 1;
  return text.substr(begin, end - begin + 1);
}

std::string ExitStatus::describe() const {
  return exited ? "exit " + std::to_string(code) : "signal " + signal_name(signal);
}

namespace {

unique_fd open_pidfd(pid_t pid) { return unique_fd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0))); }

// What execve takes, built before fork: the strings and the pointer arrays into them.
struct ExecImage {
  std::vector<std::string> argv_s, env_s;
  std::vector<char*> argv, envp;
};

// argv is the executable and the spec's args; the environment is the runner's (for a role,
// only what role_environment_allowed lets through), with the spec's "KEY=VALUE" entries
// replacing or adding theirs (sorted by key).
void build_exec_image(const SpawnSpec& spec, ExecImage& image) {
  image.argv_s = {spec.executable};
  image.argv_s.insert(image.argv_s.end(), spec.args.begin(), spec.args.end());
  for (auto& a : image.argv_s) image.argv.push_back(a.data());
  image.argv.push_back(nullptr);

  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    const auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    std::string name = kv.substr(0, eq);
    if (spec.role && !role_environment_allowed(name)) continue;
    env[std::move(name)] = kv;
  }
  // A role of another user: its own temporary home and temporary folder (the runner's
  // may be root's alone).
  if (spec.role) {
    if (const RoleUser& u = role_user(); u.drop && !u.home.empty()) {
      env["HOME"] = "HOME=" + u.home;
      env["TMPDIR"] = "TMPDIR=" + u.home;
    }
  }
  for (const auto& kv : spec.env) env[kv.substr(0, kv.find('='))] = kv;
  for (auto& [k, v] : env) image.env_s.push_back(v);
  for (auto& v : image.env_s) image.envp.push_back(v.data());
  image.envp.push_back(nullptr);
}

// What a role keeps of the runner's privileges, and its dropping: spawn_privileges.hpp.
using spawn_detail::drop_privileges;
using spawn_detail::kUserChangeFailed;
using spawn_detail::Privileges;
using spawn_detail::role_privileges;

// What the child needs, all made before it starts.
struct ChildArgs {
  pid_t parent;
  int devnull, out_w, channel, st_w;
  char* const* argv;
  char* const* envp;
  const Privileges* privileges;
};

// The child between its start and exec (its entry: start_child): async-signal-safe calls
// only (the runner has other threads). Its own group, death with the parent, default
// signals, descriptors 0 to 4 as docs/ARCHITECTURE.md says, the rest closed; a failed exec
// writes its errno to 4.
[[noreturn]] int exec_child(void* arg) noexcept {
  const ChildArgs& a = *static_cast<const ChildArgs*>(arg);
  const int devnull = a.devnull, out_w = a.out_w, channel = a.channel, st_w = a.st_w;
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != a.parent) ::_exit(127);  // the runner died before prctl took effect
  // Every disposition back to its default: exec keeps an ignored signal ignored, and a role
  // that inherited SIGXFSZ ignored would see EFBIG from a driver instead of being stopped by
  // the file size limit the runner then names. Then, and only then, no signal blocked: a
  // child that shares the runner's memory (start_child) must run none of its handlers.
  for (int sig = 1; sig < NSIG; ++sig)
    if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, SIG_DFL);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (!drop_privileges(*a.privileges)) {
    const int err = errno + kUserChangeFailed;
    (void)!::write(st_w, &err, sizeof err);
    ::_exit(127);
  }
  // Move every source above the target numbers first, so no dup2 clobbers another.
  const int hi_null = ::fcntl(devnull, F_DUPFD, 10);
  const int hi_out = ::fcntl(out_w, F_DUPFD, 10);
  const int hi_chan = channel >= 0 ? ::fcntl(channel, F_DUPFD, 10) : -1;
  const int hi_st = ::fcntl(st_w, F_DUPFD, 10);
  ::dup2(hi_null, 0);
  ::dup2(hi_out, 1);
  ::dup2(hi_out, 2);
  if (hi_chan >= 0)
    ::dup2(hi_chan, 3);
  else
    ::close(3);
  ::dup3(hi_st, 4, O_CLOEXEC);  // closes on a successful exec: EOF tells the runner it worked
  ::close_range(5, ~0U, 0);
  ::execve(a.argv[0], a.argv, a.envp);
  const int err = errno;
  (void)!::write(4, &err, sizeof err);
  ::_exit(127);
}

// Starts the child as posix_spawn does: it shares the runner's memory on a stack of its own
// until its exec (CLONE_VM | CLONE_VFORK), with every signal blocked meanwhile, so the
// runner's page tables are not copied for a process that replaces them at once (a fork of
// the runner cost it a tenth of its time in the harness bench). The calling thread waits
// for the exec; the runner's other threads go on. Sanitizer builds fork: their runtimes do
// not follow a child on a stack they did not make.
pid_t start_child(ChildArgs& args) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  const pid_t pid = ::fork();
  if (pid == 0) exec_child(&args);
  return pid;
#else
  constexpr std::size_t kStack = 64 * 1024;
  void* stack = ::mmap(nullptr, kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) return -1;
  sigset_t all, old;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  const pid_t pid = ::clone(exec_child, static_cast<char*>(stack) + kStack, CLONE_VM | CLONE_VFORK | SIGCHLD, &args);
  const int err = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ::munmap(stack, kStack);
  errno = err;
  return pid;
#endif
}

}  // namespace

RoleProcess RoleProcess::spawn(const SpawnSpec& spec) {
  RoleProcess p = start(spec);
  p.confirm_exec();
  return p;
}

// "fork: Resource temporarily unavailable (EAGAIN: ...)": the call, the error, and for the
// errors a machine's limits cause, which limit and the fix.
std::string limit_error(const char* call, int err) {
  std::string s = std::string(call) + ": " + std::strerror(err);
  switch (err) {
    case EAGAIN:
      return s + " (EAGAIN: the process limit, ulimit -u, or the system's pid limit was reached; raise it or run "
                 "fewer jobs)";
    case EMFILE: return s + " (EMFILE: the descriptor limit, ulimit -n, was reached; raise it or run fewer jobs)";
    case ENFILE: return s + " (ENFILE: the system's open-file table is full)";
    case ENOMEM: return s + " (ENOMEM: the machine is out of memory)";
    default: return s;
  }
}

RoleProcess RoleProcess::start(const SpawnSpec& spec) {
  // Everything the child needs is built before fork: between fork and exec it may only
  // make async-signal-safe calls (the runner has other threads).
  ExecImage image;
  build_exec_image(spec, image);
  const Privileges privileges = role_privileges(spec);

  int st[2];
  unique_fd out_r, out_w;
  if (spec.output_file.empty()) {
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) throw SpawnError(limit_error("pipe2", errno), errno);
    out_r.reset(out[0]);
    out_w.reset(out[1]);
  } else {
    out_w.reset(::open(spec.output_file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!out_w) throw SpawnError("cannot write " + spec.output_file + ": " + std::strerror(errno), errno);
  }
  if (::pipe2(st, O_CLOEXEC) != 0) throw SpawnError(limit_error("pipe2", errno), errno);
  unique_fd st_r(st[0]), st_w(st[1]);
  unique_fd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!devnull) throw SpawnError(limit_error("open /dev/null", errno), errno);

  ChildArgs args{::getpid(), devnull.get(), out_w.get(), spec.channel_fd, st_w.get(), image.argv.data(), image.envp.data(),
                 &privileges};
  const pid_t pid = start_child(args);
  if (pid < 0) throw SpawnError(limit_error("fork", errno), errno);

  RoleProcess p;
  p.pid_ = pid;
  p.started_ = std::chrono::steady_clock::now();
  p.pidfd_ = open_pidfd(pid);
  out_w.reset();
  st_w.reset();
  if (out_r) ::fcntl(out_r.get(), F_SETFL, O_NONBLOCK);
  p.output_ = std::move(out_r);
  p.exec_status_ = std::move(st_r);
  p.executable_ = spec.executable;
  return p;
}

void RoleProcess::confirm_exec() {
  if (!exec_status_) return;
  int err = 0;
  ssize_t n;
  do n = ::read(exec_status_.get(), &err, sizeof err);
  while (n < 0 && errno == EINTR);
  exec_status_.reset();
  if (n == static_cast<ssize_t>(sizeof err)) {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = 0;
    output_.reset();
    if (err >= kUserChangeFailed)
      throw SpawnError("cannot start a role " + role_user().how + ": setresuid/setresgid: " +
                           std::strerror(err - kUserChangeFailed) + " (IPCHECK_ROLE_USER names another user)",
                       err - kUserChangeFailed);
    throw SpawnError("exec " + executable_ + ": " + std::strerror(err) +
                         (err == EACCES && role_user().drop ? " (roles run " + role_user().how +
                                                                  ": the install must be readable and executable by it)"
                                                            : ""),
                     err);
  }
}

RoleProcess& RoleProcess::operator=(RoleProcess&& o) noexcept {
  if (this != &o) {
    kill_and_reap();
    pid_ = std::exchange(o.pid_, 0);
    pidfd_ = std::move(o.pidfd_);
    exec_status_ = std::move(o.exec_status_);
    executable_ = std::move(o.executable_);
    output_ = std::move(o.output_);
    tail_ = std::move(o.tail_);
    status_ = std::exchange(o.status_, std::nullopt);
    started_ = o.started_;
  }
  return *this;
}

RoleProcess::~RoleProcess() { kill_and_reap(); }

void RoleProcess::kill_and_reap() noexcept {
  if (pid_ > 0 && !status_) {
    signal_group(SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

bool RoleProcess::read_output() {
  if (!output_) return false;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(output_.get(), buf, sizeof buf);
    if (n > 0) {
      tail_.append(buf, static_cast<std::size_t>(n));
      if (tail_.size() > 2 * kTailBytes) tail_.erase(0, tail_.size() - kTailBytes);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return true;
    output_.reset();  // end of file (or an error, which ends the capture the same way)
    if (tail_.size() > kTailBytes) tail_.erase(0, tail_.size() - kTailBytes);
    return false;
  }
}

void RoleProcess::begin_reuse() {
  read_output();  // the pipe does not block: what is there now
  tail_.clear();
  started_ = std::chrono::steady_clock::now();
}

const std::optional<ExitStatus>& RoleProcess::poll_exit() {
  if (pid_ > 0 && !status_) {
    int status = 0;
    pid_t r;
    do r = ::waitpid(pid_, &status, WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r == pid_) {
      ExitStatus s;
      s.exited = WIFEXITED(status);
      s.code = s.exited ? WEXITSTATUS(status) : 0;
      s.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      status_ = s;
    }
  }
  return status_;
}

std::optional<ExitStatus> RoleProcess::wait_for(std::chrono::milliseconds limit, const std::atomic<bool>* stop,
                                                 std::chrono::milliseconds grace) {
  if (pid_ <= 0 || poll_exit()) return status_;
  auto deadline = std::chrono::steady_clock::now() + limit;
  bool stopping = false;
  for (;;) {
    if (stop && !stopping && stop->load()) {
      // Asked to stop: SIGTERM to the group (an ipcheck run writes what it finished), then
      // SIGKILL once the grace is over.
      stopping = true;
      signal_group(SIGTERM);
      deadline = std::min(deadline, std::chrono::steady_clock::now() + grace);
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) break;
    pollfd p[2] = {{pidfd_.get(), POLLIN, 0}, {output_.get(), POLLIN, 0}};  // a closed one (-1) is ignored
    const int r = ::poll(p, 2, static_cast<int>(std::min<long long>(left, stop ? 100 : 1000)));
    if (r > 0 && (p[1].revents & (POLLIN | POLLHUP))) read_output();
    if (r > 0 && (p[0].revents & POLLIN)) break;
  }
  read_output();  // what is there now; a grandchild may hold the pipe open
  if (poll_exit()) return status_;
  signal_group(SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  ExitStatus killed;
  killed.signal = SIGKILL;
  status_ = killed;
  return std::nullopt;
}

void RoleProcess::signal_group(int sig) const noexcept {
  if (pid_ > 0) ::kill(-pid_, sig);
}

std::vector<std::string> RoleProcess::group_survivors() {
  std::vector<std::string> out;
  if (pid_ <= 0 || ::kill(-pid_, 0) != 0) return out;  // no member left: no /proc scan
  const pid_t self = ::getpid();
  procfs::for_each_pid([&](pid_t p) {
    if (p == pid_) return;  // the role itself (alive: a kept one; reaped: gone)
    const std::optional<std::string> fields = procfs::stat_after_comm(p);
    if (!fields) return;
    std::istringstream rest(*fields);
    std::string state, ppid, pgrp;
    rest >> state >> ppid >> pgrp;
    if (std::atoi(pgrp.c_str()) != pid_) return;
    if (state == "Z") {
      // Dead already (a SIGTERM to the group reached it first): as the subreaper the runner
      // inherited it, so it is reaped here rather than left as a zombie until the run ends.
      if (std::atoi(ppid.c_str()) == self) ::waitpid(p, nullptr, WNOHANG);
      return;
    }
    // A reaped leader's group id may have gone to a group of another program.
    if (status_ && !procfs::is_or_descends_from(std::atoi(ppid.c_str()), self)) return;
    out.push_back(std::to_string(p) + " (" + procfs::comm_of(p) + ")");
  });
  return out;
}

std::optional<pid_t> reaped_pid() {
  const pid_t p = ::fork();
  if (p == 0) ::_exit(0);
  if (p < 0) return std::nullopt;
  int status;
  while (::waitpid(p, &status, 0) < 0 && errno == EINTR) {
  }
  return p;
}

void become_subreaper() { ::prctl(PR_SET_CHILD_SUBREAPER, 1); }

std::vector<std::string> reap_orphans(const std::vector<pid_t>& keep) {
  std::vector<std::string> found;
  std::vector<pid_t> children;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::ifstream in(std::string("/proc/self/task/") + e->d_name + "/children");
      pid_t p;
      while (in >> p) children.push_back(p);
    }
    ::closedir(d);
  }
  for (pid_t p : children) {
    if (std::find(keep.begin(), keep.end(), p) != keep.end()) continue;
    found.push_back(std::to_string(p) + " (" + procfs::comm_of(p) + ")");
    ::kill(p, SIGKILL);
    int status;
    while (::waitpid(p, &status, 0) < 0 && errno == EINTR) {
    }
  }
  return found;
}

}  // namespace ipcheck
