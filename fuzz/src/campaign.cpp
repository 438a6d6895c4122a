// The process loop of a fuzz campaign: start the producer and the consumers (the worker
// slots and their standbys set themselves up at once), watch every role until time is up, a
// --stop-on finding comes or the user interrupts, print progress, stop them all; and the
// replay worker (minimisation, --replay). A worker's messages and end, and the standbys that
// take its slot over: campaign_workers.cpp.
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
  s.proc.ch.send(wire::Go{s.index < 0, s.seed, first, quota, schedule_demotions(), CarriedFd::lend(s.page->fd())});
  s.vacant = false;
  s.hung = false;
  s.gen_first = first;
  s.gen_base = s.page->get().executions.load();
  s.seen_in_flight = 0;
  s.seen_execs = s.gen_base;
  s.seen_change = Clock::now();
  ++s.generations;
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
