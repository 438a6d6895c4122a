#include "campaign_impl.hpp"

namespace ipcheck::fuzz::campaign_detail {

Proc Campaign::spawn(const std::string& role) {
  auto [mine, theirs] = make_channel_pair();
  SpawnSpec spec;
  spec.executable = exe_;
  spec.args = {"fuzz-role", "--role", role, "--adapter", o_.adapter};
  spec.channel_fd = theirs.get();
  Proc p;
  p.name = role;
  try {
    p.proc = RoleProcess::spawn(spec);
  } catch (const SpawnError& e) {
    throw CampaignStop(std::string("cannot start the ") + role + ": " + e.what(), false);
  }
  p.ch = Channel(std::move(mine));
  auto hello = p.wait(30000);
  if (!hello || hello->type != MsgType::hello)
    throw CampaignStop("the " + role + " (" + exe_ + " fuzz-role) did not say hello within 30 s: " +
                           last_line(p.proc.output_tail()), false);
  try {
    msg::decode<msg::Hello>(*hello);  // a role of another protocol version is refused here
  } catch (const ChannelError& e) {
    throw CampaignStop("the " + role + " (" + exe_ + " fuzz-role) was refused: " + e.what(), false);
  }
  return p;
}

json Campaign::start_doc() const {
  json values = json::array();
  values.push_back(detail::value_to_json({"runner.pid", FieldRole::pid, static_cast<std::uint64_t>(::getpid())}));
  if (dead_pid_ > 0) values.push_back(detail::value_to_json({"dead.pid", FieldRole::pid, static_cast<std::uint64_t>(dead_pid_)}));
  json corpus = json::array();
  std::size_t bytes = 0;
  for (const auto& c : corpus_seeds_) {
    bytes += c.dump().size();
    if (bytes > 40000) break;  // one channel packet
    corpus.push_back(c);
  }
  return {{"adapter", o_.adapter},     {"transport", o_.transport},
          {"runner_pid", ::getpid()},  {"adapter_options", o_.adapter_options},
          {"salt_seed", derive_seed(o_.seed, 0x53414c54)}, {"setup", setup_},
          {"values", values},          {"corpus", corpus},
          {"target", o_.target}};
}

void Campaign::start_producer() {
  producer_ = spawn("producer");
  json start = {{"adapter", o_.adapter},
                {"transport", o_.transport},
                {"runner_pid", ::getpid()},
                {"adapter_options", o_.adapter_options},
                {"salt_seed", derive_seed(o_.seed, 0x53414c54)},
                {"target", o_.target}};
  producer_.ch.send(msg::Start{start});
  for (;;) {
    auto m = producer_.wait(60000);
    if (!m)
      throw CampaignStop("the producer ended (" +
                             (producer_.proc.status() ? producer_.proc.status()->describe() : std::string("no answer in 60 s")) +
                             ") before exporting: " + last_line(producer_.proc.output_tail()), false);
    if (m->type == MsgType::send) {
      msg::Send export_fd = msg::decode<msg::Send>(*m);
      descriptors_.emplace_back(std::move(export_fd.tag), export_fd.fd.take());
    } else if (m->type == MsgType::data) {
      wire::Any said = wire::decode(*m, nullptr);
      if (auto* setup = std::get_if<wire::Setup>(&said)) {
        setup_ = std::move(setup->record);
        return;
      }
      if (const auto* e = std::get_if<wire::Error>(&said)) {
        const bool skip = e->errc == "not_implemented" || e->errc == "feature_not_supported" || e->errc == "device_lost";
        const std::string how = !skip ? "failed in the producer"
                                : e->stage == "init" ? "is not available here"
                                                     : std::string("cannot export ") + detail::target_noun(o_.target) + " here";
        throw CampaignStop("adapter '" + o_.adapter + "' " + how + ": " + e->what, skip);
      }
    }
  }
}

// A pid that names no process: a child that has exited and been reaped.
void Campaign::start_dead_pid() {
  if (const auto p = reaped_pid()) dead_pid_ = *p;
}

std::shared_ptr<const MutatorContext> Campaign::wait_ready(Proc& p, const std::string& who) {
  for (;;) {
    auto m = p.wait(60000);
    if (!m)
      throw CampaignStop(who + " ended (" + (p.proc.status() ? p.proc.status()->describe() : std::string("no answer in 60 s")) +
                             ") before it was ready: " + last_line(p.proc.output_tail()), false);
    if (m->type != MsgType::data) continue;
    wire::Any said = wire::decode(*m, nullptr);
    if (auto* ready = std::get_if<wire::Ready>(&said)) return accept_ready(*ready);
    if (const auto* e = std::get_if<wire::Error>(&said)) throw CampaignStop(who + " could not set up: " + e->what, false);
  }
}

// A consumer with the campaign's descriptors and set-up, setting itself up.
Proc Campaign::launch_consumer() {
  Proc p = spawn("consumer");
  for (const auto& [name, fd] : descriptors_) p.ch.send(msg::Deliver{"producer", name, {}, CarriedFd::lend(fd.get())});
  p.ch.send(msg::Start{start_doc()});
  return p;
}

// A consumer set up in the foreground (the replay worker).
void Campaign::start_slot(Slot& s, std::uint64_t first, std::uint64_t quota) {
  const auto t = Clock::now();
  Proc p = launch_consumer();
  auto ctx = wait_ready(p, "consumer " + std::to_string(s.index));
  init_s_.push_back(since(t));
  go(s, std::move(p), std::move(ctx), first, quota);
}

// Slot `s` takes the set-up consumer `p`: its page, and the input stream from `first`.
void Campaign::go(Slot& s, Proc p, std::shared_ptr<const MutatorContext> ctx, std::uint64_t first, std::uint64_t quota) {
  s.proc = std::move(p);
  s.ctx = std::move(ctx);
  s.page->get().in_flight.store(0);
  s.proc.ch.send(wire::Go{s.index < 0, s.seed, first, quota, schedule_names(), CarriedFd::lend(s.page->fd())});
  s.vacant = false;
  s.hung = false;
  s.gen_first = first;
  s.gen_base = s.page->get().executions.load();
  s.seen_in_flight = 0;
  s.seen_execs = s.gen_base;
  s.seen_change = Clock::now();
  ++s.generations;
}

void Campaign::handle(Slot& s, Message& m) {
  if (m.type == MsgType::done) {
    s.proc.done = true;
    return;
  }
  if (m.type != MsgType::data) return;
  wire::Any said = wire::decode(m, s.ctx.get());
  if (auto* f = std::get_if<wire::Finding>(&said)) {
    on_finding(s, std::move(*f));
  } else if (auto* c = std::get_if<wire::Corpus>(&said)) {
    if (corpus_found_.size() < 2048)
      corpus_found_.push_back({s.ctx, c->input, verdict_name(c->verdict), std::move(c->outcome)});
  } else if (const auto* f = std::get_if<wire::Final>(&said)) {
    on_final(s, *f);
  } else if (const auto* r = std::get_if<wire::Retire>(&said)) {
    // Its context is lost and it is leaving: the slot goes to a standby now, and the process
    // is reaped when its exit is done (a crash on the way out is still a finding).
    leaving_.push_back({std::move(s.proc), s.index});
    s.proc = Proc();
    vacate(s, r->next_exec, true);
  } else if (const auto* e = std::get_if<wire::Error>(&said)) {
    throw CampaignStop("consumer " + std::to_string(s.index) + " failed: " + e->what, false);
  }
}

void Campaign::on_finding(Slot& s, wire::Finding w) {
  RawFinding f;
  f.ctx = s.ctx;
  f.input = w.input;
  f.verdict = w.verdict;
  f.detail = std::move(w.detail);
  f.outcome = std::move(w.outcome);
  f.exec = w.exec;
  f.at_s = since(t0_);
  f.worker = s.index;
  if (std::find(o_.stop_on.begin(), o_.stop_on.end(), verdict_name(f.verdict)) != o_.stop_on.end()) stop_hit_ = true;
  note_poison(f);
  raw_.push_back(std::move(f));
}

// What the worker's own audit found at its end that no single open was caught leaving.
void Campaign::on_final(Slot& s, const wire::Final& final) {
  std::map<Verdict, std::vector<std::string>> left;
  for (const auto& l : final.leaks) left[l.kind == "fd" ? Verdict::fd_leak : Verdict::mapping_leak].push_back(l.item);
  for (auto& [verdict, items] : left) {
    const Verdict v = verdict;  // named, not a structured binding: clang 14 cannot capture those
    const bool caught = std::any_of(raw_.begin(), raw_.end(), [&](const RawFinding& r) {
      return r.verdict == v && r.worker == s.index && r.input;
    });
    if (caught) continue;
    RawFinding f;
    f.verdict = v;
    f.detail = std::to_string(items.size()) + (v == Verdict::fd_leak ? " descriptor(s)" : " mapping(s)") +
               " left in consumer " + std::to_string(s.index) + " at its end, not tied to one input; first: " + items.front();
    f.at_s = since(t0_);
    f.worker = s.index;
    raw_.push_back(std::move(f));
  }
}

// A consumer that said ready: its context, and (the first one's) what calibration taught it.
std::shared_ptr<const MutatorContext> Campaign::accept_ready(wire::Ready& ready) {
  if (calibration_.empty()) calibration_ = ready.calibration;
  return std::make_shared<const MutatorContext>(std::move(ready.context));
}

// Slot `s` has no worker: the next ready standby resumes its stream at `next` (fill_vacancies),
// unless its quota is used or the campaign is stopping.
void Campaign::vacate(Slot& s, std::uint64_t next, bool retired) {
  const std::uint64_t used = s.page->get().executions.load() + s.lost;
  if (s.quota_total && used >= s.quota_total) return;
  if (stopping_ || stop_hit_ || (o_.interrupted && o_.interrupted->load())) return;
  s.vacant = true;
  s.vacated_by_retire = retired;
  s.next_first = next;
  s.next_quota = s.quota_total ? s.quota_total - used : 0;
  s.vacant_since = Clock::now();
}

// Reaps workers that retired; one that did not exit with kRetired died on its way out.
void Campaign::tend_leaving(bool wait) {
  const auto deadline = Clock::now() + std::chrono::seconds(wait ? 5 : 0);
  for (;;) {
    for (auto it = leaving_.begin(); it != leaving_.end();) {
      it->proc.drain();
      if (!it->proc.exited()) {
        ++it;
        continue;
      }
      while (it->proc.proc.read_output()) {
      }
      const ExitStatus st = *it->proc.proc.status();
      if (!(st.exited && st.code == detail::kRetired))
        raw_.push_back(exit_finding(Verdict::crash, it->worker, st.describe(), it->proc.proc.output_tail(),
                                    "the consumer died (" + st.describe() +
                                        ") on its way out, after it reported its context lost"));
      it = leaving_.erase(it);
    }
    if (leaving_.empty() || Clock::now() >= deadline) return;
    ::poll(nullptr, 0, 20);
  }
}

void Campaign::on_exit(Slot& s) {
  // Messages it sent before it went.
  for (;;) {
    std::optional<Message> m;
    try {
      if (s.proc.ch) m = s.proc.ch.receive(0);
    } catch (const ChannelError&) {
    }
    if (!m) break;
    handle(s, *m);
  }
  while (s.proc.proc.read_output()) {
  }
  const ExitStatus st = *s.proc.proc.status();
  const bool stopping = s.proc.stopping;
  if (st.exited && st.code == 0 && s.proc.done && !s.hung) {
    s.proc = Proc();
    return;
  }
  WorkerPage& p = s.page->get();
  // It reported context_lost and left: replaced like a dead worker, with no finding of its own.
  const bool retired = st.exited && st.code == detail::kRetired && s.proc.done && !s.hung;
  const std::uint64_t in_flight = retired ? 0 : p.in_flight.load();
  if (!retired) record_death(s, st, in_flight);
  // The replacement resumes the same stream after the input that ended its predecessor.
  const std::uint64_t done_here = p.executions.load() - s.gen_base;
  const std::uint64_t next = in_flight ? in_flight : s.gen_first + done_here;
  if (in_flight) ++s.lost;  // tried, but never counted by the page
  s.proc = Proc();
  if (!stopping) vacate(s, next, retired);
}

// A finding of a consumer's end: how it ended (`exit`), what it was doing, its last output line.
RawFinding Campaign::exit_finding(Verdict v, int worker, const std::string& exit, const std::string& output_tail,
                                  std::string detail) const {
  RawFinding f;
  f.verdict = v;
  f.worker = worker;
  f.at_s = since(t0_);
  f.outcome = {{"exit", exit}};
  f.detail = std::move(detail);
  if (const std::string tail = last_line(output_tail); !tail.empty()) f.detail += " (last output: " + tail + ")";
  return f;
}

// A crash or a hang of worker `s`, with the input it was opening when there was one.
void Campaign::record_death(Slot& s, const ExitStatus& st, std::uint64_t in_flight) {
  WorkerPage& p = s.page->get();
  std::string detail = "the consumer died (" + st.describe() + ") between inputs";
  if (in_flight)
    detail = s.hung ? "open did not return within " + seconds(o_.hang_s) + " s; the consumer was killed"
                    : "the consumer died (" + st.describe() + ") while opening this input";
  RawFinding f = exit_finding(s.hung ? Verdict::hang : Verdict::crash, s.index,
                              s.hung ? "killed after " + seconds(o_.hang_s) + " s without returning" : st.describe(),
                              s.proc.proc.output_tail(), std::move(detail));
  if (in_flight) {
    Input in;
    std::memcpy(in.bytes.data(), p.bytes, kMaxInput);
    in.length = p.length;
    in.base = p.base;
    in.descriptor = p.descriptor;
    in.map_offset = p.map_offset;
    in.map_size = p.map_size;
    f.ctx = s.ctx;
    f.input = in;
    f.exec = in_flight - 1;
  }
  if (std::find(o_.stop_on.begin(), o_.stop_on.end(), verdict_name(f.verdict)) != o_.stop_on.end()) stop_hit_ = true;
  note_poison(f);
  raw_.push_back(std::move(f));
}

void Campaign::sample(Slot& s) {
  if (!s.proc || s.hung) return;
  WorkerPage& p = s.page->get();
  const std::uint64_t fl = p.in_flight.load(), ex = p.executions.load();
  if (fl != s.seen_in_flight || ex != s.seen_execs) {
    s.seen_in_flight = fl;
    s.seen_execs = ex;
    s.seen_change = Clock::now();
    return;
  }
  if (fl != 0 && since(s.seen_change) >= o_.hang_s) {
    s.hung = true;
    s.proc.proc.signal_group(SIGKILL);
  }
}

std::uint64_t Campaign::executions() const {
  std::uint64_t n = 0;
  for (const auto& s : slots_) n += s->page->get().executions.load() + s->lost;
  return n;
}

std::map<std::string, std::uint64_t> Campaign::outcome_counts() const {
  std::map<std::string, std::uint64_t> out;
  for (const auto& s : slots_)
    for (int i = 0; i < 16; ++i)
      if (const auto n = s->page->get().outcomes[i].load()) out[errc_name(static_cast<Errc>(i))] += n;
  return out;
}

void Campaign::print_progress(bool final_line) {
  if (!o_.progress || !fuzzed_) return;
  const bool tty = ::isatty(STDOUT_FILENO);
  if (!final_line && since(last_progress_) < (tty ? 1.0 : 5.0)) return;
  last_progress_ = Clock::now();
  const double t = since(t0_);
  const std::uint64_t n = executions();
  std::string hist;
  for (const auto& [k, v] : outcome_counts()) hist += " " + k + " " + std::to_string(v);
  std::uint64_t hits = 0;
  for (const auto& s : slots_) hits += s->page->get().findings.load();
  const std::size_t crash = std::count_if(raw_.begin(), raw_.end(), [](const RawFinding& f) {
    return f.verdict == Verdict::crash || f.verdict == Verdict::hang;
  });
  std::printf("%s[%6.1f s] %llu execs, %.0f/s, %zu worker%s (%d replaced) |%s | findings %llu%s", tty ? "\r\033[K" : "", t,
              static_cast<unsigned long long>(n), t > 0 ? n / t : 0.0, slots_.size(), slots_.size() == 1 ? "" : "s",
              replaced_, hist.c_str(), static_cast<unsigned long long>(hits + crash), tty && !final_line ? "" : "\n");
  std::fflush(stdout);
}

// Keeps `standby_` consumers launched or ready beyond the slots waiting for one.
void Campaign::launch_spares() {
  const std::size_t vacant = static_cast<std::size_t>(std::count_if(slots_.begin(), slots_.end(), [](const auto& s) { return s->vacant; }));
  while (spares_.size() < static_cast<std::size_t>(standby_) + vacant) {
    auto sp = std::make_unique<Spare>();
    sp->launched = Clock::now();
    sp->proc = launch_consumer();
    spares_.push_back(std::move(sp));
  }
}

// Reads what the standby consumers said: "ready" makes one available; one that failed to set
// up ends the campaign (as a worker's set-up failure always did); one that died waiting is dropped.
void Campaign::tend_spares() {
  for (auto it = spares_.begin(); it != spares_.end();) {
    Spare& sp = **it;
    sp.proc.drain();
    bool gone = false;
    while (sp.proc.ch) {
      std::optional<Message> m;
      try {
        m = sp.proc.ch.receive(0);
      } catch (const ChannelError&) {
        sp.proc.ch = Channel();
      }
      if (!m) break;
      if (m->type != MsgType::data) continue;
      wire::Any said = wire::decode(*m, nullptr);
      if (auto* ready = std::get_if<wire::Ready>(&said)) {
        sp.ctx = accept_ready(*ready);
        init_s_.push_back(since(sp.launched));
      } else if (const auto* e = std::get_if<wire::Error>(&said)) {
        throw CampaignStop("a consumer could not set up: " + e->what, false);
      }
    }
    if (sp.proc.exited()) {
      if (!sp.ctx)
        throw CampaignStop("a consumer ended (" + sp.proc.proc.status()->describe() + ") before it was ready: " +
                               last_line(sp.proc.proc.output_tail()), false);
      gone = true;  // a ready standby that died waiting: not a finding (it opened nothing)
    } else if (!sp.ctx && since(sp.launched) > 120) {
      throw CampaignStop("a consumer was not ready 120 s after it started: " + last_line(sp.proc.proc.output_tail()), false);
    }
    if (gone) it = spares_.erase(it);
    else ++it;
  }
}

// Each slot waiting for a worker takes the oldest ready standby.
void Campaign::fill_vacancies() {
  for (auto& s : slots_) {
    if (!s->vacant) continue;
    auto ready = std::find_if(spares_.begin(), spares_.end(), [](const auto& sp) { return sp->ctx != nullptr; });
    if (ready == spares_.end()) return;
    std::unique_ptr<Spare> sp = std::move(*ready);
    spares_.erase(ready);
    const bool first = s->generations == 0;
    if (!first) {  // a replacement (a vacancy the stop came before is not one)
      ++replaced_;
      if (s->vacated_by_retire) ++retired_;
      const double waited = since(s->vacant_since);
      waits_s_.push_back(waited);
      s->recovery_s += waited;
      if (since(sp->launched) > waited) ++from_standby_;  // it was ready before the slot needed it
    }
    go(*s, std::move(sp->proc), std::move(sp->ctx), s->next_first, s->next_quota);
    if (!fuzzed_) {
      fuzzed_ = true;
      t0_ = last_progress_ = Clock::now();
    }
  }
}

// A finding that cost its worker (context lost, crash, hang) demotes its input class, in
// every worker from now on.
void Campaign::note_poison(const RawFinding& f) {
  if (!o_.demote || !f.input || !f.ctx) return;
  if (f.verdict != Verdict::context_lost && f.verdict != Verdict::crash && f.verdict != Verdict::hang) return;
  const std::uint64_t mask = changed_fields(*f.ctx, *f.input);
  if (mask == 0 || schedule_.size() >= static_cast<std::size_t>(detail::kMaxSchedule)) return;
  // A class that changes every field of a demoted one is demoted with it already (a draw that
  // still ran: one in kDemotedKeepOneIn).
  for (const auto& d : schedule_)
    if ((mask & d.mask) == d.mask) return;
  schedule_.push_back({mask, changed_fields_name(*f.ctx->layout, mask), verdict_name(f.verdict), fuzzed_ ? since(t0_) : 0.0});
  const wire::Schedule schedule{schedule_names()};
  for (auto& s : slots_)
    if (s->proc && s->proc.ch && !s->proc.stopping) s->proc.ch.send(schedule);
}

// The workers' slots, each with its page and seed and its share of --runs; all vacant.
void Campaign::make_slots(int jobs) {
  for (int w = 0; w < jobs; ++w) {
    auto s = std::make_unique<Slot>();
    s->index = w;
    s->page = std::make_unique<SharedPage>();
    s->seed = derive_seed(o_.seed, static_cast<std::uint64_t>(w) + 1);
    if (o_.runs) s->quota_total = o_.runs / static_cast<std::uint64_t>(jobs) + (static_cast<std::uint64_t>(w) < o_.runs % static_cast<std::uint64_t>(jobs) ? 1 : 0);
    s->vacant = true;
    s->next_quota = s->quota_total;
    s->vacant_since = launch_t0_;
    slots_.push_back(std::move(s));
  }
}

// Time is up, a --stop-on finding came, or the user interrupted: every worker and standby is
// told to stop, and no slot is filled again.
void Campaign::begin_stop(bool interrupted) {
  stopping_ = true;
  if (interrupted) status = "interrupted", reason = "the campaign was interrupted";
  for (auto& s : slots_) {
    s->vacant = false;
    if (s->proc) {
      s->proc.stopping = true;
      // A worker that is leaving (context_lost, a crash) may have closed its end already.
      if (s->proc.ch) s->proc.ch.send(kStop);
    }
  }
  for (auto& sp : spares_)  // a standby leaves when it is ready; stop_all reaps it
    if (sp->proc.ch) sp->proc.ch.send(kStop);
  t_end_ = Clock::now();
}

// Waits up to 100 ms for any role process to say something, write output or end.
void Campaign::poll_processes() {
  std::vector<pollfd> fds;
  auto watch = [&fds](Proc& p) {
    if (p.ch) fds.push_back({p.ch.fd(), POLLIN, 0});
    if (p.proc.output_open()) fds.push_back({p.proc.output_fd(), POLLIN, 0});
    fds.push_back({p.proc.pidfd(), POLLIN, 0});
  };
  for (auto& s : slots_)
    if (s->proc) watch(s->proc);
  for (auto& sp : spares_) watch(sp->proc);
  for (auto& l : leaving_) watch(l.proc);
  fds.push_back({producer_.proc.pidfd(), POLLIN, 0});
  if (producer_.proc.output_open()) fds.push_back({producer_.proc.output_fd(), POLLIN, 0});
  ::poll(fds.data(), fds.size(), 100);
}

// A worker's messages (64 at most per round), then its exit or its hang watch.
void Campaign::service(Slot& s) {
  s.proc.drain();
  for (int k = 0; k < 64 && s.proc.ch; ++k) {
    std::optional<Message> m;
    try {
      m = s.proc.ch.receive(0);
    } catch (const ChannelError&) {
      s.proc.ch = Channel();
    }
    if (!m) break;
    handle(s, *m);
  }
  if (!s.proc) return;  // it retired: handed over already
  if (s.proc.exited()) on_exit(s);
  else sample(s);
}

void Campaign::fuzz() {
  // With --runs, never more workers than inputs (a worker's quota of 0 would mean "unbounded").
  const int jobs = static_cast<int>(o_.runs ? std::min<std::uint64_t>(static_cast<std::uint64_t>(std::max(1, o_.jobs)), o_.runs)
                                            : static_cast<std::uint64_t>(std::max(1, o_.jobs)));
  // Two at least: losses come in bursts, and a second one during a standby's set-up would wait.
  standby_ = o_.standby >= 0 ? o_.standby : std::min(std::max(jobs, 2), 8);
  launch_t0_ = Clock::now();
  make_slots(jobs);
  // Every worker and standby sets itself up at once; the campaign's clock starts with the first worker.
  launch_spares();
  for (;;) {
    const bool over_time = fuzzed_ && o_.time_s > 0 && since(t0_) >= o_.time_s;
    const bool interrupted = o_.interrupted && o_.interrupted->load();
    if (!stopping_ && (over_time || stop_hit_ || interrupted)) begin_stop(interrupted);
    if (std::all_of(slots_.begin(), slots_.end(), [](const auto& s) { return !s->proc && !s->vacant; })) break;
    if (stopping_ && since(t_end_) > 10)
      for (auto& s : slots_)
        if (s->proc && !s->hung) {
          s->hung = true;  // it did not stop: stuck in a verb
          s->proc.proc.signal_group(SIGKILL);
        }
    poll_processes();
    producer_.drain();
    if (producer_.exited())
      throw CampaignStop("the producer died during the campaign (" + producer_.proc.status()->describe() +
                             "): " + last_line(producer_.proc.output_tail()), false);
    for (auto& s : slots_)
      if (s->proc) service(*s);
    tend_leaving(false);
    if (!stopping_ && !stop_hit_) {
      tend_spares();
      fill_vacancies();
      launch_spares();
    }
    print_progress(false);
  }
  if (t_end_ == Clock::time_point{}) t_end_ = Clock::now();
  if (!fuzzed_) t0_ = t_end_;
  tend_leaving(true);
  print_progress(true);
}

void Campaign::stop_all() {
  auto stop = [](Proc& p) {
    if (!p || p.proc.status()) return;
    if (p.ch) p.ch.send(kStop);
    for (int i = 0; i < 50 && !p.exited(); ++i) p.wait(100);
  };
  for (auto& sp : spares_)  // standbys first: they only wait, and go at once
    if (sp->proc && !sp->proc.proc.status() && sp->proc.ch) sp->proc.ch.send(kStop);
  for (auto& s : slots_) stop(s->proc);
  for (auto& sp : spares_) stop(sp->proc);
  spares_.clear();
  if (replayer_) stop(replayer_->proc);
  stop(producer_);
  // RoleProcess destructors kill and reap whatever did not stop.
  for (auto& s : slots_) s->proc = Proc();
  if (replayer_) replayer_->proc = Proc();
  producer_ = Proc();
  descriptors_.clear();
}

void Campaign::ensure_replayer() {
  if (replayer_ && replayer_->proc && !replayer_->proc.exited()) return;
  if (!replayer_) {
    replayer_ = std::make_unique<Slot>();
    replayer_->index = -1;
    replayer_->page = std::make_unique<SharedPage>();
  }
  replayer_->proc = Proc();
  start_slot(*replayer_, 0, 0);
}

Campaign::Replayed Campaign::replay_exec(const Symbolic& sym, std::string* resolved, std::string* why) {
  ensure_replayer();
  Slot& r = *replayer_;
  auto in = resolve(*r.ctx, sym, why);
  if (!in) return {Verdict::rejected, "not replayable: " + (why ? *why : std::string()), json::object()};
  if (resolved) *resolved = describe(symbolize(*r.ctx, *in), *r.ctx->layout);
  const int id = ++replay_id_;
  r.proc.ch.send(wire::encode(wire::Exec{id, *in}, *r.ctx));
  const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int>(o_.hang_s * 1000) + 200);
  for (;;) {
    auto m = r.proc.wait(50);
    wire::Any said;
    if (m && m->type == MsgType::data) said = wire::decode(*m, r.ctx.get());
    if (auto* v = std::get_if<wire::ExecVerdict>(&said)) {
      if (v->id != id) continue;
      if (v->verdict == Verdict::context_lost) {  // it leaves now; the next replay starts a fresh one
        while (!r.proc.exited()) r.proc.wait(20);
        r.proc = Proc();
      }
      return {v->verdict, std::move(v->detail), std::move(v->outcome)};
    }
    if (r.proc.exited()) {
      const ExitStatus st = *r.proc.proc.status();
      r.proc = Proc();
      return {Verdict::crash, "the replay consumer died (" + st.describe() + ") while opening this input",
              json{{"exit", st.describe()}}};
    }
    if (Clock::now() > deadline) {
      r.proc.proc.signal_group(SIGKILL);
      while (!r.proc.exited()) r.proc.wait(20);
      r.proc = Proc();
      return {Verdict::hang, "open did not return within " + seconds(o_.hang_s) + " s; the consumer was killed",
              json{{"exit", "killed after " + seconds(o_.hang_s) + " s without returning"}}};
    }
  }
}

}  // namespace ipcheck::fuzz::campaign_detail
