// CaseRun's relay (runner_impl.hpp): each message a role sends, decoded and acted on: the
// hello and the start document, start slots, what is sent to a peer, checks, observations,
// skips, steps (fault injection's point), kills, done. The case's processes, barriers and
// deadlines are runner_case.cpp's.
#include <algorithm>
#include <string>
#include <cstdio>
#include <cstdlib>

#include "ipcheck/verdict.hpp"
#include "runner_impl.hpp"

namespace ipcheck::runner_detail {

// A role of another ipcheck build (another protocol version) is refused: nothing it says
// could be read, so the case ends as an error that names both versions.
void CaseRun::on_hello(RoleState& r, Message& m) {
  msg::Hello hello;
  try {
    hello = msg::decode<msg::Hello>(m);
  } catch (const ChannelError& e) {
    harness_fault(r.name + ": " + e.what());
    begin_termination("a role's hello was refused", false);
    return;
  }
  r.hello = true;
  r.verb_mark = hello.verb_mark;
  if (tracer_) tracer_->role_hello(r.proc.pid(), hello.verb_mark);
  start_when_all_hello();
}

void CaseRun::start_when_all_hello() {
  // The peers are the roles started so far (an on-demand role's start comes later). Where
  // starts are limited, the role asks for its slot once its adapter is prepared.
  const bool slots = admission_ && admission_->starts_per_device() > 0;
  auto start = [&] {
    json peers = json::object();
    for (const auto& x : roles_)
      if (x.started) peers[x.name] = x.proc.pid();
    json doc = start_document(opt_, peers, inject_, reuse_);
    if (slots) doc["start_slot"] = true;
    return msg::Start{std::move(doc)};
  };
  if (start_sent_) {
    for (auto& x : roles_)
      if (x.started && x.hello && !x.start_posted) post_start(x, start());  // an on-demand role, started after the others
  } else if (std::all_of(roles_.begin(), roles_.end(), [](const RoleState& x) { return !x.started || x.hello; }) &&
             std::any_of(roles_.begin(), roles_.end(), [](const RoleState& x) { return x.started; })) {
    start_sent_ = true;
    timeline_.hello = seconds_since(start_);
    const msg::Start first = start();  // the same for every role
    for (auto& x : roles_)
      if (x.started) post_start(x, first);
  }
}

// A role reads nothing before its start: what was sent to it earlier follows the start.
void CaseRun::post_start(RoleState& r, const msg::Start& start) {
  if (r.reused) {
    // A kept role learns which case and role it serves now (a fresh one has them in argv).
    msg::Start mine = start;
    mine.doc["case"] = def_.id;
    mine.doc["role"] = r.name;
    r.post(mine);
  } else {
    r.post(start);
  }
  r.start_posted = true;
  for (auto& d : r.held) r.post(d);
  r.held.clear();
}

void CaseRun::on_want_start(RoleState& r) {
  if (!admission_) {
    r.post(msg::StartGranted{});  // nothing to wait for (a case run on its own)
    return;
  }
  if (r.holds_start || r.waits_for_start()) {
    result_.warnings.push_back(r.name + " asked for a start slot twice");
    return;
  }
  r.start_ticket = admission_->queue_start(device_, r.on_demand);
  r.queued_at = Clock::now();
  grant_start(r);
}

bool CaseRun::grant_start(RoleState& r) {
  if (!admission_->try_start(r.start_ticket)) return false;
  r.start_ticket = 0;
  r.holds_start = true;
  admission_->note_wait(seconds_since(r.queued_at));
  r.post(msg::StartGranted{});
  return true;
}

void CaseRun::release_start(RoleState& r) {
  if (!admission_) return;
  if (r.holds_start) admission_->end_start(device_);
  if (r.start_ticket) admission_->cancel(r.start_ticket);
  r.holds_start = false;
  r.start_ticket = 0;
}

bool CaseRun::retry_pending_starts() {
  bool waiting = false;
  for (auto& r : roles_)
    if (r.waits_for_start() && !r.exit) waiting = !grant_start(r) || waiting;
  return waiting;
}

void CaseRun::on_send(RoleState& r, msg::Send s) {
  RoleState* to = role(s.to);
  if (!to) {
    result_.warnings.push_back(r.name + " sent '" + s.tag + "' to unknown role '" + s.to + "'");
    return;
  }
  if (to->deferred) {
    if (terminating_) return;  // the case is ending: no new process for it
    to->on_demand = true;
    start_role(*to);
    confirm_role(*to);
    // Its peers learn of it before anything it sends or its exit: none gives up waiting on it.
    if (to->started) broadcast(msg::PeerStart{to->name, to->proc.pid()}, to);
  }
  if (to->start_posted)
    to->post(msg::Deliver{r.name, std::move(s.tag), std::move(s.bytes), CarriedFd::lend(s.fd.get())});
  else  // held with the descriptor itself: the sender's message ends here
    to->held.push_back(msg::Deliver{r.name, std::move(s.tag), std::move(s.bytes), std::move(s.fd)});
}

void CaseRun::on_check(RoleState& r, const msg::Check& c) {
  ++checks_;
  auto judged = verdict::judge_check(c.report, r.name, adapter_->profiles);
  if (!judged.warning.empty()) result_.warnings.push_back(judged.warning);
  // A violated clause that is not judged here is kept as what was seen.
  if (judged.check.result == reports::CheckResult::observed && !judged.check.message.empty() &&
      judged.check.level != reports::Level::observe)
    reports::add_observation(result_, "clause." + judged.check.clause, "violated: " + judged.check.message);
  result_.checks.push_back(std::move(judged.check));
}

void CaseRun::on_observe(RoleState& r, const msg::Observe& o) {
  reports::add_observation(result_, o.name, o.value);
  if (!o.clause.empty()) {
    ++checks_;
    result_.checks.push_back(verdict::observation_check(r.name, o.name, o.value, o.clause));
  }
}

void CaseRun::on_native_error(RoleState& r, const msg::NativeError& n) {
  reports::NativeError e;
  e.role = r.name;
  e.verb = n.verb;
  e.errc = n.errc;
  e.native = n.native;
  e.native_name = n.native_name;
  e.message = n.message;
  if (result_.native_errors.size() < 200) result_.native_errors.push_back(std::move(e));
}

void CaseRun::on_skip(RoleState& r, const msg::Skip& s) {
  r.skipped = true;
  if (skip_reason_.empty()) {
    skip_reason_ = s.reason;
    skip_by_ = s.by;
  }
  // One role cannot run the case: the others would wait for it forever.
  for (auto& x : roles_)
    if (x.started && !x.exit) x.expected_death = true;
  // The skipping role ends by itself (a signal now could cut its exit short).
  begin_termination("skipped: " + s.reason, false, &r);
}

void CaseRun::on_step(RoleState& r, const msg::Step& s) {
  // "into": announced on the way into a blocking call; the role does not wait for us.
  const bool into = s.into;
  note_objects(r);
  if (inject_ && !injected_ && inject_->role == r.base && inject_->step == s.name) {
    // The first instance of the role to reach the point dies there; the others go on.
    injected_ = true;
    announced_ = Clock::now();
    result_.injection = r.name + ":" + s.name;
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
    r.post(msg::Proceed{s.name});
  }
}

void CaseRun::on_kill_peer(RoleState& r, const msg::KillPeer& k) {
  RoleState* target = role(k.role);
  if (!target || !target->started) {
    result_.warnings.push_back(r.name + " asked to kill unknown role '" + k.role + "'");
    return;
  }
  target->expected_death = true;
  if (!target->exit) target->proc.signal_group(k.signal);
}

void CaseRun::on_done(RoleState& r, const msg::Done& d) {
  release_start(r);
  r.done = true;
  timeline_.done = seconds_since(start_);
  r.aborted = d.aborted;
  r.done_message = d.message;
  if (reuse_) park_or_end(r);
  release_barriers();
}

void CaseRun::park_or_end(RoleState& r) {
  const bool clean = !r.aborted && r.done_message.empty() && !r.skipped && !r.expected_death && !r.cut_short &&
                     !terminating_ && harness_errors_.empty() && r.held.empty() && !r.exit;
  if (!clean || !r.proc.group_survivors().empty()) {
    // Told to exit as a fresh role does after its done; reaped, and its group looked at, as one.
    r.channel = Channel();
    return;
  }
  if (tracer_) {
    // The body is over: what the tracer saw of this case is complete (what the role holds now
    // is what a fresh role holds when it exits after its done).
    r.audit = tracer_->role_ended(r.proc.pid(), r.audit, RoleEnd{"exit 0", false, false});
    r.audit_collected = true;
  }
  if (!r.audit.is_object() || !r.audit.value("leaks", json::array()).empty()) {
    r.channel = Channel();  // it left something open: not to serve another case
    return;
  }
  // Ended for its case as a fresh role that exits 0 after its done: its peers are told so.
  r.parked = true;
  r.exit = ExitStatus{true, 0, 0};
  r.exit_time = Clock::now();
  r.duration_s = seconds_since(r.proc.started());
  r.outbox.clear();  // what was still for it was this case's: it goes nowhere
  release_start(r);
  if (kill_when_blocked_ == &r) kill_when_blocked_ = nullptr;
  broadcast(msg::PeerExit{r.name, r.exit->describe()}, &r);
}

void CaseRun::hand_back_parked() {
  for (auto& r : roles_) {
    if (!r.parked) continue;
    r.parked = false;
    PooledRole kept{std::move(r.proc), std::move(r.channel), r.verb_mark};
    // Only a role every part of whose case passed serves another case; the others are told
    // to exit and reaped (their group killed if they outlive a grace).
    if (result_.status == Status::pass && !interrupted_) pool_->give(pool_key_, std::move(kept));
    else end_kept_role(kept);
  }
}

void CaseRun::handle(RoleState& r, Message& m) {
  switch (m.type) {
    case MsgType::hello:
      on_hello(r, m);
      break;
    case MsgType::send:
      on_send(r, msg::decode<msg::Send>(m));
      break;
    case MsgType::barrier:
      r.at_barrier = msg::decode<msg::Barrier>(m).name;
      release_barriers();
      break;
    case MsgType::check:
      on_check(r, msg::decode<msg::Check>(m));
      break;
    case MsgType::observe:
      on_observe(r, msg::decode<msg::Observe>(m));
      break;
    case MsgType::native_error:
      on_native_error(r, msg::decode<msg::NativeError>(m));
      break;
    case MsgType::skip:
      on_skip(r, msg::decode<msg::Skip>(m));
      break;
    case MsgType::step:
      on_step(r, msg::decode<msg::Step>(m));
      break;
    case MsgType::kill_peer:
      on_kill_peer(r, msg::decode<msg::KillPeer>(m));
      break;
    case MsgType::audit:
      r.audit = msg::decode<msg::Audit>(m).doc;
      break;
    case MsgType::data: {
      const msg::Data d = msg::decode<msg::Data>(m);
      result_.audit["data"][d.key] = json::parse(d.doc);
      break;
    }
    case MsgType::done:
      on_done(r, msg::decode<msg::Done>(m));
      break;
    case MsgType::info:
      break;
    case MsgType::want_start:
      msg::decode<msg::WantStart>(m);
      on_want_start(r);
      break;
    case MsgType::initialised:
      r.init_s = msg::decode<msg::Initialised>(m).seconds;
      if (admission_) admission_->note_start(r.init_s);  // every start counts, slot or none
      release_start(r);
      break;
    case MsgType::harness_error:
      harness_fault(r.name + ": " + msg::decode<msg::HarnessError>(m).cause);
      break;
    default:
      result_.warnings.push_back(r.name + " sent an unexpected " + std::string(msg_type_name(m.type)) + " message");
  }
}

}  // namespace ipcheck::runner_detail
