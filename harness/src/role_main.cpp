// The role process: says hello, waits for the start document, initialises the adapter,
// takes the audit baseline, runs the case's body for its role, audits again, reports.
#include "ipcheck/role_main.hpp"

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <optional>

#include "ipcheck/audit.hpp"
#include "ipcheck/case.hpp"
#include "ipcheck/messages.hpp"
#include "ipcheck/reports/results.hpp"
#include "ipcheck/tracing_adapter.hpp"
#include "ipcheck/verdict.hpp"
#include "ipcref/failpoints.hpp"

namespace ipcheck {

using nlohmann::json;

namespace {

struct RoleSkip {};
struct RoleHarnessError {};

class RoleImpl final : public Role {
 public:
  RoleImpl(Channel& ch, TracingAdapter& a, std::string name, std::string base, int index, std::string adapter_name,
           json start)
      : ch_(ch), adapter_(a), name_(std::move(name)), base_(std::move(base)), index_(index),
        adapter_name_(std::move(adapter_name)), start_(std::move(start)) {
    steps_ = start_.value("steps", false);
    if (const auto& i = start_.value("inject", json()); i.is_object())
      inject_ = InjectPoint{i.value("role", ""), i.value("step", "")};
  }

  using Role::check;
  using Role::require;

  Adapter& adapter() override { return adapter_; }
  const std::string& name() const override { return name_; }
  const std::string& base_name() const override { return base_; }
  int index() const override { return index_; }
  const std::string& adapter_name() const override { return adapter_name_; }

  std::vector<std::string> peers() const override {
    std::vector<std::string> out;
    for (const auto& [n, pid] : start_["peers"].items())
      if (n != name_) out.push_back(n);
    for (const auto& [n, pid] : late_peers_)
      if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
    return out;
  }

  int pid_of(const std::string& role) const override {
    const auto& p = start_["peers"];
    if (p.contains(role)) return p[role].get<int>();
    const auto it = late_peers_.find(role);
    return it == late_peers_.end() ? 0 : it->second;
  }

  std::string param(const std::string& key, const std::string& fallback) const override {
    const auto& p = start_["params"];
    return p.contains(key) ? p[key].get<std::string>() : fallback;
  }

  void send(const std::string& to, const std::string& tag, std::span<const std::byte> bytes, int fd) override {
    // A role not started with the others (an on-demand one) starts with this message: it
    // is a peer to wait on from now, before the runner's peer_start arrives.
    if (to != name_ && !start_["peers"].contains(to)) late_peers_.try_emplace(to, 0);
    if (!ch_.send(msg::Send{to, tag, {bytes.begin(), bytes.end()}, CarriedFd::lend(fd)}))
      throw RoleAbort{"the runner is gone"};
  }

  void send_handle(const std::string& to, const std::string& tag, const Exported& e) override {
    send(to, tag, e.bytes, e.fd);
  }

  Received receive(const std::string& tag) override {
    msg::Deliver d = wait_for<msg::Deliver>([&](const msg::Deliver& x) { return x.tag == tag; }, "'" + tag + "'");
    return {std::move(d.from), std::move(d.tag), std::move(d.bytes), d.fd.take()};
  }

  void barrier(const std::string& name) override {
    ch_.send(msg::Barrier{name});
    const auto r = wait_for<msg::Release>([&](const msg::Release& x) { return x.name == name; });
    if (!r.broken.empty()) throw RoleAbort{"barrier '" + name + "' broken: " + r.broken};
  }

  std::string wait_exit(const std::string& role) override {
    if (auto it = exited_.find(role); it != exited_.end()) return it->second;
    wait_for<msg::PeerExit>([&](const msg::PeerExit& x) { return x.role == role; });
    return exited_[role];
  }

  std::string wait_exit_any(const std::vector<std::string>& roles, std::string& how) override {
    for (const auto& role : roles)
      if (auto it = exited_.find(role); it != exited_.end()) {
        how = it->second;
        return role;
      }
    if (roles.empty()) throw RoleAbort{"wait_exit_any: no role to wait for"};
    const msg::PeerExit e = wait_for<msg::PeerExit>(
        [&](const msg::PeerExit& x) { return std::find(roles.begin(), roles.end(), x.role) != roles.end(); });
    how = exited_[e.role];
    return e.role;
  }

  // Waits for the runner's start slot; what comes first stays queued for the body.
  void wait_start_granted() {
    wait_for<msg::StartGranted>([](const msg::StartGranted&) { return true; });
  }

  void kill(const std::string& role, int signal) override {
    ch_.send(msg::KillPeer{role, signal});
  }

  void step(const std::string& name) override {
    if (!steps_) return;
    ch_.send(msg::Step{name, false});
    wait_for<msg::Proceed>([&](const msg::Proceed& x) { return x.name == name; });
  }

  void step_into(const std::string& name) override {
    if (steps_) ch_.send(msg::Step{name, true});
  }

  const InjectPoint& injection() const override { return inject_; }

  bool check(bool ok, const Evidence& by, std::string_view clause, const std::string& message, Where w) override {
    const auto report = verdict::CheckReport::from(ok, by, clause, message, where(w), setup_);
    ch_.send(msg::Check{report});
    if (!ok) std::fprintf(stderr, "[%s] FAILED %.*s: %s (%s)\n", name_.c_str(), static_cast<int>(clause.size()),
                          clause.data(), message.c_str(), where(w).c_str());
    return ok;
  }

  bool set_setup(bool on) override {
    const bool was = setup_;
    setup_ = on;
    return was;
  }

  [[noreturn]] void harness_error(const std::string& cause) override {
    ch_.send(msg::HarnessError{cause});
    std::fprintf(stderr, "[%s] harness error: %s\n", name_.c_str(), cause.c_str());
    throw RoleHarnessError{};
  }

  void observe(const std::string& name, const std::string& value, std::string_view clause) override {
    ch_.send(msg::Observe{name, value, std::string(clause)});
  }

  void native_error(const std::string& verb, const Outcome& o) override {
    ch_.send(msg::NativeError{verb, errc_name(o.code), o.native, o.native_name, o.message});
  }

  [[noreturn]] void skip(const std::string& reason, const std::string& by) override {
    ch_.send(msg::Skip{reason, by});
    throw RoleSkip{};
  }

  void note(const std::string& text) override { std::fprintf(stderr, "[%s] %s\n", name_.c_str(), text.c_str()); }

  void data(const std::string& key, const std::string& doc) override { ch_.send(msg::Data{key, doc, {}}); }

 private:
  static std::string where(const Where& w) {
    std::string file = w.file_name();
    // Paths relative to the source tree read better in reports than build-machine paths.
    for (const char* top : {"/cases/", "/harness/", "/fuzz/", "/bench/"})
      if (auto at = file.rfind(top); at != std::string::npos) {
        file = file.substr(at + 1);
        break;
      }
    return file + ":" + std::to_string(w.line());
  }

  bool every_peer_exited() const {
    for (const auto& p : peers())
      if (!exited_.count(p)) return false;
    return true;
  }

  // Returns the first message of type T (queued or new) that `want` accepts; remembers peer
  // exits. With `from_peer` (what a peer would send), gives up once every other role has
  // ended: the runner relays a role's last messages before its exit, so nothing more can come.
  template <class T, class Pred>
  T wait_for(Pred want, const std::string& from_peer = {}) {
    for (auto it = pending_.begin(); it != pending_.end(); ++it)
      if (auto* x = std::get_if<T>(&*it); x && want(*x)) {
        T m = std::move(*x);
        pending_.erase(it);
        return m;
      }
    auto give_up_if_alone = [&] {
      if (from_peer.empty() || !every_peer_exited()) return;
      std::string how;
      for (const auto& [n, h] : exited_) how += (how.empty() ? "" : ", ") + n + " " + h;
      const std::string why = "waiting for " + from_peer + ", but every other role has ended (" + how + ")";
      check(false, "harness.role", why, Where::current());
      throw RoleAbort{why};
    };
    give_up_if_alone();
    for (;;) {
      std::optional<Message> m;
      try {
        m = ch_.receive(-1);
      } catch (const ChannelError& e) {
        throw RoleAbort{std::string("the runner closed the channel: ") + e.what()};
      }
      if (!m) continue;
      msg::Any any = msg::decode_any(*m);
      if (const auto* late = std::get_if<msg::PeerStart>(&any)) {
        late_peers_[late->role] = late->pid;
        continue;
      }
      const auto* gone = std::get_if<msg::PeerExit>(&any);
      if (gone) exited_[gone->role] = gone->how;
      if (auto* x = std::get_if<T>(&any); x && want(*x)) return std::move(*x);
      if (!gone) pending_.push_back(std::move(any));
      else give_up_if_alone();
    }
  }

  std::map<std::string, int> late_peers_;  // on-demand roles started after the start document
  Channel& ch_;
  TracingAdapter& adapter_;
  std::string name_, base_;
  int index_;
  std::string adapter_name_;
  json start_;
  bool steps_ = false;
  bool setup_ = false;
  InjectPoint inject_;
  std::deque<msg::Any> pending_;
  std::map<std::string, std::string> exited_;
};

struct RoleArgs {
  std::string case_id, role, adapter;
};

RoleArgs parse_role_args(const std::vector<std::string>& args) {
  RoleArgs r;
  for (std::size_t i = 0; i + 1 < args.size(); i += 2) {
    if (args[i] == "--case") r.case_id = args[i + 1];
    else if (args[i] == "--role") r.role = args[i + 1];
    else if (args[i] == "--adapter") r.adapter = args[i + 1];
  }
  return r;
}

// Waits for the runner's start document; false when the runner went away first.
bool receive_start(Channel& ch, json& start) {
  try {
    for (;;) {
      auto m = ch.receive(-1);
      if (m && m->type == MsgType::start) {
        start = msg::decode<msg::Start>(*m).doc;
        return true;
      }
    }
  } catch (const ChannelError&) {
    return false;  // the runner went away before the start
  }
}

void send_done(Channel& ch, bool aborted, const std::string& message) {
  ch.send(msg::Done{aborted, message});
  std::fflush(nullptr);
}

// The adapter's configuration from the start document (`start` is not const: a missing
// adapter_options reads as none, as operator[] inserts it).
AdapterConfig role_adapter_config(json& start) {
  AdapterConfig config;
  config.transport = start.value("transport", "auto");
  config.runner_pid = start.value("runner_pid", 0);
  for (const auto& [k, v] : start["adapter_options"].items()) config.options[k] = v.get<std::string>();
  return config;
}

// Whether a failed Adapter::init is the runtime's failing to start (a context or device it
// could not make: its own answer, lost or broken) rather than the machine's lacking it (the
// adapter found no library, or the runtime says this machine has nothing it supports).
bool init_failed_by_runtime(const Outcome& init) {
  return init.from_runtime() && init.code != Errc::not_implemented && init.code != Errc::feature_not_supported;
}

// The adapter probe's role ("info"): the driver and devices, why the adapter is not
// available, or the limits that keep it from starting.
// The failpoints' arming word (ipcref/failpoints.hpp, kArmEnv): made before the adapter
// starts, where the case gives this role failpoints, and set when the body begins, so that a
// failpoint's call count starts with the body (a runtime's start-up calls do not use it up).
class FailpointArm {
 public:
  FailpointArm() {
    if (!std::getenv(ipcref::failpoints::kEnv)) return;
    fd_.reset(::memfd_create("ipcheck-failpoint-arm", MFD_CLOEXEC));
    if (!fd_ || ::ftruncate(fd_.get(), 4096) != 0) return;
    void* p = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd_.get(), 0);
    if (p == MAP_FAILED) return;
    word_ = static_cast<std::uint32_t*>(p);
    ::setenv(ipcref::failpoints::kArmEnv, std::to_string(fd_.get()).c_str(), 1);  // before any thread
    current = this;
  }
  ~FailpointArm() {
    if (current == this) current = nullptr;
  }
  void arm() noexcept {
    if (word_) __atomic_store_n(word_, 1u, __ATOMIC_SEQ_CST);
  }
  // What the layers wrote back (ipcref/failpoints.hpp: kArmCountAt, kArmLastAt).
  FailpointsFired fired() const {
    FailpointsFired f;
    if (!word_) return f;
    const auto* base = reinterpret_cast<const volatile char*>(word_);
    f.count = *reinterpret_cast<const volatile std::uint32_t*>(base + ipcref::failpoints::kArmCountAt);
    for (std::size_t i = ipcref::failpoints::kArmLastAt; i < ipcref::failpoints::kArmBytes && base[i]; ++i)
      f.last += base[i];
    return f;
  }
  static FailpointArm* current;

 private:
  unique_fd fd_;
  std::uint32_t* word_ = nullptr;
};

FailpointArm* FailpointArm::current = nullptr;

int answer_info(Channel& ch, TracingAdapter& adapter, const AdapterConfig& config, const std::string& adapter_name,
                const std::string& limits, bool hold) {
  json info;
  bool initialised = false;
  if (!limits.empty()) {
    info = {{"harness_error", limits}};
  } else {
    const Outcome init = adapter.init(config);
    initialised = init.ok();
    info = init.ok() ? msg::info_doc(adapter.info())
                     : json{{"error", "adapter '" + adapter_name + "' is not available: " + init.describe()},
                            {"errc", errc_name(init.code)},
                            {"by", init_failed_by_runtime(init) ? "runtime_init" : ""}};
  }
  ch.send(msg::Info{info});
  // Asked to hold the runtime (the runner's RuntimeHold, for adapters whose start costs most
  // when no other process has the device open): the adapter stays initialised, its contexts
  // alive, until the runner closes the channel (the run is over, or the runner is gone).
  if (hold && initialised) {
    try {
      while (true) ch.receive(-1);
    } catch (const ChannelError&) {
    }
    return 0;
  }
  send_done(ch, false, "");
  return 0;
}

// A fault of the harness or the machine: reported as such, and the role ends.
int role_fault(Channel& ch, RoleImpl& role, const std::string& cause) {
  try {
    role.harness_error(cause);
  } catch (const RoleHarnessError&) {
  }
  send_done(ch, true, "harness error");
  return 0;
}

// The role skips before its body: says why, then that it is done.
int role_skips(Channel& ch, RoleImpl& role, const std::string& why, const std::string& by = {}) {
  try {
    role.skip(why, by);
  } catch (const RoleSkip&) {
  }
  send_done(ch, false, "skipped");
  return 0;
}

// Initialises the adapter for a case's role; with `slot`, its contexts wait for the runner's
// start slot. Returns the role's exit code where it ends here (limits, exhausted resources,
// an adapter not available or failing, the runner gone), having said why.
std::optional<int> init_role_adapter(Channel& ch, RoleImpl& role, TracingAdapter& adapter, const AdapterConfig& config,
                                     const std::string& adapter_name, const std::string& limits, bool slot) {
  if (!limits.empty()) return role_fault(ch, role, limits);
  // What needs no device first; then, where the runner limits starts ("start_slot"), the
  // role waits for its slot before the adapter makes its contexts (runner_admission.hpp).
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  Outcome init = adapter.prepare(config);
  double waited_s = 0;
  if (init.ok()) {
    if (slot) {
      const auto asked = Clock::now();
      try {
        ch.send(msg::WantStart{});
        role.wait_start_granted();
      } catch (const RoleAbort&) {
        return 3;  // the runner went away: nobody to report to
      } catch (const ChannelError&) {
        return 3;
      }
      waited_s = std::chrono::duration<double>(Clock::now() - asked).count();
    }
    init = adapter.init(config);
  }
  // The runner holds a start slot for this role until now (runner_admission.cpp).
  ch.send(msg::Initialised{std::max(0.0, std::chrono::duration<double>(Clock::now() - t0).count() - waited_s)});
  if (!init.ok() && init.code == Errc::exhausted)
    return role_fault(ch, role, "the machine ran out of resources while adapter '" + adapter_name + "' initialised: " + init.describe());
  if (!init.ok()) {
    if (init.code == Errc::not_implemented || init.code == Errc::feature_not_supported ||
        init.code == Errc::device_lost)
      return role_skips(ch, role, "adapter '" + adapter_name + "' is not available here: " + init.describe(),
                        init_failed_by_runtime(init) ? "runtime_init" : "");
    role.check(false, "harness.adapter_init", "adapter '" + adapter_name + "' failed to initialise: " + init.describe(), Where::current());
    send_done(ch, true, "adapter init failed");
    return 0;
  }
  return std::nullopt;
}

// How the role's body ended: aborted or not, and the message that goes with it.
struct BodyEnd {
  bool aborted = false;
  std::string message;
};

BodyEnd run_role_body(const RoleDef& rd, RoleImpl& role, const std::string& role_name) {
  BodyEnd end;
  mark_phase(in_body);
  try {
    rd.body(role);
  } catch (const RoleAbort& e) {
    end.aborted = true;
    end.message = e.why;
    std::fprintf(stderr, "[%s] stopped: %s\n", role_name.c_str(), e.why.c_str());
  } catch (const RoleSkip&) {
    end.aborted = false;
    end.message = "skipped";
  } catch (const RoleHarnessError&) {
    end.aborted = true;
    end.message = "harness error";
  } catch (const std::exception& e) {
    role.check(false, "harness.role", std::string("uncaught exception: ") + e.what(), Where::current());
    end.aborted = true;
    end.message = e.what();
  }
  mark_phase(after_body);
  return end;
}

// The role's own audit (proc): what it held after the body that it did not hold before.
json proc_audit_doc(const ProcSnapshot& before, const ProcSnapshot& after, TracingAdapter& adapter) {
  json leaks = json::array();
  for (const auto& l : diff_snapshots(before, after)) leaks.push_back({{"kind", l.kind}, {"item", l.item}});
  return {{"method", "proc"},
          {"fds_before", before.fds.size()},
          {"fds_after", after.fds.size()},
          {"tracked_mappings_before", before.mappings.size()},
          {"tracked_mappings_after", after.mappings.size()},
          {"verbs", adapter.calls()},
          {"leaks", leaks}};
}

}  // namespace

std::string limits_too_low() {
  rlimit files{}, procs{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY && files.rlim_cur < kMinDescriptors)
    return "the descriptor limit (ulimit -n) is " + std::to_string(files.rlim_cur) + "; ipcheck's processes need at least " +
           std::to_string(kMinDescriptors) + ": raise it (ulimit -n 1024) and run again";
  if (::getrlimit(RLIMIT_NPROC, &procs) == 0 && procs.rlim_cur != RLIM_INFINITY && procs.rlim_cur < kMinProcesses &&
      ::geteuid() != 0)  // root is not held to RLIMIT_NPROC
    return "the process limit (ulimit -u) is " + std::to_string(procs.rlim_cur) + "; ipcheck needs at least " +
           std::to_string(kMinProcesses) + " processes and threads for its roles and the drivers' threads: raise it "
           "(ulimit -u 4096) and run again";
  // Memory limits, in bytes here; ulimit shows and takes KiB (-f: 1-KiB blocks in bash).
  struct Limit {
    int resource;
    unsigned long long least;
    const char* what;
    const char* flag;
  };
  static constexpr Limit kMemory[] = {{RLIMIT_FSIZE, kMinFileSize, "the file size limit", "-f"},
                                      {RLIMIT_AS, kMinAddressSpace, "the address space limit", "-v"},
                                      {RLIMIT_STACK, kMinStack, "the stack size limit", "-s"},
                                      {RLIMIT_MEMLOCK, kMinLockedMemory, "the locked memory limit", "-l"}};
  for (const Limit& l : kMemory) {
    rlimit r{};
    if (::getrlimit(static_cast<__rlimit_resource_t>(l.resource), &r) == 0 && r.rlim_cur != RLIM_INFINITY &&
        r.rlim_cur < l.least)
      return std::string(l.what) + " (ulimit " + l.flag + ") is " + std::to_string(r.rlim_cur / 1024) +
             " KiB; ipcheck's roles and their drivers need at least " + std::to_string(l.least / 1024) +
             " KiB, and a driver's allocation beyond it would look like the driver's failure: raise it (ulimit " +
             l.flag + " unlimited) and run again";
  }
  return {};
}

namespace {

// One case's role in this process, from its start document to its done. `warm`: a kept role
// (--reuse-roles) whose adapter an earlier case of the same configuration initialised: it is
// not started again, and the audit's baseline is this case's own, taken where a fresh
// process takes it. Returns the exit code where the role ends here (it said why, or cannot
// go on); nothing once it has said done and may serve another case.
std::optional<int> serve_case(Channel& ch, TracingAdapter& adapter, AdapterConfig& config, const std::string& adapter_name,
                              const std::string& limits, const std::string& case_id, const std::string& role_name,
                              json& start, bool warm, FailpointArm& failpoints) {
  const CaseDef* def = find_case(case_id);
  int index = 0;
  const RoleDef* rd = def ? def->role_for(role_name, &index) : nullptr;
  if (!rd) {
    std::fprintf(stderr, "role: case '%s' has no role '%s'\n", case_id.c_str(), role_name.c_str());
    send_done(ch, true, "no such case or role");
    return 2;
  }
  RoleImpl role(ch, adapter, role_name, rd->name, index, adapter_name, start);
  if (!warm) {
    config.events = def->uses_events();
    if (const auto ended = init_role_adapter(ch, role, adapter, config, adapter_name, limits, start.value("start_slot", false)))
      return *ended;
  } else if (config.events != def->uses_events()) {
    return role_fault(ch, role, "a kept role started its adapter for another use of the event verbs");
  }
  adapter.reset_calls();  // each case's audit counts its own verb calls
  // The case's preconditions, judged again here: a run without a probe (or a role started
  // on its own) skips where the runner would have.
  // (The adapter's info is asked for only where the case has preconditions: on ref it costs
  // a tenth of a role's start.)
  bool by_runtime = false;
  if (const auto why = def->preconditions.empty() ? std::nullopt : def->unmet(adapter_name, adapter.info(), &by_runtime))
    return role_skips(ch, role, *why, by_runtime ? "runtime" : "");

  // proc: the role audits itself; bpf: the runner's tracer watches from outside, and the
  // role only marks where its body starts and ends and reports its verb calls.
  const std::string method = start.value("audit", "proc");
  const bool self_audit = method == "proc";
  ProcSnapshot before;
  if (self_audit) {
    before = take_proc_snapshot();
    if (!before.error.empty()) return role_fault(ch, role, "the role's audit cannot read /proc: " + before.error);
  }
  failpoints.arm();
  const BodyEnd end = run_role_body(*rd, role, role_name);
  if (method == "bpf") ch.send(msg::Audit{json{{"method", "bpf"}, {"verbs", adapter.calls()}}});
  if (self_audit) {
    const ProcSnapshot after = take_proc_snapshot();
    if (!after.error.empty()) return role_fault(ch, role, "the role's audit cannot read /proc after the body: " + after.error);
    ch.send(msg::Audit{proc_audit_doc(before, after, adapter)});
  }
  send_done(ch, end.aborted, end.message);
  return std::nullopt;
}

}  // namespace

int role_main(const std::vector<std::string>& args) {
  const RoleArgs a = parse_role_args(args);
  Channel ch{unique_fd(3)};
  char mark_addr[32];
  std::snprintf(mark_addr, sizeof mark_addr, "%p", static_cast<void*>(&ipcheck_verb_mark));
  if (!ch.send(msg::Hello{msg::kProtocolVersion, a.role, ::getpid(), mark_addr})) return 3;
  json start;
  if (!receive_start(ch, start)) return 3;

  const AdapterDesc* desc = find_adapter(a.adapter);
  if (!desc) {
    std::fprintf(stderr, "role: unknown adapter '%s'\n", a.adapter.c_str());
    return 2;
  }
  // A machine whose limits leave no room for the roles and their drivers: nothing it does
  // could be judged, so nothing is started (the case is `error`, naming the limit).
  const std::string limits = limits_too_low();
  FailpointArm failpoints;  // before the adapter and its runtime start
  TracingAdapter adapter(desc->create());
  AdapterConfig config = role_adapter_config(start);

  if (a.case_id == kInfoCase) return answer_info(ch, adapter, config, a.adapter, limits, start.value("hold", false));

  std::string case_id = a.case_id, role_name = a.role;
  for (bool warm = false;; warm = true) {
    if (const auto ended = serve_case(ch, adapter, config, a.adapter, limits, case_id, role_name, start, warm, failpoints))
      return *ended;
    // Kept for another case (--reuse-roles): the next start document names its case and
    // role. Whatever the last case still sent this role is read and dropped on the way; the
    // runner's closing the channel ends the role as a fresh one ends after its done.
    if (!start.value("reuse", false)) return 0;
    json next;
    if (!receive_start(ch, next)) return 0;
    case_id = next.value("case", "");
    role_name = next.value("role", "");
    start = std::move(next);
  }
}

FailpointsFired failpoints_fired() { return FailpointArm::current ? FailpointArm::current->fired() : FailpointsFired{}; }

}  // namespace ipcheck
