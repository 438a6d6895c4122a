#include "ipcheck/runner.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <system_error>
#include <tuple>
#include <ctime>
#include <deque>
#include <filesystem>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "ipcheck/audit.hpp"
#include "ipcheck/clause.hpp"
#include "ipcheck/expectations.hpp"
#include "ipcheck/leftovers.hpp"
#include "ipcheck/role_main.hpp"
#include "ipcheck/spawn.hpp"
#include "ipcheck/verdict.hpp"

namespace ipcheck {

using nlohmann::json;
using reports::CaseResult;
using reports::Status;
using Clock = std::chrono::steady_clock;

std::string default_expectations_file(const std::string& adapter) {
  namespace fs = std::filesystem;
  const fs::path p = fs::path(self_executable()).parent_path() / ".." / "share" / "ipcheck" / "expectations" /
                     (adapter + ".txt");
  std::error_code ec;
  return fs::exists(p, ec) ? fs::weakly_canonical(p, ec).string() : std::string();
}

namespace {

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::vector<std::string> role_args(const RunOptions& o, const std::string& case_id, const std::string& role) {
  return {"role", "--case", case_id, "--role", role, "--adapter", o.adapter};
}

// With an injection point every role announces its steps (the runner notes the case's IPC
// objects at each) and knows which role dies where.
json start_document(const RunOptions& o, const json& peers, const InjectPoint* inject) {
  return {{"peers", peers},
          {"runner_pid", ::getpid()},
          {"transport", o.transport},
          {"adapter_options", o.adapter_options},
          {"params", o.params},
          {"audit", o.audit},
          {"steps", inject != nullptr},
          {"inject", inject ? json{{"role", inject->role}, {"step", inject->step}} : json()}};
}

// One role process of a running case.
struct RoleState {
  std::string name;
  std::string base;
  RoleProcess proc;
  Channel channel;
  bool started = false;       // spawned
  std::string spawn_error;    // why it could not be started: a harness error
  bool hello = false;
  bool done = false;
  bool aborted = false;
  std::string done_message;
  bool skipped = false;
  bool expected_death = false;  // killed on request or by injection
  bool standby = false;         // an injection-only role: it takes part in no barrier it is not at
  std::optional<std::string> at_barrier;
  std::optional<ExitStatus> exit;
  Clock::time_point exit_time{};
  double duration_s = 0;
  json audit;
  bool audit_collected = false;  // the outside auditor has reported on (and forgotten) it
  std::vector<std::string> survivors;
  // Messages the role has not taken yet (it may be busy, or never read at all).
  std::deque<Message> outbox;

  // Sends without ever blocking the runner; queues what does not fit.
  void post(MsgType t, std::vector<std::string> fields, int fd = -1) {
    if (!channel || exit) return;
    if (outbox.empty()) {
      const auto r = channel.try_send(t, fields, fd);
      if (r != Channel::TrySend::full) return;
    }
    Message m;
    m.type = t;
    m.fields = std::move(fields);
    if (fd >= 0) m.fd = unique_fd(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
    outbox.push_back(std::move(m));
  }
  void flush() {
    while (!outbox.empty() && channel) {
      const Message& m = outbox.front();
      const auto r = channel.try_send(m.type, m.fields, m.fd.get());
      if (r == Channel::TrySend::full) return;
      outbox.pop_front();
    }
  }
};

class CaseRun {
 public:
  CaseRun(const CaseDef& def, const RunOptions& opt, const InjectPoint* inject)
      : def_(def), opt_(opt), inject_(inject), adapter_(find_adapter(opt.adapter)),
        tracer_(opt.audit == "bpf" ? opt.auditor : nullptr) {
    if (!adapter_) throw std::invalid_argument("unknown adapter '" + opt.adapter + "'");
  }

  // A role the outside auditor still follows (the run was abandoned) is forgotten.
  ~CaseRun() {
    if (!tracer_) return;
    for (auto& r : roles_)
      if (r.started && !r.audit_collected) tracer_->role_forget(r.proc.pid());
  }

  CaseResult run();

 private:
  void spawn_all();
  void loop();
  // What the runner watches in one poll: each descriptor's role and kind (0 its channel,
  // 1 its output, 2 its pidfd).
  struct PollSet {
    std::vector<pollfd> fds;
    std::vector<std::pair<RoleState*, int>> owners;
  };
  PollSet poll_set();
  int poll_wait_ms(double inactivity) const;
  void receive_from(RoleState& r, short revents);
  void enforce_deadlines(double inactivity);
  void handle(RoleState& r, Message& m);
  void on_hello(RoleState& r, const Message& m);
  void on_send(RoleState& r, const Message& m);
  void on_check(RoleState& r, const Message& m);
  void on_observe(RoleState& r, const Message& m);
  void on_native_error(RoleState& r, const Message& m);
  void on_skip(RoleState& r, const Message& m);
  void on_step(RoleState& r, const Message& m);
  void on_kill_peer(RoleState& r, const Message& m);
  void reap(RoleState& r);
  void release_barriers();
  // SIGTERM to every running role but `spare` (a role ending by itself); SIGKILL after the grace.
  void begin_termination(const std::string& why, bool is_timeout, const RoleState* spare = nullptr);
  void collect_survivors();
  void note_objects(const RoleState& r);
  void kill_victim(RoleState& r, const std::string& how);
  void kill_when_blocked();
  void check_leftovers();
  void classify();
  void harness_fault(std::string cause);
  RoleState* role(const std::string& name);
  bool all_exited() const;
  void broadcast(MsgType t, const std::vector<std::string>& fields, const RoleState* except = nullptr);

  const CaseDef& def_;
  const RunOptions& opt_;
  const InjectPoint* inject_;
  const AdapterDesc* adapter_;
  Auditor* tracer_;  // the outside audit, when the run uses one
  std::deque<RoleState> roles_;
  CaseResult result_;
  Clock::time_point start_{};
  Clock::time_point last_activity_{};
  double timeout_s_ = 0;
  bool terminating_ = false;
  bool timed_out_ = false;
  bool interrupted_ = false;
  std::string termination_reason_;
  Clock::time_point kill_at_{};
  int checks_ = 0;
  std::string skip_reason_;
  std::vector<std::string> harness_errors_;  // faults of the harness or the machine, not the adapter's
  // Fault injection: whether the point was reached, the role to kill once it blocks (a
  // step_into), and the IPC objects the case's roles held (looked for after the case).
  bool injected_ = false;
  RoleState* kill_when_blocked_ = nullptr;
  Clock::time_point announced_{};
  std::map<KernelObject, std::string> objects_;
};

RoleState* CaseRun::role(const std::string& name) {
  for (auto& r : roles_)
    if (r.name == name) return &r;
  return nullptr;
}

bool CaseRun::all_exited() const {
  // Output is read for a moment after exit; a descendant that escaped the role's group
  // may hold the pipe open for ever.
  const auto now = Clock::now();
  for (const auto& r : roles_)
    if (r.started && (!r.exit || (r.proc.output_open() && now - r.exit_time < std::chrono::seconds(1)))) return false;
  return true;
}

void CaseRun::broadcast(MsgType t, const std::vector<std::string>& fields, const RoleState* except) {
  for (auto& r : roles_)
    if (&r != except && r.started && !r.done) r.post(t, fields);
}

void CaseRun::spawn_all() {
  const std::string exe = opt_.role_executable.empty() ? self_executable() : opt_.role_executable;
  for (const auto& name : def_.instance_names()) {
    const RoleDef* rd = def_.role_for(name);
    if (rd && rd->injection_only && !inject_) continue;  // stands by for a fault this run does not inject
    RoleState& r = roles_.emplace_back();
    r.name = name;
    r.standby = rd && rd->injection_only;
    r.base = rd ? rd->name : name;
    // An expendable role's death is the case's to observe (wait_exit), not a crash.
    r.expected_death = std::find(def_.expendable.begin(), def_.expendable.end(), r.base) != def_.expendable.end();
    unique_fd mine, theirs;
    try {
      std::tie(mine, theirs) = make_channel_pair();
    } catch (const std::exception& e) {
      r.spawn_error = std::string("no channel for it: ") + e.what();
      continue;
    }
    SpawnSpec spec;
    spec.executable = exe;
    spec.args = role_args(opt_, def_.id, name);
    spec.env = opt_.env;
    spec.channel_fd = theirs.get();
    try {
      r.proc = RoleProcess::start(spec);
      r.channel = Channel(std::move(mine));
      r.started = true;
      if (tracer_) tracer_->role_spawned(r.proc.pid(), def_.id, r.name);
    } catch (const SpawnError& e) {
      r.spawn_error = e.what();
    }
  }
  // Every role forked first, then each exec confirmed: the execs run side by side.
  for (auto& r : roles_) {
    if (!r.started) continue;
    try {
      r.proc.confirm_exec();
    } catch (const SpawnError& e) {
      r.spawn_error = e.what();
      r.started = false;
      r.channel = Channel();
    }
  }
}

void CaseRun::release_barriers() {
  // A barrier opens when every role still running waits at it (a stand-by role, started
  // for an injected fault, talks by messages and only joins a barrier it waits at).
  std::optional<std::string> name;
  for (bool standby : {false, true}) {  // stand-by roles count only when no other role runs
    for (const auto& r : roles_) {
      if (!r.started || r.exit || r.done || r.standby != standby) continue;
      if (!r.at_barrier) return;
      if (name && *name != *r.at_barrier) return;  // roles wait at different barriers
      name = r.at_barrier;
    }
    if (name) break;
  }
  if (!name) return;
  std::string broken;
  for (const auto& r : roles_)
    if (r.exit && !r.done && !r.expected_death)
      broken += (broken.empty() ? "" : ", ") + r.name + " ended (" + r.exit->describe() + ") before reaching it";
  for (auto& r : roles_)
    if (r.at_barrier && *r.at_barrier == *name && !r.exit) {
      r.post(MsgType::release, {*name, broken});
      r.at_barrier.reset();
    }
}

void CaseRun::begin_termination(const std::string& why, bool is_timeout, const RoleState* spare) {
  if (terminating_) return;
  terminating_ = true;
  timed_out_ = is_timeout;
  termination_reason_ = why;
  for (auto& r : roles_)
    if (r.started && !r.exit && &r != spare) r.proc.signal_group(SIGTERM);
  kill_at_ = Clock::now() + std::chrono::milliseconds(static_cast<int>(opt_.grace_s * 1000));
}

void CaseRun::reap(RoleState& r) {
  if (r.exit || !r.proc.poll_exit()) return;
  // What the role sent before it exited is still queued: read it all first.
  try {
    while (r.channel)
      if (auto m = r.channel.receive(0))
        handle(r, *m);
      else
        break;
  } catch (const std::exception&) {
  }
  r.channel = Channel();
  r.outbox.clear();  // messages (and descriptors) for a role that is gone go nowhere
  if (kill_when_blocked_ == &r) kill_when_blocked_ = nullptr;
  r.exit = r.proc.status();
  r.exit_time = Clock::now();
  r.duration_s = seconds_since(r.proc.started());
  // Grandchildren left in the role's group are a leak of processes; they die here.
  r.survivors = r.proc.group_survivors();
  if (!r.survivors.empty()) {
    r.proc.signal_group(SIGKILL);
    // As the subreaper the runner inherited them: reap, so no zombie outlives the case.
    for (const auto& s : r.survivors) {
      const pid_t p = std::atoi(s.c_str());
      int status;
      while (::waitpid(p, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }
  if (tracer_) {
    // Every process of the role is gone: what the tracer saw is complete.
    RoleEnd end;
    end.how = r.exit->describe();
    end.killed = r.expected_death || terminating_;
    end.crashed = !r.exit->exited && !end.killed;
    r.audit = tracer_->role_ended(r.proc.pid(), r.audit, end);
    r.audit_collected = true;
  }
  broadcast(MsgType::peer_exit, {r.name, r.exit->describe()}, &r);
  release_barriers();
}

void CaseRun::on_hello(RoleState& r, const Message& m) {
  r.hello = true;
  if (tracer_) tracer_->role_hello(r.proc.pid(), m.field(2));
  if (std::all_of(roles_.begin(), roles_.end(), [](const RoleState& x) { return !x.started || x.hello; })) {
    json peers = json::object();
    for (const auto& x : roles_)
      if (x.started) peers[x.name] = x.proc.pid();
    const std::string start = start_document(opt_, peers, inject_).dump();  // the same for every role
    for (auto& x : roles_)
      if (x.started) x.post(MsgType::start, {start});
  }
}

void CaseRun::on_send(RoleState& r, const Message& m) {
  RoleState* to = role(m.field(0));
  if (!to) {
    result_.warnings.push_back(r.name + " sent '" + m.field(1) + "' to unknown role '" + m.field(0) + "'");
    return;
  }
  to->post(MsgType::deliver, {r.name, m.field(1), m.field(2)}, m.fd.get());
}

void CaseRun::on_check(RoleState& r, const Message& m) {
  ++checks_;
  auto judged = verdict::judge_check(verdict::CheckReport::from_json(json::parse(m.field(0))), r.name,
                                     adapter_->profiles);
  if (!judged.warning.empty()) result_.warnings.push_back(judged.warning);
  // A violated clause that is not judged here is kept as what was seen.
  if (judged.check.result == reports::CheckResult::observed && !judged.check.message.empty() &&
      judged.check.level != reports::Level::observe)
    reports::add_observation(result_, "clause." + judged.check.clause, "violated: " + judged.check.message);
  result_.checks.push_back(std::move(judged.check));
}

void CaseRun::on_observe(RoleState& r, const Message& m) {
  reports::add_observation(result_, m.field(0), m.field(1));
  if (!m.field(2).empty()) {
    ++checks_;
    result_.checks.push_back(verdict::observation_check(r.name, m.field(0), m.field(1), m.field(2)));
  }
}

void CaseRun::on_native_error(RoleState& r, const Message& m) {
  json j = json::parse(m.field(0));
  reports::NativeError e;
  e.role = r.name;
  e.verb = j.value("verb", "");
  e.errc = j.value("errc", "");
  e.native = j.value("native", 0LL);
  e.native_name = j.value("native_name", "");
  e.message = j.value("message", "");
  if (result_.native_errors.size() < 200) result_.native_errors.push_back(std::move(e));
}

void CaseRun::on_skip(RoleState& r, const Message& m) {
  r.skipped = true;
  if (skip_reason_.empty()) skip_reason_ = m.field(0);
  // One role cannot run the case: the others would wait for it forever.
  for (auto& x : roles_)
    if (x.started && !x.exit) x.expected_death = true;
  // The skipping role ends by itself (a signal now could cut its exit short).
  begin_termination("skipped: " + m.field(0), false, &r);
}

void CaseRun::on_step(RoleState& r, const Message& m) {
  // "into": announced on the way into a blocking call; the role does not wait for us.
  const bool into = m.fields.size() > 1 && m.field(1) == "into";
  note_objects(r);
  if (inject_ && !injected_ && inject_->role == r.base && inject_->step == m.field(0)) {
    // The first instance of the role to reach the point dies there; the others go on.
    injected_ = true;
    announced_ = Clock::now();
    result_.injection = r.name + ":" + m.field(0);
    r.expected_death = true;
    // The stepping role was read above; one waiting for the runner has not changed since.
    for (const auto& x : roles_)
      if (x.started && !x.exit && (into || &x != &r)) note_objects(x);
    if (into) {
      kill_when_blocked_ = &r;
    } else {
      kill_victim(r, "at the step, waiting for the runner");
    }
  } else if (!into) {
    r.post(MsgType::proceed, {m.field(0)});
  }
}

void CaseRun::on_kill_peer(RoleState& r, const Message& m) {
  RoleState* target = role(m.field(0));
  if (!target || !target->started) {
    result_.warnings.push_back(r.name + " asked to kill unknown role '" + m.field(0) + "'");
    return;
  }
  target->expected_death = true;
  if (!target->exit) target->proc.signal_group(std::stoi(m.field(1)));
}

void CaseRun::handle(RoleState& r, Message& m) {
  switch (m.type) {
    case MsgType::hello:
      on_hello(r, m);
      break;
    case MsgType::send:
      on_send(r, m);
      break;
    case MsgType::barrier:
      r.at_barrier = m.field(0);
      release_barriers();
      break;
    case MsgType::check:
      on_check(r, m);
      break;
    case MsgType::observe:
      on_observe(r, m);
      break;
    case MsgType::native_error:
      on_native_error(r, m);
      break;
    case MsgType::skip:
      on_skip(r, m);
      break;
    case MsgType::step:
      on_step(r, m);
      break;
    case MsgType::kill_peer:
      on_kill_peer(r, m);
      break;
    case MsgType::audit:
      r.audit = json::parse(m.field(0));
      break;
    case MsgType::data: {
      json& data = result_.audit["data"];
      data[m.field(0)] = json::parse(m.field(1));
      break;
    }
    case MsgType::done:
      r.done = true;
      r.aborted = m.field(0) == "aborted";
      r.done_message = m.field(1);
      release_barriers();
      break;
    case MsgType::info:
      break;
    case MsgType::harness_error:
      harness_fault(r.name + ": " + m.field(0));
      break;
    default:
      result_.warnings.push_back(r.name + " sent an unexpected " + std::string(msg_type_name(m.type)) + " message");
  }
}

CaseRun::PollSet CaseRun::poll_set() {
  PollSet set;
  for (auto& r : roles_) {
    if (!r.started) continue;
    if (!r.exit && r.channel) {
      set.fds.push_back({r.channel.fd(), static_cast<short>(POLLIN | (r.outbox.empty() ? 0 : POLLOUT)), 0});
      set.owners.emplace_back(&r, 0);
    }
    if (r.proc.output_open()) {
      set.fds.push_back({r.proc.output_fd(), POLLIN, 0});
      set.owners.emplace_back(&r, 1);
    }
    if (!r.exit) {
      set.fds.push_back({r.proc.pidfd(), POLLIN, 0});
      set.owners.emplace_back(&r, 2);
    }
  }
  return set;
}

// Until the next deadline (the kill after the grace, or the case's timeout or inactivity),
// at most 200 ms (2 while a victim is to be killed once it blocks).
int CaseRun::poll_wait_ms(double inactivity) const {
  const auto now = Clock::now();
  Clock::time_point wake = terminating_ ? kill_at_
                                        : std::min(start_ + std::chrono::milliseconds(int(timeout_s_ * 1000)),
                                                   last_activity_ + std::chrono::milliseconds(int(inactivity * 1000)));
  return static_cast<int>(std::clamp<long long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count() + 1, 0, kill_when_blocked_ ? 2 : 200));
}

void CaseRun::receive_from(RoleState& r, short revents) {
  if (r.exit || !r.channel) return;
  if (revents & POLLOUT) r.flush();
  if (!(revents & (POLLIN | POLLHUP | POLLERR))) return;
  try {
    if (auto m = r.channel.receive(0)) handle(r, *m);
  } catch (const ChannelError&) {
    r.channel = Channel();  // the role closed its end (exiting)
  } catch (const std::exception& e) {
    // A message the runner cannot read is a fault of the harness's protocol.
    harness_fault(r.name + " sent a message the runner cannot read: " + e.what());
  }
}

void CaseRun::enforce_deadlines(double inactivity) {
  const auto t = Clock::now();
  if (!terminating_) {
    if (t - start_ >= std::chrono::milliseconds(int(timeout_s_ * 1000))) {
      begin_termination("case timeout after " + std::to_string(int(timeout_s_)) + " s", true);
    } else if (t - last_activity_ >= std::chrono::milliseconds(int(inactivity * 1000))) {
      begin_termination("no message and no output for " + std::to_string(int(inactivity)) + " s", true);
    }
  } else if (t >= kill_at_) {
    for (auto& r : roles_)
      if (r.started && !r.exit) r.proc.signal_group(SIGKILL);
    kill_at_ = t + std::chrono::seconds(3600);
  }
}

void CaseRun::loop() {
  const double inactivity = std::min(opt_.inactivity_s, timeout_s_);
  while (!all_exited()) {
    PollSet set = poll_set();
    const int n = ::poll(set.fds.data(), set.fds.size(), poll_wait_ms(inactivity));
    if (n < 0 && errno != EINTR) {
      harness_fault(std::string("the runner's poll failed: ") + std::strerror(errno));
      begin_termination("the runner cannot watch the roles", false);
      continue;
    }

    if (opt_.interrupted && opt_.interrupted->load() && !interrupted_) {
      interrupted_ = true;
      begin_termination("the run was interrupted", false);
    }
    for (std::size_t i = 0; n > 0 && i < set.fds.size(); ++i) {
      if (!set.fds[i].revents) continue;
      auto [r, kind] = set.owners[i];
      last_activity_ = Clock::now();
      if (kind == 0) {
        receive_from(*r, set.fds[i].revents);
      } else if (kind == 1) {
        r->proc.read_output();
      } else {
        reap(*r);
      }
    }
    for (auto& r : roles_)
      if (r.started && !r.exit) reap(r);
    if (kill_when_blocked_) kill_when_blocked();
    enforce_deadlines(inactivity);
  }
}

void CaseRun::note_objects(const RoleState& r) {
  for (auto& [k, name] : ipc_objects_of(r.proc.pid())) objects_.emplace(k, name);
}

void CaseRun::kill_victim(RoleState& r, const std::string& how) {
  result_.audit["injection"] = {{"point", result_.injection},
                                {"pid", r.proc.pid()},
                                {"killed", how},
                                {"after_announcing_ms", static_cast<int>(seconds_since(announced_) * 1000)}};
  r.proc.signal_group(SIGKILL);
}

// A role killed "during a wait" must be inside the wait: it is killed once the kernel
// shows it asleep, or after a second without that, saying so.
void CaseRun::kill_when_blocked() {
  RoleState& r = *kill_when_blocked_;
  const char state = process_state(r.proc.pid());
  const bool asleep = state == 'S' || state == 'D';
  if (!asleep && Clock::now() - announced_ < std::chrono::seconds(1)) return;
  kill_when_blocked_ = nullptr;
  std::string how = "running (state " + std::string(1, state ? state : '?') + "), not seen blocked within 1 s";
  if (asleep) {
    const std::string wchan = wait_channel(r.proc.pid());
    how = "blocked (state " + std::string(1, state) + (wchan.empty() ? "" : ", in " + wchan) + ")";
  }
  kill_victim(r, how);
  if (!asleep) result_.warnings.push_back(r.name + " was killed at " + result_.injection + " while " + how);
}

// After an injected case every process of it is gone: no member of a role's process
// group remains, and no process on the machine (the runner included) holds an IPC object
// that a role of the case held.
void CaseRun::check_leftovers() {
  for (auto& r : roles_) {
    if (!r.started || r.proc.pid() <= 0 || ::kill(-r.proc.pid(), 0) != 0) continue;
    const auto survivors = r.proc.group_survivors();
    r.proc.signal_group(SIGKILL);
    for (const auto& s : survivors) {
      result_.findings.push_back({r.name, "process", s, "", "still in the role's process group after the case; killed"});
      int status;
      while (::waitpid(std::atoi(s.c_str()), &status, 0) < 0 && errno == EINTR) {
      }
    }
  }
  std::size_t scanned = 0;
  const auto holders = find_holders(objects_, &scanned);
  json held = json::array();
  for (const auto& h : holders) {
    const bool runner = h.pid == ::getpid();
    const std::string who = runner ? "runner" : std::to_string(h.pid) + " (" + h.comm + ")";
    held.push_back(who + " " + h.how + ": " + h.object);
    const std::string kind = h.how.rfind("fd ", 0) == 0 ? "fd" : "mapping";
    result_.findings.push_back({runner ? "runner" : "process " + std::to_string(h.pid), kind, h.object, "",
                                "held by " + who + " (" + h.how + ") after every process of the case ended"});
    // A descendant that escaped its role's group was re-parented to the runner: it ends here.
    if (!runner && h.ppid == ::getpid() && ::kill(h.pid, SIGKILL) == 0) {
      int status;
      while (::waitpid(h.pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
  }
  json names = json::array();
  for (const auto& [k, name] : objects_) names.push_back(name + " (inode " + std::to_string(k.ino) + ")");
  result_.audit["leftovers"] = {{"objects", names}, {"processes_scanned", scanned}, {"held", held}};
}

std::string waiting_where(const std::deque<RoleState>& roles) {
  std::string s;
  for (const auto& r : roles) {
    if (!r.started || r.done) continue;
    s += (s.empty() ? "" : "; ") + r.name;
    s += r.at_barrier ? " waiting at barrier '" + *r.at_barrier + "'" : " still running";
  }
  return s;
}

void CaseRun::classify() {
  auto& c = result_;
  for (const auto& r : roles_) {
    reports::RoleExit x;
    x.name = r.name;
    x.pid = r.started ? r.proc.pid() : 0;
    x.duration_s = r.duration_s;
    x.output_tail = r.proc.output_tail();
    if (!r.started) {
      x.exit = "could not start: " + r.spawn_error;
    } else if (r.exit) {
      x.exit = r.exit->describe();
      x.code = r.exit->code;
      x.signal = r.exit->signal;
      if (r.expected_death && !r.exit->exited) x.exit += " (expected)";
    }
    c.roles.push_back(std::move(x));
    if (r.audit.is_object()) c.audit["roles"][r.name] = r.audit;
    for (const auto& s : r.survivors)
      c.findings.push_back({r.name, "process", s, "", "left running after the role exited; killed"});
    if (r.audit.is_object() && r.audit.contains("leaks"))
      for (const auto& l : r.audit["leaks"]) {
        const std::string item = l.value("item", "");
        const bool allowed = std::any_of(def_.allowed_leaks.begin(), def_.allowed_leaks.end(),
                                         [&](const std::string& a) { return item.find(a) != std::string::npos; });
        if (!allowed)
          c.findings.push_back({r.name, l.value("kind", ""), item, l.value("verb", ""), l.value("detail", "")});
      }
  }
  c.audit["method"] = opt_.audit;

  verdict::CaseFacts f;
  f.interrupted = interrupted_;
  f.timed_out = timed_out_;
  f.termination_reason = termination_reason_;
  f.waiting_where = waiting_where(roles_);
  f.skip_reason = skip_reason_;
  f.harness_errors = harness_errors_;
  f.inject = inject_;
  f.injected = injected_;
  f.checks = checks_;
  for (const auto& r : roles_) {
    verdict::RoleFacts x;
    x.name = r.name;
    x.started = r.started;
    x.start_error = r.spawn_error;
    x.exit = r.exit;
    x.done = r.done;
    x.skipped = r.skipped;
    x.expected_death = r.expected_death;
    x.output_tail = r.proc.output_tail();
    f.roles.push_back(std::move(x));
  }
  verdict::classify(f, c);
}

void CaseRun::harness_fault(std::string cause) {
  if (std::find(harness_errors_.begin(), harness_errors_.end(), cause) == harness_errors_.end())
    harness_errors_.push_back(std::move(cause));
}

CaseResult CaseRun::run() {
  result_.id = def_.id;
  result_.description = def_.description;
  result_.area = def_.area();
  result_.clauses = def_.clauses;
  timeout_s_ = std::max(opt_.timeout_s, def_.timeout_s);
  start_ = last_activity_ = Clock::now();
  spawn_all();
  loop();
  if (inject_) check_leftovers();
  classify();
  result_.duration_s = seconds_since(start_);
  return result_;
}

}  // namespace

std::vector<const CaseDef*> select_cases(const RunOptions& o) {
  std::vector<const CaseDef*> out;
  for (const auto& c : cases()) {
    if (c.hidden && !o.include_hidden) {
      // Hidden cases run only when a filter names them exactly.
      if (std::none_of(o.filters.begin(), o.filters.end(), [&](const std::string& f) { return f == c.id; })) continue;
    }
    if (!o.filters.empty()) {
      const bool hit = std::any_of(o.filters.begin(), o.filters.end(), [&](const std::string& f) {
        return o.exact ? f == c.id : glob_match(f, c.id) || glob_match("*" + f + "*", c.id);
      });
      if (!hit) continue;
    }
    out.push_back(&c);
  }
  return out;
}

void validate_selection(const RunOptions& o) {
  for (const auto& f : o.filters) {
    RunOptions one = o;
    one.filters = {f};
    if (select_cases(one).empty())
      throw std::invalid_argument("filter '" + f + "' matches no case; 'ipcheck list' shows the case ids");
  }
  const auto selected = select_cases(o);
  if (selected.empty()) throw std::invalid_argument("no case selected");
  // --param keys: each must be read by a selected case, or it would change nothing.
  for (const auto& [key, value] : o.params) {
    std::set<std::string> known;
    for (const CaseDef* c : selected) known.insert(c->params.begin(), c->params.end());
    if (known.count(key)) continue;
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    throw std::invalid_argument("--param '" + key + "' is read by no selected case; " +
                                (list.empty() ? std::string("the selected cases take no --param (the stress cases do, for example "
                                                            "--filter stress.open_close --exact --param cycles=N)")
                                              : "the selected cases read: " + list));
  }
  for (const auto& p : o.inject)
    if (std::none_of(selected.begin(), selected.end(), [&](const CaseDef* c) {
          return std::find(c->steps.begin(), c->steps.end(), p.describe()) != c->steps.end();
        }))
      throw std::invalid_argument("injection point '" + p.describe() +
                                  "' is no step of the selected cases; 'ipcheck list' shows each case's injection points");
}

AdapterProbe probe_adapter(const RunOptions& o) {
  AdapterProbe p;
  const AdapterDesc* desc = find_adapter(o.adapter);
  p.info.adapter = o.adapter;
  if (desc) p.info.profiles = verdict::judged_profiles(desc->profiles);
  unique_fd mine, theirs;
  try {
    std::tie(mine, theirs) = make_channel_pair();
  } catch (const std::exception& e) {
    p.reason = std::string("cannot make a channel for the adapter probe: ") + e.what();
    p.broken = true;
    return p;
  }
  SpawnSpec spec;
  spec.executable = o.role_executable.empty() ? self_executable() : o.role_executable;
  spec.args = role_args(o, kInfoCase, "info");
  spec.env = o.env;
  spec.channel_fd = theirs.get();
  RoleProcess proc;
  try {
    proc = RoleProcess::spawn(spec);
  } catch (const SpawnError& e) {
    p.reason = std::string("cannot start an adapter probe: ") + e.what();
    p.broken = true;
    return p;
  }
  theirs.reset();
  Channel ch(std::move(mine));
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  json info;
  try {
    while (Clock::now() < deadline) {
      auto m = ch.receive(200);
      if (!m) {
        proc.read_output();
        continue;
      }
      if (m->type == MsgType::hello) {
        ch.send(MsgType::start, {start_document(o, json::object({{"info", proc.pid()}}), nullptr).dump()});
      } else if (m->type == MsgType::info) {
        info = json::parse(m->field(0));
      } else if (m->type == MsgType::done) {
        break;
      }
    }
  } catch (const ChannelError&) {
  }
  while (proc.read_output()) {
  }
  for (int i = 0; i < 100 && !proc.poll_exit(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (info.is_null()) {
    p.broken = true;
    p.reason = "the adapter probe ended without answering (" +
               (proc.status() ? proc.status()->describe() : std::string("still running")) + "): " +
               last_line(proc.output_tail());
    return p;
  }
  if (info.contains("harness_error")) {
    p.broken = true;
    p.reason = info["harness_error"].get<std::string>();
    return p;
  }
  if (info.contains("error")) {
    p.reason = info["error"].get<std::string>();
    return p;
  }
  p.available = true;
  p.info.driver_name = info.value("driver_name", "");
  p.info.driver_version = info.value("driver_version", "");
  p.info.devices = info.value("devices", json::array());
  p.info.transport = info.value("transport", "");
  return p;
}

CaseResult run_case(const CaseDef& c, const RunOptions& options, const InjectPoint* inject) {
  return CaseRun(c, options, inject).run();
}

bool prepare_audit(RunOptions& o, std::unique_ptr<Auditor>& holder) {
  if (o.audit != "bpf" || o.auditor) return true;
  AuditorLoad load = load_bpf_auditor();
  if (load.auditor) {
    holder = std::move(load.auditor);
    o.auditor = holder.get();
    return true;
  }
  o.audit = "proc";
  o.audit_note = "bpf audit unavailable, used proc: " + load.why_not;
  return false;
}

namespace {

// What the adapter probe found, or, where the limits leave no room for roles, a broken
// probe naming them.
AdapterProbe probe_or_limits(const RunOptions& o, const std::string& limits) {
  AdapterProbe probe;
  if (limits.empty()) {
    probe = probe_adapter(o);
  } else {
    probe.broken = true;
    probe.reason = limits;
    probe.info.adapter = o.adapter;
  }
  return probe;
}

// The run's stamp, its audit method and the options it ran with.
void record_run_options(reports::RunInfo& run, const RunOptions& o) {
  stamp_run(run, o.adapter, iso_now());
  run.audit = o.audit;
  run.audit_note = o.audit_note;
  run.options = {{"jobs", o.jobs},       {"filters", o.filters},   {"timeout_s", o.timeout_s},
                 {"transport", o.transport}, {"params", o.params}, {"adapter_options", o.adapter_options},
                 {"expectations", o.expectations_path}};
  if (o.rerun_failures > 0) run.options["rerun_failures"] = o.rerun_failures;
  if (!o.resources.is_null()) run.options["resources"] = o.resources;
  if (!o.inject.empty()) {
    std::vector<std::string> pts;
    for (const auto& p : o.inject) pts.push_back(p.describe());
    run.options["inject"] = pts;
  }
}

// One run of a case: the case, and the injection point it runs with.
struct SuiteJob {
  const CaseDef* def;
  std::optional<InjectPoint> inject;
};

// Jobs: each selected case, once per injection point that names one of its steps; with a
// shard, only its part (recorded in `options`).
std::vector<SuiteJob> suite_jobs(const RunOptions& o, json& options) {
  std::vector<SuiteJob> jobs;
  for (const CaseDef* c : select_cases(o)) {
    if (o.inject.empty()) {
      jobs.push_back({c, std::nullopt});
      continue;
    }
    for (const auto& p : o.inject)
      if (std::find(c->steps.begin(), c->steps.end(), p.describe()) != c->steps.end()) jobs.push_back({c, p});
  }
  if (o.shard) {
    // Only this shard's part of the selection, by the full id of each run (shard.hpp).
    std::vector<std::string> ids;
    for (const auto& j : jobs) ids.push_back(j.inject ? j.def->id + "@" + j.inject->describe() : j.def->id);
    const auto mine = shard_members(ids, *o.shard);
    options["shard"] = shard_json(*o.shard, ids.size(), mine);
    std::vector<SuiteJob> part;
    for (const std::size_t i : mine) part.push_back(jobs[i]);
    jobs = std::move(part);
  }
  return jobs;
}

// The jobs of a run shared by its worker threads: each worker takes the next job, runs it
// (or says why it did not) and stores its result in the job's place.
class SuiteWorkers {
 public:
  SuiteWorkers(const RunOptions& o, const std::vector<SuiteJob>& jobs, const std::string& limits,
               const AdapterProbe& probe, std::optional<verdict::ExpectationUse>& expected,
               std::vector<CaseResult>& cases)
      : o_(o), jobs_(jobs), limits_(limits), probe_(probe), expected_(expected), cases_(cases) {}

  // Runs every job on up to `n` workers (this thread one of them); returns why fewer ran, if they did.
  std::string run(int n);

 private:
  void work();
  CaseResult not_run(const SuiteJob& job, Status st, std::string why) const;
  CaseResult run_attempts(const SuiteJob& job);

  const RunOptions& o_;
  const std::vector<SuiteJob>& jobs_;
  const std::string& limits_;
  const AdapterProbe& probe_;
  std::optional<verdict::ExpectationUse>& expected_;
  std::vector<CaseResult>& cases_;
  std::mutex lock_;
  std::size_t next_ = 0, finished_ = 0;
};

CaseResult SuiteWorkers::not_run(const SuiteJob& job, Status st, std::string why) const {
  CaseResult res;
  res.id = job.def->id;
  res.description = job.def->description;
  res.area = job.def->area();
  res.clauses = job.def->clauses;
  res.status = st;
  res.reason = std::move(why);
  return res;
}

// Each attempt in fresh processes, judged with the expectations; one that did not pass
// runs again (--rerun-failures), and the attempts make one result.
CaseResult SuiteWorkers::run_attempts(const SuiteJob& job) {
  std::vector<CaseResult> attempts;
  for (bool again = true; again;) {
    CaseResult res;
    try {
      res = run_case(*job.def, o_, job.inject ? &*job.inject : nullptr);
    } catch (const std::exception& e) {
      res = not_run(job, Status::error, std::string("the runner failed running this case: ") + e.what());
    }
    if (job.inject) res.id += "@" + job.inject->describe();
    {
      std::lock_guard g(lock_);
      if (expected_) expected_->apply(res, probe_.info.driver_version);
    }
    again = verdict::wants_rerun(res) && static_cast<int>(attempts.size()) < o_.rerun_failures &&
            !(o_.interrupted && o_.interrupted->load());
    attempts.push_back(std::move(res));
  }
  return verdict::combine_attempts(std::move(attempts));
}

void SuiteWorkers::work() {
  for (;;) {
    std::size_t i;
    {
      std::lock_guard g(lock_);
      if (next_ >= jobs_.size()) return;
      i = next_++;
    }
    const SuiteJob& job = jobs_[i];
    CaseResult res;
    bool ran = false, judged = false;  // ran: the id has its injection point; judged: expectations applied
    if (!limits_.empty()) {
      res = not_run(job, Status::error, limits_);
    } else if (!probe_.available) {
      // A probe that could not run is the harness's or the machine's fault, not a skip.
      if (probe_.broken) res = not_run(job, Status::error, "the adapter probe failed: " + probe_.reason);
      else res = not_run(job, Status::skip, probe_.reason);
    } else if (o_.interrupted && o_.interrupted->load()) {
      res = not_run(job, Status::incomplete, "the run was interrupted before this case started");
    } else {
      ran = true;
      res = run_attempts(job);
      judged = res.status != Status::flaky;  // a flaky case meets the expectations' flaky lines below
    }
    if (job.inject && !ran) res.id += "@" + job.inject->describe();
    std::lock_guard g(lock_);
    if (expected_ && !judged) expected_->apply(res, probe_.info.driver_version);
    cases_[i] = std::move(res);
    ++finished_;
    if (o_.on_case_done) o_.on_case_done(cases_[i], finished_, jobs_.size());
  }
}

std::string SuiteWorkers::run(int n) {
  std::vector<std::thread> threads;
  std::string fewer_workers;
  for (int t = 1; t < n; ++t) {
    try {
      threads.emplace_back([this] { work(); });
    } catch (const std::system_error& e) {
      // The machine's thread limit: run with the workers there are, and say so.
      fewer_workers = "ran " + std::to_string(threads.size() + 1) + " of " + std::to_string(n) +
                      " workers: a thread could not be started (" + e.what() + ")";
      break;
    }
  }
  work();
  for (auto& t : threads) t.join();
  return fewer_workers;
}

// The expectations' report; a line that matched nothing while a case it names ran: the
// deviation is gone or changed, and each such case says so.
void note_expectations(reports::Results& results, const Expectations& expectations,
                       const verdict::ExpectationUse& expected, const std::string& driver_version) {
  results.run.expectations = expected.report(results.cases, driver_version);
  for (const auto& stale : expected.stale(results.cases, driver_version))
    for (auto& c : results.cases)
      for (const auto& x : expectations.entries())
        if (stale.rfind(x.where + ":", 0) == 0 && verdict::names_case(x, c) && reports::is_judged(c.status))
          c.warnings.push_back("stale expectation " + stale);
}

}  // namespace

reports::Results run_suite(const RunOptions& options) {
  RunOptions o = options;
  std::unique_ptr<Auditor> tracer;
  prepare_audit(o, tracer);
  become_subreaper();
  const std::size_t fds_at_start = count_open_fds();
  reports::Results results;
  const auto t0 = Clock::now();
  // Limits that leave no room for roles: nothing is started, every case is an error naming it.
  const std::string limits = limits_too_low();
  const AdapterProbe probe = probe_or_limits(o, limits);
  results.run = probe.info;
  record_run_options(results.run, o);
  std::optional<Expectations> expectations;
  if (!o.expectations_path.empty()) expectations = Expectations::load(o.expectations_path);
  std::optional<verdict::ExpectationUse> expected;
  if (expectations) expected.emplace(*expectations);

  const std::vector<SuiteJob> jobs = suite_jobs(o, results.run.options);
  results.cases.resize(jobs.size());
  SuiteWorkers workers(o, jobs, limits, probe, expected, results.cases);
  const std::string fewer_workers = workers.run(std::max(1, std::min<int>(o.jobs, static_cast<int>(jobs.size()))));
  const std::vector<std::string> orphans = reap_orphans();
  results.run.runner = {{"fds_at_start", fds_at_start}, {"fds_at_end", count_open_fds()}, {"orphans_reaped", orphans}};

  if (!fewer_workers.empty()) results.run.runner["note"] = fewer_workers;
  if (expected) note_expectations(results, *expectations, *expected, probe.info.driver_version);
  results.summary = reports::summarize(results.cases);
  results.run.duration_s = seconds_since(t0);
  if (!probe.available) results.run.options[probe.broken ? "harness_error" : "adapter_unavailable"] = probe.reason;
  verdict::fill_clause_coverage(results);
  return results;
}

}  // namespace ipcheck
