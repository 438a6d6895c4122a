// ipcheck-bench-harness: what the harness itself costs, with Google Benchmark.
//
//   harness/two_role_case          the runner runs the hidden case bench.two_roles: two role
//                                  processes (fork + exec of ipcheck's role program,
//                                  ipcheck-role, as a run execs them), hello and start, a
//                                  message relayed, a check, a barrier, the audit, the verdict
//   harness/floor/two_role_case    fork + exec of a trivial C program twice, with the same
//                                  shape of handshake over one socket each (trivial_peer.c)
//
// Each also reports its steps as counters (milliseconds per case, `ipcheck bench` makes
// rows of them): step_start (until every role said hello: fork, exec, the role's own
// start-up), step_body (from then to the last role's done: the start document, the adapter's
// initialisation, the case), step_end (from then to every role reaped), and the runner's
// step_verdict (leftovers, the audit, the verdict).
//
//   ipcheck-bench-harness --ipcheck PATH --peer PATH [Google Benchmark flags]
//   ipcheck-bench-harness --ipcheck PATH --peer PATH --counts FILE
//
// --counts: no timing; the case and its floor run kWarm + kCounted times each, and FILE gets
// the system calls and page faults of each counted run, the runner's and every process it
// started together (perf_event_open counters inherited by the children: the tracepoint
// raw_syscalls:sys_enter and the software page-fault event; the tracepoint needs root or
// kernel.perf_event_paranoid -1, and without it FILE says so: the gate then calls the
// figures unmeasured). The bench gate (ipcheck bench --gate counts) judges them.
//
// `ipcheck bench` starts it (fork + exec); it loads no GPU runtime: the roles use `ref`.
#include <benchmark/benchmark.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <sys/syscall.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <cstring>
#include <string>
#include <vector>

#include "ipcheck/bench/summary.hpp"
#include "ipcheck/case.hpp"
#include "ipcheck/runner.hpp"

extern char** environ;

namespace ipcheck::bench {
namespace {

std::string g_ipcheck, g_peer;

// Milliseconds per step, summed over a repetition's iterations; Google Benchmark's counters
// (kAvgIterations) give the mean per case.
struct Steps {
  double start = 0, body = 0, end = 0, verdict = 0;
  // Seconds from the case's start: every hello, the last done, every role reaped, judged.
  void add(double hello, double done, double exited, double judged) {
    start += hello * 1e3;
    body += (done - hello) * 1e3;
    end += (exited - done) * 1e3;
    verdict += (judged - exited) * 1e3;
  }
  void report(benchmark::State& st, bool with_verdict) const {
    using benchmark::Counter;
    st.counters["step_start"] = Counter(start, Counter::kAvgIterations);
    st.counters["step_body"] = Counter(body, Counter::kAvgIterations);
    st.counters["step_end"] = Counter(end, Counter::kAvgIterations);
    if (with_verdict) st.counters["step_verdict"] = Counter(verdict, Counter::kAvgIterations);
  }
};

using StepClock = std::chrono::steady_clock;
double since(StepClock::time_point t0) { return std::chrono::duration<double>(StepClock::now() - t0).count(); }

void two_role_case(benchmark::State& st) {
  const CaseDef* def = find_case("bench.two_roles");
  if (!def) {
    st.SkipWithError("case bench.two_roles is not linked into this program");
    return;
  }
  RunOptions o;
  o.adapter = "ref";
  o.role_executable = g_ipcheck;
  o.timeout_s = 30;
  CaseTimeline t;
  o.timeline = &t;
  Steps steps;
  for (auto _ : st) {
    const reports::CaseResult r = run_case(*def, o);
    if (r.status != reports::Status::pass) {
      st.SkipWithError(("bench.two_roles ended " + std::string(reports::to_string(r.status)) + ": " + r.reason).c_str());
      break;
    }
    steps.add(t.hello, t.done, t.exited, t.judged);
  }
  steps.report(st, true);
  LabelInfo l;
  l.floor = "harness/floor/two_role_case";
  l.note = "runner + two role processes exec'd from ipcheck + handshake + a trivial body";
  st.SetLabel(make_label(l));
}

struct Peer {
  pid_t pid = -1;
  int fd = -1;  // our end of its socket
};

// The floor forks and execs by hand, not through the supervisor (harness/src/spawn.cpp): the
// bare fork + execve is what it measures, so nothing of the supervisor's may be in it.
Peer spawn_peer(const char* role) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return {};
  char* argv[] = {const_cast<char*>(g_peer.c_str()), const_cast<char*>(role), nullptr};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(sv[1], 3);  // dup2 clears close-on-exec on the copy
    ::execve(argv[0], argv, environ);
    ::_exit(127);
  }
  ::close(sv[1]);
  if (pid < 0) {
    ::close(sv[0]);
    return {};
  }
  return {pid, sv[0]};
}

bool read_word(int fd, const char* word) {
  char buf[64];
  const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
  return n == static_cast<ssize_t>(std::strlen(word)) && std::memcmp(buf, word, static_cast<std::size_t>(n)) == 0;
}

bool say(int fd, const char* word) { return ::send(fd, word, std::strlen(word), MSG_NOSIGNAL) >= 0; }

// One run of the floor: both peers started, greeted, relayed, finished and reaped; its steps
// (as the runner's, CaseTimeline) added to `steps`.
std::string floor_once(Steps& steps) {
  const auto t0 = StepClock::now();
  Peer a = spawn_peer("a"), b = spawn_peer("b");
  std::string error;
  if (a.pid < 0 || b.pid < 0) error = std::string("cannot start ") + g_peer + ": " + std::strerror(errno);
  // The parent relays as the runner does: hello from both, start to both, a's data to b,
  // b's answer to a, done from both.
  if (error.empty() && !(read_word(a.fd, "hello") && read_word(b.fd, "hello"))) error = "no hello";
  const double hello = since(t0);
  if (error.empty() && !(say(a.fd, "start") && say(b.fd, "start"))) error = "cannot send start";
  if (error.empty() && !(read_word(a.fd, "data") && say(b.fd, "data"))) error = "no data from a";
  if (error.empty() && !(read_word(b.fd, "ok") && say(a.fd, "ok"))) error = "no answer from b";
  if (error.empty() && !(read_word(a.fd, "done") && read_word(b.fd, "done"))) error = "no done";
  const double done = since(t0);
  for (Peer* p : {&a, &b}) {
    if (p->fd >= 0) ::close(p->fd);
    if (p->pid <= 0) continue;
    if (!error.empty()) ::kill(p->pid, SIGKILL);
    int status = 0;
    while (::waitpid(p->pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (error.empty() && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
      error = g_peer + " ended with status " + std::to_string(status);
  }
  const double exited = since(t0);
  steps.add(hello, done, exited, exited);
  return error;
}

void two_role_floor(benchmark::State& st) {
  Steps steps;
  for (auto _ : st) {
    if (std::string e = floor_once(steps); !e.empty()) {
      st.SkipWithError(e.c_str());
      break;
    }
  }
  steps.report(st, false);
  LabelInfo l;
  l.note = "fork + exec of a trivial C program twice + the same handshake over a socket each";
  st.SetLabel(make_label(l));
}

// ---------------------------------------------------------------- --counts

// One perf counter of this process and every process and thread it starts from now on.
class InheritedCounter {
 public:
  InheritedCounter(std::uint32_t type, std::uint64_t config, const char* what) {
    perf_event_attr a{};
    a.size = sizeof a;
    a.type = type;
    a.config = config;
    a.inherit = 1;
    fd_ = static_cast<int>(::syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
    if (fd_ < 0)
      why_ = std::string("perf_event_open(") + what + "): " + std::strerror(errno) +
             " (counting another process's system calls needs root or kernel.perf_event_paranoid -1)";
  }
  ~InheritedCounter() {
    if (fd_ >= 0) ::close(fd_);
  }
  InheritedCounter(const InheritedCounter&) = delete;
  InheritedCounter& operator=(const InheritedCounter&) = delete;
  const std::string& why_not() const { return why_; }
  // The count so far, the exited children's included.
  std::uint64_t value() const {
    std::uint64_t v = 0;
    if (fd_ < 0 || ::read(fd_, &v, sizeof v) != static_cast<ssize_t>(sizeof v)) return 0;
    return v;
  }

 private:
  int fd_ = -1;
  std::string why_;
};

std::uint64_t tracepoint_id(const char* name, std::string& why) {
  std::string refused;
  for (const char* root : {"/sys/kernel/tracing/events/", "/sys/kernel/debug/tracing/events/"}) {
    const std::string path = std::string(root) + name + "/id";
    std::ifstream in(path);
    std::uint64_t id = 0;
    if (in >> id) return id;
    if (::access(path.c_str(), F_OK) == 0 || errno == EACCES) refused = path;
  }
  why = refused.empty() ? std::string("the tracepoint ") + name +
                              " is in neither /sys/kernel/tracing nor /sys/kernel/debug/tracing (mount tracefs)"
                        : "cannot read " + refused +
                              " (counting every process's system calls needs root, or a readable tracefs and "
                              "kernel.perf_event_paranoid -1)";
  return 0;
}

std::string json_text(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}

std::string json_list(const std::vector<std::uint64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

int counts(const std::string& file) {
  constexpr int kWarm = 1, kCounted = 5;
  std::string why;
  const std::uint64_t sys_enter = tracepoint_id("raw_syscalls/sys_enter", why);
  std::ofstream out(file);
  if (!out) {
    std::fprintf(stderr, "ipcheck-bench-harness: cannot write %s\n", file.c_str());
    return 1;
  }
  std::unique_ptr<InheritedCounter> calls, faults;
  if (why.empty()) {
    calls = std::make_unique<InheritedCounter>(PERF_TYPE_TRACEPOINT, sys_enter, "raw_syscalls:sys_enter");
    faults = std::make_unique<InheritedCounter>(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, "page-faults");
    why = !calls->why_not().empty() ? calls->why_not() : faults->why_not();
  }
  if (!why.empty()) {
    out << "{\"unmeasured\": \"" << json_text(why) << "\"}\n";
    std::fprintf(stderr, "ipcheck-bench-harness: %s\n", why.c_str());
    return 0;
  }
  const CaseDef* def = find_case("bench.two_roles");
  if (!def) {
    std::fprintf(stderr, "ipcheck-bench-harness: case bench.two_roles is not linked into this program\n");
    return 1;
  }
  RunOptions o;
  o.adapter = "ref";
  o.role_executable = g_ipcheck;
  o.timeout_s = 30;
  std::string error;
  auto measure = [&](const char* name, const std::function<std::string()>& once) {
    std::vector<std::uint64_t> c, f;
    for (int run = 0; run < kWarm + kCounted && error.empty(); ++run) {
      const std::uint64_t c0 = calls->value(), f0 = faults->value();
      error = once();
      const std::uint64_t c1 = calls->value(), f1 = faults->value();
      if (run >= kWarm) {
        c.push_back(c1 - c0);
        f.push_back(f1 - f0);
      }
    }
    return std::string("{\"name\": \"") + name + "\", \"syscalls\": " + json_list(c) + ", \"faults\": " + json_list(f) + "}";
  };
  const std::string run = measure("harness/two_role_case", [&] {
    const reports::CaseResult r = run_case(*def, o);
    return r.status == reports::Status::pass ? std::string()
                                             : "bench.two_roles ended " + std::string(reports::to_string(r.status)) + ": " + r.reason;
  });
  Steps steps;
  const std::string floor = measure("harness/floor/two_role_case", [&] { return floor_once(steps); });
  if (!error.empty()) {
    std::fprintf(stderr, "ipcheck-bench-harness: %s\n", error.c_str());
    return 1;
  }
  out << "{\"figures\": [" << run << ", " << floor << "]}\n";
  return out ? 0 : 1;
}

}  // namespace
}  // namespace ipcheck::bench

int main(int argc, char** argv) {
  using namespace ipcheck::bench;
  std::vector<char*> rest{argv[0]};
  std::string counts_file;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--ipcheck" && i + 1 < argc) g_ipcheck = argv[++i];
    else if (k == "--peer" && i + 1 < argc) g_peer = argv[++i];
    else if (k == "--counts" && i + 1 < argc) counts_file = argv[++i];
    else rest.push_back(argv[i]);
  }
  if (g_ipcheck.empty() || g_peer.empty()) {
    std::fprintf(stderr, "ipcheck-bench-harness: give --ipcheck PATH and --peer PATH (ipcheck bench does)\n");
    return 2;
  }
  ::signal(SIGPIPE, SIG_IGN);
  if (!counts_file.empty()) return counts(counts_file);
  int n = static_cast<int>(rest.size());
  rest.push_back(nullptr);
  benchmark::Initialize(&n, rest.data());
  if (benchmark::ReportUnrecognizedArguments(n, rest.data())) return 2;
  benchmark::AddCustomContext("floor:harness/floor/two_role_case",
                              "fork + execve of a trivial C peer, twice, each with a SOCK_SEQPACKET socket: hello, "
                              "start, one message relayed each way, done, waitpid");
  benchmark::RegisterBenchmark("harness/two_role_case", two_role_case)->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::RegisterBenchmark("harness/floor/two_role_case", two_role_floor)->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
