// A scripted adapter for the runner's own tests: a GoogleMock adapter whose verbs do what
// the script in IPCHECK_SCRIPTED (set by the test through RunOptions::env) says, so that one
// small case reaches every verdict the runner can give. Linked only into ipcheck-selftest
// (where its roles run) and harness_test (which runs them); never into ipcheck.
//
//   IPCHECK_SCRIPTED="init=fail:not_implemented;mem_open=crash"
//
// Verbs: prepare, init, mem_get, mem_open, mem_close. Actions: ok (the default), fail:<errc>
// (the runtime answers that Errc), crash (SIGSEGV), kill (SIGKILL: a runtime that kills its own
// process), hang (never returns), leak (succeeds and
// keeps a memfd and a shared mapping it made), meet:<dir>:<n> (waits until n processes are in
// the verb at once, each leaving a file in <dir>; fail:timeout after 5 s without them).
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>

#include <gmock/gmock.h>

#include "ipcheck/adapter.hpp"
#include "ipcheck/case.hpp"

namespace ipcheck::selftest {
namespace {

using ::testing::_;
using ::testing::Invoke;
using ::testing::NiceMock;
using ::testing::Return;

class MockAdapter : public Adapter {
 public:
  MOCK_METHOD(Outcome, prepare, (const AdapterConfig& config), (override));
  MOCK_METHOD(Outcome, init, (const AdapterConfig& config), (override));
  MOCK_METHOD(AdapterInfo, info, (), (override));
  MOCK_METHOD(std::size_t, device_count, (), (override));
  MOCK_METHOD(Result<DevPtr>, alloc, (int device, std::size_t bytes, MemKind kind), (override));
  MOCK_METHOD(Outcome, free, (DevPtr ptr), (override));
  MOCK_METHOD(Result<Exported>, mem_get, (DevPtr ptr), (override));
  MOCK_METHOD(Outcome, mem_put, (ObjectId export_id), (override));
  MOCK_METHOD(Result<DevPtr>, mem_open, (std::span<const std::byte> bytes, int fd, int device, std::uint64_t flags),
              (override));
  MOCK_METHOD(Outcome, mem_close, (DevPtr ptr), (override));
};

constexpr DevPtr kAllocated = 0x10000, kOpened = 0x20000;

Errc errc_named(const std::string& name) {
  for (Errc e : {Errc::invalid, Errc::feature_not_supported, Errc::exporter_gone, Errc::permission_denied,
                 Errc::exhausted, Errc::timeout, Errc::not_implemented, Errc::device_lost, Errc::other})
    if (name == errc_name(e)) return e;
  throw std::invalid_argument("IPCHECK_SCRIPTED: no Errc named '" + name + "'");
}

// verb -> action, from IPCHECK_SCRIPTED.
std::map<std::string, std::string> read_script() {
  std::map<std::string, std::string> script;
  const char* env = std::getenv("IPCHECK_SCRIPTED");
  std::string s = env ? env : "";
  while (!s.empty()) {
    const std::string item = s.substr(0, s.find(';'));
    s = item.size() < s.size() ? s.substr(item.size() + 1) : "";
    const auto eq = item.find('=');
    if (eq != std::string::npos) script[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return script;
}

// What a scripted verb does before it answers: nothing, or die, hang, or leak. The answer
// is success unless the action is fail:<errc>.
// meet:<dir>:<n>: true once n processes have left their file in <dir> (each its pid's).
bool meet(const std::string& spec) {
  const auto colon = spec.rfind(':');
  const std::string dir = spec.substr(0, colon);
  const std::size_t want = std::stoul(spec.substr(colon + 1));
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/" + std::to_string(::getpid())) << "here\n";
  for (int i = 0; i < 500; ++i) {
    const auto n = std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator());
    if (static_cast<std::size_t>(n) >= want) return true;
    ::usleep(10000);
  }
  return false;
}

Outcome act(const std::string& verb, const std::string& action) {
  if (action.rfind("meet:", 0) == 0 && !meet(action.substr(5)))
    return Outcome::runtime_failure("scripted_" + verb, Errc::timeout,
                                    "scripted meet in " + verb + ": the other processes never came", 1, "SCRIPTED_ERROR");
  if (action == "crash") ::raise(SIGSEGV);
  if (action == "kill") ::raise(SIGKILL);
  if (action == "hang")
    for (;;) ::pause();
  if (action == "leak") {
    const int fd = ::memfd_create("scripted-leak", MFD_CLOEXEC);
    if (fd >= 0 && ::ftruncate(fd, 4096) == 0)
      (void)::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);  // kept: the leak
  }
  if (action.rfind("fail:", 0) == 0)
    return Outcome::runtime_failure("scripted_" + verb, errc_named(action.substr(5)), "scripted failure of " + verb,
                                    1, "SCRIPTED_ERROR");
  return Outcome::runtime_success("scripted_" + verb);
}

std::unique_ptr<Adapter> make_scripted() {
  auto m = std::make_unique<NiceMock<MockAdapter>>();
  const auto script = read_script();
  auto action = [script](const std::string& verb) {
    auto it = script.find(verb);
    return it == script.end() ? std::string("ok") : it->second;
  };
  ON_CALL(*m, prepare(_)).WillByDefault(Invoke([action](const AdapterConfig&) { return act("prepare", action("prepare")); }));
  ON_CALL(*m, init(_)).WillByDefault(Invoke([action](const AdapterConfig&) { return act("init", action("init")); }));
  ON_CALL(*m, info()).WillByDefault(Invoke([] {
    AdapterInfo i;
    i.driver_name = "scripted";
    i.driver_version = "1";
    i.devices = {{"scripted0", "", {{"ipc_memory", true}}}};
    i.handle_layout = "opaque";
    i.transport = "none";
    return i;
  }));
  ON_CALL(*m, device_count()).WillByDefault(Return(1));
  ON_CALL(*m, alloc(_, _, _)).WillByDefault(Return(Result<DevPtr>{Outcome::runtime_success("scripted_alloc"), kAllocated}));
  ON_CALL(*m, free(_)).WillByDefault(Return(Outcome::runtime_success("scripted_free")));
  ON_CALL(*m, mem_get(_)).WillByDefault(Invoke([action](DevPtr) {
    const std::string bytes = "scripted handle";
    const auto* p = reinterpret_cast<const std::byte*>(bytes.data());
    return Result<Exported>{act("mem_get", action("mem_get")), Exported{1, {p, p + bytes.size()}, -1}};
  }));
  ON_CALL(*m, mem_put(_)).WillByDefault(Return(Outcome::runtime_success("scripted_mem_put")));
  ON_CALL(*m, mem_open(_, _, _, _)).WillByDefault(Invoke([action](std::span<const std::byte>, int, int, std::uint64_t) {
    return Result<DevPtr>{act("mem_open", action("mem_open")), kOpened};
  }));
  ON_CALL(*m, mem_close(_)).WillByDefault(Invoke([action](DevPtr) { return act("mem_close", action("mem_close")); }));
  return m;
}

const AdapterRegistration registered_scripted{{"scripted", "a GoogleMock adapter whose verbs follow IPCHECK_SCRIPTED (tests only)",
                               {},
                               make_scripted,
                               {},    // no adapter options
                               {},    // none names a path
                               {},    // no values to check
                               {}}};  // no start cost

// The case the scripts drive: the producer exports, the consumer opens and closes.
IPCHECK_CASE(Case("selftest.scripted", "A memory round trip through the scripted adapter")
                 .hidden()
                 .clause("harness.selftest.must")
                 .role("producer",
                       [](Role& r) {
                         const DevPtr p = r.require(r.adapter().alloc(0, 4096, MemKind::device),
                                                    "harness.selftest.must", "alloc");
                         const Exported e = r.require(r.adapter().mem_get(p), "harness.selftest.must", "mem_get");
                         r.send_handle("consumer", "handle", e);
                         r.barrier("done");
                         r.check_ok(r.adapter().free(p), "harness.selftest.must", "free");
                       })
                 .role("consumer", [](Role& r) {
                   Received h = r.receive("handle");
                   const DevPtr p = r.require(r.adapter().mem_open(h.bytes, h.fd.get(), 0, 0),
                                              "harness.selftest.must", "mem_open");
                   r.check_ok(r.adapter().mem_close(p), "harness.selftest.must", "mem_close");
                   r.barrier("done");
                 }));

}  // namespace
}  // namespace ipcheck::selftest
