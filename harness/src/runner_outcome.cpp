// What a case leaves, for CaseRun (runner_impl.hpp): the injected fault's victim and the
// objects the roles held, leftovers after an injected case, and the result and the facts
// verdict::classify judges.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "ipcref/failpoints.hpp"
#include "ipcheck/verdict.hpp"
#include "machine_record.hpp"
#include "runner_impl.hpp"

namespace ipcheck::runner_detail {

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
    const auto survivors = r.proc.group_survivors();  // the role is reaped: only its descendants count
    if (!survivors.empty()) r.proc.signal_group(SIGKILL);
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
    if (r.deferred) continue;  // an on-demand role that was never needed
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
    // The failpoints the role ran under and the calls they failed (each layer writes a
    // line per failed call: ipcref/failpoints.hpp; read from the output's tail).
    if (const auto fp = def_.failpoints.find(r.base); fp != def_.failpoints.end()) {
      std::string spec = fp->second;
      if (const auto e = def_.role_env.find(r.base); e != def_.role_env.end())
        for (const auto& kv : e->second) spec += " (with " + kv + ")";
      reports::FailpointUse use{r.name, spec, {}};
      std::size_t at = 0;
      const std::string& out = x.output_tail;
      while ((at = out.find(ipcref::failpoints::kFiredPrefix, at)) != std::string::npos) {
        const std::size_t from = at + ipcref::failpoints::kFiredPrefix.size();
        const std::size_t eol = out.find('\n', from);
        use.fired.push_back(out.substr(from, eol == std::string::npos ? std::string::npos : eol - from));
        at = from;
      }
      c.failpoints.push_back(std::move(use));
    }
    c.roles.push_back(std::move(x));
    if (r.audit.is_object()) c.audit["roles"][r.name] = r.audit;
    // A role the runner cut short (another role skipped, the case timed out) could not end
    // what it started, and a signal may have caught it mid-exit (a sanitizer's leak-check
    // helper): what its group held is killed and noted, not charged to the role.
    for (const auto& s : r.survivors)
      if (r.cut_short)
        c.warnings.push_back(r.name + " was cut short by the runner; left in its group, killed: " + s);
      else
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
  f.skip_by = skip_by_;
  f.harness_errors = harness_errors_;
  f.inject = inject_;
  f.injected = injected_;
  f.checks = checks_;
  for (const auto& r : roles_) {
    if (r.deferred) continue;
    verdict::RoleFacts x;
    x.name = r.name;
    x.started = r.started;
    x.start_error = r.spawn_error;
    x.exit = r.exit;
    x.done = r.done;
    x.skipped = r.skipped;
    x.expected_death = r.expected_death;
    x.output_tail = r.proc.output_tail();
    if (r.exit && !r.exit->exited && r.exit->signal == SIGKILL && !r.expected_death && !timed_out_)
      x.machine_kill = machine_record::why_killed(r.proc.pid(), oom_kills_before_);
    f.roles.push_back(std::move(x));
  }
  verdict::classify(f, c);
}

void CaseRun::harness_fault(std::string cause) {
  if (std::find(harness_errors_.begin(), harness_errors_.end(), cause) == harness_errors_.end())
    harness_errors_.push_back(std::move(cause));
}

}  // namespace ipcheck::runner_detail
