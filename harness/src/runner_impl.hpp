// The runner's insides, shared by its files: runner.cpp (selection, the adapter probe, the
// audit method), runner_case.cpp (CaseRun: spawn a case's roles, watch them, barriers,
// deadlines, reaping), runner_relay.cpp (CaseRun's handling of each role message: the relay to
// a peer, start slots, checks, steps), runner_outcome.cpp (fault injection, leftovers, what a
// case is judged by) and runner_suite.cpp (run_suite: jobs, shards, worker threads, the run's
// record). Private to harness/src; the interface is ipcheck/runner.hpp.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ipcheck/adapter.hpp"
#include "ipcheck/channel.hpp"
#include "ipcheck/leftovers.hpp"
#include "ipcheck/messages.hpp"
#include "ipcheck/runner.hpp"
#include "ipcheck/spawn.hpp"
#include "runner_admission.hpp"
#include "runner_pool.hpp"

namespace ipcheck::runner_detail {

using nlohmann::json;
using reports::CaseResult;
using reports::Status;
using Clock = std::chrono::steady_clock;

// A poll that returns this much later than asked counts as time the runner did not run; an
// attempt whose runner was held back this long in all has its fail or timeout run again
// (SuiteWorkers::run_attempts): the runner's own pauses are never the adapter's verdict.
inline constexpr double kRunnerLateS = 0.25;
inline constexpr double kRunnerHeldS = 0.5;

inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

inline std::vector<std::string> role_args(const RunOptions& o, const std::string& case_id, const std::string& role) {
  return {"role", "--case", case_id, "--role", role, "--adapter", o.adapter};
}

// With an injection point every role announces its steps (the runner notes the case's IPC
// objects at each) and knows which role dies where. `reuse`: a role that finishes its case
// cleanly waits for another start document instead of exiting (runner_pool.hpp); a kept
// role's start document names its case and role too (CaseRun::post_start).
inline json start_document(const RunOptions& o, const json& peers, const InjectPoint* inject, bool reuse = false) {
  return {{"peers", peers},
          {"reuse", reuse},
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
  bool deferred = false;      // an on-demand role no message has reached yet: not started, no fault
  bool on_demand = false;     // started by a message while its case ran: its start slot comes first
  std::string spawn_error;    // why it could not be started: a harness error
  bool hello = false;
  bool start_posted = false;          // the start document is on its way to it
  std::vector<msg::Deliver> held;     // sent to it before its start: delivered after it
  bool done = false;
  bool aborted = false;
  std::string done_message;
  bool skipped = false;
  bool expected_death = false;  // killed on request or by injection
  bool cut_short = false;       // the runner signalled it to end before it ended by itself
  bool standby = false;         // an injection-only role: it takes part in no barrier it is not at
  std::optional<std::string> at_barrier;
  std::optional<ExitStatus> exit;
  Clock::time_point exit_time{};
  double duration_s = 0;
  json audit;
  bool audit_collected = false;  // the outside auditor has reported on (and forgotten) it
  std::vector<std::string> survivors;
  // --reuse-roles: a kept process of an earlier case serves it (its adapter initialised, no
  // hello of its own), and, once it said done cleanly, it is parked: ended for its case (its
  // peers told it exited 0), alive for the next case (CaseRun::park).
  bool reused = false;
  bool parked = false;
  std::string verb_mark;  // its hello's address of ipcheck_verb_mark (the outside audit's)
  // Its start slot (runner_admission.hpp): asked for once the role has prepared its adapter
  // (want_start), granted when free (start_granted), held until it says initialised.
  std::uint64_t start_ticket = 0;  // its place in the queue: asked, not granted yet (0: none)
  bool holds_start = false;
  bool waits_for_start() const { return start_ticket != 0; }
  Clock::time_point queued_at{};
  double init_s = -1;  // how long its Adapter::init took, once it said
  // What the scheduler gave it of the CPU (/proc/<pid>/schedstat, /proc/<pid>/stat): time it
  // waited for a CPU, or was stopped, is not silence (CaseRun::account_silence).
  bool cpu_sampled = false;
  unsigned long long wait_ns = 0;
  // Messages the role has not taken yet (it may be busy, or never read at all).
  std::deque<Message> outbox;

  // Sends without ever blocking the runner; queues what does not fit (with its own copy of
  // a lent descriptor).
  void post(Message m) {
    if (!channel || exit) return;
    if (outbox.empty()) {
      const auto r = channel.try_send(m);
      if (r != Channel::TrySend::full) return;
    }
    if (m.fd && !m.fd.owned()) m.fd = CarriedFd(unique_fd(::fcntl(m.fd.get(), F_DUPFD_CLOEXEC, 0)));
    outbox.push_back(std::move(m));
  }
  template <EncodableMessage T>
  void post(const T& m) {
    post(encode(m));
  }
  void flush() {
    while (!outbox.empty() && channel) {
      const auto r = channel.try_send(outbox.front());
      if (r == Channel::TrySend::full) return;
      outbox.pop_front();
    }
  }
};

// Where each role that has not said done was when the case ended (a timeout's reason).
std::string waiting_where(const std::deque<RoleState>& roles);

// One case in fresh role processes, from spawning its roles to its classified result.
class CaseRun {
 public:
  // `admission`: what the run's cases share (start slots, devices), or null for a case run
  // on its own; `device`: the device its roles see (-1: every device).
  // `pool`: the run's kept roles (--reuse-roles), or null where every role starts fresh.
  CaseRun(const CaseDef& def, const RunOptions& opt, const InjectPoint* inject, Admission* admission = nullptr,
          int device = -1, RolePool* pool = nullptr);

  // A role the outside auditor still follows (the run was abandoned) is forgotten; start
  // slots still held are given back.
  ~CaseRun() {
    for (auto& r : roles_) release_start(r);
    if (!tracer_) return;
    for (auto& r : roles_)
      if (r.started && !r.audit_collected) tracer_->role_forget(r.proc.pid());
  }

  CaseResult run();

 private:
  void spawn_all();
  // Forks and execs one role (the exec unconfirmed); a failure is kept in spawn_error.
  void start_role(RoleState& r);
  void confirm_role(RoleState& r);
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
  // Decodes a role's message and acts on it; throws ChannelError on one it cannot decode.
  void handle(RoleState& r, Message& m);
  void on_hello(RoleState& r, Message& m);
  // Sends the start document once every role started has said hello (a kept role has).
  void start_when_all_hello();
  // A role that said done cleanly in a case that reuses roles: kept for the next case where
  // nothing it did speaks against it, else told to exit.
  void park_or_end(RoleState& r);
  // After the verdict: parked roles of a passed case go to the pool, the others are ended.
  void hand_back_parked();
  void post_start(RoleState& r, const msg::Start& start);
  // The role asked for a start slot: it queues, and has it when one is free.
  void on_want_start(RoleState& r);
  // Grants a queued role its slot when free; true when granted.
  bool grant_start(RoleState& r);
  // Frees the role's start slot (or its place in the queue for one).
  void release_start(RoleState& r);
  // Roles that wait for a slot get one where one is free now; true while any still waits.
  bool retry_pending_starts();
  // Adds the time since the last sample to the silence clock, less what the machine held
  // the roles back (stopped, waiting for a CPU, waiting for a start slot).
  void account_silence();
  void on_send(RoleState& r, msg::Send s);
  void on_check(RoleState& r, const msg::Check& c);
  void on_observe(RoleState& r, const msg::Observe& o);
  void on_native_error(RoleState& r, const msg::NativeError& n);
  void on_skip(RoleState& r, const msg::Skip& s);
  void on_step(RoleState& r, const msg::Step& s);
  void on_kill_peer(RoleState& r, const msg::KillPeer& k);
  void on_done(RoleState& r, const msg::Done& d);
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
  // To every role still running but `except`.
  template <EncodableMessage T>
  void broadcast(const T& m, const RoleState* except = nullptr) {
    for (auto& r : roles_)
      if (&r != except && r.started && !r.done) r.post(m);
  }

  const CaseDef& def_;
  const RunOptions& opt_;
  const InjectPoint* inject_;
  const AdapterDesc* adapter_;
  Auditor* tracer_;  // the outside audit, when the run uses one
  std::deque<RoleState> roles_;
  CaseResult result_;
  Clock::time_point start_{};
  Clock::time_point last_activity_{};
  Admission* admission_;
  int device_;
  RolePool* pool_;
  bool reuse_ = false;     // its roles may come from the pool and go back to it
  std::string pool_key_;   // which kept roles can serve it (role_pool_key)
  std::vector<std::string> env_;  // the roles' environment: the run's, and the device mask of a placed case
  double silent_s_ = 0;           // time the roles could run without a message or output
  double held_back_s_ = 0;        // time the machine held them back (the reason of a timeout says)
  Clock::time_point last_sample_{};
  // The runner's own thread waits for a CPU too: a role waiting for the runner's answer is not
  // silent while the runner cannot run.
  bool runner_sampled_ = false;
  unsigned long long runner_wait_ns_ = 0;
  // The runner itself held back (it relays every message between roles, so a role's timed
  // wait may end while it cannot run): time it spent stopped (a poll that returned later than
  // it was asked to by more than kRunnerLateS) and waiting for a CPU (its schedstat).
  double runner_stopped_s_ = 0;
  double runner_starved_s_ = 0;
  double timeout_s_ = 0;
  bool terminating_ = false;
  CaseTimeline timeline_;
  bool start_sent_ = false;  // every role first started has said hello and been sent the start
  bool timed_out_ = false;
  bool interrupted_ = false;
  std::string termination_reason_;
  Clock::time_point kill_at_{};
  int checks_ = 0;
  std::string skip_reason_;
  std::string skip_by_;  // the first skip's by (msg::Skip)
  std::vector<std::string> harness_errors_;  // faults of the harness or the machine, not the adapter's
  // The memory cgroup's OOM kills before the roles started (machine_record.hpp).
  std::optional<std::uint64_t> oom_kills_before_;
  // Fault injection: whether the point was reached, the role to kill once it blocks (a
  // step_into), and the IPC objects the case's roles held (looked for after the case).
  bool injected_ = false;
  RoleState* kill_when_blocked_ = nullptr;
  Clock::time_point announced_{};
  std::map<KernelObject, std::string> objects_;
};

}  // namespace ipcheck::runner_detail
