// Deliberately broken roles: each must get the right verdict from the runner. Hidden
// from `list` and `run` unless named exactly; linked only into ipcheck-selftest.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <vector>
#include <ctime>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ipcheck/case.hpp"
#include "ipcheck/clause.hpp"

extern char** environ;

namespace ipcheck::selftest {
namespace {

const ClauseRegistration clauses{{
    {"harness.selftest.must", Level::must, "ipcheck self-test", "a must-level statement", ""},
    {"harness.selftest.should", Level::should, "ipcheck self-test", "a should-level statement", ""},
}};

std::vector<std::byte> bytes(const std::string& s) {
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  return {p, p + s.size()};
}

void talk_producer(Role& r) {
  r.send("consumer", "greeting", bytes("hello"));
  r.barrier("met");
}

void talk_consumer(Role& r) {
  Received m = r.receive("greeting");
  r.check(m.bytes == bytes("hello") && m.from == "producer", "harness.selftest.must", "greeting arrived intact");
  r.barrier("met");
}

// A real invalid store. Not instrumented, so the sanitizers of the asan preset do not turn
// the fault into their own exit; the runner test also sets ASAN_OPTIONS=handle_segv=0.
__attribute__((no_sanitize("address", "undefined"))) void segv() {
  volatile int* volatile p = nullptr;
  *p = 1;
}

IPCHECK_CASE(Case("selftest.pass", "Two roles exchange a message and meet at a barrier")
                 .hidden()
                 .clause("harness.selftest.must")
                 .role("producer", talk_producer)
                 .role("consumer", talk_consumer));

IPCHECK_CASE(Case("selftest.fail", "A must-level check fails")
                 .hidden()
                 .role("producer", [](Role& r) { r.check(false, "harness.selftest.must", "deliberate failure"); }));

IPCHECK_CASE(Case("selftest.should", "A should-level check fails: a warning, not a failure")
                 .hidden()
                 .role("producer", [](Role& r) {
                   r.check(true, "harness.selftest.must", "fine");
                   r.check(false, "harness.selftest.should", "deliberate warning");
                 }));

IPCHECK_CASE(Case("selftest.crash.segv", "The consumer dies by SIGSEGV after the handshake")
                 .hidden()
                 .role("producer", talk_producer)
                 .role("consumer", [](Role& r) {
                   r.receive("greeting");
                   r.note("about to crash");
                   segv();
                 }));

IPCHECK_CASE(Case("selftest.crash.abort", "The producer aborts")
                 .hidden()
                 .role("producer", [](Role&) { std::abort(); }));

IPCHECK_CASE(Case("selftest.hang", "The consumer never returns")
                 .hidden()
                 .role("producer", talk_producer)
                 .role("consumer", [](Role& r) {
                   r.receive("greeting");
                   for (;;) ::pause();
                 }));

IPCHECK_CASE(Case("selftest.early_exit", "The consumer exits with code 3 in the middle of its body")
                 .hidden()
                 .role("producer", talk_producer)
                 .role("consumer", [](Role& r) {
                   r.receive("greeting");
                   std::fflush(nullptr);
                   ::_exit(3);
                 }));

// The producer floods a consumer that never reads; the runner must not block on it.
IPCHECK_CASE(Case("selftest.no_read", "The consumer never reads its channel while the producer floods it")
                 .hidden()
                 .role("producer",
                       [](Role& r) {
                         const std::vector<std::byte> chunk(32 * 1024, std::byte{7});
                         for (int i = 0; i < 2000; ++i) r.send("consumer", "flood", chunk);
                         r.check(true, "harness.selftest.must", "64 MB sent without the runner blocking");
                       })
                 .role("consumer", [](Role&) {
                   for (;;) ::pause();
                 }));

IPCHECK_CASE(Case("selftest.leak.fd", "The role keeps a descriptor it opened")
                 .hidden()
                 .role("producer", [](Role& r) {
                   const int fd = ::open("/dev/null", O_RDONLY);
                   r.check(fd >= 0, "harness.selftest.must", "opened /dev/null and kept it");
                 }));

IPCHECK_CASE(Case("selftest.leak.mapping", "The role keeps a shared mapping it made")
                 .hidden()
                 .role("producer", [](Role& r) {
                   void* p = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
                   r.check(p != MAP_FAILED, "harness.selftest.must", "mapped a shared page and kept it");
                 }));

IPCHECK_CASE(Case("selftest.grandchild", "The role forks a child that outlives it")
                 .hidden()
                 .role("producer", [](Role& r) {
                   const pid_t child = ::fork();
                   if (child == 0) {
                     ::sleep(60);
                     ::_exit(0);
                   }
                   r.check(child > 0, "harness.selftest.must", "forked pid " + std::to_string(child));
                 }));

IPCHECK_CASE(Case("selftest.skip", "The role skips: not supported here")
                 .hidden()
                 .role("producer", [](Role& r) { r.skip("deliberately not supported"); })
                 .role("consumer", [](Role& r) { r.receive("never sent"); }));

// Preconditions: one no adapter meets (no device of that name), one every ref run meets. The
// unmet one's body would fail the case if a role ever ran it.
IPCHECK_CASE(Case("selftest.needs.unmet", "A precondition the adapter does not meet: skipped, the body never runs")
                 .hidden()
                 .needs([](const std::string&, const AdapterInfo& info) -> std::optional<std::string> {
                   for (const auto& d : info.devices)
                     if (d.name == "selftest-no-such-device") return std::nullopt;
                   return "needs a device named selftest-no-such-device, and this adapter has " +
                          std::to_string(info.devices.size()) + " others";
                 })
                 .role("producer", [](Role& r) { r.check(false, "harness.selftest.must", "the body ran"); }));

IPCHECK_CASE(Case("selftest.needs.met", "A precondition the adapter meets: the case runs")
                 .hidden()
                 .needs([](const std::string& adapter, const AdapterInfo&) -> std::optional<std::string> {
                   if (adapter == "ref") return std::nullopt;
                   return "a ref self-test";
                 })
                 .role("producer", [](Role& r) { r.check(true, "harness.selftest.must", "the body ran"); }));

IPCHECK_CASE(Case("selftest.skip.cut_short", "The producer skips while the consumer has a child that ignores SIGTERM")
                 .hidden()
                 .role("producer",
                       [](Role& r) {
                         r.barrier("forked");
                         r.skip("deliberately not supported");
                       })
                 .role("consumer", [](Role& r) {
                   int ready[2] = {-1, -1};
                   r.check(::pipe2(ready, O_CLOEXEC) == 0, "harness.selftest.must", "pipe2 for the child's handshake");
                   const pid_t child = ::fork();
                   if (child == 0) {
                     ::signal(SIGTERM, SIG_IGN);  // outlives the consumer the runner ends
                     const char ok = 1;
                     (void)!::write(ready[1], &ok, 1);
                     ::sleep(60);
                     ::_exit(0);
                   }
                   ::close(ready[1]);
                   // Only once the child ignores SIGTERM may the producer skip (a slow child,
                   // under TSan say, would otherwise die of the runner's SIGTERM first).
                   char got = 0;
                   const bool ignoring = child > 0 && ::read(ready[0], &got, 1) == 1;
                   ::close(ready[0]);
                   r.check(ignoring, "harness.selftest.must", "forked pid " + std::to_string(child) + ", which ignores SIGTERM");
                   r.barrier("forked");
                   r.receive("never sent");
                 }));

// Four on-demand workers: worker0 and worker2 are sent work one after the other (worker2
// only once worker0 has ended), worker1 and worker3 never: they never run.
IPCHECK_CASE(Case("selftest.on_demand", "Workers start when first sent a message, one after another")
                 .hidden()
                 .role("boss",
                       [](Role& r) {
                         for (const char* w : {"worker0", "worker2"}) {
                           r.send(w, "work", bytes(w));
                           const Received back = r.receive("result");
                           r.check(back.from == w, "harness.selftest.must", std::string("result from ") + back.from);
                           r.check(r.wait_exit(w) == "exit 0", "harness.selftest.must", std::string(w) + " ended by itself");
                         }
                       })
                 .on_demand_roles("worker", 4, [](Role& r) {
                   const Received work = r.receive("work");
                   const std::string said(reinterpret_cast<const char*>(work.bytes.data()), work.bytes.size());
                   r.check(said == r.name(), "harness.selftest.must", "work for " + said + " reached " + r.name());
                   r.send("boss", "result", bytes("done"));
                 }));

IPCHECK_CASE(Case("selftest.no_checks", "The role judges nothing")
                 .hidden()
                 .role("producer", [](Role&) {}));

IPCHECK_CASE(Case("selftest.kill_expected", "The producer has the runner kill the consumer: an expected death")
                 .hidden()
                 .role("producer",
                       [](Role& r) {
                         r.receive("ready");
                         r.kill("consumer");
                         const std::string how = r.wait_exit("consumer");
                         r.check(how == "signal SIGKILL", "harness.selftest.must", "consumer ended by " + how);
                       })
                 .role("consumer", [](Role& r) {
                   r.send("producer", "ready", {});
                   for (;;) ::pause();
                 }));

// SIGABRT rather than SIGSEGV: AddressSanitizer turns a SIGSEGV into exit code 1.
IPCHECK_CASE(Case("selftest.expendable", "An expendable role dies by SIGABRT; a peer observes how it ended")
                 .hidden()
                 .expendable("prober")
                 .role("producer",
                       [](Role& r) {
                         const std::string how = r.wait_exit("prober");
                         r.check(how == "signal SIGABRT", "harness.selftest.must", "prober ended by " + how);
                       })
                 .role("prober", [](Role&) { std::abort(); }));

IPCHECK_CASE(Case("selftest.receive_alone", "The consumer waits for a message its only peer never sends")
                 .hidden()
                 .role("producer", [](Role& r) { r.check(true, "harness.selftest.must", "ends without sending"); })
                 .role("consumer", [](Role& r) { r.receive("never sent"); }));

// Three roles: the producer stops on a failed requirement before the barrier the other two
// wait at, before sending what they wait for after it. The barrier must break (each of the two
// still has a live peer, so a receive alone would wait until the case times out).
IPCHECK_CASE(Case("selftest.abort_breaks_barrier", "The producer stops before a barrier; the two others wait at it")
                 .hidden()
                 .role("producer", [](Role&) { throw RoleAbort{"deliberate stop"}; })
                 .role("far",
                       [](Role& r) {
                         r.barrier("exported");
                         r.receive("handle");
                       })
                 .role("near", [](Role& r) {
                   r.barrier("exported");
                   r.receive("handle");
                 }));

IPCHECK_CASE(Case("selftest.inject", "A role announces steps; --inject kills it at one")
                 .hidden()
                 .steps("producer", {"first", "second"})
                 .role("producer",
                       [](Role& r) {
                         r.step("first");
                         r.step("second");
                         r.send("consumer", "done", {});
                       })
                 .role("consumer",
                       [](Role& r) {
                         const std::string how = r.wait_exit("producer");
                         r.check(true, "harness.selftest.must", "producer ended: " + how);
                         // The role knows the point from its start, not from the death.
                         r.check(r.peer_killed("producer") == (how == "signal SIGKILL"), "harness.selftest.must",
                                 "injection() says '" + r.injection().describe() + "'");
                       })
                 .injection_role("successor", [](Role& r) {
                   r.check(static_cast<bool>(r.injection()), "harness.selftest.must",
                           "started only under injection, at " + r.injection().describe());
                 }));

// The runner kills a role that announced step_into once it sleeps in the blocking call.
IPCHECK_CASE(Case("selftest.inject.into", "A role announces a step on its way into a blocking call; --inject kills it inside")
                 .hidden()
                 .steps("producer", {"waiting"})
                 .role("producer",
                       [](Role& r) {
                         r.step_into("waiting");
                         // Without injection the "wait" ends by itself.
                         ::usleep(r.injection() ? 5'000'000 : 1000);
                         r.check(!r.injection(), "harness.selftest.must", "the wait returned");
                       })
                 .role("consumer", [](Role& r) {
                   const std::string how = r.wait_exit("producer");
                   r.check(how == (r.injection() ? "signal SIGKILL" : "exit 0"), "harness.selftest.must",
                           "producer ended: " + how);
                 }));

// A declared point that the body never announces: the injected run must not pass.
IPCHECK_CASE(Case("selftest.inject.unreached", "A role declares a step it never announces")
                 .hidden()
                 .steps("producer", {"declared"})
                 .role("producer", [](Role& r) { r.check(true, "harness.selftest.must", "ends without the step"); }));

// An IPC object outlives the case: a child that left the role's process group keeps a
// memfd the role made. The runner finds it by inode and ends the child.
IPCHECK_CASE(Case("selftest.inject.escape", "A child escapes the role's group holding a memfd; the role is killed")
                 .hidden()
                 .steps("producer", {"made", "escaped"})
                 .role("producer", [](Role& r) {
                   const int fd = ::memfd_create("selftest-object", MFD_CLOEXEC);
                   r.require(fd >= 0 && ::ftruncate(fd, 4096) == 0, "harness.selftest.must", "memfd_create");
                   r.step("made");  // the runner notes the role's objects here
                   int left[2];
                   r.require(::pipe(left) == 0, "harness.selftest.must", "pipe");
                   const pid_t child = ::fork();
                   if (child == 0) {
                     ::setsid();
                     (void)!::write(left[1], "x", 1);
                     ::sleep(60);
                     ::_exit(0);
                   }
                   char c;
                   r.check(child > 0 && ::read(left[0], &c, 1) == 1, "harness.selftest.must",
                           "forked pid " + std::to_string(child) + ", which left the role's process group");
                   r.step("escaped");
                   ::close(fd);
                 }));

// The test-only switch for flakes: IPCHECK_SELFTEST_FLAKY=<counter file>:<failures> makes the
// first <failures> runs of this case fail (the file, shared by every run, counts them), and
// the later ones pass. Without the variable it passes. (ipcheck run --rerun-failures.)
int flaky_run_number(Role& r, std::string& spec, int& failures) {
  const char* v = std::getenv("IPCHECK_SELFTEST_FLAKY");
  if (!v) return -1;
  spec = v;
  const auto colon = spec.rfind(':');
  r.require(colon != std::string::npos, "harness.selftest.must", "IPCHECK_SELFTEST_FLAKY is <file>:<failures>");
  failures = std::atoi(spec.c_str() + colon + 1);
  const int fd = ::open(spec.substr(0, colon).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  r.require(fd >= 0, "harness.selftest.must", "open the flake counter " + spec.substr(0, colon));
  ::flock(fd, LOCK_EX);
  char buf[16] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  const int run = n > 0 ? std::atoi(buf) : 0;
  const std::string next = std::to_string(run + 1);
  const bool wrote = ::pwrite(fd, next.data(), next.size(), 0) == static_cast<ssize_t>(next.size());
  ::close(fd);  // releases the lock
  r.require(wrote, "harness.selftest.must", "count this run in the flake counter");
  return run;
}

IPCHECK_CASE(Case("selftest.flaky", "Fails on its first runs when IPCHECK_SELFTEST_FLAKY says so, then passes")
                 .hidden()
                 .clause("harness.selftest.must")
                 .role("producer", [](Role& r) {
                   std::string spec;
                   int failures = 0;
                   const int run = flaky_run_number(r, spec, failures);
                   r.check(run < 0 || run >= failures, "harness.selftest.must",
                           run < 0 ? std::string("no IPCHECK_SELFTEST_FLAKY: passes")
                                   : "run " + std::to_string(run + 1) + " (IPCHECK_SELFTEST_FLAKY=" + spec +
                                         ": the first " + std::to_string(failures) + " fail)");
                 }));

// What a role holds of the runner's privileges (docs/security.md, "What a role may do"): the
// no_new_privs flag, its capability sets and ignored signals as /proc/self/status shows
// them, and the names of its environment, each an observation for the hostile test.
IPCHECK_CASE(Case("selftest.privileges", "A role reports its no_new_privs flag, capabilities, ignored signals and "
                                         "environment")
                 .hidden()
                 .role("producer", [](Role& r) {
                   std::ifstream status("/proc/self/status");
                   for (std::string line; std::getline(status, line);) {
                     const auto colon = line.find(':');
                     if (colon == std::string::npos) continue;
                     const std::string key = line.substr(0, colon);
                     if (key == "NoNewPrivs" || key.rfind("Cap", 0) == 0 || key == "SigIgn" || key == "Uid" ||
                         key == "Gid" || key == "Groups")
                       r.observe(key, line.substr(std::min(line.size(), line.find_first_not_of(" \t", colon + 1))));
                   }
                   // What the role may touch of the machine (issue 41): each probe's answer, "allowed"
                   // or the errno's name. A root-only file (IPCHECK_SELFTEST_ROOT_ONLY), /etc/shadow,
                   // /etc/passwd for writing, /proc/sys, and a signal to a process of another user
                   // (IPCHECK_SELFTEST_OTHER_PID).
                   const auto answer = [](bool ok) { return ok ? std::string("allowed") : std::string(::strerrorname_np(errno)); };
                   const auto try_open = [&](const char* path, int flags) {
                     const int fd = ::open(path, flags | O_CLOEXEC);
                     const std::string a = answer(fd >= 0);
                     if (fd >= 0) ::close(fd);
                     return a;
                   };
                   if (const char* f = std::getenv("IPCHECK_SELFTEST_ROOT_ONLY")) {
                     r.observe("probe.read_root_only", try_open(f, O_RDONLY));
                     r.observe("probe.append_root_only", try_open(f, O_WRONLY | O_APPEND));
                   }
                   r.observe("probe.read_shadow", try_open("/etc/shadow", O_RDONLY));
                   r.observe("probe.write_passwd", try_open("/etc/passwd", O_WRONLY | O_APPEND));
                   r.observe("probe.write_proc_sys", try_open("/proc/sys/kernel/core_pattern", O_WRONLY));
                   if (const char* h = std::getenv("HOME")) r.observe("home", h);
                   if (const char* p = std::getenv("IPCHECK_SELFTEST_OTHER_PID"))
                     r.observe("probe.signal_other_uid", answer(::kill(static_cast<pid_t>(std::atoi(p)), 0) == 0));
                   std::vector<std::string> names;
                   for (char** e = environ; e && *e; ++e) {
                     const std::string kv(*e);
                     names.push_back(kv.substr(0, kv.find('=')));
                   }
                   std::sort(names.begin(), names.end());
                   std::string list;
                   for (const auto& n : names) list += (list.empty() ? "" : " ") + n;
                   r.observe("environment", list);
                 }));

// ---- The machine holds a role back: none of these is silence of the adapter.

// Sleeps half a second (a test stops it meanwhile with SIGSTOP, then SIGCONT).
IPCHECK_CASE(Case("selftest.stoppable", "The role naps briefly; a test stops it for longer than the inactivity limit")
                 .hidden()
                 .clause("harness.selftest.must")
                 .role("producer", [](Role& r) {
                   ::usleep(500 * 1000);
                   r.check(true, "harness.selftest.must", "went on after the stop");
                 }));

// A fixed amount of CPU work (IPCHECK_SELFTEST_CPU_MS of this thread's CPU time, 300 by
// default), printing nothing meanwhile: starved of the CPU, it takes far longer in wall time.
IPCHECK_CASE(Case("selftest.cpu_work", "The role computes silently for a fixed CPU time")
                 .hidden()
                 .clause("harness.selftest.must")
                 .role("producer", [](Role& r) {
                   const char* v = std::getenv("IPCHECK_SELFTEST_CPU_MS");
                   const long ms = v ? std::atol(v) : 300;
                   timespec t0{}, t{};
                   ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
                   volatile unsigned long spin = 0;
                   do {
                     for (int i = 0; i < 100000; ++i) spin = spin + 1;
                     ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
                   } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
                   r.check(true, "harness.selftest.must", "computed " + std::to_string(ms) + " ms of CPU time");
                 }));

// Holds an exclusive lock on the file IPCHECK_SELFTEST_LOCK for 3 s, talking meanwhile: the
// load another case runs beside.
IPCHECK_CASE(Case("selftest.crowd", "Holds a lock for 3 s while printing: the load beside another case")
                 .hidden()
                 .clause("harness.selftest.must")
                 .role("producer", [](Role& r) {
                   const char* path = std::getenv("IPCHECK_SELFTEST_LOCK");
                   r.require(path != nullptr, "harness.selftest.must", "IPCHECK_SELFTEST_LOCK names a lock file");
                   const int fd = ::open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
                   r.require(fd >= 0 && ::flock(fd, LOCK_EX) == 0, "harness.selftest.must", "lock the crowd file");
                   for (int i = 0; i < 30; ++i) {
                     r.note("crowding");
                     ::usleep(100 * 1000);
                   }
                   ::close(fd);
                   r.check(true, "harness.selftest.must", "crowded for 3 s");
                 }));

// Silent while selftest.crowd holds the lock (a timeout when they run together), quick alone.
IPCHECK_CASE(Case("selftest.needs_alone", "Waits silently for the crowd's lock: times out beside it, passes alone")
                 .hidden()
                 .clause("harness.selftest.must")
                 .role("producer", [](Role& r) {
                   const char* path = std::getenv("IPCHECK_SELFTEST_LOCK");
                   r.require(path != nullptr, "harness.selftest.must", "IPCHECK_SELFTEST_LOCK names a lock file");
                   ::usleep(500 * 1000);  // the crowd, started beside it, has the lock by now
                   const int fd = ::open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
                   r.require(fd >= 0 && ::flock(fd, LOCK_SH) == 0, "harness.selftest.must", "take the crowd file's lock");
                   ::close(fd);
                   r.check(true, "harness.selftest.must", "got the lock");
                 }));

}  // namespace
}  // namespace ipcheck::selftest
