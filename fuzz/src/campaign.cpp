#include "ipcheck/fuzz/campaign.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <set>
#include <stdexcept>

#include "ipcheck/adapter.hpp"
#include "ipcheck/audit.hpp"
#include "ipcheck/channel.hpp"
#include "ipcheck/fuzz/layout.hpp"
#include "ipcheck/fuzz/oracle.hpp"
#include "ipcheck/fuzz/symbolic.hpp"
#include "ipcheck/reports/files.hpp"
#include "ipcheck/reports/report_set.hpp"
#include "ipcheck/run_record.hpp"
#include "ipcheck/spawn.hpp"
#include "protocol.hpp"
#include "targets.hpp"

namespace ipcheck::fuzz {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using detail::WorkerPage;
using nlohmann::json;

namespace {

std::string seconds(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", s);
  return b;
}

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Campaign problems that end it (not findings): an adapter that cannot start, a producer
// that died. `skip` marks the adapter-not-available kind.
struct CampaignStop : std::runtime_error {
  CampaignStop(const std::string& why, bool skip_) : std::runtime_error(why), skip(skip_) {}
  bool skip;
};

// A memfd page shared with one worker.
class SharedPage {
 public:
  SharedPage() {
    fd_ = unique_fd(::memfd_create("ipcheck-fuzz-page", MFD_CLOEXEC));
    if (!fd_ || ::ftruncate(fd_.get(), 4096) != 0)
      throw std::runtime_error(std::string("fuzz: cannot create a worker page: ") + std::strerror(errno));
    void* p = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd_.get(), 0);
    if (p == MAP_FAILED) throw std::runtime_error(std::string("fuzz: cannot map a worker page: ") + std::strerror(errno));
    page_ = static_cast<WorkerPage*>(p);
  }
  SharedPage(const SharedPage&) = delete;
  SharedPage& operator=(const SharedPage&) = delete;
  ~SharedPage() {
    if (page_) ::munmap(page_, 4096);
  }
  WorkerPage* operator->() const noexcept { return page_; }
  WorkerPage& get() const noexcept { return *page_; }
  int fd() const noexcept { return fd_.get(); }

 private:
  unique_fd fd_;
  WorkerPage* page_ = nullptr;
};

// One role process with its channel.
struct Proc {
  std::string name;
  RoleProcess proc;
  Channel ch;
  bool stopping = false;
  bool done = false;

  explicit operator bool() const noexcept { return proc.pid() > 0; }
  bool exited() { return proc.poll_exit().has_value(); }
  void drain() {
    if (proc.output_open()) proc.read_output();
  }
  // Next message within `timeout_ms`, reading output meanwhile; empty on timeout or exit.
  std::optional<Message> wait(int timeout_ms) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      drain();
      if (ch) {
        try {
          if (auto m = ch.receive(0)) return m;
        } catch (const ChannelError&) {
          ch = Channel();
        }
      }
      if (exited() && !ch) return std::nullopt;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return std::nullopt;
      pollfd fds[2] = {{ch ? ch.fd() : -1, POLLIN, 0}, {proc.output_open() ? proc.output_fd() : -1, POLLIN, 0}};
      ::poll(fds, 2, static_cast<int>(std::min<long long>(left, 100)));
      if (exited() && ch) {
        // Read what it sent before it went.
        try {
          if (auto m = ch.receive(0)) return m;
        } catch (const ChannelError&) {
        }
        ch = Channel();
      }
    }
  }
};

struct RawFinding {
  std::shared_ptr<const MutatorContext> ctx;  // the worker's context (null: no input)
  std::optional<Input> input;
  Verdict verdict = Verdict::crash;
  std::string detail;
  json outcome = json::object();
  std::uint64_t exec = 0;
  double at_s = 0;
  int worker = 0;
};

struct CorpusFind {
  std::shared_ptr<const MutatorContext> ctx;
  Input input;
  std::string verdict;
  json outcome;
};

// A consumer slot: the page survives the worker, so a replacement continues its counts.
struct Slot {
  int index = 0;
  std::unique_ptr<SharedPage> page;
  Proc proc;
  std::shared_ptr<const MutatorContext> ctx;
  std::uint64_t seed = 0;
  std::uint64_t gen_first = 0;      // first execution index of this generation
  std::uint64_t gen_base = 0;       // page executions when this generation started
  std::uint64_t quota_total = 0;    // 0: unbounded
  std::uint64_t lost = 0;           // inputs that crashed or hung (not counted by the page)
  int generations = 0;
  // Hang watch.
  std::uint64_t seen_in_flight = 0, seen_execs = 0;
  Clock::time_point seen_change{};
  bool hung = false;
  // Waiting for a worker (at the start, or after its worker died or retired): the next one
  // resumes the input stream at next_first.
  bool vacant = false;
  std::uint64_t next_first = 0, next_quota = 0;
  Clock::time_point vacant_since{};
  bool vacated_by_retire = false;  // its worker reported context_lost and left
  double recovery_s = 0;  // time without a worker after the first, summed
};

// A consumer started ahead of need: it sets itself up (runtime initialised, its own exports
// made, the handles calibrated) and waits for a slot, so that replacing a worker whose
// context was lost costs a hand-over, not an initialisation.
struct Spare {
  Proc proc;
  std::shared_ptr<const MutatorContext> ctx;  // set when it said ready
  Clock::time_point launched{};
};

// An input class that poisoned a worker (context_lost, crash, hang): later draws that repeat
// it run once in detail::kDemotedKeepOneIn.
struct Demoted {
  std::uint64_t mask = 0;  // changed_fields of the finding's input
  std::string cls;      // changed_fields_name of the finding's input
  std::string verdict;  // the finding that put it here
  double since_s = 0;
};

class Campaign {
 public:
  explicit Campaign(const CampaignOptions& o) : o_(o) {
    exe_ = o.executable.empty() ? self_executable() : o.executable;
    become_subreaper();
  }
  ~Campaign() {
    stop_all();
    reap_orphans();
  }

  void start_producer();
  void start_dead_pid();
  void start_slot(Slot& s, std::uint64_t first, std::uint64_t quota);
  void go(Slot& s, Proc p, std::shared_ptr<const MutatorContext> ctx, std::uint64_t first, std::uint64_t quota);
  void fuzz();
  void stop_all();
  void minimise_and_write(const std::string& out_dir);
  void save_corpus();
  void load_corpus();
  json section() const;

  // Replay support.
  struct Replayed {
    Verdict verdict;
    std::string detail;
    json outcome;
  };
  Replayed replay_exec(const Symbolic& s, std::string* resolved, std::string* why);

  const json& setup() const { return setup_; }
  std::string status = "completed", reason;

 private:
  Proc spawn(const std::string& role);
  Proc launch_consumer();
  json start_doc() const;
  void launch_spares();
  void tend_spares();
  void fill_vacancies();
  void note_poison(const RawFinding& f);
  json schedule_json() const;
  json time_json() const;
  json schedule_names() const;
  std::shared_ptr<const MutatorContext> wait_ready(Proc& p, const std::string& who);
  void handle(Slot& s, Message& m);
  void on_exit(Slot& s);
  void vacate(Slot& s, std::uint64_t next, bool retired);
  void tend_leaving(bool wait);
  void record_death(Slot& s, const ExitStatus& st, std::uint64_t in_flight);
  RawFinding exit_finding(Verdict v, int worker, const std::string& exit, const std::string& output_tail,
                          std::string detail) const;
  void sample(Slot& s);
  void print_progress(bool final_line);
  std::uint64_t executions() const;
  std::map<std::string, std::uint64_t> outcome_counts() const;
  void ensure_replayer();

  const CampaignOptions& o_;
  std::string exe_;
  Proc producer_;
  json setup_;
  json calibration_ = json::array();  // what the first consumer learnt from the unchanged handles
  std::vector<std::pair<std::string, unique_fd>> descriptors_;
  pid_t dead_pid_ = 0;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<RawFinding> raw_;
  std::vector<CorpusFind> corpus_found_;
  std::vector<json> corpus_seeds_;
  int corpus_added_ = 0;
  int replaced_ = 0, retired_ = 0;  // retired: replaced after reporting context_lost
  bool stop_hit_ = false;
  bool stopping_ = false;  // the workers were told to stop: no slot is filled again
  Clock::time_point t0_{}, t_end_{};
  bool fuzzed_ = false;
  Clock::time_point last_progress_{};
  json findings_ = json::array();
  // Replay worker (minimisation and --replay).
  std::unique_ptr<Slot> replayer_;
  int replay_id_ = 0;
  // Standby consumers and what they cost and saved.
  std::vector<std::unique_ptr<Spare>> spares_;
  int standby_ = 0;                      // how many the campaign keeps beyond its vacancies
  std::vector<double> init_s_;           // launch to ready, per consumer
  std::vector<double> waits_s_;          // per hand-over after a worker ended: vacancy to go
  int from_standby_ = 0;                 // hand-overs that found a ready standby
  Clock::time_point launch_t0_{};
  std::vector<Demoted> schedule_;
  // Workers that said "retire" (context lost) and are exiting; their slots are handed over already.
  struct Leaving {
    Proc proc;
    int worker = 0;
  };
  std::vector<Leaving> leaving_;
};

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
  producer_.ch.send(MsgType::start, {start.dump()});
  for (;;) {
    auto m = producer_.wait(60000);
    if (!m)
      throw CampaignStop("the producer ended (" +
                             (producer_.proc.status() ? producer_.proc.status()->describe() : std::string("no answer in 60 s")) +
                             ") before exporting: " + last_line(producer_.proc.output_tail()), false);
    if (m->type == MsgType::send) {
      descriptors_.emplace_back(m->field(0), std::move(m->fd));
    } else if (m->type == MsgType::data && m->field(0) == "setup") {
      setup_ = json::parse(m->field(1));
      return;
    } else if (m->type == MsgType::data && m->field(0) == "error") {
      const json e = json::parse(m->field(1));
      const std::string errc = e.value("errc", "");
      const bool skip = errc == "not_implemented" || errc == "feature_not_supported" || errc == "device_lost";
      const std::string how = !skip ? "failed in the producer"
                              : e.value("stage", "") == "init" ? "is not available here"
                                                                 : std::string("cannot export ") + detail::target_noun(o_.target) + " here";
      throw CampaignStop("adapter '" + o_.adapter + "' " + how +
                             ": " + e.value("what", std::string("?")), skip);
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
    if (m->field(0) == "ready") {
      const json ready = json::parse(m->field(1));
      if (calibration_.empty()) calibration_ = ready.value("calibration", json::array());
      return std::make_shared<const MutatorContext>(detail::context_from_json(ready.at("context")));
    }
    if (m->field(0) == "error") {
      const json e = json::parse(m->field(1));
      throw CampaignStop(who + " could not set up: " + e.value("what", std::string("?")), false);
    }
  }
}

// A consumer with the campaign's descriptors and set-up, setting itself up.
Proc Campaign::launch_consumer() {
  Proc p = spawn("consumer");
  for (const auto& [name, fd] : descriptors_) p.ch.send(MsgType::deliver, {name}, fd.get());
  p.ch.send(MsgType::start, {start_doc().dump()});
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
  const json doc = {{"mode", s.index < 0 ? "replay" : "campaign"}, {"seed", s.seed}, {"first_exec", first},
                    {"quota", quota}, {"schedule", schedule_names()}};
  s.proc.ch.send(MsgType::data, {"go", doc.dump()}, s.page->fd());
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
  const std::string& key = m.field(0);
  const json j = json::parse(m.field(1));
  if (key == "finding") {
    RawFinding f;
    f.ctx = s.ctx;
    f.input = detail::input_from_json(*s.ctx, j.at("input"));
    f.verdict = parse_verdict(j.at("verdict").get<std::string>()).value_or(Verdict::crash);
    f.detail = j.value("detail", "");
    f.outcome = j.value("outcome", json::object());
    f.exec = j.value("exec", std::uint64_t{0});
    f.at_s = since(t0_);
    f.worker = s.index;
    if (std::find(o_.stop_on.begin(), o_.stop_on.end(), verdict_name(f.verdict)) != o_.stop_on.end()) stop_hit_ = true;
    note_poison(f);
    raw_.push_back(std::move(f));
  } else if (key == "corpus") {
    if (corpus_found_.size() < 2048)
      corpus_found_.push_back({s.ctx, detail::input_from_json(*s.ctx, j.at("input")), j.value("verdict", ""), j.value("outcome", json::object())});
  } else if (key == "final") {
    // What the worker's own audit found at its end that no single open was caught leaving.
    std::map<Verdict, std::vector<std::string>> left;
    if (auto it = j.find("leaks"); it != j.end())
      for (const auto& l : *it)
        left[l.value("kind", "") == "fd" ? Verdict::fd_leak : Verdict::mapping_leak].push_back(l.value("item", ""));
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
  } else if (key == "retire") {
    // Its context is lost and it is leaving: the slot goes to a standby now, and the process
    // is reaped when its exit is done (a crash on the way out is still a finding).
    leaving_.push_back({std::move(s.proc), s.index});
    s.proc = Proc();
    vacate(s, j.value("next_exec", s.gen_first + (s.page->get().executions.load() - s.gen_base)), true);
  } else if (key == "error") {
    throw CampaignStop("consumer " + std::to_string(s.index) + " failed: " + j.value("what", std::string("?")), false);
  }
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
      if (m->field(0) == "ready") {
        const json ready = json::parse(m->field(1));
        if (calibration_.empty()) calibration_ = ready.value("calibration", json::array());
        sp.ctx = std::make_shared<const MutatorContext>(detail::context_from_json(ready.at("context")));
        init_s_.push_back(since(sp.launched));
      } else if (m->field(0) == "error") {
        const json e = json::parse(m->field(1));
        throw CampaignStop("a consumer could not set up: " + e.value("what", std::string("?")), false);
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
  const std::string doc = schedule_names().dump();
  for (auto& s : slots_)
    if (s->proc && s->proc.ch && !s->proc.stopping) s->proc.ch.send(MsgType::data, {"schedule", doc});
}

void Campaign::fuzz() {
  // With --runs, never more workers than inputs (a worker's quota of 0 would mean "unbounded").
  const int jobs = static_cast<int>(o_.runs ? std::min<std::uint64_t>(static_cast<std::uint64_t>(std::max(1, o_.jobs)), o_.runs)
                                            : static_cast<std::uint64_t>(std::max(1, o_.jobs)));
  // Two at least: losses come in bursts, and a second one during a standby's set-up would wait.
  standby_ = o_.standby >= 0 ? o_.standby : std::min(std::max(jobs, 2), 8);
  launch_t0_ = Clock::now();
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
  // Every worker and standby sets itself up at once; the campaign's clock starts with the first worker.
  launch_spares();
  for (;;) {
    const bool over_time = fuzzed_ && o_.time_s > 0 && since(t0_) >= o_.time_s;
    const bool interrupted = o_.interrupted && o_.interrupted->load();
    if (!stopping_ && (over_time || stop_hit_ || interrupted)) {
      stopping_ = true;
      if (interrupted) status = "interrupted", reason = "the campaign was interrupted";
      for (auto& s : slots_) {
        s->vacant = false;
        if (s->proc) {
          s->proc.stopping = true;
          // A worker that is leaving (context_lost, a crash) may have closed its end already.
          if (s->proc.ch) s->proc.ch.send(MsgType::release, {"stop"});
        }
      }
      for (auto& sp : spares_)  // a standby leaves when it is ready; stop_all reaps it
        if (sp->proc.ch) sp->proc.ch.send(MsgType::release, {"stop"});
      t_end_ = Clock::now();
    }
    if (std::all_of(slots_.begin(), slots_.end(), [](const auto& s) { return !s->proc && !s->vacant; })) break;
    if (stopping_ && since(t_end_) > 10)
      for (auto& s : slots_)
        if (s->proc && !s->hung) {
          s->hung = true;  // it did not stop: stuck in a verb
          s->proc.proc.signal_group(SIGKILL);
        }
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
    producer_.drain();
    if (producer_.exited())
      throw CampaignStop("the producer died during the campaign (" + producer_.proc.status()->describe() +
                             "): " + last_line(producer_.proc.output_tail()), false);
    for (auto& s : slots_) {
      if (!s->proc) continue;
      s->proc.drain();
      for (int k = 0; k < 64 && s->proc.ch; ++k) {
        std::optional<Message> m;
        try {
          m = s->proc.ch.receive(0);
        } catch (const ChannelError&) {
          s->proc.ch = Channel();
        }
        if (!m) break;
        handle(*s, *m);
      }
      if (!s->proc) continue;  // it retired: handed over already
      if (s->proc.exited()) on_exit(*s);
      else sample(*s);
    }
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
    if (p.ch) p.ch.send(MsgType::release, {"stop"});
    for (int i = 0; i < 50 && !p.exited(); ++i) p.wait(100);
  };
  for (auto& sp : spares_)  // standbys first: they only wait, and go at once
    if (sp->proc && !sp->proc.proc.status() && sp->proc.ch) sp->proc.ch.send(MsgType::release, {"stop"});
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
  r.proc.ch.send(MsgType::data, {"exec", json{{"id", id}, {"input", detail::input_to_json(*r.ctx, *in)}}.dump()});
  const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int>(o_.hang_s * 1000) + 200);
  for (;;) {
    auto m = r.proc.wait(50);
    if (m && m->type == MsgType::data && m->field(0) == "verdict") {
      const json v = json::parse(m->field(1));
      if (v.value("id", 0) != id) continue;
      const Verdict verdict = parse_verdict(v.value("verdict", "")).value_or(Verdict::rejected);
      if (verdict == Verdict::context_lost) {  // it leaves now; the next replay starts a fresh one
        while (!r.proc.exited()) r.proc.wait(20);
        r.proc = Proc();
      }
      return {verdict, v.value("detail", ""), v.value("outcome", json::object())};
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

std::string safe_id(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '+') c = '_';
  return s;
}

void write_json(const fs::path& p, const json& j) { reports::write_file_atomic(p.string(), j.dump(2) + '\n'); }

std::string env_defect() {
  const char* d = std::getenv("IPCREF_DEFECT");
  return d ? d : "";
}

json repro_doc(const CampaignOptions& o, const json& setup, const MutatorContext& ctx, const Symbolic& s,
               const Input& tried, const std::string& expect) {
  json j = {{"schema", "ipcheck.fuzz-repro/1"},
            {"adapter", o.adapter},
            {"target", o.target},
            {"handle_layout", ctx.layout->name},
            {"setup", detail::kSetup},
            {"transport", o.transport},
            {"adapter_options", o.adapter_options},
            {"driver", setup.at("info").value("driver_version", "")},
            {"input", to_json(s)},
            {"bytes", to_hex(tried.data())}};
  if (!expect.empty()) j["expect"] = expect;
  if (!env_defect().empty()) j["environment"] = {{"IPCREF_DEFECT", env_defect()}};
  return j;
}

void Campaign::minimise_and_write(const std::string& out_dir) {
  const fs::path dir = fs::path(out_dir) / "findings";
  const auto t_start = Clock::now();
  // Reports grouped by kind and changed fields; the first of each group stands for it.
  struct Group {
    RawFinding first;
    int reports = 0;
    std::optional<Symbolic> original, minimal;
    std::vector<std::string> fields;  // after minimisation
    bool minimised = false;
    std::optional<bool> reproduced;   // empty: not replayed (no input, or no time left)
    std::string replay_detail;
    json replay_outcome;
  };
  std::vector<Group> groups;
  std::map<std::string, std::size_t> by_key;
  for (auto& f : raw_) {
    std::string key = verdict_name(f.verdict);
    std::optional<Symbolic> sym;
    std::vector<std::string> fields;
    if (f.input) {
      sym = symbolize(*f.ctx, *f.input);
      fields = mutated_fields(*sym, *f.ctx);
      for (const auto& x : fields) key += "|" + x;
    } else {
      key += "|audit";
    }
    auto [it, fresh] = by_key.try_emplace(key, groups.size());
    if (fresh) {
      Group g;
      g.first = f;
      g.original = sym;
      g.fields = fields;
      groups.push_back(std::move(g));
    }
    ++groups[it->second].reports;
  }
  // Simplest first: a later group that still fails with only an earlier finding's fields is
  // that finding again (one replay instead of a minimisation).
  std::vector<std::size_t> order(groups.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return groups[a].fields.size() < groups[b].fields.size();
  });
  std::vector<std::size_t> finals;
  auto subset = [](const std::vector<std::string>& small, const std::vector<std::string>& big) {
    return std::includes(big.begin(), big.end(), small.begin(), small.end());
  };
  std::string why;
  bool out_of_time = false;
  for (const std::size_t gi : order) {
    Group& g = groups[gi];
    out_of_time = out_of_time || since(t_start) > o_.minimise_s;
    if (!g.original || out_of_time) {
      finals.push_back(gi);
      continue;
    }
    try {
      bool merged = false;
      for (const std::size_t fi : finals) {
        Group& f = groups[fi];
        if (f.first.verdict != g.first.verdict || !f.reproduced.value_or(false) || !subset(f.fields, g.fields)) continue;
        if (replay_exec(restrict_to(*g.original, f.fields, *g.first.ctx), nullptr, &why).verdict == g.first.verdict) {
          f.reports += g.reports;
          merged = true;
          break;
        }
      }
      if (merged) continue;
      Symbolic cur = *g.original;
      const Replayed first = replay_exec(cur, nullptr, &why);
      g.reproduced = first.verdict == g.first.verdict;
      g.replay_detail = first.detail;
      g.replay_outcome = first.outcome;
      bool changed = *g.reproduced;
      while (changed && since(t_start) <= o_.minimise_s) {
        changed = false;
        for (const auto& cand : simplifications(cur, *g.first.ctx)) {
          if (since(t_start) > o_.minimise_s) break;
          const Replayed v = replay_exec(cand, nullptr, &why);
          if (v.verdict != g.first.verdict) continue;
          cur = cand;
          g.replay_detail = v.detail;
          g.replay_outcome = v.outcome;
          g.minimised = true;
          changed = true;
          break;
        }
      }
      g.minimal = cur;
      g.fields = mutated_fields(cur, *g.first.ctx);
      // Minimised onto a finding already kept: merge.
      for (const std::size_t fi : finals) {
        Group& f = groups[fi];
        if (f.minimal && f.first.verdict == g.first.verdict && f.fields == g.fields) {
          f.reports += g.reports;
          merged = true;
          break;
        }
      }
      if (!merged) finals.push_back(gi);
    } catch (const CampaignStop& e) {
      std::fprintf(stderr, "fuzz: minimisation stopped: %s\n", e.what());
      out_of_time = true;
      finals.push_back(gi);
    }
  }
  std::set<std::string> used_ids;
  const std::string driver = setup_.at("info").value("driver_version", "");
  for (const std::size_t fi : finals) {
    Group& g = groups[fi];
    std::string joined;
    for (const auto& f : g.fields) joined += (joined.empty() ? "" : "+") + f;
    const std::string base_id = safe_id(std::string(verdict_name(g.first.verdict)) + "-" +
                                        (!g.original ? std::string("audit") : joined.empty() ? std::string("unchanged") : joined));
    std::string id = base_id;
    for (int n = 2; used_ids.count(id); ++n) id = base_id + "-" + std::to_string(n);
    used_ids.insert(id);
    // The replay's words for what the minimal input does (a death is told as first seen).
    const bool replayed = !g.replay_detail.empty() && g.reproduced.value_or(false) && g.first.verdict != Verdict::crash &&
                          g.first.verdict != Verdict::hang;
    json entry = {{"id", id},
                  {"outcome", verdict_name(g.first.verdict)},
                  {"clause", verdict_clause(g.first.verdict, o_.target)},
                  {"detail", replayed ? g.replay_detail : g.first.detail},
                  {"result", replayed && g.replay_outcome.is_object() && !g.replay_outcome.empty() ? g.replay_outcome : g.first.outcome},
                  {"fields", g.fields},
                  {"mutation", ""},
                  {"reports", g.reports},
                  {"first_exec", g.first.exec},
                  {"first_at_s", g.first.at_s},
                  {"worker", g.first.worker},
                  {"minimised", g.minimised},
                  {"reproduced", g.reproduced ? json(*g.reproduced) : json(nullptr)},
                  {"reproducer", nullptr},
                  {"description", "findings/" + id + ".json"}};
    for (const char* k : {"errc", "native_name", "message", "exit"})
      if (!entry["result"].contains(k)) entry["result"][k] = "";
    if (!entry["result"].contains("native")) entry["result"]["native"] = 0;
    reports::prepare_output_dir(dir.string());
    json description = entry;
    description["schema"] = "ipcheck.fuzz-finding/1";
    description["adapter"] = o_.adapter;
    description["target"] = o_.target;
    description["driver"] = {{"name", setup_.at("info").value("driver_name", "")}, {"version", driver}};
    if (g.original) {
      const MutatorContext& ctx = *g.first.ctx;
      const Symbolic& s = g.minimal ? *g.minimal : *g.original;
      entry["mutation"] = describe(s, *ctx.layout);
      entry["reproducer"] = "findings/" + id + ".repro";
      description["mutation"] = entry["mutation"];
      description["reproducer"] = entry["reproducer"];
      description["handle_layout"] = ctx.layout->name;
      description["input"] = to_json(s);
      description["as_found"] = {{"mutation", describe(*g.original, *ctx.layout)},
                                 {"fields", mutated_fields(*g.original, ctx)},
                                 {"input", to_json(*g.original)},
                                 {"bytes", to_hex(g.first.input->data())}};
      description["replay"] = "ipcheck fuzz --replay " + (dir / (id + ".repro")).string();
      write_json(dir / (id + ".repro"), repro_doc(o_, setup_, ctx, s, *g.first.input, verdict_name(g.first.verdict)));
    }
    write_json(dir / (id + ".json"), description);
    findings_.push_back(entry);
  }
}

void Campaign::load_corpus() {
  if (o_.corpus_dir.empty()) return;
  std::error_code ec;
  if (!fs::is_directory(o_.corpus_dir, ec)) return;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(o_.corpus_dir, ec))
    if (e.path().extension() == ".repro") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& p : files) {
    try {
      // A FIFO, a folder or a huge file named *.repro is skipped, saying why, never waited on.
      const json j = reports::read_json_file(p.string(), "corpus file", reports::kMaxSmallInputBytes);
      if (!j.is_object() || j.value("schema", json()) != "ipcheck.fuzz-repro/1" || j.value("adapter", json()) != o_.adapter ||
          j.value("target", json("memory")) != o_.target)
        continue;  // another adapter's or another target's
      if (!j.contains("input")) throw std::invalid_argument("it has no \"input\"");
      (void)symbolic_from_json(j.at("input"));  // well-formed
      corpus_seeds_.push_back(j.at("input"));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fuzz: corpus file %s skipped: %s\n", p.c_str(), e.what());
    }
  }
}

void Campaign::save_corpus() {
  if (o_.corpus_dir.empty() || corpus_found_.empty()) return;  // the command line checked the folder
  for (const auto& c : corpus_found_) {
    if (corpus_added_ >= 256) break;
    const Symbolic s = symbolize(*c.ctx, c.input);
    const json doc = repro_doc(o_, setup_, *c.ctx, s, c.input, "");
    const std::string text = doc.at("input").dump();
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (char ch : text) h = (h ^ static_cast<unsigned char>(ch)) * 0x100000001b3ull;
    char name[40];
    std::snprintf(name, sizeof name, "%016llx.repro", static_cast<unsigned long long>(h));
    const fs::path p = fs::path(o_.corpus_dir) / name;
    if (fs::exists(p)) continue;
    json d = doc;
    d["seen"] = {{"verdict", c.verdict}, {"outcome", c.outcome}};
    write_json(p, d);
    ++corpus_added_;
  }
}

json Campaign::section() const {
  json j;
  j["schema"] = "ipcheck.fuzz/1";
  j["status"] = status;
  j["reason"] = reason;
  j["adapter"] = o_.adapter;
  j["target"] = detail::target_title(o_.target, o_.adapter);
  const json info = setup_.is_object() ? setup_.value("info", json::object()) : json::object();
  j["driver"] = {{"name", info.value("driver_name", "")}, {"version", info.value("driver_version", "")}};
  json layout = json::object();
  if (!slots_.empty() && slots_.front()->ctx) {
    const HandleLayout& l = *slots_.front()->ctx->layout;
    json fields = json::array();
    for (const auto& f : l.fields) fields.push_back(f.name);
    layout = {{"name", l.name}, {"knowledge", l.knowledge}, {"size", l.size}, {"fields", fields}};
  } else if (!info.empty()) {
    layout = {{"name", info.value("handle_layout", "")}};
  }
  j["handle_layout"] = layout;
  j["transport"] = info.value("transport", "");
  j["setup"] = detail::kSetup;
  j["unexported"] = setup_.is_object() ? setup_.value("unexported", json::array()) : json::array();
  j["calibration"] = calibration_;
  j["seed"] = o_.seed;
  j["jobs"] = slots_.empty() ? o_.jobs : static_cast<int>(slots_.size());
  j["budget"] = {{"time_s", o_.time_s}, {"runs", o_.runs}};
  const double duration = fuzzed_ ? std::chrono::duration<double>(t_end_ - t0_).count() : 0.0;
  const std::uint64_t n = executions();
  j["duration_s"] = duration;
  j["executions"] = n;
  j["exec_per_s"] = duration > 0 ? n / duration : 0.0;
  j["exec_per_s_per_worker"] = duration > 0 ? n / duration / static_cast<double>(std::max<std::size_t>(1, slots_.size())) : 0.0;
  int started = 0;
  for (const auto& s : slots_) started += s->generations;
  j["workers"] = {{"started", started}, {"replaced", replaced_}, {"retired", retired_}};
  json per = json::array();
  for (const auto& s : slots_) {
    const std::uint64_t e = s->page->get().executions.load() + s->lost;
    per.push_back({{"worker", s->index}, {"executions", e}, {"exec_per_s", duration > 0 ? e / duration : 0.0},
                   {"generations", s->generations}, {"recovery_s", s->recovery_s}});
  }
  j["per_worker"] = per;
  j["time_s"] = time_json();
  auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  j["recovery"] = {{"standby", standby_},
                   {"hand_overs", waits_s_.size()},
                   {"from_standby", from_standby_},
                   {"median_wait_ms", median(waits_s_) * 1000},
                   {"max_wait_ms", waits_s_.empty() ? 0.0 : *std::max_element(waits_s_.begin(), waits_s_.end()) * 1000},
                   {"init_median_s", median(init_s_)},
                   {"consumers_started", init_s_.size()}};
  j["schedule"] = schedule_json();
  json outcomes = json::object();
  for (const auto& [k, v] : outcome_counts()) outcomes[k] = v;
  j["outcomes"] = outcomes;
  std::map<std::string, std::uint64_t> natives, verdicts;
  std::uint64_t hits = 0;
  for (const auto& s : slots_) {
    const WorkerPage& p = s->page->get();
    for (const auto& ns : p.natives)
      if (ns.used) natives[ns.name] += ns.count.load();
    for (int i = 0; i < kVerdictCount; ++i)
      if (const auto v = p.verdicts[i].load()) verdicts[verdict_name(static_cast<Verdict>(i))] += v;
    hits += p.findings.load();
  }
  for (const auto& f : raw_)
    if (f.verdict == Verdict::crash || f.verdict == Verdict::hang) {
      ++verdicts[verdict_name(f.verdict)];
      ++hits;
    }
  j["native_outcomes"] = natives;
  j["verdicts"] = verdicts;
  j["finding_hits"] = hits;
  j["corpus"] = {{"dir", o_.corpus_dir}, {"loaded", corpus_seeds_.size()}, {"added", corpus_added_}};
  j["findings"] = findings_;
  return j;
}

json Campaign::time_json() const {
  std::uint64_t ns[5] = {};
  for (const auto& s : slots_) {
    const detail::TimeSpent& t = s->page->get().ns;
    ns[0] += t.mutate.load();
    ns[1] += t.open.load();
    ns[2] += t.oracle.load();
    ns[3] += t.close.load();
    ns[4] += t.channel.load();
  }
  double recovery = 0;
  for (const auto& s : slots_) recovery += s->recovery_s;
  return {{"mutate", ns[0] / 1e9}, {"open", ns[1] / 1e9}, {"oracle", ns[2] / 1e9}, {"close", ns[3] / 1e9},
          {"channel", ns[4] / 1e9}, {"recovery", recovery},
          {"startup", fuzzed_ ? std::chrono::duration<double>(t0_ - launch_t0_).count() : 0.0}};
}

// The demoted classes' names, in order: what "go" and "schedule" tell the workers.
json Campaign::schedule_names() const {
  json names = json::array();
  for (const auto& d : schedule_) names.push_back(d.cls);
  return names;
}

json Campaign::schedule_json() const {
  json classes = json::array();
  for (std::size_t k = 0; k < schedule_.size(); ++k) {
    std::uint64_t n = 0;
    for (const auto& s : slots_) n += s->page->get().demoted[k].load();
    classes.push_back({{"class", schedule_[k].cls}, {"verdict", schedule_[k].verdict}, {"since_s", schedule_[k].since_s},
                       {"demoted", n}});
  }
  return {{"demote", o_.demote}, {"keep_one_in", detail::kDemotedKeepOneIn}, {"classes", classes}};
}

reports::RunInfo run_info(const CampaignOptions& o, const json& setup, const std::string& start, double duration) {
  reports::RunInfo r;
  stamp_run(r, o.adapter, start);
  if (const AdapterDesc* d = find_adapter(o.adapter)) r.profiles = d->profiles;
  const json info = setup.is_object() ? setup.value("info", json::object()) : json::object();
  r.driver_name = info.value("driver_name", "");
  r.driver_version = info.value("driver_version", "");
  r.transport = info.value("transport", "");
  r.duration_s = duration;
  r.audit = "off";
  r.audit_note = "fuzz campaigns audit each open themselves (descriptor and mapping probes)";
  r.options = {{"command", "fuzz"}, {"time_s", o.time_s}, {"runs", o.runs}, {"jobs", o.jobs}, {"seed", o.seed},
               {"standby", o.standby}, {"demote", o.demote},
               {"corpus", o.corpus_dir}, {"transport", o.transport}, {"adapter_options", o.adapter_options},
               {"hang_s", o.hang_s}, {"stop_on", o.stop_on}};
  if (!env_defect().empty()) r.options["environment"] = {{"IPCREF_DEFECT", env_defect()}};
  return r;
}

}  // namespace

reports::Results run_campaign(const CampaignOptions& o, const std::string& out_dir, std::vector<std::string>* written) {
  const std::string start = iso_now();
  const auto t0 = Clock::now();
  const std::size_t fds_at_start = count_open_fds();
  reports::Results results;
  json section;
  json setup;
  {
    Campaign c(o);
    try {
      c.load_corpus();
      c.start_dead_pid();
      c.start_producer();
      c.fuzz();
      c.minimise_and_write(out_dir);
      c.save_corpus();
    } catch (const CampaignStop& e) {
      c.status = e.skip ? "skipped" : "aborted";
      c.reason = e.what();
    } catch (const std::exception& e) {
      // A broken message or a file that cannot be written: the campaign ends, the results say why.
      c.status = "aborted";
      c.reason = std::string("the campaign failed: ") + e.what();
    }
    setup = c.setup();
    section = c.section();
  }
  results.run = run_info(o, setup, start, since(t0));
  const std::vector<std::string> orphans = reap_orphans();
  results.run.runner = {{"fds_at_start", fds_at_start}, {"fds_at_end", count_open_fds()}, {"orphans_reaped", orphans}};
  results.fuzz = section;
  results.summary = reports::summarize(results.cases);
  const auto paths = reports::write_report_set(out_dir, results);
  if (written) *written = paths;
  return results;
}

ReplayReport replay_reproducer(const std::string& path, const CampaignOptions& base) {
  ReplayReport r;
  json doc;
  try {
    doc = reports::read_json_file(path, "reproducer", reports::kMaxSmallInputBytes);
  } catch (const reports::FileError& e) {
    throw std::invalid_argument(e.what());
  }
  // Every field this reads is checked for its shape, and a wrong one is named.
  auto shape = [&](const std::string& what) {
    return std::invalid_argument("reproducer '" + path + "': " + what + "; give a findings/<id>.repro that ipcheck fuzz wrote");
  };
  if (!doc.is_object()) throw shape(std::string("the document is ") + doc.type_name() + ", not an object");
  auto text = [&](const char* key, const std::string& fallback) {
    auto it = doc.find(key);
    if (it == doc.end() || it->is_null()) return fallback;
    if (!it->is_string()) throw shape(std::string("field \"") + key + "\" is " + it->type_name() + ", not text");
    return it->get<std::string>();
  };
  if (text("schema", "") != "ipcheck.fuzz-repro/1")
    throw std::invalid_argument("'" + path + "' is not an ipcheck reproducer (schema \"" + text("schema", "") +
                                "\", expected \"ipcheck.fuzz-repro/1\")");
  if (text("setup", "") != detail::kSetup)
    throw std::invalid_argument("reproducer '" + path + "' was made with set-up \"" + text("setup", "") +
                                "\"; this ipcheck builds \"" + detail::kSetup + "\": replay it with the ipcheck that found it");
  CampaignOptions o = base;
  o.adapter = text("adapter", o.adapter);
  if (!find_adapter(o.adapter)) throw shape("field \"adapter\" is '" + o.adapter + "', no adapter of this ipcheck");
  o.target = text("target", "memory");
  if (!detail::valid_target(o.target))
    throw shape("field \"target\" is '" + o.target + "', not memory, physical or event");
  o.transport = text("transport", o.transport);
  if (o.transport != "pidfd" && o.transport != "scm" && o.transport != "auto")
    throw shape("field \"transport\" is '" + o.transport + "', not pidfd, scm or auto");
  if (auto it = doc.find("adapter_options"); it != doc.end() && !it->is_null()) {
    if (!it->is_object()) throw shape(std::string("field \"adapter_options\" is ") + it->type_name() + ", not an object");
    for (const auto& [k, v] : it->items()) {
      if (!v.is_string()) throw shape("field \"adapter_options." + k + "\" is " + v.type_name() + ", not text");
      o.adapter_options.try_emplace(k, v.get<std::string>());
    }
  }
  o.jobs = 0;
  o.progress = false;
  r.expected = text("expect", "");
  if (!doc.contains("input")) throw shape("it has no \"input\"");
  Symbolic s;
  try {
    s = symbolic_from_json(doc.at("input"));
  } catch (const std::invalid_argument& e) {
    throw shape(e.what());
  }
  Campaign c(o);
  try {
    c.start_dead_pid();
    c.start_producer();
    std::string why;
    const auto v = c.replay_exec(s, &r.input, &why);
    if (!why.empty()) {
      r.reason = why;
      return r;
    }
    r.ran = true;
    r.verdict = verdict_name(v.verdict);
    r.detail = v.detail;
    r.outcome = v.outcome;
  } catch (const CampaignStop& e) {
    r.reason = e.what();
  }
  return r;
}

}  // namespace ipcheck::fuzz
