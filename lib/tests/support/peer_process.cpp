#include "peer_process.hpp"

#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <grp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <thread>

extern char** environ;

namespace ipcref_test {
namespace {

std::vector<std::string> build_environment(const std::vector<std::string>& changes) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  for (const std::string& change : changes) {
    const auto eq = change.find('=');
    const std::string name = change.substr(0, eq);
    std::erase_if(env, [&](const std::string& v) { return v.compare(0, name.size() + 1, name + "=") == 0; });
    if (eq != std::string::npos) env.push_back(change);
  }
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

peer_process::peer_process(const peer_options& opts) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0)
    throw std::runtime_error(std::string("peer: socketpair failed: ") + std::strerror(errno));
  sock_.reset(pair[0]);
  ipcref::unique_fd child_end(pair[1]);
  int status_pipe[2];
  if (::pipe2(status_pipe, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("peer: pipe2 failed: ") + std::strerror(errno));
  ipcref::unique_fd status_read(status_pipe[0]), status_write(status_pipe[1]);

  // Everything the child needs is built before fork: after it, only async-signal-safe calls.
  std::vector<std::string> args = {peer_executable(), std::to_string(child_end.get()), std::to_string(::getpid())};
  std::vector<std::string> env = build_environment(opts.env);
  std::vector<char*> argv = pointers(args), envp = pointers(env);
  std::vector<int> keep = opts.inherit;
  keep.push_back(child_end.get());

  if (opts.pid > 0) {
    // Like fork, but with the pid chosen (the child only execs, so no fork handlers are needed).
    pid_t want = opts.pid;
    clone_args args{};
    args.exit_signal = SIGCHLD;
    args.set_tid = reinterpret_cast<std::uintptr_t>(&want);
    args.set_tid_size = 1;
    pid_ = static_cast<pid_t>(::syscall(SYS_clone3, &args, sizeof args));
    if (pid_ < 0)
      throw std::system_error(errno, std::generic_category(),
                              "peer: clone3 with set_tid " + std::to_string(opts.pid) + " failed");
  } else {
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error(std::string("peer: fork failed: ") + std::strerror(errno));
  }
  if (pid_ == 0) {
    ::setpgid(0, 0);
    for (int fd : keep) ::fcntl(fd, F_SETFD, 0);
    const uid_t uid = opts.uid;
    if (uid > 0 && (::setgroups(0, nullptr) != 0 || ::setresgid(uid, uid, uid) != 0 || ::setresuid(uid, uid, uid) != 0)) {
      const int err = errno;
      (void)!::write(status_write.get(), &err, sizeof err);
      ::_exit(127);
    }
    ::execve(argv[0], argv.data(), envp.data());
    const int err = errno;
    (void)!::write(status_write.get(), &err, sizeof err);
    ::_exit(127);
  }
  // Set the group from this side too, so that kill() works even before the child ran.
  ::setpgid(pid_, pid_);
  child_end.reset();
  status_write.reset();
  int exec_errno = 0;
  ssize_t n = 0;
  do n = ::read(status_read.get(), &exec_errno, sizeof exec_errno);
  while (n < 0 && errno == EINTR);
  if (n > 0) {
    wait();
    throw std::runtime_error(std::string("peer: exec of ") + peer_executable() + " failed: " + std::strerror(exec_errno));
  }
}

peer_process::~peer_process() {
  sock_.reset();  // the peer exits at the end of its channel
  if (reaped_ || pid_ <= 0) return;
  // A peer still busy with a request (a test that failed mid-way) gets a short grace.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < deadline) {
    int st = 0;
    const pid_t r = ::waitpid(pid_, &st, WNOHANG);
    if (r == pid_ || (r < 0 && errno != EINTR)) {
      reaped_ = true;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(-pid_, SIGKILL);
  wait();
}

void peer_process::send(op verb, std::uint64_t a, std::uint64_t b, std::uint64_t c, std::span<const std::byte> bytes,
                        int fd) {
  message m;
  m.verb = verb;
  m.a = a;
  m.b = b;
  m.c = c;
  m.set_payload(bytes);
  send_message(sock_.get(), m, fd);
}

std::optional<peer_reply> peer_process::poll_reply(std::chrono::milliseconds timeout) {
  std::optional<received> r = receive_message(sock_.get(), timeout);
  if (!r) return std::nullopt;
  return peer_reply{r->msg, std::move(r->fd)};
}

peer_reply peer_process::call(op verb, std::uint64_t a, std::uint64_t b, std::uint64_t c,
                              std::span<const std::byte> bytes, int fd, std::chrono::milliseconds timeout) {
  send(verb, a, b, c, bytes, fd);
  std::optional<peer_reply> r = poll_reply(timeout);
  if (!r)
    throw std::runtime_error("peer " + std::to_string(pid_) + " gave no reply to request " +
                             std::to_string(static_cast<unsigned>(verb)) + " (hung, or exited)");
  if (r->msg.verb != verb)
    throw std::runtime_error("peer replied to request " + std::to_string(static_cast<unsigned>(r->msg.verb)) +
                             ", expected " + std::to_string(static_cast<unsigned>(verb)));
  return std::move(*r);
}

peer_reply peer_process::must(op verb, std::uint64_t a, std::uint64_t b, std::uint64_t c,
                              std::span<const std::byte> bytes, int fd) {
  peer_reply r = call(verb, a, b, c, bytes, fd);
  if (!r.ok())
    throw std::runtime_error("peer request " + std::to_string(static_cast<unsigned>(verb)) + " failed (status " +
                             std::to_string(r.msg.status) + "): " + r.text());
  return r;
}

void peer_process::kill(int sig) {
  if (!reaped_) ::kill(-pid_, sig);
}

int peer_process::wait() {
  while (!reaped_) {
    int st = 0;
    const pid_t r = ::waitpid(pid_, &st, 0);
    if (r == pid_) {
      status_ = st;
      reaped_ = true;
    } else if (r < 0 && errno != EINTR) {
      reaped_ = true;  // not our child any more: nothing left to reap
    }
  }
  return status_;
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + ::sigabbrev_np(WTERMSIG(status));
  return "wait status " + std::to_string(status);
}

}  // namespace ipcref_test
