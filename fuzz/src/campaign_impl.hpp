// The parent side of a fuzz campaign, shared by its four files: campaign.cpp (the process
// loop: spawn the roles, watch them, stop; the replay worker), campaign_workers.cpp (what a
// worker says, how its end is judged, the standbys that take a lost worker's slot over),
// campaign_findings.cpp (grouping, minimising and writing findings; the corpus) and
// campaign_results.cpp (the results section, run_campaign, --replay). Private to fuzz/src.
#pragma once

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
#include "ipcheck/fuzz/repro_file.hpp"
#include "ipcheck/fuzz/symbolic.hpp"
#include "ipcheck/reports/files.hpp"
#include "ipcheck/reports/report_set.hpp"
#include "ipcheck/run_record.hpp"
#include "ipcheck/spawn.hpp"
#include "ipcheck/fuzz/campaign.hpp"
#include "campaign_messages.hpp"
#include "protocol.hpp"
#include "targets.hpp"

namespace ipcheck::fuzz::campaign_detail {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using detail::WorkerPage;
using nlohmann::json;

inline std::string seconds(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", s);
  return b;
}

inline double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// What the parent sends a worker or a standby it lets go.
inline const msg::Release kStop{"stop", ""};

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
// it run once in keep_one_in (detail::kDemotedKeepOneIn, doubled after each later poisoning).
struct Demoted {
  std::uint64_t mask = 0;  // changed_fields of the finding's input
  std::string cls;      // changed_fields_name of the finding's input
  std::string verdict;  // the finding that put it here
  double since_s = 0;
  std::uint64_t poisonings = 1;  // findings of the class that cost a worker, the first included
  std::uint64_t keep_one_in = detail::kDemotedKeepOneIn;  // halved rate after each later one
};

// The reports of one kind of finding with one set of changed fields, after the campaign;
// the first report stands for them.
struct FindingGroup {
  RawFinding first;
  int reports = 0;
  std::optional<Symbolic> original, minimal;
  std::vector<std::string> fields;  // after minimisation
  bool minimised = false;
  std::optional<bool> reproduced;   // empty: not replayed (no input, or no time left)
  std::string replay_detail;
  json replay_outcome;
};

class Campaign {
 public:
  explicit Campaign(const CampaignOptions& o) : o_(o) {
    exe_ = o.executable.empty() ? role_executable() : o.executable;
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
  json time_by_verdict_json() const;
  std::vector<wire::Demotion> schedule_demotions() const;
  std::shared_ptr<const MutatorContext> wait_ready(Proc& p, const std::string& who);
  void handle(Slot& s, Message& m);
  void on_finding(Slot& s, wire::Finding w);
  void on_final(Slot& s, const wire::Final& final);
  std::shared_ptr<const MutatorContext> accept_ready(wire::Ready& ready);
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
  void make_slots(int jobs);
  void begin_stop(bool interrupted);
  void poll_processes();
  void service(Slot& s);
  json recovery_json() const;
  void add_counts(json& j) const;
  std::vector<FindingGroup> group_findings() const;
  std::vector<std::size_t> minimise(std::vector<FindingGroup>& groups);
  bool merged_by_replay(std::vector<FindingGroup>& groups, const std::vector<std::size_t>& finals, FindingGroup& g);
  void minimise_group(FindingGroup& g, Clock::time_point t_start);
  void write_finding(const FindingGroup& g, const std::string& id, const fs::path& dir);

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

// IPCREF_DEFECT of this process ("" without one): reproducers and the run record name it.
std::string env_defect();

}  // namespace ipcheck::fuzz::campaign_detail
