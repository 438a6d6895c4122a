// Hidden cases for the OS-level audit's own tests: a known sequence of verbs whose syscall
// profile is exact on ref, a role that leaks in a verb (with IPCREF_DEFECT=leak_fd_per_open
// under the defects build) and then crashes, and a role killed on request while holding a
// mapping. Linked only into ipcheck-trace-selftest.
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "ipcheck/case.hpp"
#include "ipcheck/clause.hpp"
#include "ipcheck/owned.hpp"

namespace ipcheck::trace_selftest {
namespace {

constexpr const char* kClause = "harness.selftest.audit";

const ClauseRegistration clauses{{
    {kClause, Level::must, "ipcheck self-test", "the audit's known sequences run as written", ""},
}};

int opens(Role& r) { return std::stoi(r.param("opens", "5")); }

// Dies by SIGSEGV with the default action, also where a sanitizer would catch the fault.
[[noreturn]] void die_by_sigsegv() {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(SIGSEGV, &dfl, nullptr);
  ::raise(SIGSEGV);
  ::_exit(99);  // not reached
}

// Exports one page and keeps it until the consumer is done.
void export_page(Role& r) {
  Adapter& a = r.adapter();
  Owned mem = Owned::allocation(a, r.require(a.alloc(0, 4096, MemKind::device), kClause, "alloc"));
  Exported h = r.require(a.mem_get(mem.get()), kClause, "mem_get");
  Owned exported = Owned::mem_export(a, h.id);
  r.send_handle("consumer", "handle", h);
  r.barrier("done");
}

// Opens the received handle N times, then closes every mapping.
void open_and_close(Role& r, const Received& h) {
  Adapter& a = r.adapter();
  std::vector<Owned> maps;
  for (int i = 0; i < opens(r); ++i)
    maps.push_back(Owned::mapping(a, r.require(a.mem_open(h.bytes, h.fd.get(), 0), kClause,
                                               "mem_open #" + std::to_string(i + 1))));
  for (std::size_t i = 0; i < maps.size(); ++i)
    r.check_ok(maps[i].reset(), kClause, "mem_close #" + std::to_string(i + 1));
}

IPCHECK_CASE(Case("selftest.audit.profile", "N opens and N closes of one export: the call profile is exact")
                 .hidden()
                 .clause(kClause)
                 .role("producer", export_page)
                 .role("consumer", [](Role& r) {
                   Received h = r.receive("handle");
                   open_and_close(r, h);
                   r.barrier("done");
                 }));

IPCHECK_CASE(Case("selftest.audit.leak", "N opens and N closes; under leak_fd_per_open each open keeps a descriptor")
                 .hidden()
                 .clause(kClause)
                 .role("producer", export_page)
                 .role("consumer", [](Role& r) {
                   Received h = r.receive("handle");
                   open_and_close(r, h);
                   r.barrier("done");
                 }));

IPCHECK_CASE(Case("selftest.audit.leak_then_crash", "As selftest.audit.leak, then the consumer dies by SIGSEGV")
                 .hidden()
                 .clause(kClause)
                 .role("producer", export_page)
                 .role("consumer", [](Role& r) {
                   Received h = r.receive("handle");
                   open_and_close(r, h);
                   r.note("about to crash");
                   die_by_sigsegv();
                 }));

// The producer has the runner kill the consumer while it holds an open mapping: an
// expected death, so what it held is evidence, not a leak.
IPCHECK_CASE(Case("selftest.audit.killed_holding", "A consumer killed on request while it holds a mapping")
                 .hidden()
                 .clause(kClause)
                 .role("producer",
                       [](Role& r) {
                         Adapter& a = r.adapter();
                         Owned mem = Owned::allocation(a, r.require(a.alloc(0, 4096, MemKind::device), kClause, "alloc"));
                         Exported h = r.require(a.mem_get(mem.get()), kClause, "mem_get");
                         Owned exported = Owned::mem_export(a, h.id);
                         r.send_handle("consumer", "handle", h);
                         r.receive("opened");
                         r.kill("consumer");
                         r.check(r.wait_exit("consumer") == "signal SIGKILL", kClause, "consumer killed");
                       })
                 .role("consumer", [](Role& r) {
                   Received h = r.receive("handle");
                   Adapter& a = r.adapter();
                   Owned map = Owned::mapping(a, r.require(a.mem_open(h.bytes, h.fd.get(), 0), kClause, "mem_open"));
                   r.send("producer", "opened", {});
                   for (;;) ::pause();
                 }));

// ioctls counted by the file they target: three on /dev/null (each refused with ENOTTY).
IPCHECK_CASE(Case("selftest.audit.ioctl", "Three ioctls on /dev/null, outside any verb")
                 .hidden()
                 .clause(kClause)
                 .role("producer", [](Role& r) {
                   const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
                   r.require(fd >= 0, kClause, "open /dev/null");
                   termios t{};
                   int refused = 0;
                   for (int i = 0; i < 3; ++i) refused += ::ioctl(fd, TCGETS, &t) != 0;
                   ::close(fd);
                   r.check(refused == 3, kClause, std::to_string(refused) + " of 3 ioctls refused");
                 }));

}  // namespace
}  // namespace ipcheck::trace_selftest
