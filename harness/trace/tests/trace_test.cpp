// The OS-level audit (--audit bpf) against known sequences: exact call profiles on ref, a
// descriptor leaked in a verb and named with that verb (also when the role then crashes,
// where the role cannot audit itself), what a killed role held kept as evidence only, and
// the fallback to proc when the tracer cannot load. Tests that load BPF skip, with the
// reason, when not root or without kernel BTF; as root with BTF the tracer must load.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

#include <gtest/gtest.h>

#include "ipcheck/auditor.hpp"
#include "ipcheck/reports/results.hpp"
#include "ipcheck/runner.hpp"
#include "ipcheck/spawn.hpp"

namespace ipcheck {
namespace {

using nlohmann::json;
using reports::CaseResult;
using reports::Status;

// Why the BPF tracer cannot be expected to load here; empty when it must.
std::string why_no_bpf() {
  if (!IPCHECK_HAVE_BPF) return "this build has no BPF tracer (clang, bpftool or libbpf were missing)";
  if (::geteuid() != 0) return "loading BPF needs root; these tests run as uid " + std::to_string(::geteuid());
  if (::access("/sys/kernel/btf/vmlinux", R_OK) != 0) return "the kernel exposes no BTF (/sys/kernel/btf/vmlinux)";
  return "";
}

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_, old_->c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

RunOptions options(const std::string& audit) {
  RunOptions o;
  o.adapter = "ref";
  o.role_executable = IPCHECK_TRACE_SELFTEST_EXE;
  o.timeout_s = 20;
  o.inactivity_s = 20;
  o.grace_s = 0.5;
  o.audit = audit;
  o.transport = "pidfd";
  return o;
}

const json& role_audit(const CaseResult& r, const std::string& role) {
  static const json none = json::object();
  if (!r.audit.contains("roles") || !r.audit["roles"].contains(role)) return none;
  return r.audit["roles"][role];
}

unsigned long long counter(const json& role, const std::string& verb, const std::string& name) {
  if (!role.contains("profile") || !role["profile"].contains(verb)) return 0;
  return role["profile"][verb].value(name, 0ull);
}

std::vector<reports::AuditFinding> findings_of(const CaseResult& r, const std::string& role) {
  std::vector<reports::AuditFinding> out;
  for (const auto& f : r.findings)
    if (f.role == role) out.push_back(f);
  return out;
}

class TraceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    become_subreaper();
    why_ = why_no_bpf();
    if (!why_.empty()) return;
    AuditorLoad load = load_bpf_auditor();
    tracer_ = std::move(load.auditor);
    load_error_ = load.why_not;
  }
  static void TearDownTestSuite() { tracer_.reset(); }

  void SetUp() override {
    if (!why_.empty()) GTEST_SKIP() << why_;
    ASSERT_NE(tracer_, nullptr) << "root with kernel BTF, yet the tracer did not load: " << load_error_;
  }

  CaseResult run(const std::string& id, RunOptions o) {
    o.auditor = tracer_.get();
    const CaseDef* c = find_case(id);
    EXPECT_NE(c, nullptr) << id;
    CaseResult r = run_case(*c, o);
    EXPECT_EQ(r.audit.value("method", ""), o.audit) << id;
    return r;
  }
  CaseResult run(const std::string& id) { return run(id, options("bpf")); }

  static std::unique_ptr<Auditor> tracer_;
  static std::string why_, load_error_;
};

std::unique_ptr<Auditor> TraceTest::tracer_;
std::string TraceTest::why_;
std::string TraceTest::load_error_;

// N opens give N descriptor fetches and N shared mappings; N closes give N unmaps.
TEST_F(TraceTest, OpensAndClosesHaveAnExactProfile) {
  RunOptions o = options("bpf");
  o.params["opens"] = "7";
  CaseResult r = run("selftest.audit.profile", o);
  ASSERT_EQ(r.status, Status::pass) << r.reason;
  const json& consumer = role_audit(r, "consumer");
  ASSERT_EQ(consumer.value("method", ""), "bpf") << consumer.dump(2);
  EXPECT_EQ(consumer.value("body", ""), "finished");
  EXPECT_EQ(consumer.value("calls_from", ""), "role");
  EXPECT_EQ(counter(consumer, "mem_open", "calls"), 7u) << consumer.dump(2);
  EXPECT_EQ(counter(consumer, "mem_open", "pidfd_getfd"), 7u) << consumer.dump(2);
  EXPECT_EQ(counter(consumer, "mem_open", "mmap_shared"), 7u) << consumer.dump(2);
  // ref keeps no descriptor per mapping: every one an open makes, it closes.
  EXPECT_EQ(counter(consumer, "mem_open", "fds_created"), counter(consumer, "mem_open", "fds_closed"))
      << consumer.dump(2);
  EXPECT_GE(counter(consumer, "mem_open", "fds_created"), 14u) << "a pidfd and the fetched descriptor per open";
  EXPECT_EQ(counter(consumer, "mem_open", "munmap"), 0u) << consumer.dump(2);
  EXPECT_EQ(counter(consumer, "mem_close", "calls"), 7u) << consumer.dump(2);
  EXPECT_EQ(counter(consumer, "mem_close", "munmap"), 7u) << consumer.dump(2);
  EXPECT_EQ(counter(consumer, "mem_close", "fds_created"), 0u) << consumer.dump(2);
  EXPECT_EQ(counter(consumer, "mem_close", "mmap_shared"), 0u) << consumer.dump(2);
  EXPECT_TRUE(consumer["leaks"].empty()) << consumer.dump(2);
  EXPECT_EQ(consumer["tracer"].value("dropped", 1ull), 0u);
  EXPECT_EQ(consumer["tracer"].value("mark_faults", 1ull), 0u);

  const json& producer = role_audit(r, "producer");
  EXPECT_EQ(counter(producer, "alloc", "calls"), 1u);
  // An ipcref object is two memfds: its data, and its control page (SECURITY.md).
  EXPECT_EQ(counter(producer, "alloc", "memfd_create"), 2u) << producer.dump(2);
  EXPECT_EQ(counter(producer, "free", "calls"), 1u);
  EXPECT_EQ(counter(producer, "free", "close"), 2u) << "free closes both memfds: " << producer.dump(2);
  EXPECT_TRUE(producer["leaks"].empty()) << producer.dump(2);
  EXPECT_TRUE(r.findings.empty());
}

// With SCM_RIGHTS the descriptor travels with the message and each open duplicates it.
TEST_F(TraceTest, ScmTransportShowsDescriptorsSentAndDuplicated) {
  RunOptions o = options("bpf");
  o.transport = "scm";
  o.params["opens"] = "3";
  CaseResult r = run("selftest.audit.profile", o);
  ASSERT_EQ(r.status, Status::pass) << r.reason;
  const json& consumer = role_audit(r, "consumer");
  EXPECT_EQ(counter(consumer, "mem_open", "dup"), 3u) << consumer.dump(2);
  EXPECT_EQ(counter(consumer, "mem_open", "pidfd_getfd"), 0u) << consumer.dump(2);
  EXPECT_EQ(counter(consumer, "mem_open", "mmap_shared"), 3u) << consumer.dump(2);
  EXPECT_GE(consumer["outside_verbs"].value("fds_created", 0ull), 1u) << "the received descriptor: " << consumer.dump(2);
  const json& producer = role_audit(r, "producer");
  EXPECT_EQ(producer["outside_verbs"].value("fds_sent", 0ull), 1u) << producer.dump(2);
}

// Each open under leak_fd_per_open keeps its descriptor: the finding names the verb call.
TEST_F(TraceTest, LeakInAVerbNamesTheDescriptorAndTheCall) {
  RunOptions o = options("bpf");
  o.env = {"IPCREF_DEFECT=leak_fd_per_open"};
  o.params["opens"] = "3";
  CaseResult r = run("selftest.audit.leak", o);
  EXPECT_EQ(r.status, Status::leak) << r.reason;
  const auto f = findings_of(r, "consumer");
  ASSERT_EQ(f.size(), 3u) << role_audit(r, "consumer").dump(2);
  std::set<std::string> verbs;
  for (const auto& x : f) {
    EXPECT_EQ(x.kind, "fd");
    EXPECT_NE(x.item.find("/memfd:ipcref-memory"), std::string::npos) << x.item;
    EXPECT_NE(x.detail.find("created by pidfd_getfd in " + x.verb), std::string::npos) << x.detail;
    EXPECT_NE(x.detail.find("never released by the end of the body"), std::string::npos) << x.detail;
    EXPECT_NE(x.detail.find("3 mem_close calls"), std::string::npos) << x.detail;
    verbs.insert(x.verb);
  }
  EXPECT_EQ(verbs, (std::set<std::string>{"mem_open #1", "mem_open #2", "mem_open #3"}));
  EXPECT_TRUE(findings_of(r, "producer").empty());
}

// The same leak, then a crash: the role never audits itself, the tracer still names it all.
TEST_F(TraceTest, LeakThenCrashIsAccountedFromOutside) {
  RunOptions o = options("bpf");
  o.env = {"IPCREF_DEFECT=leak_fd_per_open"};
  o.params["opens"] = "2";
  CaseResult r = run("selftest.audit.leak_then_crash", o);
  EXPECT_EQ(r.status, Status::crash) << r.reason;
  const json& consumer = role_audit(r, "consumer");
  EXPECT_EQ(consumer.value("body", ""), "ended inside the body") << consumer.dump(2);
  EXPECT_EQ(consumer.value("calls_from", ""), "tracer") << "the crashed role sent no counts";
  EXPECT_EQ(counter(consumer, "mem_open", "calls"), 2u) << consumer.dump(2);
  const auto f = findings_of(r, "consumer");
  ASSERT_EQ(f.size(), 2u) << consumer.dump(2);
  std::set<std::string> verbs;
  for (const auto& x : f) {
    EXPECT_EQ(x.kind, "fd");
    EXPECT_NE(x.item.find("/memfd:ipcref-memory"), std::string::npos) << x.item;
    EXPECT_NE(x.detail.find("still open when the role ended (signal SIGSEGV) inside its body"), std::string::npos)
        << x.detail;
    verbs.insert(x.verb);
  }
  EXPECT_EQ(verbs, (std::set<std::string>{"mem_open #1", "mem_open #2"}));

  // What the role's own audit can say about the same run: nothing, it died first.
  RunOptions p = options("proc");
  p.env = o.env;
  p.params = o.params;
  CaseResult proc = run("selftest.audit.leak_then_crash", p);
  EXPECT_EQ(proc.status, Status::crash);
  EXPECT_TRUE(findings_of(proc, "consumer").empty());
}

// A role the runner killed on request held a mapping: evidence, not a finding.
TEST_F(TraceTest, KilledRoleHoldingAMappingIsNotALeak) {
  CaseResult r = run("selftest.audit.killed_holding");
  EXPECT_EQ(r.status, Status::pass) << r.reason;
  EXPECT_TRUE(r.findings.empty());
  const json& consumer = role_audit(r, "consumer");
  ASSERT_TRUE(consumer.contains("held_at_end")) << consumer.dump(2);
  bool mapping = false;
  for (const auto& h : consumer["held_at_end"])
    mapping |= h.value("kind", "") == "mapping" && h.value("verb", "") == "mem_open #1";
  EXPECT_TRUE(mapping) << consumer.dump(2);
}

// Descriptors and mappings made by the role body itself, outside any verb.
TEST_F(TraceTest, LeaksOutsideVerbsAreFoundToo) {
  CaseResult fd = run("selftest.leak.fd");
  EXPECT_EQ(fd.status, Status::leak) << fd.reason;
  ASSERT_EQ(fd.findings.size(), 1u);
  EXPECT_EQ(fd.findings[0].kind, "fd");
  EXPECT_NE(fd.findings[0].item.find("/dev/null"), std::string::npos) << fd.findings[0].item;
  EXPECT_EQ(fd.findings[0].verb, "");
  EXPECT_NE(fd.findings[0].detail.find("outside any verb"), std::string::npos) << fd.findings[0].detail;

  CaseResult map = run("selftest.leak.mapping");
  EXPECT_EQ(map.status, Status::leak) << map.reason;
  ASSERT_EQ(map.findings.size(), 1u);
  EXPECT_EQ(map.findings[0].kind, "mapping");
  EXPECT_NE(map.findings[0].item.find(" rw-s "), std::string::npos) << map.findings[0].item;
}

// ioctls are counted by the device they target.
TEST_F(TraceTest, IoctlsAreCountedByTargetDevice) {
  CaseResult r = run("selftest.audit.ioctl");
  EXPECT_EQ(r.status, Status::pass) << r.reason;
  const json& producer = role_audit(r, "producer");
  const json& outside = producer["outside_verbs"];
  EXPECT_EQ(outside.value("ioctl", 0ull), 3u) << producer.dump(2);
  EXPECT_EQ(outside.value("ioctl:/dev/null", 0ull), 3u) << producer.dump(2);
  // At least: a sanitizer's runtime opens and closes files of its own.
  EXPECT_GE(outside.value("failed", 0ull), 3u) << producer.dump(2);
  EXPECT_GE(outside.value("open", 0ull), 1u) << producer.dump(2);
  EXPECT_GE(outside.value("close", 0ull), 1u) << producer.dump(2);
}

// A process the role forks is followed as part of the role.
TEST_F(TraceTest, FollowsWhatTheRoleForks) {
  CaseResult r = run("selftest.grandchild");
  EXPECT_EQ(r.status, Status::leak) << r.reason;
  // The role and its child (LeakSanitizer adds a helper process of its own at exit).
  EXPECT_GE(role_audit(r, "producer")["tracer"].value("processes", 0u), 2u) << role_audit(r, "producer").dump(2);
}

// ---- fallback: these need neither root nor BPF

class FallbackTest : public ::testing::TestWithParam<const char*> {
 protected:
  static void SetUpTestSuite() { become_subreaper(); }
};

// A tracer that fails to open, load or attach leaves a working proc audit and says why.
TEST_P(FallbackTest, RunFallsBackToProcAndSaysWhy) {
  const std::string point = GetParam();
  ScopedEnv force("IPCHECK_BPF_FORCE_FAIL", point);
  RunOptions o = options("bpf");
  o.filters = {"selftest.leak.fd"};
  o.exact = true;
  reports::Results res = run_suite(o);
  EXPECT_EQ(res.run.audit, "proc");
  EXPECT_NE(res.run.audit_note.find("bpf audit unavailable, used proc"), std::string::npos) << res.run.audit_note;
  if (why_no_bpf().empty()) {
    EXPECT_NE(res.run.audit_note.find("IPCHECK_BPF_FORCE_FAIL=" + point), std::string::npos) << res.run.audit_note;
  }
  ASSERT_EQ(res.cases.size(), 1u);
  EXPECT_EQ(res.cases[0].status, Status::leak) << "the proc audit still finds the leak: " << res.cases[0].reason;
  EXPECT_EQ(res.cases[0].audit.value("method", ""), "proc");
  const json j = reports::to_json(res);
  EXPECT_EQ(j["run"]["audit"], "proc");
  EXPECT_EQ(j["run"]["audit_note"], res.run.audit_note);
}

INSTANTIATE_TEST_SUITE_P(EachFailurePoint, FallbackTest, ::testing::Values("open", "load", "attach"));

TEST(FallbackCli, PrintsOneLineAndRecordsTheMethod) {
  const std::filesystem::path out = std::filesystem::temp_directory_path() / ("ipcheck-trace-" + std::to_string(::getpid()));
  const std::string cmd = "IPCHECK_BPF_FORCE_FAIL=load '" + std::string(IPCHECK_TRACE_SELFTEST_EXE) +
                          "' run --adapter ref --audit bpf --filter selftest.pass --exact --quiet --out '" +
                          out.string() + "' 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string text;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) text.append(buf, n);
  const int status = ::pclose(p);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text;
  EXPECT_NE(text.find("ipcheck run: bpf audit unavailable, used proc: "), std::string::npos) << text;
  const reports::Results res = reports::read_results((out / "results.json").string());
  EXPECT_EQ(res.run.audit, "proc");
  EXPECT_FALSE(res.run.audit_note.empty());
  std::filesystem::remove_all(out);
}

TEST(FallbackCli, UnknownForcedPointIsNamed) {
  if (!IPCHECK_HAVE_BPF) GTEST_SKIP() << "this build has no BPF tracer to force";
  ScopedEnv force("IPCHECK_BPF_FORCE_FAIL", "sometimes");
  AuditorLoad load = load_bpf_auditor();
  EXPECT_EQ(load.auditor, nullptr);
  EXPECT_NE(load.why_not.find("IPCHECK_BPF_FORCE_FAIL is 'sometimes'; use open, load or attach"), std::string::npos)
      << load.why_not;
}

}  // namespace
}  // namespace ipcheck
