// CaseRun, one case in fresh role processes (runner_impl.hpp): spawn every role, watch its
// channel, output and exit, release barriers, enforce the deadlines, reap. What each message
// a role sends does (the relay to the named peer, start slots, checks) is runner_relay.cpp's.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <tuple>

#include "ipcref/failpoints.hpp"
#include "ipcheck/resources.hpp"
#include "procfs.hpp"
#include "machine_record.hpp"
#include "runner_impl.hpp"

namespace ipcheck {

namespace runner_detail {

CaseRun::CaseRun(const CaseDef& def, const RunOptions& opt, const InjectPoint* inject, Admission* admission, int device,
                 RolePool* pool)
    : def_(def), opt_(opt), inject_(inject), adapter_(find_adapter(opt.adapter)),
      tracer_(opt.audit == "bpf" ? opt.auditor : nullptr), admission_(admission), device_(device), pool_(pool),
      env_(opt.env) {
  if (!adapter_) throw std::invalid_argument("unknown adapter '" + opt.adapter + "'");
  // A case placed on one device of several sees only that one; where the adapter has no
  // device mask its roles see (and start on) every device.
  if (admission_ && admission_->devices() > 1 && device_ >= 0) {
    if (std::string mask = pinned_device_mask(opt.adapter, device_, opt.env); !mask.empty()) env_.push_back(std::move(mask));
    else device_ = -1;
  }
  reuse_ = pool_ && fresh_process_reason(def_, inject_).empty();
  if (reuse_)
    pool_key_ = role_pool_key(opt_, opt_.role_executable.empty() ? role_executable_for(opt_.adapter) : opt_.role_executable,
                              env_, device_, def_.uses_events());
}

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
    if (r.started && !r.parked &&
        (!r.exit || (r.proc.output_open() && now - r.exit_time < std::chrono::seconds(1))))
      return false;
  return true;
}

void CaseRun::spawn_all() {
  oom_kills_before_ = machine_record::oom_kills();
  for (const auto& name : def_.instance_names()) {
    const RoleDef* rd = def_.role_for(name);
    if (rd && rd->injection_only && !inject_) continue;  // stands by for a fault this run does not inject
    RoleState& r = roles_.emplace_back();
    r.name = name;
    r.standby = rd && rd->injection_only;
    r.base = rd ? rd->name : name;
    // An expendable role's death is the case's to observe (wait_exit), not a crash.
    r.expected_death = std::find(def_.expendable.begin(), def_.expendable.end(), r.base) != def_.expendable.end();
    r.deferred = rd && rd->on_demand;
    if (r.deferred) continue;
    if (auto kept = reuse_ ? pool_->take(pool_key_) : std::nullopt) {
      // A kept role: started, its hello said, its adapter initialised (runner_pool.hpp).
      r.proc = std::move(kept->proc);
      r.channel = std::move(kept->channel);
      r.proc.begin_reuse();
      r.verb_mark = std::move(kept->verb_mark);
      r.started = r.hello = r.reused = true;
      // The outside audit follows it for this case as for a fresh process (role_spawned,
      // role_hello) and ends with its done (CaseRun::park_or_end).
      if (tracer_) {
        tracer_->role_spawned(r.proc.pid(), def_.id, r.name);
        tracer_->role_hello(r.proc.pid(), r.verb_mark);
      }
      continue;
    }
    start_role(r);
    if (pool_ && r.started) pool_->note_fresh();
  }
  // Every role forked first, then each exec confirmed: the execs run side by side.
  for (auto& r : roles_) confirm_role(r);
  start_when_all_hello();  // every role a kept one: nobody else to wait for
}

void CaseRun::start_role(RoleState& r) {
  r.deferred = false;
  unique_fd mine, theirs;
  try {
    std::tie(mine, theirs) = make_channel_pair();
  } catch (const std::exception& e) {
    r.spawn_error = std::string("no channel for it: ") + e.what();
    return;
  }
  SpawnSpec spec;
  spec.executable = opt_.role_executable.empty() ? role_executable_for(opt_.adapter) : opt_.role_executable;
  spec.args = role_args(opt_, def_.id, r.name);
  spec.env = env_;
  if (const auto fp = def_.failpoints.find(r.base); fp != def_.failpoints.end())
    spec.env.push_back(std::string(ipcref::failpoints::kEnv) + "=" + fp->second);
  if (const auto e = def_.role_env.find(r.base); e != def_.role_env.end())
    spec.env.insert(spec.env.end(), e->second.begin(), e->second.end());
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

void CaseRun::confirm_role(RoleState& r) {
  if (!r.started) return;
  try {
    r.proc.confirm_exec();
  } catch (const SpawnError& e) {
    r.spawn_error = e.what();
    r.started = false;
    r.channel = Channel();
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
  // Broken by a role that ended without finishing its body: one that died, and one that
  // stopped on a failed requirement (RoleAbort) before this barrier. The waiting roles may be
  // waiting for what it would have sent next; released as if whole they would wait for it
  // until the case times out (three roles: each of the two left still has a live peer).
  std::string broken;
  for (const auto& r : roles_) {
    if (r.expected_death) continue;
    if (r.exit && !r.done)
      broken += (broken.empty() ? "" : ", ") + r.name + " ended (" + r.exit->describe() + ") before reaching it";
    else if (r.done && r.aborted)
      broken += (broken.empty() ? "" : ", ") + r.name + " stopped (" + r.done_message + ") before reaching it";
  }
  for (auto& r : roles_)
    if (r.at_barrier && *r.at_barrier == *name && !r.exit) {
      r.post(msg::Release{*name, broken});
      r.at_barrier.reset();
    }
}

void CaseRun::begin_termination(const std::string& why, bool is_timeout, const RoleState* spare) {
  if (terminating_) return;
  terminating_ = true;
  timed_out_ = is_timeout;
  termination_reason_ = why;
  for (auto& r : roles_)
    if (r.started && !r.exit && &r != spare) {
      r.cut_short = true;
      r.proc.signal_group(SIGTERM);
    }
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
  release_start(r);
  if (kill_when_blocked_ == &r) kill_when_blocked_ = nullptr;
  r.exit = r.proc.status();
  r.exit_time = Clock::now();
  r.duration_s = seconds_since(r.proc.started());
  // Grandchildren left in the role's group are a leak of processes; they die here. The role
  // is reaped, so its group's id may have gone to another program's group: only the
  // runner's descendants count (the runner is their subreaper). While one of them is in the
  // group its id cannot be reused, so the group signal reaches only them.
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
  if (tracer_ && !r.audit_collected) {
    // Every process of the role is gone: what the tracer saw is complete.
    RoleEnd end;
    end.how = r.exit->describe();
    end.killed = r.expected_death || terminating_;
    end.crashed = !r.exit->exited && !end.killed;
    r.audit = tracer_->role_ended(r.proc.pid(), r.audit, end);
    r.audit_collected = true;
  }
  broadcast(msg::PeerExit{r.name, r.exit->describe()}, &r);
  release_barriers();
}

namespace {

// What the scheduler gave a process: whether it is stopped (SIGSTOP, a tracer) and how long
// its main thread has waited on a run queue (/proc/<pid>/schedstat: run ns, wait ns, slices).
struct CpuSample {
  bool ok = false;
  bool stopped = false;
  unsigned long long wait_ns = 0;
};

// Nanoseconds a thread has waited on a run queue (schedstat's second field); false when the
// file cannot be read (a kernel without schedstats, a process gone).
bool run_queue_wait(const char* schedstat, unsigned long long& wait_ns) {
  FILE* f = std::fopen(schedstat, "re");
  if (!f) return false;
  unsigned long long run = 0;
  const bool ok = std::fscanf(f, "%llu %llu", &run, &wait_ns) == 2;
  std::fclose(f);
  return ok;
}

CpuSample cpu_sample(pid_t pid) {
  CpuSample s;
  const std::string state = procfs::stat_field_after_comm(pid, 0);
  if (state.empty()) return s;
  s.stopped = state == "T" || state == "t";
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/schedstat", static_cast<int>(pid));
  s.ok = run_queue_wait(path, s.wait_ns) || s.stopped;
  return s;
}

}  // namespace

void CaseRun::account_silence() {
  const auto now = Clock::now();
  const double dt = std::chrono::duration<double>(now - last_sample_).count();
  if (dt < 0.05) return;  // sampled often enough: /proc is read at most 20 times a second
  last_sample_ = now;
  // The case is held back as long as its most held-back role, or the runner itself: the others
  // may be waiting for it (a consumer waits for a stopped producer's handle, a role for the runner).
  double held = 0;
  unsigned long long runner_wait = 0;
  if (run_queue_wait("/proc/thread-self/schedstat", runner_wait)) {
    if (runner_sampled_ && runner_wait >= runner_wait_ns_) {
      held = std::min(dt, static_cast<double>(runner_wait - runner_wait_ns_) / 1e9);
      runner_starved_s_ += held;
    }
    runner_wait_ns_ = runner_wait;
    runner_sampled_ = true;
  }
  for (auto& r : roles_) {
    if (r.waits_for_start() && !r.exit) {
      held = dt;  // waiting for a start slot: for the machine, not for the adapter
      continue;
    }
    if (!r.started || r.exit) continue;
    const CpuSample c = cpu_sample(r.proc.pid());
    if (!c.ok) continue;
    double h = r.cpu_sampled && c.wait_ns >= r.wait_ns ? static_cast<double>(c.wait_ns - r.wait_ns) / 1e9 : 0;
    r.wait_ns = c.wait_ns;
    r.cpu_sampled = true;
    if (c.stopped) h = dt;
    held = std::max(held, std::min(h, dt));
  }
  held_back_s_ += held;
  silent_s_ += dt - held;
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
  Clock::time_point wake =
      terminating_ ? kill_at_
                   : std::min(start_ + std::chrono::milliseconds(int(timeout_s_ * 1000)),
                              now + std::chrono::milliseconds(int(std::max(0.0, inactivity - silent_s_) * 1000)));
  const bool waiting_for_start = std::any_of(roles_.begin(), roles_.end(), [](const RoleState& r) { return r.waits_for_start(); });
  return static_cast<int>(std::clamp<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count() + 1,
                                                0, kill_when_blocked_ ? 2 : waiting_for_start ? 10 : 200));
}

void CaseRun::receive_from(RoleState& r, short revents) {
  if (r.exit || !r.channel) return;
  if (revents & POLLOUT) r.flush();
  if (!(revents & (POLLIN | POLLHUP | POLLERR))) return;
  std::optional<Message> m;
  try {
    m = r.channel.receive(0);
  } catch (const ChannelError&) {
    r.channel = Channel();  // the role closed its end (exiting)
    return;
  }
  if (!m) return;
  try {
    handle(r, *m);
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
    } else if (silent_s_ >= inactivity) {
      // Time the machine held the roles back (stopped, waiting for a CPU or a start slot) is
      // not silence: it is left out, and said.
      const double held = std::chrono::duration<double>(t - last_activity_).count() - silent_s_;
      begin_termination("no message and no output for " + std::to_string(int(inactivity)) + " s" +
                            (held >= 1 ? " of time the roles could run (the machine held them back " +
                                             std::to_string(int(held)) + " s more)"
                                       : ""),
                        true);
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
    if (admission_ && !terminating_) retry_pending_starts();
    const int wait_ms = poll_wait_ms(inactivity);
    const auto before = Clock::now();
    const int n = ::poll(set.fds.data(), set.fds.size(), wait_ms);
    // A poll that returns much later than asked: the runner was stopped (SIGSTOP, a tracer, a
    // suspended VM) or could not get a CPU.
    const double late = std::chrono::duration<double>(Clock::now() - before).count() - wait_ms / 1000.0;
    if (late > kRunnerLateS) runner_stopped_s_ += late;
    account_silence();
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
      silent_s_ = 0;
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

CaseResult CaseRun::run() {
  result_.id = def_.id;
  result_.description = def_.description;
  result_.area = def_.area();
  result_.clauses = def_.clauses;
  timeout_s_ = opt_.timeout_caps_cases ? opt_.timeout_s : std::max(opt_.timeout_s, def_.timeout_s);
  start_ = last_activity_ = last_sample_ = Clock::now();
  spawn_all();
  loop();
  timeline_.exited = seconds_since(start_);
  if (inject_) check_leftovers();
  classify();
  if (pool_) {
    // Which of its roles a kept process served, or why none could (runner_pool.hpp).
    json kept = json::array();
    for (const auto& r : roles_)
      if (r.reused) kept.push_back(r.name);
    const std::string fresh = reuse_ ? std::string() : fresh_process_reason(def_, inject_);
    result_.audit["reuse"] = fresh.empty() ? json{{"kept_roles", kept}} : json{{"fresh", fresh}};
  }
  hand_back_parked();
  if (held_back_s_ >= 1) result_.audit["held_back_s"] = static_cast<int>(held_back_s_ * 10) / 10.0;
  if (const double runner = std::max(runner_stopped_s_, runner_starved_s_); runner >= kRunnerHeldS)
    result_.audit["runner_held_s"] = static_cast<int>(runner * 10) / 10.0;
  result_.duration_s = seconds_since(start_);
  timeline_.judged = result_.duration_s;
  if (opt_.timeline) *opt_.timeline = timeline_;
  return result_;
}

}  // namespace runner_detail

reports::CaseResult run_case(const CaseDef& c, const RunOptions& options, const InjectPoint* inject) {
  return runner_detail::CaseRun(c, options, inject).run();
}

}  // namespace ipcheck
