// The campaign's workers, seen from the parent: what a worker says (findings, corpus
// entries, its final audit, that it retires), how its end is judged (a crash or a hang, with
// the input in flight; the hang watch), the standby consumers that take a vacant slot over,
// and the demotion of an input class that cost a worker.
#include "campaign_impl.hpp"

namespace ipcheck::fuzz::campaign_detail {

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
    // The message lists the first few of each kind; the totals are counted in full.
    const std::uint64_t total = std::max<std::uint64_t>(v == Verdict::fd_leak ? final.fds : final.mappings, items.size());
    f.detail = std::to_string(total) + (v == Verdict::fd_leak ? " descriptor(s)" : " mapping(s)") +
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
// every worker from now on; another such finding by an input of a demoted class (one of its
// draws that still ran) halves that class's rate.
void Campaign::note_poison(const RawFinding& f) {
  if (!o_.demote || !f.input || !f.ctx) return;
  if (f.verdict != Verdict::context_lost && f.verdict != Verdict::crash && f.verdict != Verdict::hang) return;
  const std::uint64_t mask = changed_fields(*f.ctx, *f.input);
  if (mask == 0) return;
  // A class that changes every field of a demoted one is demoted with it already: the first
  // such class (the one the workers' draw checks first) pays.
  Demoted* again = nullptr;
  for (auto& d : schedule_)
    if ((mask & d.mask) == d.mask) {
      again = &d;
      break;
    }
  if (again) {
    ++again->poisonings;
    if (again->keep_one_in >= detail::kDemotedKeepOneInMost) return;
    again->keep_one_in *= 2;
  } else {
    if (schedule_.size() >= static_cast<std::size_t>(detail::kMaxSchedule)) return;
    schedule_.push_back({mask, changed_fields_name(*f.ctx->layout, mask), verdict_name(f.verdict), fuzzed_ ? since(t0_) : 0.0});
  }
  const wire::Schedule schedule{schedule_demotions()};
  for (auto& s : slots_)
    if (s->proc && s->proc.ch && !s->proc.stopping) s->proc.ch.send(schedule);
}

}  // namespace ipcheck::fuzz::campaign_detail
